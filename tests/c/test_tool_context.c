/*
 * test_tool_context.c: tool contexts through the C ABI, on the mock: a
 * handler's call id, progress and updates as events between its call's
 * start and finish, the argument checks of every zoo_tool_context_*
 * function, and the call's cancel token set by the tool's timeout_ms (a
 * report after that is dropped). The shared scenarios cover the stop.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

#define EMPTY_SCHEMA "{\"type\":\"object\"}"
#define CALL(name) "\"<tool_call>{\\\"name\\\":\\\"" name "\\\",\\\"arguments\\\":{}}</tool_call>\""

static zoo_agent *mock(const char *replies) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(NULL, replies, 0, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

/* What the reporting tool saw, checked after the chat. */
typedef struct {
    char call_id[32];
    zoo_status statuses[10];
    bool accepted[2];
    bool cancelled;
    bool waited;
} seen;

static void reporting_tool(void *user_data, const char *args, size_t len,
                           const zoo_tool_context *context, zoo_tool_result *result) {
    (void)args;
    (void)len;
    seen *s = user_data;
    const char *id = NULL;
    s->statuses[0] = zoo_tool_context_call_id(context, &id, NULL);
    if (id) snprintf(s->call_id, sizeof s->call_id, "%s", id);
    s->statuses[1] = zoo_tool_context_is_cancelled(context, &s->cancelled, NULL);
    s->statuses[2] = zoo_tool_context_progress(context, "connecting", &s->accepted[0], NULL);
    s->statuses[3] = zoo_tool_context_update_json(context, "{\"bytes_read\": 5}", &s->accepted[1], NULL);
    /* Bad input: typed statuses, nothing reported. */
    s->statuses[4] = zoo_tool_context_update_json(context, "{not json", NULL, NULL);
    s->statuses[5] = zoo_tool_context_progress(context, "\xff\xfe", NULL, NULL);
    s->statuses[6] = zoo_tool_context_progress(NULL, "x", NULL, NULL);
    s->statuses[7] = zoo_tool_context_is_cancelled(context, NULL, NULL);
    bool cancelled = true;
    s->statuses[8] = zoo_tool_context_wait_cancelled(context, -1, &cancelled, NULL);
    s->statuses[9] = zoo_tool_context_wait_cancelled(context, 0, &s->waited, NULL);
    zoo_tool_result_set_json(result, "{\"status\": 200}", NULL);
}

void test_tool_context_reports_and_arguments(void) {
    zoo_agent *agent = mock("[" CALL("fetch") ", \"Done.\"]");
    REQUIRE(agent);
    seen s;
    memset(&s, 0, sizeof s);
    s.waited = true;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool_with_context(agent, "fetch", "Fetches", EMPTY_SCHEMA, NULL,
                                                        reporting_tool, &s, NULL, &err),
                   ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(&ctx, false);
    char *out = NULL;
    if (CHECK_STATUS(zoo_agent_chat(agent, "Is it up?", NULL, &callbacks, &out, &err), ZOO_OK, err)) {
        CHECK_STR(ctx.events, "chat_started,turn_started,turn_finished,tool_call_started,"
                              "tool_call_progress,tool_call_update,tool_call_finished,"
                              "turn_started,turn_finished,chat_finished");
        double status = 0;
        CHECK(jm_number(out, "tool_calls.0.result.status", &status) && status == 200);
    }
    zoo_string_free(out);
    CHECK_STR(s.call_id, "call_1");
    zoo_status want[10] = {ZOO_OK,
                           ZOO_OK,
                           ZOO_OK,
                           ZOO_OK,
                           ZOO_INVALID_JSON,
                           ZOO_INVALID_ARGUMENT,
                           ZOO_INVALID_ARGUMENT,
                           ZOO_INVALID_ARGUMENT,
                           ZOO_INVALID_ARGUMENT,
                           ZOO_OK};
    for (int i = 0; i < 10; i++) CHECKF(s.statuses[i] == want[i], "call %d: status %d", i, s.statuses[i]);
    CHECK(!s.cancelled);
    CHECK(s.accepted[0] && s.accepted[1]);
    CHECK(!s.waited);
    chat_ctx_destroy(&ctx);

    /* A NULL handler is refused, and its user_data freed once. */
    atomic_int freed = 0;
    CHECK_STATUS(zoo_agent_register_tool_with_context(agent, "t", "d", EMPTY_SCHEMA, NULL, NULL,
                                                      &freed, th_count_free, &err),
                 ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: the handler of tool `t` must be a function, got NULL");
    th_free_string(&err);
    CHECK(atomic_load(&freed) == 1);
    char *call_id_err = NULL;
    CHECK_STATUS(zoo_tool_context_call_id(NULL, NULL, &call_id_err), ZOO_INVALID_ARGUMENT, call_id_err);
    CHECK_ERROR_MESSAGE(call_id_err);
    zoo_agent_free(agent);
}

/* What the waiting tool saw once its token was set. */
typedef struct {
    atomic_int done;
    atomic_int cancelled;
    atomic_int late_accepted;
} waiter;

static void waiting_tool(void *user_data, const char *args, size_t len,
                         const zoo_tool_context *context, zoo_tool_result *result) {
    (void)args;
    (void)len;
    waiter *w = user_data;
    bool cancelled = false, accepted = true;
    zoo_tool_context_progress(context, "waiting", NULL, NULL);
    zoo_tool_context_wait_cancelled(context, 30000, &cancelled, NULL);
    zoo_tool_context_progress(context, "too late", &accepted, NULL);
    atomic_store(&w->cancelled, cancelled);
    atomic_store(&w->late_accepted, accepted);
    zoo_tool_result_set_json(result, "\"ignored\"", NULL);
    atomic_store(&w->done, 1);
}

void test_tool_context_timeout_sets_token(void) {
    zoo_agent *agent = mock("[" CALL("slow") ", \"Gave up.\"]");
    REQUIRE(agent);
    waiter w = {0, 0, 1};
    zoo_tool_options options = {0};
    options.timeout_ms = 1000;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool_with_context(agent, "slow", "Waits", EMPTY_SCHEMA, &options,
                                                        waiting_tool, &w, NULL, &err),
                   ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(&ctx, false);
    char *out = NULL;
    if (CHECK_STATUS(zoo_agent_chat(agent, "Go", NULL, &callbacks, &out, &err), ZOO_OK, err)) {
        char *error = jm_string(out, "tool_calls.0.error");
        CHECK_STR(error, "tool `slow` failed: it did not finish within 1000 ms");
        free(error);
        /* "too late" never became an event. */
        CHECK_STR(ctx.events, "chat_started,turn_started,turn_finished,tool_call_started,"
                              "tool_call_progress,tool_call_finished,tool_error,turn_started,"
                              "turn_finished,chat_finished");
    }
    zoo_string_free(out);
    CHECK(th_wait_int(&w.done, 1, 30000));
    CHECK(atomic_load(&w.cancelled) == 1);
    CHECK(atomic_load(&w.late_accepted) == 0);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}
