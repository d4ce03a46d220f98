/*
 * test_backend.c: backends written in C (zoo_backend, zoo_backend_sink_*):
 * the request each reply gets, text streamed from the callback and from
 * threads of its own, a native tool call the loop runs and answers, usage
 * reaching the response, a failing backend (typed error, history
 * unchanged, next chat works), a stop during a reply (it reaches the
 * backend, later pieces are dropped), a counter of tokens, and the
 * argument checks of every export. The shared scenarios run on a backend
 * written in C as well (test_scenarios.c).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

#define WEATHER_SCHEMA \
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}"

/* What a scripted backend does, turn by turn, and what it saw. */
typedef struct backend_script backend_script;
struct backend_script {
    void (*reply)(backend_script *script, int turn, const char *request,
                  const zoo_backend_sink *sink);
    atomic_int turns;
    atomic_int freed;
    char *requests[8]; /* each request's JSON, malloc'd */
    /* For the stop test. */
    atomic_int started;
    atomic_int saw_cancel;
    atomic_int late_accepted;
    zoo_status statuses[16];
};

static void script_generate(void *user_data, const char *request, size_t len,
                            const zoo_backend_sink *sink) {
    backend_script *s = user_data;
    int turn = atomic_fetch_add(&s->turns, 1) + 1;
    if (turn <= 8) {
        s->requests[turn - 1] = malloc(len + 1);
        memcpy(s->requests[turn - 1], request, len + 1);
    }
    s->reply(s, turn, request, sink);
}

static void script_free(void *user_data) {
    backend_script *s = user_data;
    atomic_fetch_add(&s->freed, 1);
}

static void script_init(backend_script *s,
                        void (*reply)(backend_script *, int, const char *, const zoo_backend_sink *)) {
    memset(s, 0, sizeof *s);
    s->reply = reply;
}

static void script_destroy(backend_script *s) {
    for (int i = 0; i < 8; i++) free(s->requests[i]);
}

static zoo_agent *on_backend(const char *config, backend_script *s) {
    zoo_backend backend = {0};
    backend.generate = script_generate;
    backend.user_data = s;
    backend.free_user_data = script_free;
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_with_backend(config, &backend, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

static void emit(const zoo_backend_sink *sink, const char *text) {
    bool accepted = false;
    char *err = NULL;
    CHECK_STATUS(zoo_backend_sink_emit_text(sink, text, strlen(text), &accepted, &err), ZOO_OK, err);
    th_free_string(&err);
    CHECK(accepted);
}

/* ---- streaming and usage ---- */

static void greeting(backend_script *s, int turn, const char *request, const zoo_backend_sink *sink) {
    (void)s;
    (void)turn;
    (void)request;
    emit(sink, "Hello");
    emit(sink, ", wor");
    emit(sink, "ld!");
    zoo_backend_sink_set_usage(sink, 12, 3, 4, NULL);
}

void test_backend_streams_text_and_usage(void) {
    backend_script s;
    script_init(&s, greeting);
    zoo_agent *agent = on_backend("{\"system_prompt\": \"Be brief.\", \"temperature\": 0.25}", &s);
    REQUIRE(agent);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(&ctx, false);
    char *out = NULL, *err = NULL;
    if (CHECK_STATUS(zoo_agent_chat(agent, "Hi", NULL, &callbacks, &out, &err), ZOO_OK, err)) {
        char *text = jm_string(out, "text");
        CHECK_STR(text, "Hello, world!");
        free(text);
        CHECK_STR(chat_ctx_stream(&ctx), "Hello, world!");
        CHECK(atomic_load(&ctx.tokens) == 3);
        double n = 0;
        CHECK(jm_number(out, "usage.prompt_tokens", &n) && n == 12);
        CHECK(jm_number(out, "usage.cached_tokens", &n) && n == 3);
        CHECK(jm_number(out, "usage.completion_tokens", &n) && n == 4);
        CHECK(jm_number(out, "usage.total_tokens", &n) && n == 16);
    }
    zoo_string_free(out);
    /* The request: the history, system prompt first, and the settings. */
    const char *request = s.requests[0];
    REQUIRE(request);
    char *role = jm_string(request, "messages.0.role");
    char *content = jm_string(request, "messages.1.content");
    char *choice = jm_string(request, "tool_choice");
    char *thinking = jm_string(request, "thinking");
    CHECK_STR(role, "system");
    CHECK_STR(content, "Hi");
    CHECK_STR(choice, "auto");
    CHECK_STR(thinking, "off");
    free(role);
    free(content);
    free(choice);
    free(thinking);
    double n = 0;
    CHECK(jm_number(request, "sampling.temperature", &n) && n == 0.25);
    CHECK(jm_number(request, "max_calls", &n) && n == 1);
    CHECK(jm_is(request, "max_tokens", "null"));
    CHECK(jm_count(request, "tools") == 0);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    CHECK(atomic_load(&s.freed) == 1);
    script_destroy(&s);
}

/* ---- a native tool call ---- */

static void weather(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)user_data;
    (void)len;
    CHECK_STR(args, "{\"city\":\"Paris\"}");
    zoo_tool_result_set_json(result, "{\"temperature\": 21}", NULL);
}

static void calls_then_answers(backend_script *s, int turn, const char *request,
                               const zoo_backend_sink *sink) {
    (void)s;
    if (turn == 1) {
        emit(sink, "Let me look.");
        bool accepted = false;
        s->statuses[0] = zoo_backend_sink_emit_tool_call(sink, "get_weather", "{\"city\": \"Paris\"}",
                                                         &accepted, NULL);
        CHECK(accepted);
        return;
    }
    /* The tool's result is the last message. */
    char *role = jm_string(request, "messages.2.role");
    char *result = jm_string(request, "messages.2.content");
    char *id = jm_string(request, "messages.2.tool_call_id");
    CHECK_STR(role, "tool");
    CHECK_STR(result, "{\"temperature\":21}");
    CHECK_STR(id, "call_1");
    free(role);
    free(result);
    free(id);
    emit(sink, "It is 21 degrees.");
}

void test_backend_native_tool_call(void) {
    backend_script s;
    script_init(&s, calls_then_answers);
    zoo_agent *agent = on_backend(NULL, &s);
    REQUIRE(agent);
    char *out = NULL, *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "get_weather", "Weather", WEATHER_SCHEMA, weather,
                                           NULL, NULL, &err),
                   ZOO_OK, err);
    if (CHECK_STATUS(zoo_agent_chat(agent, "Paris?", NULL, NULL, &out, &err), ZOO_OK, err)) {
        char *text = jm_string(out, "text");
        char *name = jm_string(out, "tool_calls.0.name");
        CHECK_STR(text, "It is 21 degrees.");
        CHECK_STR(name, "get_weather");
        free(text);
        free(name);
        double n = 0;
        CHECK(jm_number(out, "tool_calls.0.result.temperature", &n) && n == 21);
        CHECK(jm_number(out, "metrics.iterations", &n) && n == 2);
    }
    zoo_string_free(out);
    CHECK(s.statuses[0] == ZOO_OK);
    /* The second request showed the tool. */
    char *tool = jm_string(s.requests[1], "tools.0.name");
    CHECK_STR(tool, "get_weather");
    free(tool);
    zoo_agent_free(agent);
    script_destroy(&s);
}

/* ---- failures ---- */

static void fails_then_works(backend_script *s, int turn, const char *request,
                             const zoo_backend_sink *sink) {
    (void)s;
    (void)request;
    if (turn == 2) {
        emit(sink, "partial");
        CHECK(zoo_backend_sink_set_error(sink, "the gateway answered 503", NULL) == ZOO_OK);
        /* The reply has ended: later pieces are dropped. */
        bool accepted = true;
        zoo_backend_sink_emit_text(sink, "more", 4, &accepted, NULL);
        CHECK(!accepted);
        bool cancelled = false;
        CHECK(zoo_backend_sink_wait_cancelled(sink, 60000, &cancelled, NULL) == ZOO_OK);
        CHECK(cancelled);
        return;
    }
    emit(sink, turn == 1 ? "One." : "Fine again.");
}

void test_backend_failure_is_provider_failed(void) {
    backend_script s;
    script_init(&s, fails_then_works);
    zoo_agent *agent = on_backend(NULL, &s);
    REQUIRE(agent);
    char *out = NULL, *err = NULL;
    REQUIRE_STATUS(zoo_agent_chat(agent, "one", NULL, NULL, &out, &err), ZOO_OK, err);
    zoo_string_free(out);
    out = NULL;
    char *before = NULL;
    REQUIRE_STATUS(zoo_agent_history_json(agent, &before, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_agent_chat(agent, "two", NULL, NULL, &out, &err), ZOO_PROVIDER_FAILED, err);
    CHECK_STR(err, "provider host failed: the gateway answered 503");
    th_free_string(&err);
    CHECK(out == NULL);
    char *after = NULL;
    REQUIRE_STATUS(zoo_agent_history_json(agent, &after, &err), ZOO_OK, err);
    CHECK_STR(after, before);
    zoo_string_free(before);
    zoo_string_free(after);
    if (CHECK_STATUS(zoo_agent_chat(agent, "three", NULL, NULL, &out, &err), ZOO_OK, err)) {
        char *text = jm_string(out, "text");
        CHECK_STR(text, "Fine again.");
        free(text);
    }
    zoo_string_free(out);
    zoo_agent_free(agent);
    script_destroy(&s);
}

/* ---- a stop during a reply ---- */

static void waits_for_the_stop(backend_script *s, int turn, const char *request,
                               const zoo_backend_sink *sink) {
    (void)request;
    if (turn > 1) {
        emit(sink, "Again.");
        return;
    }
    emit(sink, "Thinking about it");
    atomic_store(&s->started, 1);
    bool cancelled = false;
    zoo_backend_sink_wait_cancelled(sink, 60000, &cancelled, NULL);
    atomic_store(&s->saw_cancel, cancelled ? 1 : 0);
    bool accepted = true;
    zoo_backend_sink_emit_text(sink, " and more", 9, &accepted, NULL);
    atomic_store(&s->late_accepted, accepted ? 1 : 0);
}

void test_backend_stop_reaches_the_backend(void) {
    backend_script s;
    script_init(&s, waits_for_the_stop);
    zoo_agent *agent = on_backend(NULL, &s);
    REQUIRE(agent);
    zoo_chat *chat = NULL;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "Go", NULL, NULL, &chat, &err), ZOO_OK, err);
    CHECK(th_wait_int(&s.started, 1, 10000 * th_timeout_scale()));
    CHECK(zoo_agent_stop(agent) == ZOO_OK);
    bool done = false;
    char *out = NULL;
    if (CHECK_STATUS(zoo_chat_wait(chat, -1, &done, &out, &err), ZOO_OK, err)) {
        char *reason = jm_string(out, "stop_reason");
        char *text = jm_string(out, "text");
        CHECK_STR(reason, "cancelled");
        CHECK_STR(text, "Thinking about it");
        free(reason);
        free(text);
    }
    zoo_string_free(out);
    out = NULL;
    zoo_chat_free(chat);
    if (CHECK_STATUS(zoo_agent_chat(agent, "Once more", NULL, NULL, &out, &err), ZOO_OK, err)) {
        char *text = jm_string(out, "text");
        CHECK_STR(text, "Again.");
        free(text);
    }
    zoo_string_free(out);
    /* The next call waited for this one: what it saw is settled. */
    CHECK(atomic_load(&s.saw_cancel) == 1);
    CHECK(atomic_load(&s.late_accepted) == 0);
    zoo_agent_free(agent);
    script_destroy(&s);
}

/* ---- pieces from threads of the backend's own ---- */

typedef struct {
    const zoo_backend_sink *sink;
    int id;
    atomic_int *dropped;
} emitter;

static void *emit_from_thread(void *arg) {
    emitter *e = arg;
    char piece[16];
    for (int i = 0; i < 50; i++) {
        int n = snprintf(piece, sizeof piece, "%c", 'a' + e->id);
        bool accepted = false;
        if (zoo_backend_sink_emit_text(e->sink, piece, (size_t)n, &accepted, NULL) != ZOO_OK ||
            !accepted)
            atomic_fetch_add(e->dropped, 1);
    }
    return NULL;
}

static void from_threads(backend_script *s, int turn, const char *request,
                         const zoo_backend_sink *sink) {
    (void)turn;
    (void)request;
    atomic_int dropped = 0;
    pthread_t threads[4];
    emitter emitters[4];
    for (int i = 0; i < 4; i++) {
        emitters[i] = (emitter){sink, i, &dropped};
        pthread_create(&threads[i], NULL, emit_from_thread, &emitters[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    s->statuses[0] = atomic_load(&dropped) == 0 ? ZOO_OK : ZOO_INTERNAL;
}

void test_backend_emits_from_threads(void) {
    backend_script s;
    script_init(&s, from_threads);
    zoo_agent *agent = on_backend(NULL, &s);
    REQUIRE(agent);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(&ctx, false);
    char *out = NULL, *err = NULL;
    if (CHECK_STATUS(zoo_agent_chat(agent, "Go", NULL, &callbacks, &out, &err), ZOO_OK, err)) {
        char *text = jm_string(out, "text");
        CHECK(text && strlen(text) == 200);
        int counts[4] = {0};
        for (const char *p = text; p && *p; p++)
            if (*p >= 'a' && *p <= 'd') counts[*p - 'a']++;
        for (int i = 0; i < 4; i++) CHECKF(counts[i] == 50, "thread %d: %d pieces", i, counts[i]);
        CHECK_STR(chat_ctx_stream(&ctx), text);
        free(text);
    }
    zoo_string_free(out);
    CHECK(s.statuses[0] == ZOO_OK);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    script_destroy(&s);
}

/* ---- a counter of tokens ---- */

static bool count_bytes(void *user_data, const char *message, size_t len, uint32_t *out_tokens) {
    (void)user_data;
    (void)len;
    char *content = jm_string(message, "content");
    bool ok = content && strcmp(content, "uncountable") != 0;
    if (ok) *out_tokens = (uint32_t)strlen(content);
    free(content);
    return ok;
}

static void says_ok(backend_script *s, int turn, const char *request, const zoo_backend_sink *sink) {
    (void)s;
    (void)turn;
    (void)request;
    emit(sink, "ok");
}

void test_backend_counts_tokens(void) {
    backend_script s;
    script_init(&s, says_ok);
    zoo_backend backend = {0};
    backend.generate = script_generate;
    backend.count_tokens = count_bytes;
    backend.user_data = &s;
    zoo_agent *agent = NULL;
    char *err = NULL, *out = NULL;
    /* 64 tokens: a message of 100 bytes does not fit. */
    REQUIRE_STATUS(zoo_agent_create_with_backend(
                       "{\"context_size\": 64, \"provider\": {\"type\": \"host\", \"thinking\": \"low\"}}",
                       &backend, &agent, &err),
                   ZOO_OK, err);
    CHECK_STATUS(zoo_agent_chat(agent, "short", NULL, NULL, &out, &err), ZOO_OK, err);
    zoo_string_free(out);
    out = NULL;
    char *thinking = jm_string(s.requests[0], "thinking");
    CHECK_STR(thinking, "low");
    free(thinking);
    char long_message[101];
    memset(long_message, 'x', 100);
    long_message[100] = '\0';
    CHECK_STATUS(zoo_agent_chat(agent, long_message, NULL, NULL, &out, &err), ZOO_CONTEXT_OVERFLOW, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_chat(agent, "uncountable", NULL, NULL, &out, &err), ZOO_PROVIDER_FAILED, err);
    CHECK_STR(err, "provider host failed: count_tokens failed: the backend's count_tokens returned false");
    th_free_string(&err);
    CHECK(out == NULL);
    zoo_agent_free(agent);
    script_destroy(&s);
}

/* ---- argument checks ---- */

static void checks_its_arguments(backend_script *s, int turn, const char *request,
                                 const zoo_backend_sink *sink) {
    (void)turn;
    (void)request;
    bool flag = false;
    zoo_status *st = s->statuses;
    st[0] = zoo_backend_sink_emit_text(NULL, "x", 1, NULL, NULL);
    st[1] = zoo_backend_sink_emit_text(sink, NULL, 0, NULL, NULL);
    st[2] = zoo_backend_sink_emit_text(sink, "\xff\xfe", 2, NULL, NULL);
    st[3] = zoo_backend_sink_emit_tool_call(sink, NULL, "{}", NULL, NULL);
    st[4] = zoo_backend_sink_emit_json(sink, "{\"type\": \"txt\"}", NULL, NULL);
    st[5] = zoo_backend_sink_emit_json(sink, "not json", NULL, NULL);
    st[6] = zoo_backend_sink_set_finish(sink, 7, NULL);
    st[7] = zoo_backend_sink_is_cancelled(sink, NULL, NULL);
    st[8] = zoo_backend_sink_wait_cancelled(sink, -1, &flag, NULL);
    st[9] = zoo_backend_sink_set_error(sink, NULL, NULL);
    st[10] = zoo_backend_sink_set_usage(NULL, 1, 0, 1, NULL);
    /* And what is right, in the JSON shape: text, then a length finish. */
    bool accepted = false;
    st[11] = zoo_backend_sink_emit_json(sink, "{\"type\": \"text\", \"text\": \"Cut\"}", &accepted, NULL);
    st[12] = accepted ? ZOO_OK : ZOO_INTERNAL;
    st[13] = zoo_backend_sink_emit_thinking(sink, "hmm", 3, NULL, NULL);
    st[14] = zoo_backend_sink_set_finish(sink, ZOO_FINISH_LENGTH, NULL);
    st[15] = zoo_backend_sink_is_cancelled(sink, &flag, NULL);
}

void test_backend_argument_errors(void) {
    char *err = NULL;
    zoo_agent *agent = (zoo_agent *)0x1;
    /* No backend, no generate: refused, outputs untouched, user_data freed once. */
    CHECK_STATUS(zoo_agent_create_with_backend(NULL, NULL, &agent, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: `backend` is NULL");
    th_free_string(&err);
    atomic_int freed = 0;
    zoo_backend backend = {0};
    backend.user_data = &freed;
    backend.free_user_data = th_count_free;
    CHECK_STATUS(zoo_agent_create_with_backend(NULL, &backend, &agent, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: `backend->generate` is NULL");
    th_free_string(&err);
    CHECK(atomic_load(&freed) == 1);
    CHECK(agent == (zoo_agent *)0x1);
    backend.generate = script_generate;
    CHECK_STATUS(zoo_agent_create_with_backend("{\"provider\": {\"type\": \"mock\"}}", &backend, &agent,
                                               &err),
                 ZOO_INVALID_CONFIG, err);
    CHECK_STR(err, "invalid config `provider`: an agent on a host backend takes no other provider "
                   "(got `mock`)");
    th_free_string(&err);
    CHECK(atomic_load(&freed) == 2);
    CHECK_STATUS(zoo_agent_create_with_backend("{\"provider\": {\"type\": \"host\", \"thinking\": 3}}",
                                               &backend, &agent, &err),
                 ZOO_INVALID_CONFIG, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(atomic_load(&freed) == 3);
    CHECK_STATUS(zoo_agent_create_with_backend(NULL, &backend, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(atomic_load(&freed) == 4);
    /* The host provider alone names no backend. */
    CHECK_STATUS(zoo_agent_create("{\"provider\": {\"type\": \"host\"}}", &agent, &err),
                 ZOO_INVALID_CONFIG, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(agent == (zoo_agent *)0x1);

    backend_script s;
    script_init(&s, checks_its_arguments);
    agent = on_backend(NULL, &s);
    REQUIRE(agent);
    char *out = NULL;
    if (CHECK_STATUS(zoo_agent_chat(agent, "Go", NULL, NULL, &out, &err), ZOO_OK, err)) {
        char *reason = jm_string(out, "stop_reason");
        char *text = jm_string(out, "text");
        CHECK_STR(reason, "length");
        CHECK_STR(text, "Cut");
        free(reason);
        free(text);
    }
    zoo_string_free(out);
    zoo_status want[16] = {ZOO_INVALID_ARGUMENT, ZOO_INVALID_ARGUMENT, ZOO_INVALID_ARGUMENT,
                           ZOO_INVALID_ARGUMENT, ZOO_INVALID_JSON,     ZOO_INVALID_JSON,
                           ZOO_INVALID_ARGUMENT, ZOO_INVALID_ARGUMENT, ZOO_INVALID_ARGUMENT,
                           ZOO_INVALID_ARGUMENT, ZOO_INVALID_ARGUMENT, ZOO_OK,
                           ZOO_OK,               ZOO_OK,               ZOO_OK,
                           ZOO_OK};
    for (int i = 0; i < 16; i++) CHECKF(s.statuses[i] == want[i], "call %d: status %d", i, s.statuses[i]);
    zoo_agent_free(agent);
    script_destroy(&s);
}
