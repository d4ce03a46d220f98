/*
 * chat.c: an interactive agent in C on libzoo. It loads the default model
 * (SmolLM2-135M-Instruct) with a progress bar, gives the agent a calculator
 * written in C, and answers each line read from stdin, streaming the reply,
 * until end of input. Ctrl-C stops the reply being generated (and quits
 * when nothing is being generated).
 *
 *   make -C tests/c examples
 *   printf 'Multiply 17 by 23.\n' | tests/c/build/chat_c
 *   tests/c/build/chat_c [model.gguf]        (else $ZOO_MODEL, else the default)
 *
 * The reply goes to stdout; progress, tool calls and prompts to stderr.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zoo.h"

#ifndef ZOO_DEFAULT_MODEL
#define ZOO_DEFAULT_MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#endif

/* ---- the calculator tool ---- */

/*
 * Reads the calculator's arguments. libzoo hands the handler its arguments
 * already validated against the schema below and re-serialized compactly,
 * e.g. {"a":17,"b":23,"op":"multiply"}; the schema allows only these three
 * keys, numbers for a and b and four plain words for op (no escapes), so a
 * flat scan of "key":value pairs reads them exactly.
 */
static bool read_args(const char *json, double *a, double *b, char *op, size_t op_size) {
    bool have_a = false, have_b = false, have_op = false;
    const char *p = strchr(json, '{');
    while (p && *p && *p != '}') {
        const char *key = strchr(p, '"');
        if (!key) break;
        const char *key_end = strchr(key + 1, '"');
        if (!key_end || key_end[1] != ':') return false;
        const char *value = key_end + 2;
        size_t key_len = (size_t)(key_end - key - 1);
        char *end = NULL;
        if (key_len == 1 && (key[1] == 'a' || key[1] == 'b')) {
            double v = strtod(value, &end);
            if (end == value) return false;
            if (key[1] == 'a') {
                *a = v;
                have_a = true;
            } else {
                *b = v;
                have_b = true;
            }
            p = end;
        } else if (key_len == 2 && strncmp(key + 1, "op", 2) == 0 && *value == '"') {
            const char *close = strchr(value + 1, '"');
            if (!close || (size_t)(close - value - 1) >= op_size) return false;
            memcpy(op, value + 1, (size_t)(close - value - 1));
            op[close - value - 1] = '\0';
            have_op = true;
            p = close + 1;
        } else {
            return false;
        }
        p = strpbrk(p, ",}");
        if (p && *p == ',') p++;
    }
    return have_a && have_b && have_op;
}

static void calculator(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)user_data;
    (void)len; /* args is also NUL-terminated */
    double a = 0, b = 0, value = 0;
    char op[16], sign = '?';
    if (!read_args(args, &a, &b, op, sizeof op)) {
        zoo_tool_result_set_error(result, "expected {\"a\": number, \"b\": number, \"op\": ...}",
                                  NULL);
        return;
    }
    if (strcmp(op, "add") == 0) {
        value = a + b;
        sign = '+';
    } else if (strcmp(op, "subtract") == 0) {
        value = a - b;
        sign = '-';
    } else if (strcmp(op, "multiply") == 0) {
        value = a * b;
        sign = '*';
    } else if (strcmp(op, "divide") == 0 && b != 0) {
        value = a / b;
        sign = '/';
    } else {
        /* The model is told, and may correct its call. */
        zoo_tool_result_set_error(result, b == 0 ? "division by zero" : "unknown operation", NULL);
        return;
    }
    /* A sentence, as a JSON string: small models answer better when the
     * result reads like the answer. */
    char json[160];
    snprintf(json, sizeof json, "\"%g %c %g = %g\"", a, sign, b, value);
    zoo_tool_result_set_json(result, json, NULL);
}

static const char *CALCULATOR_SCHEMA =
    "{\"type\": \"object\","
    " \"properties\": {"
    "   \"a\": {\"type\": \"number\", \"description\": \"first operand\"},"
    "   \"b\": {\"type\": \"number\", \"description\": \"second operand\"},"
    "   \"op\": {\"type\": \"string\", \"enum\": [\"add\", \"subtract\", \"multiply\", \"divide\"]}"
    " },"
    " \"required\": [\"a\", \"b\", \"op\"],"
    " \"additionalProperties\": false}";

/* ---- streaming ---- */

static void on_token(void *user_data, const char *text, size_t len) {
    (void)user_data;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

/* Shows tool calls on stderr. Events are JSON objects with a "type"
 * (e.g. {"agent_id":1,"chat_id":1,"seq":3,"type":"tool_call_started",...}),
 * which libzoo's own JSON reader picks out; `json` is not NUL-terminated
 * (see zoo_event_fn), so it reads a terminated copy. */
static void on_event(void *user_data, const char *json, size_t len) {
    (void)user_data;
    char *copy = malloc(len + 1);
    if (!copy) return;
    memcpy(copy, json, len);
    copy[len] = '\0';
    char *type = NULL;
    if (zoo_json_string_member(copy, "type", &type, NULL) == ZOO_OK && type &&
        (strcmp(type, "tool_call_started") == 0 || strcmp(type, "tool_call_finished") == 0)) {
        fprintf(stderr, "\n  [tool] %.*s\n", (int)len, json);
    }
    zoo_string_free(type);
    free(copy);
}

static bool on_progress(void *user_data, float progress) {
    int *shown = user_data;
    int filled = (int)(progress * 30);
    if (filled != *shown) { /* llama.cpp reports often; redraw when the bar moves */
        *shown = filled;
        fprintf(stderr, "\r[%.*s%*s] %3.0f%%", filled, "##############################",
                30 - filled, "", progress * 100);
        if (filled == 30) fputc('\n', stderr);
    }
    return true;
}

/* ---- Ctrl-C ---- */

/*
 * SIGINT is blocked in every thread (libzoo's threads inherit the mask) and
 * taken by this thread with sigwait, so zoo_agent_stop runs in a normal
 * thread, not in a signal handler, where taking its lock would be unsafe.
 */
static atomic_bool generating;

static void *interrupt_thread(void *arg) {
    zoo_agent *agent = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (atomic_load(&generating)) {
            zoo_agent_stop(agent); /* the reply ends as "cancelled" */
        } else {
            fputc('\n', stderr);
            _exit(130);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : getenv("ZOO_MODEL");
    if (!path || !*path) path = ZOO_DEFAULT_MODEL;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    char *err = NULL;
    zoo_model *model = NULL;
    int shown = -1;
    fprintf(stderr, "loading %s\n", path);
    if (zoo_model_load_with_progress(path, NULL, on_progress, &shown, &model, &err) != ZOO_OK) {
        fprintf(stderr, "\ncannot load the model: %s\n(run scripts/fetch-models)\n", err);
        zoo_string_free(err);
        return 1;
    }
    zoo_agent *agent = NULL;
    zoo_status status = zoo_agent_create_with_model(
        model,
        "{\"seed\": 42, \"repeat_penalty\": 1.1, \"max_tokens\": 256,"
        " \"system_prompt\": \"You are a helpful assistant.\"}",
        &agent, &err);
    zoo_model_free(model); /* the agent keeps the weights */
    if (status == ZOO_OK) {
        status = zoo_agent_register_tool(agent, "calculator",
                                         "Apply an arithmetic operation to two numbers",
                                         CALCULATOR_SCHEMA, calculator, NULL, NULL, &err);
    }
    if (status != ZOO_OK) {
        fprintf(stderr, "error (%s): %s\n", zoo_status_str(status), err);
        zoo_string_free(err);
        zoo_agent_free(agent);
        return 1;
    }
    pthread_t interrupter;
    pthread_create(&interrupter, NULL, interrupt_thread, agent);
    pthread_detach(interrupter);

    bool interactive = isatty(STDIN_FILENO);
    char *line = NULL;
    size_t cap = 0;
    int exit_code = 0;
    for (;;) {
        if (interactive) fputs("you> ", stderr);
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break; /* end of input */
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0) continue;

        zoo_chat_callbacks callbacks = {0};
        callbacks.on_token = on_token;
        callbacks.on_event = on_event;
        char *response = NULL;
        atomic_store(&generating, true);
        status = zoo_agent_chat(agent, line, NULL, &callbacks, &response, &err);
        atomic_store(&generating, false);
        putchar('\n');
        fflush(stdout);
        if (status != ZOO_OK) {
            /* A failed turn leaves the conversation as it was: go on. */
            fprintf(stderr, "error (%s): %s\n", zoo_status_str(status), err);
            zoo_string_free(err);
            err = NULL;
            exit_code = 1;
        } else if (strstr(response, "\"stop_reason\":\"cancelled\"")) {
            fputs("  [stopped]\n", stderr);
        }
        zoo_string_free(response);
    }
    free(line);
    zoo_agent_free(agent);
    return exit_code;
}
