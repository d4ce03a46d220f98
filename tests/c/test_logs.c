/*
 * test_logs.c: the engine's log records through zoo_log_set_callback, on
 * the mock: the tool-call record with its chat id, tool and latency, level
 * filtering, the debug prompt and raw output, and the exactly-once free of
 * the callback's user_data. The callback is process-wide: each test sets
 * its own and removes it, and reads only its own agent's records.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "json_mini.h"

#define MAX_RECORDS 256

typedef struct {
    zoo_log_level level;
    char *target, *message, *fields;
} log_line;

/* The records the callback received (on the library's zoo-logs thread). */
typedef struct {
    pthread_mutex_t mu;
    log_line lines[MAX_RECORDS];
    int count;
    bool lengths_ok; /* every length matched its NUL-terminated text */
    atomic_int freed;
} log_sink;

static void on_log(void *user_data, zoo_log_level level, const char *target, const char *message,
                   size_t message_len, const char *fields, size_t fields_len) {
    log_sink *sink = user_data;
    pthread_mutex_lock(&sink->mu);
    if (strlen(message) != message_len || strlen(fields) != fields_len || !jm_valid(fields, fields_len))
        sink->lengths_ok = false;
    if (sink->count < MAX_RECORDS) {
        log_line *line = &sink->lines[sink->count++];
        line->level = level;
        line->target = strdup(target);
        line->message = strdup(message);
        line->fields = strdup(fields);
    }
    pthread_mutex_unlock(&sink->mu);
}

static void free_sink(void *user_data) {
    log_sink *sink = user_data;
    atomic_fetch_add(&sink->freed, 1);
}

static void sink_init(log_sink *sink) {
    memset(sink, 0, sizeof *sink);
    pthread_mutex_init(&sink->mu, NULL);
    sink->lengths_ok = true;
}

static void sink_destroy(log_sink *sink) {
    for (int i = 0; i < sink->count; i++) {
        free(sink->lines[i].target);
        free(sink->lines[i].message);
        free(sink->lines[i].fields);
    }
    pthread_mutex_destroy(&sink->mu);
}

/* The index of the n-th record (from 0) of `agent_id` with `target`, or -1,
 * after everything emitted so far was delivered. */
static int find(log_sink *sink, uint64_t agent_id, const char *target, int n) {
    CHECK(zoo_log_flush(30000));
    pthread_mutex_lock(&sink->mu);
    int found = -1;
    for (int i = 0; i < sink->count && found < 0; i++) {
        double id = 0;
        if (jm_number(sink->lines[i].fields, "agent_id", &id) && (uint64_t)id == agent_id &&
            strcmp(sink->lines[i].target, target) == 0 && n-- == 0)
            found = i;
    }
    pthread_mutex_unlock(&sink->mu);
    return found;
}

static int count_agent(log_sink *sink, uint64_t agent_id) {
    CHECK(zoo_log_flush(30000));
    pthread_mutex_lock(&sink->mu);
    int n = 0;
    for (int i = 0; i < sink->count; i++) {
        double id = 0;
        n += jm_number(sink->lines[i].fields, "agent_id", &id) && (uint64_t)id == agent_id;
    }
    pthread_mutex_unlock(&sink->mu);
    return n;
}

#define ADD_CALL                                                                              \
    "\"<tool_call>{\\\"name\\\":\\\"add\\\",\\\"arguments\\\":{\\\"a\\\":2,\\\"b\\\":3}}</tool_call>\""

static void add(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)user_data;
    (void)args;
    (void)len;
    zoo_tool_result_set_json(result, "5", NULL);
}

/* A mock agent with the `add` tool; its id in *id. */
static zoo_agent *adder(const char *replies, uint64_t *id) {
    zoo_agent *agent = NULL;
    char *err = NULL;
    if (!CHECK_STATUS(zoo_agent_create_mock(NULL, replies, 0, &agent, &err), ZOO_OK, err)) {
        th_free_string(&err);
        return NULL;
    }
    const char *schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
                         "\"b\":{\"type\":\"number\"}}}";
    CHECK_STATUS(zoo_agent_register_tool(agent, "add", "Adds", schema, add, NULL, NULL, &err), ZOO_OK, err);
    CHECK_STATUS(zoo_agent_id(agent, id), ZOO_OK, NULL);
    th_free_string(&err);
    return agent;
}

static void chat(zoo_agent *agent, const char *message) {
    char *out = NULL, *err = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, message, NULL, NULL, &out, &err), ZOO_OK, err);
    zoo_string_free(out);
    th_free_string(&err);
}

void test_logs_tool_call_record(void) {
    log_sink sink;
    sink_init(&sink);
    char *err = NULL;
    REQUIRE_STATUS(zoo_log_set_callback(ZOO_LOG_INFO, on_log, &sink, free_sink, &err), ZOO_OK, err);
    uint64_t id = 0;
    zoo_agent *agent = adder("[" ADD_CALL ", \"5\"]", &id);
    if (agent) {
        chat(agent, "2+3?");
        int i = find(&sink, id, "zoo::tool", 0);
        if (CHECKF(i >= 0, "no zoo::tool record")) {
            log_line *line = &sink.lines[i];
            CHECK(line->level == ZOO_LOG_INFO);
            char *tool = jm_string(line->fields, "tool");
            CHECK_STR(tool, "add");
            free(tool);
            char *call_id = jm_string(line->fields, "call_id");
            CHECK_STR(call_id, "call_1");
            free(call_id);
            double chat_id = 0, latency = -1;
            CHECK(jm_number(line->fields, "chat_id", &chat_id) && chat_id == 1);
            CHECK(jm_number(line->fields, "latency_ms", &latency) && latency >= 0);
            CHECK(jm_is(line->fields, "ok", "true"));
            CHECKF(strncmp(line->message, "tool `add` (call_1) returned in ", 32) == 0, "%s", line->message);
        }
        i = find(&sink, id, "zoo::turn", 1);
        if (CHECKF(i >= 0, "no second zoo::turn record")) {
            double turn = 0;
            CHECK(jm_number(sink.lines[i].fields, "turn", &turn) && turn == 2);
        }
        i = find(&sink, id, "zoo::chat", 0);
        if (CHECKF(i >= 0, "no zoo::chat record")) {
            char *reason = jm_string(sink.lines[i].fields, "stop_reason");
            CHECK_STR(reason, "stop");
            free(reason);
        }
        CHECK(find(&sink, id, "zoo::prompt", 0) < 0); /* debug only */
        zoo_agent_free(agent);
    }
    CHECK(sink.lengths_ok);
    CHECK_STATUS(zoo_log_set_callback(ZOO_LOG_OFF, NULL, NULL, NULL, &err), ZOO_OK, err);
    CHECK(zoo_log_flush(30000));
    CHECK(atomic_load(&sink.freed) == 1);
    sink_destroy(&sink);
}

void test_logs_levels_and_debug_prompt(void) {
    log_sink sink;
    sink_init(&sink);
    char *err = NULL;
    REQUIRE_STATUS(zoo_log_set_callback(ZOO_LOG_WARN, on_log, &sink, free_sink, &err), ZOO_OK, err);
    uint64_t id = 0;
    zoo_agent *agent = adder("[" ADD_CALL ", \"5\"]", &id);
    REQUIRE(agent);
    chat(agent, "2+3?");
    CHECK(count_agent(&sink, id) == 0); /* nothing at warn in a chat that went well */

    /* Debug: each reply's prompt (the mock's is the messages it received)
     * and the raw output before parsing. */
    REQUIRE_STATUS(zoo_log_set_level(ZOO_LOG_DEBUG, &err), ZOO_OK, err);
    chat(agent, "again");
    int i = find(&sink, id, "zoo::prompt", 0);
    if (CHECKF(i >= 0, "no zoo::prompt record")) {
        log_line *line = &sink.lines[i];
        CHECK(line->level == ZOO_LOG_DEBUG);
        char *form = jm_string(line->fields, "form");
        CHECK_STR(form, "messages");
        free(form);
        char *last = jm_string(line->message, "4.content");
        CHECK_STR(last, "again");
        free(last);
        double chat_id = 0;
        CHECK(jm_number(line->fields, "chat_id", &chat_id) && chat_id == 2);
    }
    i = find(&sink, id, "zoo::raw_output", 0);
    if (CHECKF(i >= 0, "no zoo::raw_output record")) CHECK_STR(sink.lines[i].message, "echo: again");

    /* Bad levels are refused, and the callback stays. */
    CHECK_STATUS(zoo_log_set_level(9, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_STR(err, "invalid argument: log level 9 is not a zoo_log_level value (0 off to 5 trace)");
    th_free_string(&err);
    log_sink other;
    sink_init(&other);
    CHECK_STATUS(zoo_log_set_callback(-1, on_log, &other, free_sink, &err), ZOO_INVALID_ARGUMENT, err);
    CHECK_ERROR_MESSAGE(err);
    CHECK(atomic_load(&other.freed) == 1); /* a failed call frees at once */
    CHECK(atomic_load(&sink.freed) == 0);

    /* Replacing the callback frees the old one's user_data, once. */
    REQUIRE_STATUS(zoo_log_set_callback(ZOO_LOG_INFO, on_log, &other, free_sink, &err), ZOO_OK, err);
    CHECK(zoo_log_flush(30000));
    CHECK(atomic_load(&sink.freed) == 1);
    chat(agent, "third");
    CHECK(find(&other, id, "zoo::chat", 0) >= 0);
    CHECK(find(&other, id, "zoo::prompt", 0) < 0);
    CHECK(zoo_log_dropped() == 0);
    zoo_agent_free(agent);
    CHECK_STATUS(zoo_log_set_callback(ZOO_LOG_INFO, NULL, NULL, NULL, &err), ZOO_OK, err);
    CHECK(zoo_log_flush(30000));
    CHECK(atomic_load(&other.freed) == 2);
    CHECK(atomic_load(&sink.freed) == 1);
    sink_destroy(&sink);
    sink_destroy(&other);
}

/* A session store's write is a `zoo::session` debug record: the chat's
 * round (its question and reply) in one transaction. */
void test_logs_session_write_record(void) {
    char db[256], side[300];
    snprintf(db, sizeof db, "/tmp/zoo-c-logs-%ld.db", (long)getpid());
    log_sink sink;
    sink_init(&sink);
    char *err = NULL;
    REQUIRE_STATUS(zoo_log_set_callback(ZOO_LOG_DEBUG, on_log, &sink, free_sink, &err), ZOO_OK, err);
    char config[512];
    snprintf(config, sizeof config,
             "{\"session_store\": \"%s\", \"session\": \"logged\", \"provider\": {\"type\": \"mock\"}}", db);
    zoo_agent *agent = NULL;
    uint64_t id = 0;
    if (CHECK_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err)) {
        CHECK_STATUS(zoo_agent_id(agent, &id), ZOO_OK, NULL);
        chat(agent, "hello");
        int i = find(&sink, id, "zoo::session", 0);
        if (CHECKF(i >= 0, "no zoo::session record")) {
            log_line *line = &sink.lines[i];
            CHECK(line->level == ZOO_LOG_DEBUG);
            char *session = jm_string(line->fields, "session");
            CHECK_STR(session, "logged");
            free(session);
            double messages = 0, latency = -1;
            CHECK(jm_number(line->fields, "messages", &messages) && messages == 2);
            CHECK(jm_number(line->fields, "latency_us", &latency) && latency >= 0);
            CHECK_STR(line->message, "session written");
        }
        CHECK(find(&sink, id, "zoo::session", 1) < 0); /* one round, one write */
        zoo_agent_free(agent);
    }
    th_free_string(&err);
    CHECK_STATUS(zoo_log_set_callback(ZOO_LOG_OFF, NULL, NULL, NULL, &err), ZOO_OK, err);
    CHECK(zoo_log_flush(30000));
    sink_destroy(&sink);
    unlink(db);
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-kv/6c6f67676564.lock", db); /* "logged" in hex */
    unlink(side);
    snprintf(side, sizeof side, "%s-kv", db);
    rmdir(side);
}
