/*
 * test_hooks.c: hooks and input filters through the C ABI, on the mock:
 * a rejecting filter, deny and rewrite of a call, an after_tool_call
 * replacement, failing hooks (they fail safe, as zoo.h documents, and reach
 * on_error), and the exactly-once free of the hooks' user_data.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

#define CALL_ROME                                                                             \
    "\"<tool_call>{\\\"name\\\":\\\"get_weather\\\",\\\"arguments\\\":{\\\"city\\\":"       \
    "\\\"Rome\\\"}}</tool_call>\""

/* What the hooks of one test do and saw. Hooks run on the inference
 * thread while zoo_agent_chat blocks, so plain fields are read safely after
 * the chat returns. */
typedef struct {
    const char *filter;    /* decision JSON of filter_input, or NULL */
    const char *tool_call; /* decision JSON of before_tool_call, or NULL */
    const char *replace;   /* decision JSON of after_tool_call, or NULL */
    const char *fail;      /* when set, every hook fails with this message */
    char seen_message[128];
    char seen_call_city[32];
    char seen_outcome[256];
    int turns_after;
    int errors;
    zoo_status error_code;
    char error_message[256];
    atomic_int freed;
} hook_state;

static void decide(const char *decision, const hook_state *st, zoo_hook_result *result) {
    if (st->fail) {
        zoo_hook_result_set_error(result, st->fail, NULL);
    } else if (decision) {
        char *err = NULL;
        CHECK_STATUS(zoo_hook_result_set_json(result, decision, &err), ZOO_OK, err);
        th_free_string(&err);
    }
}

static void on_filter(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    hook_state *st = user_data;
    CHECK(jm_valid(json, len) && strlen(json) == len);
    char *message = jm_string(json, "message");
    snprintf(st->seen_message, sizeof st->seen_message, "%s", message ? message : "");
    free(message);
    decide(st->filter, st, result);
}

static void on_after_turn(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    (void)result;
    hook_state *st = user_data;
    double turn = 0;
    CHECK(jm_number(json, "turn", &turn) && turn == st->turns_after + 1);
    st->turns_after++;
}

static void on_tool_call(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    hook_state *st = user_data;
    char *city = jm_string(json, "arguments.city");
    snprintf(st->seen_call_city, sizeof st->seen_call_city, "%s", city ? city : "");
    free(city);
    char *name = jm_string(json, "name");
    CHECK_STR(name, "get_weather");
    free(name);
    decide(st->tool_call, st, result);
}

static void on_tool_result(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    hook_state *st = user_data;
    snprintf(st->seen_outcome, sizeof st->seen_outcome, "%.*s", (int)len, json);
    decide(st->replace, st, result);
}

static void on_error(void *user_data, zoo_status code, const char *message, size_t len) {
    hook_state *st = user_data;
    st->errors++;
    st->error_code = code;
    snprintf(st->error_message, sizeof st->error_message, "%.*s", (int)len, message);
}

static void count_free(void *user_data) {
    hook_state *st = user_data;
    atomic_fetch_add(&st->freed, 1);
}

static zoo_hooks hooks_for(hook_state *st) {
    zoo_hooks hooks = {0};
    hooks.filter_input = on_filter;
    hooks.after_turn = on_after_turn;
    hooks.before_tool_call = on_tool_call;
    hooks.after_tool_call = on_tool_result;
    hooks.on_error = on_error;
    hooks.user_data = st;
    hooks.free_user_data = count_free;
    return hooks;
}

static zoo_agent *mock(const char *replies) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(NULL, replies, 0, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

static char *chat(zoo_agent *agent, const char *message, chat_ctx *ctx) {
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(ctx, false);
    char *out = NULL, *err = NULL;
    if (!CHECK_STATUS(zoo_agent_chat(agent, message, NULL, &callbacks, &out, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return out;
}

static void check_json_str(const char *json, const char *path, const char *want, int line) {
    char *got = jm_string(json, path);
    if (!th_check_str(got, want, path, __FILE__, line)) th_note("in %s", json ? json : "(null)");
    free(got);
}
#define CHECK_JSON_STR(json, path, want) check_json_str((json), (path), (want), __LINE__)

/* The weather tool: records the city it was called with. */
static void weather(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)len;
    char *city = jm_string(args, "city");
    snprintf(user_data, 32, "%s", city ? city : "");
    free(city);
    zoo_tool_result_set_json(result, "\"sunny\"", NULL);
}

static zoo_agent *weather_agent(const char *replies, char *called_with) {
    zoo_agent *agent = mock(replies);
    if (!agent) return NULL;
    char *err = NULL;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
                         "\"required\":[\"city\"]}";
    if (!CHECK_STATUS(zoo_agent_register_tool(agent, "get_weather", "Weather", schema, weather,
                                              called_with, NULL, &err),
                      ZOO_OK, err)) {
        th_free_string(&err);
        zoo_agent_free(agent);
        return NULL;
    }
    return agent;
}

void test_hooks_rejecting_filter(void) {
    zoo_agent *agent = mock("[\"never read\"]");
    REQUIRE(agent);
    hook_state st = {.filter = "{\"action\":\"reject\",\"reason\":\"no secrets\"}"};
    zoo_hooks hooks = hooks_for(&st);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, &hooks, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    char *out = chat(agent, "my password is hunter2", &ctx);
    if (out) {
        CHECK_JSON_STR(out, "stop_reason", "rejected");
        CHECK_JSON_STR(out, "text", "");
    }
    CHECK_STR(st.seen_message, "my password is hunter2");
    CHECK_STR(ctx.events, "chat_started,input_rejected,chat_finished");
    CHECK(st.turns_after == 0);
    char *history = NULL;
    if (CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err))
        CHECK(jm_count(history, "") == 0);
    zoo_string_free(history);
    zoo_string_free(out);

    /* A warning is appended to the message the model sees (the mock
     * echoes it back once its script is spent). */
    st.filter = "{\"action\":\"warn\",\"warning\":\"(be careful)\"}";
    out = chat(agent, "delete it", &ctx);
    if (out) CHECK_JSON_STR(out, "text", "never read");
    zoo_string_free(out);
    if (CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err))
        CHECK_JSON_STR(history, "0.content", "delete it\n\n(be careful)");
    zoo_string_free(history);
    chat_ctx_destroy(&ctx);
    CHECK(atomic_load(&st.freed) == 0);
    zoo_agent_free(agent);
    CHECK(atomic_load(&st.freed) == 1);
}

void test_hooks_deny_rewrite_replace(void) {
    char called_with[32] = "";
    zoo_agent *agent = weather_agent("[" CALL_ROME ", \"denied\", " CALL_ROME ", \"rewritten\", " CALL_ROME
                                     ", \"invalid\"]",
                                     called_with);
    REQUIRE(agent);
    hook_state st = {.tool_call = "{\"action\":\"deny\",\"reason\":\"not today\"}"};
    zoo_hooks hooks = hooks_for(&st);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, &hooks, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    char *out = chat(agent, "Weather?", &ctx);
    if (out) {
        CHECK_JSON_STR(out, "text", "denied");
        CHECK_JSON_STR(out, "tool_calls.0.error",
                       "tool `get_weather` failed: the call was denied: not today");
    }
    zoo_string_free(out);
    CHECK_STR(called_with, "");
    CHECK_STR(st.seen_call_city, "Rome");
    CHECK(st.turns_after == 2);
    /* after_tool_call saw the denial as the call's error. */
    CHECK_JSON_STR(st.seen_outcome, "call.name", "get_weather");
    CHECK_JSON_STR(st.seen_outcome, "error",
                   "tool `get_weather` failed: the call was denied: not today");

    /* Rewrite the arguments, then replace what the tool returned. */
    st.tool_call = "{\"action\":\"rewrite\",\"arguments\":{\"city\":\"Paris\"}}";
    st.replace = "{\"forecast\":\"replaced\"}";
    st.turns_after = 0;
    out = chat(agent, "Weather?", &ctx);
    if (out) {
        CHECK_JSON_STR(out, "text", "rewritten");
        CHECK_JSON_STR(out, "tool_calls.0.result.forecast", "replaced");
        CHECK(jm_at(out, "tool_calls.0.error", NULL) == NULL);
    }
    zoo_string_free(out);
    CHECK_STR(called_with, "Paris");
    CHECK_JSON_STR(st.seen_outcome, "result", "sunny");
    /* It reads the call as the model wrote it. */
    CHECK_JSON_STR(st.seen_outcome, "call.arguments.city", "Rome");
    CHECK(st.errors == 0);

    /* Rewritten arguments are validated again: the model reads why. */
    st.tool_call = "{\"action\":\"rewrite\",\"arguments\":{\"town\":\"Paris\"}}";
    st.replace = NULL;
    st.turns_after = 0;
    called_with[0] = '\0';
    out = chat(agent, "Weather?", &ctx);
    char *error = out ? jm_string(out, "tool_calls.0.error") : NULL;
    CHECKF(error && strstr(error, "city"), "the error names the missing key: %s",
           error ? error : "(none)");
    free(error);
    CHECK_STR(called_with, "");
    zoo_string_free(out);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    CHECK(atomic_load(&st.freed) == 1);
}

void test_hooks_fail_safe(void) {
    char called_with[32] = "";
    zoo_agent *agent = weather_agent("[" CALL_ROME ", \"went on\"]", called_with);
    REQUIRE(agent);
    hook_state st = {.fail = "filter broke"};
    zoo_hooks hooks = hooks_for(&st);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, &hooks, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);

    /* A failing filter rejects the message; on_error hears of it. */
    char *out = chat(agent, "Weather?", &ctx);
    if (out) CHECK_JSON_STR(out, "stop_reason", "rejected");
    zoo_string_free(out);
    CHECK(st.errors == 1);
    CHECK(st.error_code == ZOO_INTERNAL);
    CHECK_STR(st.error_message, "internal error: the filter_input hook failed: filter broke");

    /* A failing before_tool_call denies the call; a failing
     * after_tool_call changes nothing. */
    hooks.filter_input = NULL;
    hook_state st2 = {.fail = "veto broke"};
    hooks.user_data = &st2;
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, &hooks, &err), ZOO_OK, err);
    CHECK(atomic_load(&st.freed) == 1);
    out = chat(agent, "Weather?", &ctx);
    if (out) {
        CHECK_JSON_STR(out, "text", "went on");
        CHECK_JSON_STR(out, "tool_calls.0.error",
                       "tool `get_weather` failed: the call was denied: the before_tool_call "
                       "hook failed: veto broke");
    }
    zoo_string_free(out);
    CHECK_STR(called_with, "");
    CHECK(st2.errors == 2);
    CHECK_STR(st2.error_message, "internal error: the after_tool_call hook failed: veto broke");

    /* A decision of the wrong shape is a failing hook: the filter rejects. */
    hooks.filter_input = on_filter;
    hook_state st3 = {.filter = "{\"action\":\"maybe\"}"};
    hooks.user_data = &st3;
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, &hooks, &err), ZOO_OK, err);
    CHECK(atomic_load(&st2.freed) == 1);
    out = chat(agent, "hello", &ctx);
    if (out) CHECK_JSON_STR(out, "stop_reason", "rejected");
    zoo_string_free(out);
    CHECKF(strstr(st3.error_message, "the filter_input hook failed: the decision") != NULL,
           "on_error: %s", st3.error_message);

    /* NULL removes the hooks (and frees their user_data); the agent goes on. */
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, NULL, &err), ZOO_OK, err);
    CHECK(atomic_load(&st3.freed) == 1);
    out = chat(agent, "hello", &ctx);
    if (out) {
        CHECK_JSON_STR(out, "stop_reason", "stop");
        CHECK_JSON_STR(out, "text", "echo: hello");
    }
    zoo_string_free(out);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    CHECK(atomic_load(&st.freed) == 1 && atomic_load(&st3.freed) == 1);
}

void test_hooks_argument_errors(void) {
    hook_state st = {0};
    zoo_hooks hooks = hooks_for(&st);
    char *err = NULL;
    /* A failed call frees the user_data right away. */
    CHECK_STATUS(zoo_agent_set_hooks(NULL, &hooks, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(atomic_load(&st.freed) == 1);
    CHECK_STATUS(zoo_hook_result_set_json(NULL, "{}", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_hook_result_set_error(NULL, "x", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
}

/* Hooks of one chat, in zoo_chat_options.hooks: they run instead of the
 * agent's for that chat only, and their user_data is freed once, when the
 * chat ends (or right away when the call fails). */
void test_hooks_per_chat(void) {
    char called_with[32] = "";
    zoo_agent *agent = weather_agent("[" CALL_ROME ", \"agent denied\", " CALL_ROME ", \"chat allowed\", " CALL_ROME
                                     ", \"agent denied again\"]",
                                     called_with);
    REQUIRE(agent);
    hook_state agent_st = {.tool_call = "{\"action\":\"deny\",\"reason\":\"agent says no\"}"};
    zoo_hooks agent_hooks = hooks_for(&agent_st);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, &agent_hooks, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    char *out = chat(agent, "Weather?", &ctx);
    if (out) CHECK_JSON_STR(out, "text", "agent denied");
    zoo_string_free(out);
    CHECK_STR(called_with, "");

    /* This chat's own hooks allow and rewrite; the agent's do not run. */
    hook_state chat_st = {.tool_call = "{\"action\":\"rewrite\",\"arguments\":{\"city\":\"Oslo\"}}"};
    zoo_hooks chat_hooks = hooks_for(&chat_st);
    zoo_chat_options options = {0};
    options.hooks = &chat_hooks;
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(&ctx, false);
    agent_st.seen_call_city[0] = '\0';
    REQUIRE_STATUS(zoo_agent_chat(agent, "Weather?", &options, &callbacks, &out, &err), ZOO_OK, err);
    CHECK_JSON_STR(out, "text", "chat allowed");
    CHECK_JSON_STR(out, "tool_calls.0.result", "sunny");
    zoo_string_free(out);
    CHECK_STR(called_with, "Oslo");
    CHECK_STR(chat_st.seen_call_city, "Rome");
    CHECK_STR(agent_st.seen_call_city, "");
    CHECK(atomic_load(&chat_st.freed) == 1);

    /* The next chat runs the agent's hooks again. */
    called_with[0] = '\0';
    agent_st.turns_after = 0;
    out = chat(agent, "Weather?", &ctx);
    if (out) CHECK_JSON_STR(out, "text", "agent denied again");
    zoo_string_free(out);
    CHECK_STR(called_with, "");
    CHECK_STR(agent_st.seen_call_city, "Rome");

    /* A chat call that fails frees its hooks' user_data at once. */
    hook_state failed_st = {0};
    zoo_hooks failed_hooks = hooks_for(&failed_st);
    options.hooks = &failed_hooks;
    options.tool_choice = 99;
    CHECK_STATUS(zoo_agent_chat(agent, "Weather?", &options, NULL, &out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(atomic_load(&failed_st.freed) == 1);
    options.tool_choice = 0;
    CHECK_STATUS(zoo_agent_chat(NULL, "Weather?", &options, NULL, &out, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(atomic_load(&failed_st.freed) == 2);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    CHECK(atomic_load(&agent_st.freed) == 1 && atomic_load(&chat_st.freed) == 1);
}

/* A context strategy of one's own: what the context_strategy hook saw,
 * and the history_compacted event the pass made. */
typedef struct {
    int calls;
    double budget, current_turn, first_tokens;
    long messages;
    char compacted[4096];
    atomic_int freed;
} strategy_state;

/* Keeps a summary it writes, then the current turn. */
static void keep_current_turn(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    strategy_state *st = user_data;
    CHECK(jm_valid(json, len));
    st->calls++;
    st->messages = jm_count(json, "messages");
    CHECK(jm_number(json, "budget", &st->budget));
    CHECK(jm_number(json, "current_turn", &st->current_turn));
    CHECK(jm_number(json, "tokens.0", &st->first_tokens));
    char *question = jm_string(json, "messages.8.content");
    char kept[512];
    snprintf(kept, sizeof kept,
             "[{\"role\":\"assistant\",\"content\":\"(four questions before)\"},"
             "{\"role\":\"user\",\"content\":\"%s\"}]",
             question ? question : "");
    free(question);
    char *err = NULL;
    CHECK_STATUS(zoo_hook_result_set_json(result, kept, &err), ZOO_OK, err);
    th_free_string(&err);
}

static void free_strategy(void *user_data) {
    strategy_state *st = user_data;
    atomic_fetch_add(&st->freed, 1);
}

static void record_compacted(chat_ctx *ctx, const char *json) {
    char *type = jm_string(json, "type");
    strategy_state *st = ctx->hook_data;
    if (type && strcmp(type, "history_compacted") == 0) snprintf(st->compacted, sizeof st->compacted, "%s", json);
    free(type);
}

/* The context_strategy hook replaces the config's strategy when the
 * history does not fit (a mock window of 120 tokens: a budget of 90, each
 * question 11 tokens and each echo 12, so the fifth question is the first
 * that does not fit); what it keeps is the history, and
 * the pass is reported as level custom. Its user_data is freed once. */
void test_hooks_context_strategy(void) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_create("{\"provider\":{\"type\":\"mock\"},\"context_size\":120}", &agent, &err),
                   ZOO_OK, err);
    strategy_state st = {0};
    zoo_hooks hooks = {0};
    hooks.context_strategy = keep_current_turn;
    hooks.user_data = &st;
    hooks.free_user_data = free_strategy;
    REQUIRE_STATUS(zoo_agent_set_hooks(agent, &hooks, &err), ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    ctx.event_hook = record_compacted;
    ctx.hook_data = &st;
    const char *questions[] = {"message number 0 with a few words", "message number 1 with a few words",
                               "message number 2 with a few words", "message number 3 with a few words",
                               "message number 4 with a few words"};
    for (int i = 0; i < 5; i++) zoo_string_free(chat(agent, questions[i], &ctx));
    CHECK(st.calls == 1);
    CHECK(st.messages == 9 && st.current_turn == 8);
    CHECK(st.budget == 90 && st.first_tokens == 11);
    CHECK_JSON_STR(st.compacted, "level", "custom");
    double before = 0, after = 0;
    CHECK(jm_number(st.compacted, "tokens_before", &before) && before == 103);
    CHECK(jm_number(st.compacted, "tokens_after", &after) && after == 18);
    CHECK(jm_count(st.compacted, "removed") == 8);
    char *history = NULL;
    if (CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err)) {
        CHECK(jm_count(history, "") == 3);
        CHECK_JSON_STR(history, "0.content", "(four questions before)");
        CHECK_JSON_STR(history, "1.content", "message number 4 with a few words");
        CHECK_JSON_STR(history, "2.content", "echo: message number 4 with a few words");
    }
    zoo_string_free(history);
    chat_ctx_destroy(&ctx);
    CHECK(atomic_load(&st.freed) == 0);
    zoo_agent_free(agent);
    CHECK(atomic_load(&st.freed) == 1);
}
