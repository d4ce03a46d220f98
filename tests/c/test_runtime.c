/*
 * test_runtime.c: the agent runtime through the C ABI, on the mock:
 * steering from another thread while a tool runs, follow-ups, per-chat
 * limits in zoo_chat_options, the agent id on events, and the argument
 * checks of the new functions. The shared scenarios cover the same
 * behaviour as data; these add what only C can do (threads, NULLs).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

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

/* ---- a steer sent from a thread of its own while a tool runs ---- */

static void *steer_thread(void *agent) {
    zoo_agent_steer(agent, "Use Celsius.", NULL);
    return NULL;
}

static void steering_tool(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)args;
    (void)len;
    pthread_t thread;
    pthread_create(&thread, NULL, steer_thread, user_data);
    pthread_join(thread, NULL);
    zoo_tool_result_set_json(result, "\"found\"", NULL);
}

void test_runtime_steer_from_a_thread(void) {
    zoo_agent *agent = mock("[\"<tool_call>{\\\"name\\\":\\\"search\\\",\\\"arguments\\\":{}}</tool_call>"
                            "<tool_call>{\\\"name\\\":\\\"search\\\",\\\"arguments\\\":{}}</tool_call>\", "
                            "\"It is 21 C.\"]");
    REQUIRE(agent);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "search", "Searches", "{\"type\":\"object\"}",
                                           steering_tool, agent, NULL, &err),
                   ZOO_OK, err);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(&ctx, false);
    char *out = NULL;
    if (CHECK_STATUS(zoo_agent_chat(agent, "Weather?", NULL, &callbacks, &out, &err), ZOO_OK, err)) {
        char *text = jm_string(out, "text");
        CHECK_STR(text, "It is 21 C.");
        free(text);
        CHECK_STR(ctx.events, "chat_started,turn_started,turn_finished,tool_call_started,"
                              "tool_call_finished,steering_received,turn_started,turn_finished,"
                              "chat_finished");
    }
    zoo_string_free(out);
    char *history = NULL;
    if (CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err)) {
        char *skipped = jm_string(history, "3.content");
        CHECK_STR(skipped, "Not executed: the user sent a new message before it ran.");
        char *steered = jm_string(history, "4.content");
        CHECK_STR(steered, "Use Celsius.");
        free(skipped);
        free(steered);
    }
    zoo_string_free(history);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}

/* ---- follow-ups, clear_queues, per-chat limits ---- */

static void quiet_tool(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)user_data;
    (void)args;
    (void)len;
    zoo_tool_result_set_json(result, "\"done\"", NULL);
}

void test_runtime_follow_up_and_limits(void) {
    zoo_agent *agent = mock("[\"Sunny.\", \"Rainy tomorrow.\", " CALL("nothing") "]");
    REQUIRE(agent);
    char *err = NULL, *out = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "nothing", "Does nothing", "{\"type\":\"object\"}",
                                           quiet_tool, NULL, NULL, &err),
                   ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_follow_up(agent, "And tomorrow?", &err), ZOO_OK, err);
    if (CHECK_STATUS(zoo_agent_chat(agent, "Today?", NULL, NULL, &out, &err), ZOO_OK, err)) {
        char *text = jm_string(out, "text");
        CHECK_STR(text, "Rainy tomorrow.");
        free(text);
        double n = 0;
        CHECK(jm_number(out, "metrics.iterations", &n) && n == 2);
    }
    zoo_string_free(out);
    out = NULL;
    /* A dropped follow-up never runs. */
    REQUIRE_STATUS(zoo_agent_follow_up(agent, "Dropped", &err), ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_clear_queues(agent), ZOO_OK, NULL);
    /* One reply allowed: its call is answered, then the limit ends the chat. */
    zoo_chat_options options = {0};
    options.max_turns = 1;
    if (CHECK_STATUS(zoo_agent_chat(agent, "Go", &options, NULL, &out, &err), ZOO_OK, err)) {
        char *stop = jm_string(out, "stop_reason");
        CHECK_STR(stop, "limit");
        free(stop);
    }
    zoo_string_free(out);
    zoo_agent_free(agent);
}

/* ---- ids and arguments ---- */

void test_runtime_ids_and_arguments(void) {
    zoo_agent *first = mock("[]"), *second = mock("[]");
    REQUIRE(first && second);
    uint64_t a = 0, b = 0;
    CHECK_STATUS(zoo_agent_id(first, &a), ZOO_OK, NULL);
    CHECK_STATUS(zoo_agent_id(second, &b), ZOO_OK, NULL);
    CHECK(a > 0 && b > 0 && a != b);
    CHECK_STATUS(zoo_agent_id(NULL, &a), ZOO_INVALID_ARGUMENT, NULL);
    CHECK_STATUS(zoo_agent_id(first, NULL), ZOO_INVALID_ARGUMENT, NULL);

    char *err = NULL;
    CHECK_STATUS(zoo_agent_steer(NULL, "x", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: `agent` is NULL");
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_follow_up(first, NULL, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: `text` is NULL");
    th_free_string(&err);
    CHECK_STATUS(zoo_agent_steer(first, "\xff\xfe", &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_agent_clear_queues(NULL), ZOO_INVALID_ARGUMENT, NULL);

    /* Every event of a chat carries the agent's id and the chat's. */
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks callbacks = chat_ctx_callbacks(&ctx, false);
    char *out = NULL;
    CHECK_STATUS(zoo_agent_chat(first, "hi", NULL, &callbacks, &out, &err), ZOO_OK, err);
    CHECK(ctx.events_valid);
    zoo_string_free(out);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(first);
    zoo_agent_free(second);
}
