/*
 * test_async.c: asynchronous chats on the mock (with a per-word delay so
 * that a chat is still running when the test acts on it): wait with a
 * timeout, poll, cancel, zoo_agent_stop from another thread, freeing the
 * agent while chats run and from inside on_complete, and the exactly-once
 * rule for the chat callbacks' free_user_data.
 *
 * No test relies on timing: where a test needs a chat still running, its
 * on_token waits at a gate that the test opens when it is done looking, or
 * (where the test ends the chat by freeing the agent, which joins the
 * inference thread, so a held callback would deadlock) the reply is long
 * enough, 50 s, that only the test's cancellation ends it.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

/* A reply of `words` words, as a one-item replies_json array. */
static char *long_reply(int words) {
    size_t cap = (size_t)words * 8 + 16;
    char *s = malloc(cap);
    size_t n = (size_t)snprintf(s, cap, "[\"");
    for (int i = 0; i < words; i++) n += (size_t)snprintf(s + n, cap - n, "%sw%d", i ? " " : "", i);
    snprintf(s + n, cap - n, "\"]");
    return s;
}

/* A mock agent whose first reply is `words` words at `delay_ms` each. */
static zoo_agent *slow_agent(int words, uint32_t delay_ms) {
    char *replies = long_reply(words);
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(NULL, replies, delay_ms, &agent, &err), ZOO_OK,
                      err)) {
        th_free_string(&err);
        agent = NULL;
    }
    free(replies);
    return agent;
}

static char *json_str(const char *json, const char *path) {
    return jm_string(json, path);
}

/* A gate that callbacks on the inference thread wait at until the test
 * opens it. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    atomic_int arrived; /* callbacks that reached the gate */
} gate;

static void gate_init(gate *g) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->open = false;
    atomic_init(&g->arrived, 0);
}

static void gate_open(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits until the gate is open; after 30 s (times the scale) it gives up,
 * so that a broken test fails on its own check instead of hanging. */
static void gate_pass(gate *g) {
    atomic_fetch_add(&g->arrived, 1);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30 * th_timeout_scale();
    pthread_mutex_lock(&g->mu);
    while (!g->open && pthread_cond_timedwait(&g->cv, &g->mu, &deadline) == 0) {
    }
    pthread_mutex_unlock(&g->mu);
}

static void gate_destroy(gate *g) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

/* A token hook: every token waits at the gate in ctx->hook_data. */
static void hold_tokens(chat_ctx *ctx, const char *text, size_t len) {
    (void)text;
    (void)len;
    gate_pass(ctx->hook_data);
}

void test_async_wait_poll(void) {
    zoo_agent *agent = slow_agent(20, 1);
    REQUIRE(agent != NULL);
    /* The reply waits at its first token until the checks of a running
     * chat are done. */
    gate held;
    gate_init(&held);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    ctx.token_hook = hold_tokens;
    ctx.hook_data = &held;
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, true);
    zoo_chat *chat = NULL;
    char *err = NULL, *out = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "go", NULL, &cb, &chat, &err), ZOO_OK, err);
    REQUIRE(chat != NULL);

    bool done = true;
    CHECK_STATUS(zoo_chat_poll(chat, &done), ZOO_OK, NULL);
    CHECK(!done);
    /* A short wait times out: ZOO_OK, not done, no response written. */
    done = true;
    int64_t t0 = th_now_ms();
    CHECK_STATUS(zoo_chat_wait(chat, 20, &done, &out, &err), ZOO_OK, err);
    int64_t waited = th_now_ms() - t0;
    CHECK(!done);
    CHECK(out == NULL);
    CHECKF(waited >= 15, "zoo_chat_wait(20 ms) returned after %lld ms", (long long)waited);
    /* Timeout 0 is a poll. */
    CHECK_STATUS(zoo_chat_wait(chat, 0, &done, &out, &err), ZOO_OK, err);
    CHECK(!done && out == NULL);

    /* Waiting forever gets the response. */
    gate_open(&held);
    CHECK_STATUS(zoo_chat_wait(chat, -1, &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    REQUIRE(out != NULL);
    char *text = json_str(out, "text");
    CHECKF(text && strncmp(text, "w0 w1", 5) == 0 && strstr(text, "w19"), "text: %s",
           text ? text : "(null)");
    free(text);
    CHECK(th_wait_int(&ctx.completes, 1, 2000));
    CHECK(ctx.complete_status == ZOO_OK);
    /* on_complete got the same response JSON. */
    CHECK_STR(ctx.complete_text, out);
    CHECK(th_wait_int(&ctx.freed, 1, 2000));
    zoo_string_free(out);
    out = NULL;

    /* Done stays done; waiting again gives the response again. */
    CHECK_STATUS(zoo_chat_poll(chat, &done), ZOO_OK, NULL);
    CHECK(done);
    done = false;
    CHECK_STATUS(zoo_chat_wait(chat, 1000, &done, &out, &err), ZOO_OK, err);
    CHECK(done && out != NULL);
    zoo_string_free(out);
    /* Without somewhere to put the response, wait still reports done. */
    done = false;
    CHECK_STATUS(zoo_chat_wait(chat, 0, &done, NULL, &err), ZOO_OK, err);
    CHECK(done);
    zoo_chat_free(chat);

    /* Exactly once, even after everything. */
    th_sleep_ms(20);
    CHECK(atomic_load(&ctx.completes) == 1);
    CHECK(atomic_load(&ctx.freed) == 1);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    gate_destroy(&held);
}

/* zoo_agent_stop from another thread ends the chat as "cancelled" with the
 * text streamed so far. */
struct stopper {
    zoo_agent *agent;
    chat_ctx *ctx;
    zoo_status status;
    int64_t stopped_at;
};

static void *stop_after_first_tokens(void *arg) {
    struct stopper *s = arg;
    th_wait_int(&s->ctx->tokens, 3, 5000); /* a few words in */
    s->status = zoo_agent_stop(s->agent);
    s->stopped_at = th_now_ms();
    return NULL;
}

void test_async_stop_from_thread(void) {
    zoo_agent *agent = slow_agent(5000, 10); /* 50 s if nobody stops it */
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, true);
    zoo_chat *chat = NULL;
    char *err = NULL, *out = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "go", NULL, &cb, &chat, &err), ZOO_OK, err);
    struct stopper s = {agent, &ctx, ZOO_INTERNAL, 0};
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, stop_after_first_tokens, &s) == 0);
    bool done = false;
    CHECK_STATUS(zoo_chat_wait(chat, -1, &done, &out, &err), ZOO_OK, err);
    int64_t ended = th_now_ms();
    pthread_join(thread, NULL);
    CHECK(s.status == ZOO_OK);
    CHECK(done);
    REQUIRE(out != NULL);
    char *reason = json_str(out, "stop_reason");
    CHECK_STR(reason, "cancelled");
    free(reason);
    /* The partial text is what was streamed. */
    char *text = json_str(out, "text");
    CHECK(text && strncmp(text, "w0 w1 w2", 8) == 0 && !strstr(text, "w4999"));
    CHECK(th_wait_int(&ctx.completes, 1, 2000));
    CHECK_STR(chat_ctx_stream(&ctx), text);
    free(text);
    CHECKF(ended - s.stopped_at < 100 * th_timeout_scale(),
           "the chat ended %lld ms after zoo_agent_stop (documented: about 100 ms)",
           (long long)(ended - s.stopped_at));
    zoo_string_free(out);
    zoo_chat_free(chat);

    /* Stopping an idle agent is harmless, and the next chat runs normally. */
    CHECK_STATUS(zoo_agent_stop(agent), ZOO_OK, NULL);
    out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "after", NULL, NULL, &out, &err), ZOO_OK, err);
    char *after = json_str(out, "text");
    CHECK_STR(after, "echo: after");
    free(after);
    zoo_string_free(out);
    CHECK(th_wait_int(&ctx.freed, 1, 2000));
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}

/* zoo_chat_cancel: the running chat ends "cancelled"; a queued chat ends
 * "cancelled" without running; the others are unaffected. */
void test_async_cancel(void) {
    zoo_agent *agent = slow_agent(300, 1);
    REQUIRE(agent != NULL);
    /* The first chat waits at its first token until both cancels are in:
     * it is running, and the second one is queued, when they land. */
    gate held;
    gate_init(&held);
    chat_ctx c1, c2, c3;
    chat_ctx_init(&c1);
    c1.token_hook = hold_tokens;
    c1.hook_data = &held;
    chat_ctx_init(&c2);
    chat_ctx_init(&c3);
    zoo_chat_callbacks cb1 = chat_ctx_callbacks(&c1, true), cb2 = chat_ctx_callbacks(&c2, true),
                       cb3 = chat_ctx_callbacks(&c3, true);
    zoo_chat *first = NULL, *second = NULL, *third = NULL;
    char *err = NULL, *out = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "first", NULL, &cb1, &first, &err), ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "second", NULL, &cb2, &second, &err), ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "third", NULL, &cb3, &third, &err), ZOO_OK, err);
    CHECK(th_wait_int(&held.arrived, 1, 30000));

    /* Cancel the queued one first, then the running one. */
    CHECK_STATUS(zoo_chat_cancel(second), ZOO_OK, NULL);
    CHECK_STATUS(zoo_chat_cancel(first), ZOO_OK, NULL);
    gate_open(&held);
    bool done = false;
    CHECK_STATUS(zoo_chat_wait(first, 2000, &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    char *reason = json_str(out, "stop_reason");
    CHECK_STR(reason, "cancelled");
    free(reason);
    /* It stopped where the cancel found it: after the first word. */
    char *partial = json_str(out, "text");
    CHECK_STR(partial, "w0");
    free(partial);
    zoo_string_free(out);
    out = NULL;

    done = false;
    CHECK_STATUS(zoo_chat_wait(second, 2000, &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    reason = json_str(out, "stop_reason");
    CHECK_STR(reason, "cancelled");
    free(reason);
    char *text = json_str(out, "text");
    CHECK_STR(text, "");
    free(text);
    CHECK(atomic_load(&c2.tokens) == 0);
    zoo_string_free(out);
    out = NULL;

    /* The third chat was not touched: it runs to the end (the mock echoes). */
    done = false;
    CHECK_STATUS(zoo_chat_wait(third, 5000, &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    reason = json_str(out, "stop_reason");
    CHECK_STR(reason, "stop");
    free(reason);
    text = json_str(out, "text");
    CHECK_STR(text, "echo: third");
    free(text);
    zoo_string_free(out);

    /* Cancelling a finished chat changes nothing. */
    CHECK_STATUS(zoo_chat_cancel(third), ZOO_OK, NULL);
    out = NULL;
    CHECK_STATUS(zoo_chat_wait(third, 0, &done, &out, &err), ZOO_OK, err);
    reason = json_str(out, "stop_reason");
    CHECK_STR(reason, "stop");
    free(reason);
    zoo_string_free(out);

    /* The queued chat's history entry was never written. */
    char *history = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECKF(history && !strstr(history, "second"), "history: %s", history ? history : "(null)");
    zoo_string_free(history);

    chat_ctx *all[] = {&c1, &c2, &c3};
    for (int i = 0; i < 3; i++) {
        CHECK(th_wait_int(&all[i]->freed, 1, 2000));
        CHECK(atomic_load(&all[i]->completes) == 1);
        CHECK(all[i]->complete_status == ZOO_OK);
    }
    zoo_chat_free(first);
    zoo_chat_free(second);
    zoo_chat_free(third);
    for (int i = 0; i < 3; i++) chat_ctx_destroy(all[i]);
    zoo_agent_free(agent);
    gate_destroy(&held);
}

/* zoo_chat_free does not cancel: the chat goes on and its callbacks run. */
void test_async_free_handle_early(void) {
    zoo_agent *agent = slow_agent(10, 5);
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, true);
    zoo_chat *chat = NULL;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "go", NULL, &cb, &chat, &err), ZOO_OK, err);
    zoo_chat_free(chat);
    CHECK(th_wait_int(&ctx.completes, 1, 5000));
    CHECK(ctx.complete_status == ZOO_OK);
    char *reason = ctx.complete_text ? jm_string(ctx.complete_text, "stop_reason") : NULL;
    CHECK_STR(reason, "stop");
    free(reason);
    CHECK(atomic_load(&ctx.tokens) == 10);
    CHECK(th_wait_int(&ctx.freed, 1, 2000));
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
}

/* ---- freeing the agent ---- */

struct free_in_complete {
    zoo_agent *agent;
    atomic_int returned; /* zoo_agent_free returned inside the callback */
    atomic_int released; /* the free_user_data of a tool */
    gate *held;          /* where on_token waits, if set */
};

static void free_agent_hook(chat_ctx *ctx, zoo_status status) {
    (void)status;
    struct free_in_complete *f = ctx->hook_data;
    zoo_agent_free(f->agent);
    atomic_store(&f->returned, 1);
}

static void hold_tokens_of_free(chat_ctx *ctx, const char *text, size_t len) {
    (void)text;
    (void)len;
    struct free_in_complete *f = ctx->hook_data;
    gate_pass(f->held);
}

static void tool_that_never_runs(void *ud, const char *a, size_t n, zoo_tool_result *r) {
    (void)ud;
    (void)a;
    (void)n;
    zoo_tool_result_set_error(r, "unexpected", NULL);
}

/* zoo_agent_free from inside on_complete neither crashes nor deadlocks;
 * the agent's tools are still released exactly once. */
void test_free_agent_in_on_complete(void) {
    zoo_agent *agent = slow_agent(5, 2);
    REQUIRE(agent != NULL);
    atomic_int tool_freed;
    atomic_init(&tool_freed, 0);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "t", "d", "{\"type\":\"object\"}",
                                           tool_that_never_runs, &tool_freed, th_count_free,
                                           &err),
                   ZOO_OK, err);
    /* The first chat waits at its first token until the second is queued:
     * had it finished before, on_complete would have freed the agent under
     * the second zoo_agent_chat_async. */
    gate held;
    gate_init(&held);
    struct free_in_complete f = {.agent = agent, .held = &held};
    atomic_init(&f.returned, 0);
    atomic_init(&f.released, 0);
    chat_ctx ctx, queued;
    chat_ctx_init(&ctx);
    chat_ctx_init(&queued);
    ctx.token_hook = hold_tokens_of_free;
    ctx.complete_hook = free_agent_hook;
    ctx.hook_data = &f;
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, true);
    zoo_chat_callbacks cbq = chat_ctx_callbacks(&queued, true);
    zoo_chat *chat = NULL, *next = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "go", NULL, &cb, &chat, &err), ZOO_OK, err);
    /* A chat queued behind it is failed by the free. */
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "next", NULL, &cbq, &next, &err), ZOO_OK, err);
    gate_open(&held);

    bool done = false;
    char *out = NULL;
    CHECK_STATUS(zoo_chat_wait(chat, -1, &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    zoo_string_free(out);
    CHECKF(th_wait_int(&f.returned, 1, 5000), "zoo_agent_free did not return inside on_complete");
    CHECK(th_wait_int(&ctx.freed, 1, 5000));
    CHECK(atomic_load(&ctx.completes) == 1);

    /* The queued chat: ZOO_AGENT_NOT_RUNNING through handle and callback. */
    done = true;
    out = NULL;
    CHECK_STATUS(zoo_chat_wait(next, 5000, &done, &out, &err), ZOO_AGENT_NOT_RUNNING, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(out == NULL);
    CHECK(th_wait_int(&queued.completes, 1, 5000));
    CHECK(queued.complete_status == ZOO_AGENT_NOT_RUNNING);
    CHECK(th_wait_int(&queued.freed, 1, 5000));
    CHECK(atomic_load(&queued.tokens) == 0);

    /* The inference thread ends by itself and drops the tools. */
    CHECKF(th_wait_int(&tool_freed, 1, 5000), "tool free_user_data ran %d times",
           atomic_load(&tool_freed));
    th_sleep_ms(20);
    CHECK(atomic_load(&tool_freed) == 1);
    CHECK(atomic_load(&ctx.freed) == 1 && atomic_load(&queued.freed) == 1);
    zoo_chat_free(chat);
    zoo_chat_free(next);
    chat_ctx_destroy(&ctx);
    chat_ctx_destroy(&queued);
    gate_destroy(&held);
}

/* zoo_agent_free from inside on_token (the chat is still running) and from
 * inside a tool handler: the chat ends, nothing crashes or deadlocks, and
 * every user_data is released once. */
static void free_agent_on_token(chat_ctx *ctx, const char *text, size_t len) {
    (void)text;
    (void)len;
    struct free_in_complete *f = ctx->hook_data;
    if (atomic_load(&ctx->tokens) == 2) {
        zoo_agent_free(f->agent);
        atomic_store(&f->returned, 1);
    }
}

static void tool_frees_agent(void *user_data, const char *a, size_t n, zoo_tool_result *r) {
    (void)a;
    (void)n;
    struct free_in_complete *f = user_data;
    zoo_agent_free(f->agent);
    atomic_store(&f->returned, 1);
    zoo_tool_result_set_json(r, "\"freed\"", NULL);
}

static void tool_frees_agent_release(void *user_data) {
    struct free_in_complete *f = user_data;
    atomic_fetch_add(&f->released, 1);
}

void test_free_agent_in_on_token_and_tool(void) {
    /* From on_token. */
    zoo_agent *agent = slow_agent(50, 2);
    REQUIRE(agent != NULL);
    struct free_in_complete f = {.agent = agent};
    atomic_init(&f.returned, 0);
    atomic_init(&f.released, 0);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    ctx.token_hook = free_agent_on_token;
    ctx.hook_data = &f;
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, true);
    zoo_chat *chat = NULL;
    char *err = NULL, *out = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "go", NULL, &cb, &chat, &err), ZOO_OK, err);
    bool done = false;
    CHECK_STATUS(zoo_chat_wait(chat, 5000, &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    char *reason = out ? jm_string(out, "stop_reason") : NULL;
    CHECK_STR(reason, "cancelled");
    free(reason);
    zoo_string_free(out);
    CHECK(atomic_load(&f.returned) == 1);
    CHECK(th_wait_int(&ctx.freed, 1, 5000));
    CHECK(atomic_load(&ctx.completes) == 1);
    zoo_chat_free(chat);
    chat_ctx_destroy(&ctx);

    /* From a tool handler: the handler's own user_data is released once,
     * after the handler has returned. */
    zoo_agent *agent2 = NULL;
    REQUIRE_STATUS(zoo_agent_create_mock(NULL,
                                         "[\"<tool_call>{\\\"name\\\":\\\"t\\\","
                                         "\\\"arguments\\\":{}}</tool_call>\", \"after\"]",
                                         0, &agent2, &err),
                   ZOO_OK, err);
    struct free_in_complete g = {.agent = agent2};
    atomic_init(&g.returned, 0);
    atomic_init(&g.released, 0);
    REQUIRE_STATUS(zoo_agent_register_tool(agent2, "t", "d", "{\"type\":\"object\"}",
                                           tool_frees_agent, &g, tool_frees_agent_release, &err),
                   ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_chat_async(agent2, "go", NULL, NULL, &chat, &err), ZOO_OK, err);
    done = false;
    out = NULL;
    zoo_status s = zoo_chat_wait(chat, 5000, &done, &out, &err);
    /* The chat ends either way; how is the engine's business (today: as
     * "cancelled", with the tool's result recorded). */
    CHECKF(done || s != ZOO_OK, "status %d (%s): %s", (int)s, zoo_status_str(s),
           err ? err : "");
    zoo_string_free(out);
    th_free_string(&err);
    CHECK(atomic_load(&g.returned) == 1);
    CHECKF(th_wait_int(&g.released, 1, 5000), "the tool's free_user_data ran %d times",
           atomic_load(&g.released));
    th_sleep_ms(20);
    CHECK(atomic_load(&g.released) == 1);
    zoo_chat_free(chat);
}

/* zoo_agent_free while a chat runs: the running chat ends "cancelled", the
 * queued ones fail with ZOO_AGENT_NOT_RUNNING, every callback's user_data
 * and the tools are released once, and the handles stay usable. */
void test_free_agent_while_chat_runs(void) {
    zoo_agent *agent = slow_agent(5000, 10); /* 50 s: only the free ends it */
    REQUIRE(agent != NULL);
    atomic_int tool_freed;
    atomic_init(&tool_freed, 0);
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_register_tool(agent, "t", "d", "{\"type\":\"object\"}",
                                           tool_that_never_runs, &tool_freed, th_count_free,
                                           &err),
                   ZOO_OK, err);
    chat_ctx running, queued;
    chat_ctx_init(&running);
    chat_ctx_init(&queued);
    zoo_chat_callbacks cb1 = chat_ctx_callbacks(&running, true),
                       cb2 = chat_ctx_callbacks(&queued, true);
    zoo_chat *c1 = NULL, *c2 = NULL;
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "long", NULL, &cb1, &c1, &err), ZOO_OK, err);
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "queued", NULL, &cb2, &c2, &err), ZOO_OK, err);
    CHECK(th_wait_int(&running.tokens, 2, 5000));

    int64_t t0 = th_now_ms();
    zoo_agent_free(agent);
    int64_t took = th_now_ms() - t0;
    CHECKF(took < 1000 * th_timeout_scale(), "zoo_agent_free took %lld ms", (long long)took);
    /* zoo_agent_free joined the inference thread: everything is settled. */
    CHECK(atomic_load(&tool_freed) == 1);
    CHECK(atomic_load(&running.completes) == 1 && atomic_load(&queued.completes) == 1);
    CHECK(atomic_load(&running.freed) == 1 && atomic_load(&queued.freed) == 1);
    CHECK(running.complete_status == ZOO_OK);
    CHECK(queued.complete_status == ZOO_AGENT_NOT_RUNNING);

    bool done = false;
    char *out = NULL;
    CHECK_STATUS(zoo_chat_wait(c1, 0, &done, &out, &err), ZOO_OK, err);
    CHECK(done);
    char *reason = out ? jm_string(out, "stop_reason") : NULL;
    CHECK_STR(reason, "cancelled");
    free(reason);
    zoo_string_free(out);
    CHECK_STATUS(zoo_chat_wait(c2, 0, &done, NULL, &err), ZOO_AGENT_NOT_RUNNING, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK_STATUS(zoo_chat_poll(c2, &done), ZOO_OK, NULL);
    CHECK(done);
    CHECK_STATUS(zoo_chat_cancel(c2), ZOO_OK, NULL);
    zoo_chat_free(c1);
    zoo_chat_free(c2);
    chat_ctx_destroy(&running);
    chat_ctx_destroy(&queued);
}

/* zoo_agent_free from another thread while a blocking zoo_agent_chat runs:
 * the blocked call returns the chat, ended "cancelled". (Freeing is safe
 * once the chat is running, here after its first tokens; freeing while the
 * other thread is still entering zoo_agent_chat would race with its use of
 * the handle.) */
struct blocking_chat {
    zoo_agent *agent;
    chat_ctx *ctx;
    zoo_status status;
    char *out;
};

static void *blocking_chat_thread(void *arg) {
    struct blocking_chat *b = arg;
    zoo_chat_callbacks cb = chat_ctx_callbacks(b->ctx, false);
    char *err = NULL;
    b->status = zoo_agent_chat(b->agent, "long", NULL, &cb, &b->out, &err);
    zoo_string_free(err);
    return NULL;
}

void test_free_agent_during_blocking_chat(void) {
    zoo_agent *agent = slow_agent(5000, 10); /* 50 s: only the free ends it */
    REQUIRE(agent != NULL);
    chat_ctx ctx;
    chat_ctx_init(&ctx);
    struct blocking_chat b = {agent, &ctx, ZOO_INTERNAL, NULL};
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, blocking_chat_thread, &b) == 0);
    CHECK(th_wait_int(&ctx.tokens, 2, 5000));
    zoo_agent_free(agent);
    pthread_join(thread, NULL);
    CHECK(b.status == ZOO_OK);
    char *reason = b.out ? jm_string(b.out, "stop_reason") : NULL;
    CHECK_STR(reason, "cancelled");
    free(reason);
    zoo_string_free(b.out);
    CHECK(atomic_load(&ctx.freed) == 1);
    chat_ctx_destroy(&ctx);
}

/* free_user_data of chat callbacks runs exactly once: after a blocking chat
 * returns, after on_complete, and right away when the call fails, whatever
 * the reason. */
void test_chat_callbacks_freed_once(void) {
    zoo_agent *agent = slow_agent(3, 0);
    REQUIRE(agent != NULL);
    char *err = NULL, *out = NULL;
    zoo_chat *chat = NULL;

    chat_ctx ok;
    chat_ctx_init(&ok);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ok, false);
    CHECK_STATUS(zoo_agent_chat(agent, "hi", NULL, &cb, &out, &err), ZOO_OK, err);
    CHECK(atomic_load(&ok.freed) == 1);
    zoo_string_free(out);
    chat_ctx_destroy(&ok);

    /* Each failing call, with callbacks whose user_data must be released. */
    struct {
        const char *what;
        bool async;
        const zoo_agent *agent;
        const char *message;
        int tool_choice;
        bool with_complete;
        bool null_out;
    } cases[] = {
        {"blocking chat with on_complete", false, agent, "hi", 0, true, false},
        {"blocking chat, tool_choice 99", false, agent, "hi", 99, false, false},
        {"async chat, tool_choice 99", true, agent, "hi", 99, true, false},
        {"blocking chat, NULL message", false, agent, NULL, 0, false, false},
        {"async chat, NULL message", true, agent, NULL, 0, true, false},
        {"blocking chat, invalid UTF-8", false, agent, "\xff", 0, false, false},
        {"blocking chat, NULL agent", false, NULL, "hi", 0, false, false},
        {"async chat, NULL agent", true, NULL, "hi", 0, true, false},
        {"blocking chat, NULL out_response_json", false, agent, "hi", 0, false, true},
        {"async chat, NULL out_chat", true, agent, "hi", 0, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        chat_ctx ctx;
        chat_ctx_init(&ctx);
        cb = chat_ctx_callbacks(&ctx, cases[i].with_complete);
        zoo_chat_options opts = {0};
        opts.tool_choice = cases[i].tool_choice;
        zoo_status s;
        if (cases[i].async) {
            s = zoo_agent_chat_async(cases[i].agent, cases[i].message, &opts, &cb,
                                     cases[i].null_out ? NULL : &chat, &err);
        } else {
            s = zoo_agent_chat(cases[i].agent, cases[i].message, &opts, &cb,
                               cases[i].null_out ? NULL : &out, &err);
        }
        CHECKF(s == ZOO_INVALID_ARGUMENT, "%s: status %d", cases[i].what, (int)s);
        CHECK_ERROR_MESSAGE(err);
        CHECKF(atomic_load(&ctx.freed) == 1,
               "%s: free_user_data ran %d times (zoo.h: \"right away if the call fails\")",
               cases[i].what, atomic_load(&ctx.freed));
        CHECK(atomic_load(&ctx.tokens) == 0 && atomic_load(&ctx.completes) == 0);
        chat_ctx_destroy(&ctx);
    }

    /* A chat that fails inside the engine (unknown named tool) also
     * releases its user_data once, after on_complete. */
    chat_ctx named;
    chat_ctx_init(&named);
    cb = chat_ctx_callbacks(&named, true);
    zoo_chat_options opts = {0};
    opts.tool_choice = ZOO_TOOL_CHOICE_NAMED;
    opts.tool_name = "missing";
    REQUIRE_STATUS(zoo_agent_chat_async(agent, "hi", &opts, &cb, &chat, &err), ZOO_OK, err);
    CHECK(th_wait_int(&named.freed, 1, 2000));
    CHECK(atomic_load(&named.completes) == 1);
    CHECK(named.complete_status == ZOO_TOOL_NOT_FOUND);
    zoo_chat_free(chat);
    chat_ctx_destroy(&named);

    /* Callbacks with every function NULL but free_user_data. */
    atomic_int bare_freed;
    atomic_init(&bare_freed, 0);
    zoo_chat_callbacks bare = {0};
    bare.user_data = &bare_freed;
    bare.free_user_data = th_count_free;
    out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "hi", NULL, &bare, &out, &err), ZOO_OK, err);
    CHECK(atomic_load(&bare_freed) == 1);
    zoo_string_free(out);
    zoo_agent_free(agent);
}

/* Several threads chat on one agent at once: chats run one at a time, each
 * gets its own reply. */
struct chatter {
    zoo_agent *agent;
    int id;
    bool ok;
};

static void *chat_thread(void *arg) {
    struct chatter *c = arg;
    char msg[32], want[48];
    c->ok = true;
    for (int i = 0; i < 5; i++) {
        snprintf(msg, sizeof msg, "t%d-%d", c->id, i);
        snprintf(want, sizeof want, "echo: %s", msg);
        char *out = NULL, *err = NULL;
        zoo_status s = zoo_agent_chat(c->agent, msg, NULL, NULL, &out, &err);
        char *text = s == ZOO_OK ? jm_string(out, "text") : NULL;
        if (s != ZOO_OK || !text || strcmp(text, want) != 0) c->ok = false;
        free(text);
        zoo_string_free(out);
        zoo_string_free(err);
    }
    return NULL;
}

void test_concurrent_chats(void) {
    zoo_agent *agent = slow_agent(0, 1);
    REQUIRE(agent != NULL);
    /* An empty script: every reply is an echo. (slow_agent(0) scripts one
     * empty reply; use it up first.) */
    char *out = NULL, *err = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "warm-up", NULL, NULL, &out, &err), ZOO_OK, err);
    zoo_string_free(out);
    struct chatter cs[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        cs[i] = (struct chatter){agent, i, false};
        pthread_create(&threads[i], NULL, chat_thread, &cs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECKF(cs[i].ok, "thread %d got a wrong reply", i);
    }
    char *history = NULL;
    CHECK_STATUS(zoo_agent_history_json(agent, &history, &err), ZOO_OK, err);
    CHECK(jm_count(history, "") == 2 + 4 * 5 * 2);
    zoo_string_free(history);
    zoo_agent_free(agent);
}
