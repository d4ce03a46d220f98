/*
 * test_real.c: the same API on the real default model (SmolLM2-135M, from
 * ZOO_MODEL or the repository's models/ folder): loading with progress and
 * metadata, llama.cpp's CPU backend (zoo_backend_info_json, the
 * `cpu_variant` parameter), two agents sharing one model, streaming, a required tool call
 * written in C, and stopping a long generation from another thread. A
 * missing model file is a failure, never a skip.
 *
 * Greedy decoding and a small context keep the runs short and repeatable.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

/* A greedy config on the model, with a reply limit. */
static void greedy_config(char *buf, size_t size, bool with_path, int max_tokens) {
    char path[1200] = "";
    if (with_path) snprintf(path, sizeof path, "\"model_path\": \"%s\", ", th_model_path());
    snprintf(buf, size,
             "{%s\"temperature\": 0, \"seed\": 7, \"context_size\": 1024, \"threads\": 1, "
             "\"max_tokens\": %d}",
             path, max_tokens);
}

typedef struct {
    atomic_int calls;
    float last;
    bool monotonic;
    bool cancel;
} progress_state;

static bool on_progress(void *user_data, float progress) {
    progress_state *p = user_data;
    if (progress < p->last || progress < 0.0f || progress > 1.0f) p->monotonic = false;
    p->last = progress;
    atomic_fetch_add(&p->calls, 1);
    return !p->cancel;
}

/* llama.cpp's CPU backend: libzoo.so loads a variant from zoo-backends/
 * beside itself, libzoo.a has one built in; a process runs one variant, so
 * a model asking for another (or for one that does not exist) fails with
 * ZOO_INVALID_CONFIG and the process goes on. */
void test_real_backend_info(void) {
    if (!th_require_model()) return;
    char *err = NULL, *info = NULL;
    REQUIRE_STATUS(zoo_backend_info_json(&info, &err), ZOO_OK, err);
    th_note("backend: %s", info);
    char *variant = jm_string(info, "cpu_variant");
    char *chosen = jm_string(info, "chosen_by");
    char *usable0 = jm_string(info, "usable.0");
    REQUIRE(variant != NULL && chosen != NULL && usable0 != NULL);
    CHECK(jm_count(info, "features") > 0);
    if (strcmp(chosen, "built_in") == 0) {
        /* libzoo.a: one variant, nothing loaded from a folder. */
        CHECK(jm_is(info, "directory", "null"));
        CHECK(jm_count(info, "usable") == 1);
    } else {
        char *dir = jm_string(info, "directory");
        CHECKF(dir && strlen(dir) > 13 && strcmp(dir + strlen(dir) - 13, "/zoo-backends") == 0,
               "directory: %s", dir ? dir : "(null)");
        free(dir);
        CHECK_STR(variant, usable0);
        CHECK(jm_count(info, "usable") >= 2);
    }

    zoo_model *model = NULL;
    CHECK_STATUS(zoo_model_load(th_model_path(), "{\"cpu_variant\": \"pentium\"}", &model, &err),
                 ZOO_INVALID_CONFIG, err);
    CHECKF(err && strstr(err, "unknown CPU variant `pentium`"), "%s", err ? err : "(null)");
    zoo_string_free(err);
    err = NULL;
    /* Another variant than the one running: x64, or haswell when x64 runs. */
    char params[128];
    snprintf(params, sizeof params, "{\"cpu_variant\": \"%s\"}",
             strcmp(variant, "x64") == 0 ? "haswell" : "x64");
    CHECK_STATUS(zoo_model_load(th_model_path(), params, &model, &err), ZOO_INVALID_CONFIG, err);
    CHECKF(err && (strstr(err, "already runs") || strstr(err, "carries one CPU variant")), "%s",
           err ? err : "(null)");
    zoo_string_free(err);
    err = NULL;
    /* The one running is fine. */
    snprintf(params, sizeof params, "{\"cpu_variant\": \"%s\"}", variant);
    REQUIRE_STATUS(zoo_model_load(th_model_path(), params, &model, &err), ZOO_OK, err);
    zoo_model_free(model);
    free(variant);
    free(chosen);
    free(usable0);
    zoo_string_free(info);
}

void test_real_model_load_and_metadata(void) {
    if (!th_require_model()) return;
    char *err = NULL;
    zoo_model *model = NULL;
    progress_state p = {.monotonic = true};
    atomic_init(&p.calls, 0);
    REQUIRE_STATUS(zoo_model_load_with_progress(th_model_path(), "{\"use_mmap\": true}",
                                                on_progress, &p, &model, &err),
                   ZOO_OK, err);
    REQUIRE(model != NULL);
    CHECKF(atomic_load(&p.calls) > 0, "progress was never reported");
    CHECK(p.monotonic);
    CHECKF(p.last == 1.0f, "last progress %f", (double)p.last);

    char *meta = NULL;
    REQUIRE_STATUS(zoo_model_metadata_json(model, &meta, &err), ZOO_OK, err);
    th_note("metadata: %.160s...", meta);
    char *arch = jm_string(meta, "architecture");
    CHECK_STR(arch, "llama");
    free(arch);
    char *tmpl = jm_string(meta, "chat_template");
    CHECKF(tmpl && strstr(tmpl, "<|im_start|>"), "chat_template: %.80s", tmpl ? tmpl : "(null)");
    free(tmpl);
    CHECK(jm_at(meta, "name", NULL) != NULL);
    CHECK(jm_at(meta, "special.bos", NULL) != NULL && jm_at(meta, "special.eos", NULL) != NULL);
    zoo_string_free(meta);
    zoo_model_free(model);

    /* Plain zoo_model_load with NULL params. */
    model = NULL;
    REQUIRE_STATUS(zoo_model_load(th_model_path(), NULL, &model, &err), ZOO_OK, err);
    zoo_model_free(model);

    /* A progress callback returning false cancels the load. */
    progress_state cancel = {.monotonic = true, .cancel = true};
    atomic_init(&cancel.calls, 0);
    zoo_model *never = NULL;
    CHECK_STATUS(zoo_model_load_with_progress(th_model_path(), NULL, on_progress, &cancel, &never,
                                              &err),
                 ZOO_CANCELLED, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(never == NULL);
}

/* The shortest real chat: create, stream a few tokens, free. Small enough
 * to run under valgrind (test-valgrind) in about a minute. */
void test_real_quick_chat(void) {
    if (!th_require_model()) return;
    char config[1600], *err = NULL, *out = NULL;
    snprintf(config, sizeof config,
             "{\"model_path\": \"%s\", \"temperature\": 0, \"context_size\": 256, "
             "\"batch_size\": 64, \"threads\": 1, \"max_tokens\": 6}",
             th_model_path());
    zoo_agent *agent = NULL;
    REQUIRE_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    CHECK_STATUS(zoo_agent_chat(agent, "Say hi.", NULL, &cb, &out, &err), ZOO_OK, err);
    char *text = out ? jm_string(out, "text") : NULL;
    th_note("reply: %s", text ? text : "(null)");
    CHECK(text && *text);
    CHECK_STR(chat_ctx_stream(&ctx), text);
    CHECK(atomic_load(&ctx.bad_pieces) == 0);
    double n = 0;
    CHECK(jm_number(out, "usage.completion_tokens", &n) && n >= 1 && n <= 6);
    free(text);
    zoo_string_free(out);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}

/* A chat template that loops 10^12 times runs out of fuel: each chat fails
 * with ZOO_INVALID_CONFIG naming `template`, and freeing the agent is
 * prompt. */
void test_real_runaway_template(void) {
    if (!th_require_model()) return;
    char config[1600], *err = NULL, *out = NULL;
    snprintf(config, sizeof config,
             "{\"model_path\": \"%s\", \"temperature\": 0, \"context_size\": 256, "
             "\"threads\": 1, \"template\": \"{%% for i in range(100000) %%}{%% for j in "
             "range(100000) %%}{%% for k in range(100) %%}{%% endfor %%}{%% endfor %%}{%% endfor "
             "%%}\"}",
             th_model_path());
    zoo_agent *agent = NULL;
    REQUIRE_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err);
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(zoo_agent_chat(agent, "Hi", NULL, NULL, &out, &err), ZOO_INVALID_CONFIG, err);
        CHECKF(err && strncmp(err, "invalid config `template`:", 26) == 0 &&
                   strstr(err, "ran out of fuel"),
               "err: %s", err ? err : "(null)");
        th_free_string(&err);
        CHECK(out == NULL);
    }
    zoo_agent_free(agent);
}

/* zoo_agent_create on the model; the streamed tokens concatenate to the
 * response's text. */
void test_real_streaming(void) {
    if (!th_require_model()) return;
    char config[1600], *err = NULL, *out = NULL;
    greedy_config(config, sizeof config, true, 24);
    zoo_agent *agent = NULL;
    REQUIRE_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    CHECK_STATUS(zoo_agent_chat(agent, "Name three colors.", NULL, &cb, &out, &err), ZOO_OK,
                 err);
    REQUIRE(out != NULL);
    char *text = jm_string(out, "text");
    th_note("reply: %s", text ? text : "(null)");
    CHECKF(text && strlen(text) > 0, "empty reply: %s", out);
    CHECKF(atomic_load(&ctx.tokens) > 3, "only %d token callbacks", atomic_load(&ctx.tokens));
    CHECK_STR(chat_ctx_stream(&ctx), text);
    CHECK(atomic_load(&ctx.bad_pieces) == 0);
    CHECK(atomic_load(&ctx.freed) == 1);
    double n = 0;
    CHECK(jm_number(out, "usage.completion_tokens", &n) && n > 0 && n <= 24);
    free(text);
    zoo_string_free(out);

    /* Multi-byte characters are never split across token callbacks. */
    chat_ctx accents;
    chat_ctx_init(&accents);
    cb = chat_ctx_callbacks(&accents, false);
    out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent,
                                "Translate to French: the caf\xc3\xa9 is near the ch\xc3\xa2teau, "
                                "d\xc3\xa9j\xc3\xa0 vu. Reply with accents.",
                                NULL, &cb, &out, &err),
                 ZOO_OK, err);
    text = out ? jm_string(out, "text") : NULL;
    th_note("reply: %s", text ? text : "(null)");
    CHECK_STR(chat_ctx_stream(&accents), text);
    CHECKF(atomic_load(&accents.bad_pieces) == 0, "%d pieces split a character",
           atomic_load(&accents.bad_pieces));
    free(text);
    zoo_string_free(out);
    chat_ctx_destroy(&accents);
    CHECK_STATUS(zoo_agent_clear_history(agent, &err), ZOO_OK, err);
    out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "Name three colors.", NULL, NULL, &out, &err), ZOO_OK,
                 err);
    zoo_string_free(out);

    /* A second turn reuses the KV cache. */
    out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "Which of them is the color of the sky?", NULL, NULL, &out,
                                &err),
                 ZOO_OK, err);
    CHECK(jm_number(out, "usage.cached_tokens", &n) && n > 0);
    zoo_string_free(out);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}

/* One model, two agents: each has its own context and history; the model
 * handle can go first. */
void test_real_two_agents_share_model(void) {
    if (!th_require_model()) return;
    char *err = NULL;
    zoo_model *model = NULL;
    REQUIRE_STATUS(zoo_model_load(th_model_path(), NULL, &model, &err), ZOO_OK, err);
    char config[512];
    greedy_config(config, sizeof config, false, 12);
    zoo_agent *a = NULL, *b = NULL;
    REQUIRE_STATUS(zoo_agent_create_with_model(model, config, &a, &err), ZOO_OK, err);
    /* NULL config: the defaults; a model_path in the config is ignored. */
    REQUIRE_STATUS(zoo_agent_create_with_model(
                       model, "{\"model_path\": \"/ignored.gguf\", \"max_tokens\": 12, "
                              "\"context_size\": 1024, \"temperature\": 0, \"threads\": 1}",
                       &b, &err),
                   ZOO_OK, err);
    zoo_agent *c = NULL;
    REQUIRE_STATUS(zoo_agent_create_with_model(model, NULL, &c, &err), ZOO_OK, err);
    zoo_agent_free(c);
    CHECK_STATUS(zoo_agent_create_with_model(model, "{\"top_k\": -1}", &c, &err),
                 ZOO_INVALID_CONFIG, err);
    CHECK_ERROR_MESSAGE(err);
    zoo_model_free(model); /* the agents keep the weights alive */

    zoo_chat *ca = NULL, *cb = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(a, "Say hello.", NULL, NULL, &ca, &err), ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_chat_async(b, "Count to three.", NULL, NULL, &cb, &err), ZOO_OK,
                   err);
    bool done = false;
    char *out_a = NULL, *out_b = NULL;
    CHECK_STATUS(zoo_chat_wait(ca, -1, &done, &out_a, &err), ZOO_OK, err);
    CHECK(done);
    CHECK_STATUS(zoo_chat_wait(cb, -1, &done, &out_b, &err), ZOO_OK, err);
    CHECK(done);
    char *ta = out_a ? jm_string(out_a, "text") : NULL;
    char *tb = out_b ? jm_string(out_b, "text") : NULL;
    th_note("agent a: %s | agent b: %s", ta ? ta : "(null)", tb ? tb : "(null)");
    CHECK(ta && *ta && tb && *tb);
    free(ta);
    free(tb);
    zoo_string_free(out_a);
    zoo_string_free(out_b);
    zoo_chat_free(ca);
    zoo_chat_free(cb);

    /* Separate histories. */
    char *ha = NULL, *hb = NULL;
    CHECK_STATUS(zoo_agent_history_json(a, &ha, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_agent_history_json(b, &hb, &err), ZOO_OK, err);
    char *ua = jm_string(ha, "0.content"), *ub = jm_string(hb, "0.content");
    CHECK_STR(ua, "Say hello.");
    CHECK_STR(ub, "Count to three.");
    free(ua);
    free(ub);
    zoo_string_free(ha);
    zoo_string_free(hb);
    zoo_agent_free(a);
    zoo_agent_free(b);
}

/* A tool written in C, forced with ZOO_TOOL_CHOICE_REQUIRED: the handler
 * gets valid JSON arguments with the required key. */
typedef struct {
    atomic_int calls;
    atomic_int freed;
    bool valid_json;
    bool has_city;
    char args[256];
} real_tool_state;

static void real_weather_free(void *user_data) {
    real_tool_state *st = user_data;
    atomic_fetch_add(&st->freed, 1);
}

static void real_weather(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    real_tool_state *st = user_data;
    atomic_fetch_add(&st->calls, 1);
    snprintf(st->args, sizeof st->args, "%.*s", (int)len, args);
    st->valid_json = jm_valid(args, len) && args[0] == '{';
    char *city = jm_string(args, "city");
    st->has_city = city != NULL && city[0] != '\0';
    free(city);
    zoo_tool_result_set_json(result, "{\"temperature_celsius\": 17, \"sky\": \"cloudy\"}", NULL);
}

void test_real_tool_required(void) {
    if (!th_require_model()) return;
    char config[1600], *err = NULL, *out = NULL;
    greedy_config(config, sizeof config, true, 64);
    zoo_agent *agent = NULL;
    REQUIRE_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err);
    real_tool_state st = {0};
    atomic_init(&st.calls, 0);
    atomic_init(&st.freed, 0);
    REQUIRE_STATUS(
        zoo_agent_register_tool(agent, "get_weather", "Get the current weather for a city",
                                "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
                                "\"string\",\"description\":\"City name\"}},\"required\":"
                                "[\"city\"]}",
                                real_weather, &st, real_weather_free, &err),
        ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    zoo_chat_options opts = {0};
    opts.tool_choice = ZOO_TOOL_CHOICE_REQUIRED;
    CHECK_STATUS(zoo_agent_chat(agent, "What is the weather like in Paris today?", &opts, &cb,
                                &out, &err),
                 ZOO_OK, err);
    REQUIRE(out != NULL);
    th_note("arguments: %s", st.args);
    CHECKF(atomic_load(&st.calls) >= 1, "the handler never ran: %s", out);
    CHECKF(st.valid_json, "arguments are not a JSON object: %s", st.args);
    CHECKF(st.has_city, "arguments lack the required \"city\": %s", st.args);
    CHECK(jm_count(out, "tool_calls") >= 1);
    char *name = jm_string(out, "tool_calls.0.name");
    CHECK_STR(name, "get_weather");
    free(name);
    CHECKF(jm_count(out, "tool_errors") == 0, "%s", out);
    char *text = jm_string(out, "text");
    th_note("answer: %s", text ? text : "(null)");
    /* The stream of the last reply is the text. */
    CHECK_STR(chat_ctx_stream(&ctx), text);
    CHECK(strstr(ctx.events, "tool_call_started,tool_call_finished") != NULL);
    free(text);
    zoo_string_free(out);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    CHECK(atomic_load(&st.freed) == 1);
}

/* zoo_agent_stop from another thread during a long generation. */
struct real_stopper {
    zoo_agent *agent;
    chat_ctx *ctx;
    int64_t stopped_at;
};

static void *real_stop(void *arg) {
    struct real_stopper *s = arg;
    th_wait_int(&s->ctx->tokens, 4, 60000);
    zoo_agent_stop(s->agent);
    s->stopped_at = th_now_ms();
    return NULL;
}

void test_real_stop_async(void) {
    if (!th_require_model()) return;
    char config[1600], *err = NULL, *out = NULL;
    greedy_config(config, sizeof config, true, 400);
    zoo_agent *agent = NULL;
    REQUIRE_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, true);
    zoo_chat *chat = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "Write a very long story about a dragon.", NULL,
                                        &cb, &chat, &err),
                   ZOO_OK, err);
    struct real_stopper s = {agent, &ctx, 0};
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, real_stop, &s) == 0);
    bool done = false;
    CHECK_STATUS(zoo_chat_wait(chat, -1, &done, &out, &err), ZOO_OK, err);
    int64_t ended = th_now_ms();
    pthread_join(thread, NULL);
    REQUIRE(out != NULL);
    char *reason = jm_string(out, "stop_reason");
    CHECK_STR(reason, "cancelled");
    free(reason);
    th_note("stopped %lld ms after zoo_agent_stop, %d tokens streamed",
            (long long)(ended - s.stopped_at), atomic_load(&ctx.tokens));
    CHECKF(ended - s.stopped_at < 100 * th_timeout_scale(), "stop took %lld ms",
           (long long)(ended - s.stopped_at));
    double n = 0;
    CHECK(jm_number(out, "usage.completion_tokens", &n) && n < 400);
    CHECK(th_wait_int(&ctx.completes, 1, 5000));
    CHECK(th_wait_int(&ctx.freed, 1, 5000));
    zoo_string_free(out);
    zoo_chat_free(chat);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}
