/*
 * bench_ffi.c: what crossing the C boundary costs, measured through
 * libzoo.so on the mock backend with no delay. Its twin on the Rust API is
 * zoo-ffi/benches/ffi_overhead.rs; tests/c/bench.sh runs both, interleaved,
 * and takes medians (make -C tests/c bench).
 *
 * - tokens: chats whose reply streams TOKENS pieces (a scripted reply of
 *   TOKENS words, streamed word by word), alternately with an on_token
 *   callback and without; ns per token of each, and their difference, the
 *   callback's own cost (the C call plus the engine's work to make it).
 * - tool calls: chats whose first reply holds CALLS calls of a tool written
 *   in C (it sets its result with zoo_tool_result_set_json), then a short
 *   final reply; ns per call, chat overhead included, spread over the calls.
 *
 * Each sample sums CHATS chats (history cleared before each, untimed), so
 * that one sample is milliseconds long, not microseconds. Output: one line
 * per sample, "c <metric> <value>", read by bench.sh.
 *
 *   bench_ffi [samples] [tokens] [calls] [chats]   (defaults 3 20000 10 100)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zoo.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, zoo_status s, char *err) {
    fprintf(stderr, "bench_ffi: %s failed: %s (%s)\n", what, err ? err : "", zoo_status_str(s));
    exit(1);
}

/* The token callback does what the Rust twin's closure does: sum lengths. */
static void on_token(void *user_data, const char *text, size_t len) {
    (void)text;
    *(size_t *)user_data += len;
}

/* The tool counts its calls (atomically, as the Rust twin's handler does:
 * both run on the inference thread and are read from the main one). */
static void tool(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)args;
    (void)len;
    atomic_fetch_add_explicit((atomic_size_t *)user_data, 1, memory_order_relaxed);
    zoo_tool_result_set_json(result, "1", NULL);
}

/* One timed chat; returns its wall time in ns. */
static double timed_chat(zoo_agent *agent, const char *message,
                         const zoo_chat_callbacks *callbacks) {
    char *out = NULL, *err = NULL;
    zoo_status s = zoo_agent_clear_history(agent, &err);
    if (s != ZOO_OK) die("clear_history", s, err);
    double start = now_ns();
    s = zoo_agent_chat(agent, message, NULL, callbacks, &out, &err);
    double took = now_ns() - start;
    if (s != ZOO_OK) die("chat", s, err);
    zoo_string_free(out);
    return took;
}

/* A JSON array of `count` copies of the JSON string body `reply`. */
static char *script_of(const char *reply, int count, const char *then) {
    size_t size = (strlen(reply) + strlen(then) + 8) * (size_t)count + 8;
    char *script = malloc(size), *p = script;
    *p++ = '[';
    for (int c = 0; c < count; c++) {
        p += sprintf(p, "%s\"%s\"", c ? "," : "", reply);
        if (*then) p += sprintf(p, ",\"%s\"", then);
    }
    sprintf(p, "]");
    return script;
}

int main(int argc, char **argv) {
    int samples = argc > 1 ? atoi(argv[1]) : 3;
    int tokens = argc > 2 ? atoi(argv[2]) : 20000;
    int calls = argc > 3 ? atoi(argv[3]) : 10;
    int chats = argc > 4 ? atoi(argv[4]) : 100;
    int token_chats = chats / 20 > 0 ? chats / 20 : 1; /* a chat of 20000 tokens is long */
    char *err = NULL;
    zoo_status s;

    /* ---- tokens ---- */
    /* "w w w ... w": `tokens` words, each streamed as one piece. */
    char *words = malloc((size_t)tokens * 2);
    for (int i = 0; i < tokens; i++) {
        words[2 * i] = 'w';
        words[2 * i + 1] = ' ';
    }
    words[2 * tokens - 1] = '\0';
    char *script = script_of(words, 2 + 2 * token_chats * samples, "");
    zoo_agent *streamer = NULL;
    if ((s = zoo_agent_create_mock(NULL, script, 0, &streamer, &err)) != ZOO_OK)
        die("mock", s, err);
    free(script);
    size_t streamed = 0;
    zoo_chat_callbacks cb = {0};
    cb.on_token = on_token;
    cb.user_data = &streamed;
    /* Warm-up: the first chats touch cold memory. */
    timed_chat(streamer, "go", &cb);
    timed_chat(streamer, "go", NULL);
    for (int r = 0; r < samples; r++) {
        double with = 0, without = 0;
        for (int c = 0; c < token_chats; c++) {
            streamed = 0;
            with += timed_chat(streamer, "go", &cb);
            without += timed_chat(streamer, "go", NULL);
            if (streamed != strlen(words)) {
                fprintf(stderr, "bench_ffi: streamed %zu bytes\n", streamed);
                return 1;
            }
        }
        double n = (double)tokens * token_chats;
        printf("c token_ns_with_callback %.2f\n", with / n);
        printf("c token_ns_without_callback %.2f\n", without / n);
        printf("c token_callback_ns %.2f\n", (with - without) / n);
        fflush(stdout);
    }
    zoo_agent_free(streamer);
    free(words);

    /* ---- tool calls ---- */
    /* The text MockReply::tool_calls writes on the Rust side: one Hermes
     * call per block, blocks joined by newlines (JSON-escaped here). */
    const char *call = "<tool_call>\\n{\\\"name\\\":\\\"noop\\\",\\\"arguments\\\":"
                       "{\\\"x\\\":1}}\\n</tool_call>";
    char *reply = malloc((strlen(call) + 2) * (size_t)calls + 1), *p = reply;
    for (int i = 0; i < calls; i++) p += sprintf(p, "%s%s", i ? "\\n" : "", call);
    script = script_of(reply, 1 + chats * samples, "done.");
    free(reply);
    zoo_agent *agent = NULL;
    if ((s = zoo_agent_create_mock("{\"max_tool_iterations\": 2}", script, 0, &agent, &err)) !=
        ZOO_OK)
        die("mock with a script", s, err);
    free(script);
    atomic_size_t ran;
    atomic_init(&ran, 0);
    s = zoo_agent_register_tool(agent, "noop", "Does nothing",
                                "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
                                "\"integer\"}},\"required\":[\"x\"]}",
                                tool, &ran, NULL, &err);
    if (s != ZOO_OK) die("register_tool", s, err);
    timed_chat(agent, "go", NULL); /* warm-up */
    for (int r = 0; r < samples; r++) {
        atomic_store(&ran, 0);
        double took = 0;
        for (int c = 0; c < chats; c++) took += timed_chat(agent, "go", NULL);
        if (atomic_load(&ran) != (size_t)calls * chats) {
            fprintf(stderr, "bench_ffi: the tool ran %zu times, not %d\n", atomic_load(&ran),
                    calls * chats);
            return 1;
        }
        printf("c tool_call_ns %.2f\n", took / ((double)calls * chats));
        fflush(stdout);
    }
    zoo_agent_free(agent);
    return 0;
}
