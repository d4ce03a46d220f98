/*
 * test_mock.c: the blocking chat on the mock backend: responses, streaming,
 * events, tools written in C, options, history and the system prompt.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

static zoo_agent *mock_agent_with(const char *config, const char *replies, uint32_t delay_ms) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(config, replies, delay_ms, &agent, &err), ZOO_OK,
                      err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

/* Chats and returns the response JSON (NULL on failure, recorded). */
static char *chat_ok(zoo_agent *agent, const char *message, const zoo_chat_options *opts,
                     const zoo_chat_callbacks *cb) {
    char *out = NULL, *err = NULL;
    if (!CHECK_STATUS(zoo_agent_chat(agent, message, opts, cb, &out, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    CHECKF(out && jm_valid(out, strlen(out)), "response is not JSON: %s", out ? out : "(null)");
    return out;
}

/* Checks the string at `path` of `json`. */
static bool check_json_str(const char *json, const char *path, const char *want, int line) {
    char *got = jm_string(json, path);
    bool ok = th_check_str(got, want, path, __FILE__, line);
    if (!ok) th_note("in %s", json ? json : "(null)");
    free(got);
    return ok;
}
#define CHECK_JSON_STR(json, path, want) check_json_str((json), (path), (want), __LINE__)

void test_mock_chat_response(void) {
    zoo_agent *agent = mock_agent_with(NULL, "[\"Hello there, world.\"]", 0);
    REQUIRE(agent != NULL);
    char *out = chat_ok(agent, "hi", NULL, NULL);
    REQUIRE(out != NULL);
    /* Every documented field of the response is there. */
    CHECK_JSON_STR(out, "text", "Hello there, world.");
    CHECK_JSON_STR(out, "stop_reason", "stop");
    CHECK(jm_count(out, "tool_calls") == 0);
    CHECK(jm_count(out, "tool_errors") == 0);
    double n = 0;
    CHECK(jm_number(out, "usage.prompt_tokens", &n) && n > 0);
    CHECK(jm_number(out, "usage.completion_tokens", &n) && n == 3);
    CHECK(jm_number(out, "usage.total_tokens", &n));
    CHECK(jm_number(out, "usage.cached_tokens", &n));
    CHECK(jm_number(out, "metrics.total_ms", &n) && n >= 0);
    CHECK(jm_number(out, "metrics.iterations", &n) && n == 1);
    zoo_string_free(out);

    /* After the script, the mock echoes; a message with quotes, a newline
     * and non-ASCII text survives the round trip through JSON. */
    const char *msg = "say \"caf\xc3\xa9\"\nplease \xe2\x9c\x93";
    out = chat_ok(agent, msg, NULL, NULL);
    REQUIRE(out != NULL);
    char want[128];
    snprintf(want, sizeof want, "echo: %s", msg);
    CHECK_JSON_STR(out, "text", want);
    zoo_string_free(out);
    zoo_agent_free(agent);
}

/* Reasoning (<think>...</think>) streams through on_thinking, never
 * through on_token, and is the response's `thinking`. */
static void append_thinking(void *user_data, const char *text, size_t len) {
    char *buf = user_data;
    size_t used = strlen(buf);
    if (used + len < 256) {
        memcpy(buf + used, text, len);
        buf[used + len] = '\0';
    }
}

static void append_token(void *user_data, const char *text, size_t len) {
    append_thinking((char *)user_data + 256, text, len);
}

void test_mock_thinking(void) {
    zoo_agent *agent = mock_agent_with(
        NULL, "[\"<think>Two plus two is four.</think>\\n\\nThe answer is 4.\"]", 0);
    REQUIRE(agent != NULL);
    char bufs[512] = {0}; /* thinking, then text at +256 */
    zoo_chat_callbacks cb = {0};
    cb.on_thinking = append_thinking;
    cb.on_token = append_token;
    cb.user_data = bufs;
    char *out = chat_ok(agent, "2+2?", NULL, &cb);
    REQUIRE(out != NULL);
    CHECK_JSON_STR(out, "text", "The answer is 4.");
    CHECK_JSON_STR(out, "thinking", "Two plus two is four.");
    CHECK_STR(bufs, "Two plus two is four.");
    CHECKF(strstr(bufs + 256, "think") == NULL && strstr(bufs + 256, "The answer is 4.") != NULL,
           "streamed text: %s", bufs + 256);
    zoo_string_free(out);
    char *history = NULL, *err = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECKF(history && strstr(history, "\"thinking\":\"Two plus two is four.\""), "history: %s",
           history ? history : "(null)");
    zoo_string_free(history);
    th_free_string(&err);
    zoo_agent_free(agent);
}

/* The concatenated token callbacks equal the response's text, and events
 * arrive as JSON with a type. */
void test_mock_streaming(void) {
    const char *reply = "Streaming works,  piece by piece\n\twith \xc3\xa9l\xc3\xa8ve "
                        "text and \xf0\x9f\xa6\x93 emoji.";
    char replies[256];
    snprintf(replies, sizeof replies, "[\"%s\"]", "Streaming works,  piece by piece\\n\\twith "
                                                  "\xc3\xa9l\xc3\xa8ve text and "
                                                  "\xf0\x9f\xa6\x93 emoji.");
    zoo_agent *agent = mock_agent_with(NULL, replies, 0);
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    char *out = chat_ok(agent, "stream please", NULL, &cb);
    REQUIRE(out != NULL);
    char *text = jm_string(out, "text");
    CHECK_STR(text, reply);
    CHECK_STR(chat_ctx_stream(&ctx), text);
    CHECKF(atomic_load(&ctx.tokens) == 11, "%d token callbacks", atomic_load(&ctx.tokens));
    CHECK(atomic_load(&ctx.bad_pieces) == 0);
    CHECK(ctx.events_valid);
    CHECK_STR(ctx.events, "chat_started,turn_started,turn_finished,chat_finished");
    /* free_user_data ran before zoo_agent_chat returned. */
    CHECK(atomic_load(&ctx.freed) == 1);
    free(text);
    zoo_string_free(out);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}

/* ---- tools written in C ---- */

typedef struct {
    atomic_int calls;
    atomic_int freed;  /* free_user_data calls */
    char city[64];
    bool args_ok; /* NUL-terminated at len, valid JSON, "city" a string */
    const char *mode;  /* "json", "error", "none", "invalid" */
} weather_state;

static const char *WEATHER_SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
    "\"required\":[\"city\"],\"additionalProperties\":false}";

static void weather_tool(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    weather_state *st = user_data;
    atomic_fetch_add(&st->calls, 1);
    char *city = jm_string(args, "city");
    st->args_ok = args[len] == '\0' && strlen(args) == len && jm_valid(args, len) && city;
    snprintf(st->city, sizeof st->city, "%s", city ? city : "");
    free(city);
    char *err = NULL;
    if (strcmp(st->mode, "error") == 0) {
        CHECK_STATUS(zoo_tool_result_set_error(result, "weather service unavailable", &err),
                     ZOO_OK, err);
    } else if (strcmp(st->mode, "invalid") == 0) {
        /* A bad JSON result is refused; the earlier result stays. */
        CHECK_STATUS(zoo_tool_result_set_json(result, "{\"sky\":\"clear\"}", &err), ZOO_OK, err);
        CHECK_STATUS(zoo_tool_result_set_json(result, "{sky: clear", &err), ZOO_INVALID_JSON,
                     err);
        CHECK_ERROR_MESSAGE(err);
        CHECK_STATUS(zoo_tool_result_set_json(result, NULL, &err), ZOO_INVALID_ARGUMENT, err);
        CHECK_ERROR_MESSAGE(err);
        CHECK_STATUS(zoo_tool_result_set_error(result, NULL, &err), ZOO_INVALID_ARGUMENT, err);
        CHECK_ERROR_MESSAGE(err);
        CHECK_STATUS(zoo_tool_result_set_error(result, "\xff", &err), ZOO_INVALID_ARGUMENT, err);
        CHECK_ERROR_MESSAGE(err);
    } else if (strcmp(st->mode, "json") == 0) {
        /* A later call replaces an earlier one. */
        CHECK_STATUS(zoo_tool_result_set_error(result, "replaced below", &err), ZOO_OK, err);
        CHECK_STATUS(
            zoo_tool_result_set_json(result, "{\"temperature_celsius\":17,\"sky\":\"cloudy\"}",
                                     &err),
            ZOO_OK, err);
    }
    /* "none": returns without a result, which is a tool error. */
}

static void weather_free(void *user_data) {
    weather_state *st = user_data;
    atomic_fetch_add(&st->freed, 1);
}

static void weather_init(weather_state *st, const char *mode) {
    memset(st, 0, sizeof *st);
    atomic_init(&st->calls, 0);
    atomic_init(&st->freed, 0);
    st->mode = mode;
}

static zoo_agent *weather_agent(const char *replies, weather_state *st) {
    zoo_agent *agent = mock_agent_with(NULL, replies, 0);
    if (!agent) return NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_register_tool(agent, "get_weather", "Current weather for a city",
                                              WEATHER_SCHEMA, weather_tool, st, weather_free,
                                              &err),
                      ZOO_OK, err)) {
        th_free_string(&err);
    }
    return agent;
}

#define CALL_PARIS                                                                            \
    "\"<tool_call>{\\\"name\\\":\\\"get_weather\\\",\\\"arguments\\\":{\\\"city\\\":"       \
    "\\\"Paris\\\"}}</tool_call>\""

void test_mock_tool_call(void) {
    weather_state st;
    weather_init(&st, "json");
    zoo_agent *agent = weather_agent("[" CALL_PARIS ", \"It is 17 degrees in Paris.\"]", &st);
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    char *out = chat_ok(agent, "Weather in Paris?", NULL, &cb);
    REQUIRE(out != NULL);
    CHECK(atomic_load(&st.calls) == 1);
    CHECK(st.args_ok);
    CHECK_STR(st.city, "Paris");
    CHECK_JSON_STR(out, "text", "It is 17 degrees in Paris.");
    CHECK_JSON_STR(out, "stop_reason", "stop");
    CHECK(jm_count(out, "tool_calls") == 1);
    CHECK_JSON_STR(out, "tool_calls.0.name", "get_weather");
    CHECK_JSON_STR(out, "tool_calls.0.arguments.city", "Paris");
    CHECK_JSON_STR(out, "tool_calls.0.result.sky", "cloudy");
    double n = 0;
    CHECK(jm_number(out, "tool_calls.0.result.temperature_celsius", &n) && n == 17);
    CHECK(jm_at(out, "tool_calls.0.error", NULL) == NULL);
    CHECK(jm_count(out, "tool_errors") == 0);
    CHECK(jm_number(out, "metrics.iterations", &n) && n == 2);
    /* The markup of the call is not streamed; the stream is the answer. */
    CHECK_STR(chat_ctx_stream(&ctx), "It is 17 degrees in Paris.");
    CHECK_STR(ctx.events,
              "chat_started,turn_started,turn_finished,tool_call_started,tool_call_finished,"
              "turn_started,turn_finished,chat_finished");
    zoo_string_free(out);

    /* The history holds the call and its result. */
    char *history = NULL, *err = NULL;
    REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK(jm_count(history, "") == 4);
    CHECK_JSON_STR(history, "1.role", "assistant");
    CHECK_JSON_STR(history, "1.tool_calls.0.name", "get_weather");
    CHECK_JSON_STR(history, "2.role", "tool");
    CHECK_JSON_STR(history, "2.name", "get_weather");
    char *call_id = jm_string(history, "1.tool_calls.0.id");
    CHECK_JSON_STR(history, "2.tool_call_id", call_id);
    free(call_id);
    zoo_string_free(history);

    chat_ctx_destroy(&ctx);
    CHECK(atomic_load(&st.freed) == 0);
    zoo_agent_free(agent);
    CHECK(atomic_load(&st.freed) == 1);
}

/* A handler's error, a missing result and a refused JSON result are tool
 * errors reported in the response, not chat failures. */
void test_mock_tool_errors(void) {
    const char *modes[] = {"error", "none", "invalid"};
    for (size_t i = 0; i < 3; i++) {
        weather_state st;
        weather_init(&st, modes[i]);
        zoo_agent *agent = weather_agent("[" CALL_PARIS ", \"Sorry, no weather today.\"]", &st);
        REQUIRE(agent != NULL);
        char *out = chat_ok(agent, "Weather in Paris?", NULL, NULL);
        REQUIRE(out != NULL);
        CHECK(atomic_load(&st.calls) == 1);
        CHECK_JSON_STR(out, "text", "Sorry, no weather today.");
        CHECK_JSON_STR(out, "stop_reason", "stop");
        if (strcmp(modes[i], "invalid") == 0) {
            /* The valid result set before the refused one was kept. */
            CHECK(jm_count(out, "tool_errors") == 0);
            CHECK_JSON_STR(out, "tool_calls.0.result.sky", "clear");
        } else {
            CHECKF(jm_count(out, "tool_errors") == 1, "mode %s: %s", modes[i], out);
            CHECK_JSON_STR(out, "tool_errors.0.kind", "tool_handler_failed");
            CHECK_JSON_STR(out, "tool_errors.0.tool", "get_weather");
            char *message = jm_string(out, "tool_errors.0.message");
            CHECKF(message && strlen(message) > 0, "mode %s: empty message", modes[i]);
            if (strcmp(modes[i], "error") == 0) {
                CHECKF(message && strstr(message, "weather service unavailable"), "message: %s",
                       message ? message : "(null)");
            }
            free(message);
            char *err = NULL, *history = NULL;
            CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
            CHECK(jm_is(history, "2.is_error", "true"));
            zoo_string_free(history);
        }
        zoo_string_free(out);
        zoo_agent_free(agent);
        CHECK(atomic_load(&st.freed) == 1);
    }
}

/* Arguments that break the schema never reach the handler; the model is
 * told and its corrected call goes through. */
void test_mock_tool_validation(void) {
    weather_state st;
    weather_init(&st, "json");
    zoo_agent *agent = weather_agent(
        "[\"<tool_call>{\\\"name\\\":\\\"get_weather\\\",\\\"arguments\\\":{\\\"town\\\":1}}"
        "</tool_call>\", \"<tool_call>{\\\"name\\\":\\\"get_wether\\\",\\\"arguments\\\":{}}"
        "</tool_call>\", " CALL_PARIS ", \"Done.\"]",
        &st);
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    char *out = chat_ok(agent, "Weather in Paris?", NULL, &cb);
    REQUIRE(out != NULL);
    CHECK(atomic_load(&st.calls) == 1);
    CHECK_STR(st.city, "Paris");
    CHECK_JSON_STR(out, "text", "Done.");
    /* Each error was also an event. */
    CHECKF(strstr(ctx.events, "tool_error") != NULL, "events: %s", ctx.events);
    chat_ctx_destroy(&ctx);
    CHECKF(jm_count(out, "tool_errors") == 2, "%s", out);
    CHECK_JSON_STR(out, "tool_errors.0.kind", "tool_validation_failed");
    CHECK_JSON_STR(out, "tool_errors.1.kind", "tool_not_found");
    CHECK(jm_count(out, "tool_calls") == 3);
    zoo_string_free(out);
    zoo_agent_free(agent);
}

/* Replacing, unregistering and freeing: each user_data is freed exactly
 * once, at the documented moment. */
void test_mock_tool_lifecycle(void) {
    zoo_agent *agent = mock_agent_with(NULL, NULL, 0);
    REQUIRE(agent != NULL);
    weather_state a, b, c;
    weather_init(&a, "json");
    weather_init(&b, "json");
    weather_init(&c, "json");
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "get_weather", "v1", WEATHER_SCHEMA,
                                           weather_tool, &a, weather_free, &err),
                   ZOO_OK, err);
    /* Replacing a tool releases the old user_data. */
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "get_weather", "v2", WEATHER_SCHEMA,
                                           weather_tool, &b, weather_free, &err),
                   ZOO_OK, err);
    CHECK(atomic_load(&a.freed) == 1);
    CHECK(atomic_load(&b.freed) == 0);
    /* An empty description and the loosest object schema are accepted. */
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "other-tool_2", "", "{\"type\":\"object\"}",
                                           weather_tool, &c, weather_free, &err),
                   ZOO_OK, err);
    /* A NULL free_user_data is allowed. */
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "no_free", "d", "{}", weather_tool, NULL, NULL,
                                           &err),
                   ZOO_OK, err);

    bool removed = false;
    CHECK_STATUS(zoo_agent_unregister_tool(agent, "get_weather", &removed, &err), ZOO_OK, err);
    CHECK(removed);
    CHECK(atomic_load(&b.freed) == 1);
    removed = true;
    CHECK_STATUS(zoo_agent_unregister_tool(agent, "get_weather", &removed, &err), ZOO_OK, err);
    CHECK(!removed);
    CHECK_STATUS(zoo_agent_unregister_tool(agent, "never_registered", NULL, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_agent_unregister_tool(agent, "no_free", NULL, &err), ZOO_OK, err);
    CHECK(atomic_load(&a.freed) == 1 && atomic_load(&b.freed) == 1);

    /* Freeing the agent releases the tools still registered. */
    CHECK(atomic_load(&c.freed) == 0);
    zoo_agent_free(agent);
    CHECK(atomic_load(&c.freed) == 1);
    CHECK(atomic_load(&a.freed) == 1 && atomic_load(&b.freed) == 1);
    CHECK(atomic_load(&a.calls) + atomic_load(&b.calls) + atomic_load(&c.calls) == 0);
}

/* Options: max_tokens, rag_context, tool choice none/named/required. */
void test_mock_options(void) {
    zoo_agent *agent = mock_agent_with(NULL, "[\"one two three four five\"]", 0);
    REQUIRE(agent != NULL);
    zoo_chat_options opts = {0};
    opts.max_tokens = 2;
    char *out = chat_ok(agent, "count", &opts, NULL);
    REQUIRE(out != NULL);
    CHECK_JSON_STR(out, "text", "one two");
    CHECK_JSON_STR(out, "stop_reason", "length");
    zoo_string_free(out);

    /* rag_context is shown for this turn only, never stored. */
    memset(&opts, 0, sizeof opts);
    opts.rag_context = "The sky is green here.";
    out = chat_ok(agent, "What colour is the sky?", &opts, NULL);
    REQUIRE(out != NULL);
    char *text = jm_string(out, "text");
    CHECKF(text && strstr(text, "The sky is green here.") && strstr(text, "What colour"),
           "the mock echoes the prompt it saw: %s", text ? text : "(null)");
    free(text);
    zoo_string_free(out);
    char *history = NULL, *err = NULL;
    REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK_JSON_STR(history, "2.role", "user");
    CHECK_JSON_STR(history, "2.content", "What colour is the sky?");
    zoo_string_free(history);
    zoo_agent_free(agent);

    /* NAMED with a registered tool, REQUIRED and NONE reach the engine. */
    weather_state st;
    weather_init(&st, "json");
    agent = weather_agent("[" CALL_PARIS ", \"Named done.\", " CALL_PARIS ", \"Required done.\", "
                          "\"No tools.\"]",
                          &st);
    REQUIRE(agent != NULL);
    memset(&opts, 0, sizeof opts);
    opts.tool_choice = ZOO_TOOL_CHOICE_NAMED;
    opts.tool_name = "get_weather";
    out = chat_ok(agent, "a", &opts, NULL);
    CHECK_JSON_STR(out, "text", "Named done.");
    zoo_string_free(out);
    opts.tool_choice = ZOO_TOOL_CHOICE_REQUIRED;
    out = chat_ok(agent, "b", &opts, NULL);
    CHECK_JSON_STR(out, "text", "Required done.");
    zoo_string_free(out);
    opts.tool_choice = ZOO_TOOL_CHOICE_NONE;
    out = chat_ok(agent, "c", &opts, NULL);
    CHECK_JSON_STR(out, "text", "No tools.");
    CHECK(jm_count(out, "tool_calls") == 0);
    zoo_string_free(out);
    opts.tool_choice = ZOO_TOOL_CHOICE_AUTO;
    out = chat_ok(agent, "d", &opts, NULL);
    CHECK_JSON_STR(out, "text", "echo: d");
    zoo_string_free(out);
    CHECK(atomic_load(&st.calls) == 2);
    zoo_agent_free(agent);
}

/* The history once `check` holds for it, or after 10 s (times the scale).
 * Only for a change made from inside a callback: that one is queued behind
 * the running chat and applies after it. A change made elsewhere is
 * visible when its call returns (test history_visible_on_return). */
static char *history_where(zoo_agent *agent, bool (*check)(const char *history, const void *arg),
                           const void *arg) {
    char *history = NULL, *err = NULL;
    int64_t deadline = th_now_ms() + 10000 * (int64_t)th_timeout_scale();
    for (;;) {
        zoo_string_free(history);
        history = NULL;
        if (!CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err)) {
            th_free_string(&err);
            return NULL;
        }
        if (check(history, arg) || th_now_ms() > deadline) break;
        th_sleep_ms(1);
    }
    return history;
}

/* The history now. */
static char *history_now(zoo_agent *agent) {
    char *history = NULL, *err = NULL;
    if (!CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return history;
}

static bool first_content_is(const char *history, const void *want) {
    char *got = jm_string(history, "0.content");
    bool ok = got && strcmp(got, (const char *)want) == 0;
    free(got);
    return ok;
}

/* History: JSON export, clear, system prompt, restore. */
void test_mock_history(void) {
    zoo_agent *agent =
        mock_agent_with("{\"system_prompt\": \"You are terse.\"}", "[\"Hi.\", \"Bye.\"]", 0);
    REQUIRE(agent != NULL);
    char *err = NULL, *history = NULL;
    REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK(jm_count(history, "") == 1);
    CHECK_JSON_STR(history, "0.role", "system");
    CHECK_JSON_STR(history, "0.content", "You are terse.");
    zoo_string_free(history);

    char *out = chat_ok(agent, "Hello", NULL, NULL);
    zoo_string_free(out);
    REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK(jm_count(history, "") == 3);
    CHECK_JSON_STR(history, "1.role", "user");
    CHECK_JSON_STR(history, "1.content", "Hello");
    CHECK_JSON_STR(history, "2.role", "assistant");
    CHECK_JSON_STR(history, "2.content", "Hi.");
    char *saved = history;

    /* A new system prompt replaces the old one, the turns stay. */
    CHECK_STATUS(zoo_agent_set_system_prompt(agent, "You are verbose.", &err), ZOO_OK, err);
    history = history_now(agent);
    CHECK(jm_count(history, "") == 3);
    CHECK_JSON_STR(history, "0.role", "system");
    CHECK_JSON_STR(history, "0.content", "You are verbose.");
    zoo_string_free(history);

    /* clear keeps the system prompt. */
    CHECK_STATUS(zoo_agent_clear_history(agent, &err), ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK(jm_count(history, "") == 1);
    CHECK_JSON_STR(history, "0.content", "You are verbose.");
    zoo_string_free(history);

    /* NULL removes the prompt. */
    CHECK_STATUS(zoo_agent_set_system_prompt(agent, NULL, &err), ZOO_OK, err);
    history = history_now(agent);
    CHECK_STR(history, "[]");
    zoo_string_free(history);

    /* Restoring the saved conversation gives it back exactly. */
    CHECK_STATUS(zoo_agent_set_history_json(agent, saved, &err), ZOO_OK, err);
    history = history_now(agent);
    CHECK_STR(history, saved);
    zoo_string_free(history);
    out = chat_ok(agent, "Goodbye", NULL, NULL);
    CHECK_JSON_STR(out, "text", "Bye.");
    zoo_string_free(out);
    REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK(jm_count(history, "") == 5);
    CHECK_JSON_STR(history, "0.content", "You are terse.");
    CHECK_JSON_STR(history, "3.content", "Goodbye");
    zoo_string_free(history);

    /* An empty array clears everything, system prompt included. */
    CHECK_STATUS(zoo_agent_set_history_json(agent, "[]", &err), ZOO_OK, err);
    history = history_now(agent);
    CHECK_STR(history, "[]");
    zoo_string_free(history);
    zoo_string_free(saved);
    zoo_agent_free(agent);
}

/* Callbacks that call back into the agent: a blocking chat from inside is
 * refused (it would wait for itself); set_system_prompt and history are
 * fine and do not block. */
typedef struct {
    zoo_agent *agent;
    zoo_status nested_chat;
    zoo_status nested_prompt;
    zoo_status nested_history;
    bool ran;
} reentry_state;

static void reentry_hook(chat_ctx *ctx, const char *text, size_t len) {
    (void)text;
    (void)len;
    reentry_state *st = ctx->hook_data;
    if (st->ran) return;
    st->ran = true;
    char *out = NULL, *err = NULL;
    st->nested_chat = zoo_agent_chat(st->agent, "nested", NULL, NULL, &out, &err);
    zoo_string_free(out);
    zoo_string_free(err);
    st->nested_prompt = zoo_agent_set_system_prompt(st->agent, "Set from a callback.", NULL);
    st->nested_history = zoo_agent_history_json(st->agent, &out, NULL);
    zoo_string_free(out);
}

void test_mock_reentrant_callbacks(void) {
    zoo_agent *agent = mock_agent_with(NULL, "[\"one two\"]", 0);
    REQUIRE(agent != NULL);
    reentry_state st = {.agent = agent};
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    ctx.token_hook = reentry_hook;
    ctx.hook_data = &st;
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    char *out = chat_ok(agent, "hi", NULL, &cb);
    CHECK_JSON_STR(out, "text", "one two");
    zoo_string_free(out);
    CHECK(st.ran);
    CHECK(st.nested_chat == ZOO_INVALID_ARGUMENT);
    CHECK(st.nested_prompt == ZOO_OK);
    CHECK(st.nested_history == ZOO_OK);
    /* The prompt set from the callback is queued behind that chat, so it
     * applies shortly after zoo_agent_chat returns. */
    char *history = history_where(agent, first_content_is, "Set from a callback.");
    CHECK_JSON_STR(history, "0.role", "system");
    CHECK_JSON_STR(history, "0.content", "Set from a callback.");
    zoo_string_free(history);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}

/* A conversation longer than the context window is pruned, oldest turns
 * first, with a history_compacted event (the mock's window is 4096 tokens,
 * one token per word). */
void test_mock_history_pruned_event(void) {
    size_t words = 1500, cap = words * 6 * 4 + 64;
    char *replies = malloc(cap);
    size_t n = (size_t)snprintf(replies, cap, "[");
    for (int r = 0; r < 4; r++) {
        n += (size_t)snprintf(replies + n, cap - n, "%s\"", r ? "," : "");
        for (size_t i = 0; i < words; i++) n += (size_t)snprintf(replies + n, cap - n, "r%d ", r);
        n += (size_t)snprintf(replies + n, cap - n, "\"");
    }
    snprintf(replies + n, cap - n, "]");
    zoo_agent *agent = mock_agent_with(NULL, replies, 0);
    free(replies);
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    /* Four turns of about 1500 tokens: the fourth cannot fit the window
     * with the three before it and room for its reply. */
    for (int turn = 0; turn < 4; turn++) {
        zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
        char *out = chat_ok(agent, "more", NULL, &cb);
        zoo_string_free(out);
    }
    CHECKF(strstr(ctx.events, "history_compacted") != NULL, "events: %s", ctx.events);
    char *history = NULL, *err = NULL;
    REQUIRE_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    /* The first turn went; the last one stayed. */
    CHECKF(strstr(history, "r0 ") == NULL && strstr(history, "r3 ") != NULL, "%.200s", history);
    zoo_string_free(history);
    CHECK(atomic_load(&ctx.freed) == 4);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}
