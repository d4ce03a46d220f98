/*
 * test_hostile.c: the reliability issue's hostile and concurrent cases
 * through the C ABI, on the mock: stops that race chats, a stop while a
 * tool handler blocks, a huge max_tokens, restored histories that would
 * break the next chat, and call ids after a restore. Each checks the exact
 * status and message and that the agent answers afterwards.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json_mini.h"

#define EMPTY_SCHEMA "{\"type\":\"object\",\"properties\":{}}"
#define CALL(name) "\"<tool_call>{\\\"name\\\":\\\"" name "\\\",\\\"arguments\\\":{}}</tool_call>\""

static zoo_agent *mock(const char *replies, uint32_t delay_ms) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(NULL, replies, delay_ms, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return agent;
}

/* Sends `message` and returns the response JSON (caller frees) or NULL. */
static char *chat_ok(zoo_agent *agent, const char *message) {
    char *out = NULL, *err = NULL;
    if (!CHECK_STATUS(zoo_agent_chat(agent, message, NULL, NULL, &out, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    return out;
}

static bool has_text(const char *json, const char *path, const char *want) {
    char *got = jm_string(json, path);
    bool same = got && strcmp(got, want) == 0;
    if (!same) th_note("%s: got \"%s\", want \"%s\"", path, got ? got : "(none)", want);
    free(got);
    return same;
}

static void quick_tool(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)user_data;
    (void)args;
    (void)len;
    zoo_tool_result_set_json(result, "\"done\"", NULL);
}

/* ---- a stop in a loop beside a chatting thread ---- */

typedef struct {
    zoo_agent *agent;
    atomic_int done;
} stopper_ctx;

static void *stop_in_a_loop(void *arg) {
    stopper_ctx *ctx = arg;
    while (!atomic_load(&ctx->done)) zoo_agent_stop(ctx->agent);
    return NULL;
}

void test_hostile_stop_storm(void) {
    /* The case: 167 of 200 chats failed with
     * INVALID_MESSAGE_SEQUENCE before a cancel undid its turn. */
    size_t cap = 200 * 2 * 96 + 8;
    char *replies = malloc(cap);
    size_t n = (size_t)snprintf(replies, cap, "[");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(replies + n, cap - n, "%s" CALL("quick") ", \"A reply of words.\"",
                              i ? "," : "");
    snprintf(replies + n, cap - n, "]");
    zoo_agent *agent = mock(replies, 0);
    free(replies);
    REQUIRE(agent != NULL);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "quick", "q", EMPTY_SCHEMA, quick_tool, NULL,
                                           NULL, &err),
                   ZOO_OK, err);
    stopper_ctx ctx = {.agent = agent};
    atomic_init(&ctx.done, 0);
    pthread_t stopper;
    pthread_create(&stopper, NULL, stop_in_a_loop, &ctx);
    int failed = 0;
    for (int i = 0; i < 200; i++) {
        char *out = NULL;
        zoo_status status = zoo_agent_chat(agent, "question", NULL, NULL, &out, &err);
        if (status != ZOO_OK) {
            if (failed++ == 0) th_note("chat %d: %s: %s", i, zoo_status_str(status), err);
            th_free_string(&err);
        }
        zoo_string_free(out);
    }
    atomic_store(&ctx.done, 1);
    pthread_join(stopper, NULL);
    CHECKF(failed == 0, "%d of 200 chats failed", failed);
    char *out = chat_ok(agent, "still there?");
    /* Replies that stopped chats left unused may come first: any of them
     * ends this chat normally. */
    CHECK(out != NULL && has_text(out, "stop_reason", "stop"));
    zoo_string_free(out);
    zoo_agent_free(agent);
}

/* ---- a stop while a handler blocks ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool released;
    atomic_int started, finished;
} gate;

static void gate_init(gate *g) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->released = false;
    atomic_init(&g->started, 0);
    atomic_init(&g->finished, 0);
}

static void gate_release(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->released = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void gated_tool(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)args;
    (void)len;
    gate *g = user_data;
    atomic_fetch_add(&g->started, 1);
    pthread_mutex_lock(&g->mu);
    while (!g->released) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    zoo_tool_result_set_json(result, "\"released\"", NULL);
    atomic_fetch_add(&g->finished, 1);
}

void test_hostile_stop_during_blocked_tool(void) {
    gate g;
    gate_init(&g);
    zoo_agent *agent = mock("[" CALL("wait") "]", 0);
    REQUIRE(agent != NULL);
    char *err = NULL, *out = NULL;
    REQUIRE_STATUS(
        zoo_agent_register_tool(agent, "wait", "w", EMPTY_SCHEMA, gated_tool, &g, NULL, &err),
        ZOO_OK, err);
    zoo_chat *chat = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "go", NULL, NULL, &chat, &err), ZOO_OK, err);
    REQUIRE(th_wait_int(&g.started, 1, 10000 * th_timeout_scale()));
    CHECK_STATUS(zoo_agent_stop(agent), ZOO_OK, NULL);
    bool done = false;
    /* The promise is ~100 ms; only a chat that waits for the handler
     * (blocked until released below) misses this bound. */
    CHECK_STATUS(zoo_chat_wait(chat, 10000 * th_timeout_scale(), &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    CHECK(atomic_load(&g.finished) == 0);
    if (out) {
        CHECK(has_text(out, "stop_reason", "cancelled"));
        CHECK(has_text(out, "tool_calls.0.error",
                       "the chat was stopped while `wait` was running; its result was discarded"));
    }
    zoo_string_free(out);
    zoo_chat_free(chat);
    gate_release(&g);
    out = chat_ok(agent, "next");
    CHECK(out != NULL && has_text(out, "text", "echo: next"));
    zoo_string_free(out);
    zoo_agent_free(agent);
    /* The agent's free waits for the handler: it has finished by now. */
    CHECK(atomic_load(&g.finished) == 1);
}

/* ---- limits and restored histories ---- */

void test_hostile_huge_max_tokens(void) {
    zoo_agent *agent = mock("[\"fine\"]", 0);
    REQUIRE(agent != NULL);
    char *err = NULL, *out = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "quick", "q", EMPTY_SCHEMA, quick_tool, NULL,
                                           NULL, &err),
                   ZOO_OK, err);
    zoo_chat_options options = {.max_tokens = UINT32_MAX};
    CHECK_STATUS(zoo_agent_chat(agent, "hi", &options, NULL, &out, &err), ZOO_OK, err);
    CHECK(out != NULL && has_text(out, "text", "fine"));
    zoo_string_free(out);
    zoo_agent_free(agent);

    REQUIRE_STATUS(zoo_agent_create_mock("{\"max_tokens\": 4294967295}", "[]", 0, &agent, &err),
                   ZOO_OK, err);
    out = chat_ok(agent, "hello");
    CHECK(out != NULL && has_text(out, "text", "echo: hello"));
    zoo_string_free(out);
    zoo_agent_free(agent);
}

void test_hostile_restored_history(void) {
    zoo_agent *agent = mock("[]", 0);
    REQUIRE(agent != NULL);
    char *err = NULL;
    /* An unanswered user message at the end is taken: the next chat adds
       its message to it. */
    CHECK_STATUS(zoo_agent_set_history_json(
                     agent,
                     "[{\"role\":\"user\",\"content\":\"hi\"},"
                     "{\"role\":\"assistant\",\"content\":\"hello\"},"
                     "{\"role\":\"user\",\"content\":\"unanswered\"}]",
                     &err),
                 ZOO_OK, err);
    char *joined = chat_ok(agent, "and this");
    CHECK(joined != NULL && has_text(joined, "text", "echo: unanswered\n\nand this"));
    zoo_string_free(joined);
    CHECK_STATUS(zoo_agent_clear_history(agent, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_agent_set_history_json(
                     agent,
                     "[{\"role\":\"user\",\"content\":\"hi\"},"
                     "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_1\","
                     "\"name\":\"quick\",\"arguments\":{}}]}]",
                     &err),
                 ZOO_INVALID_MESSAGE_SEQUENCE, err);
    CHECK_STR(err, "invalid message sequence: the history ends with tool call `call_1`, which "
                   "has no result; add its tool message or leave the call out");
    th_free_string(&err);
    char *out = chat_ok(agent, "works");
    CHECK(out != NULL && has_text(out, "text", "echo: works"));
    zoo_string_free(out);
    zoo_agent_free(agent);
}

void test_hostile_call_ids_after_restore(void) {
    zoo_agent *agent = mock("[" CALL("quick") ", \"ok\"]", 0);
    REQUIRE(agent != NULL);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "quick", "q", EMPTY_SCHEMA, quick_tool, NULL,
                                           NULL, &err),
                   ZOO_OK, err);
    REQUIRE_STATUS(
        zoo_agent_set_history_json(
            agent,
            "[{\"role\":\"user\",\"content\":\"hi\"},"
            "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_1\","
            "\"name\":\"quick\",\"arguments\":{}}]},"
            "{\"role\":\"tool\",\"content\":\"done\",\"tool_call_id\":\"call_1\",\"name\":\"quick\"},"
            "{\"role\":\"assistant\",\"content\":\"ok\"}]",
            &err),
        ZOO_OK, err);
    char *out = chat_ok(agent, "again");
    CHECK(out != NULL && has_text(out, "tool_calls.0.id", "call_2"));
    zoo_string_free(out);
    zoo_agent_free(agent);
}
