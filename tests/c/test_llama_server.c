/*
 * test_llama_server.c: libzoo on a real third-party OpenAI-compatible
 * server: llama-cpp-python's (installed by scripts/fetch-llama-server)
 * serving SmolLM2 on 127.0.0.1 at a free port, started by the test
 * (tests/llama-server/serve.py, which also exits when its standard input,
 * our pipe, closes) and killed at its end: one streamed chat configured by
 * {"provider": {"type": "openai", ...}}. The server's python:
 * $ZOO_LLAMA_SERVER_PYTHON, else target/llama-server/bin/python; when it is
 * missing the test fails. Named real_, so
 * the quick tier leaves it out.
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

#ifndef ZOO_REPO_ROOT
#error "ZOO_REPO_ROOT must name the repository (tests/c/Makefile defines it)"
#endif
#define REPO ZOO_REPO_ROOT
/* Python's imports and the model's load, on a busy two-core machine. */
#define READY_BOUND_MS 300000

typedef struct {
    pid_t pid;
    int stdin_fd; /* our end of the server's standard input */
    int port;
    char log[128];
} llama_server;

/* A port nothing listens on now (the OS's choice for port 0); 0 on error. */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

/* Whether GET /v1/models answers 200 with our model (it does once the
 * model is loaded). */
static bool lists_the_model(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval timeout = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    char answer[8192];
    size_t len = 0;
    static const char request[] = "GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        send(fd, request, sizeof request - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof request - 1)) {
        ssize_t n;
        while (len < sizeof answer - 1 && (n = recv(fd, answer + len, sizeof answer - 1 - len, 0)) > 0)
            len += (size_t)n;
    }
    close(fd);
    answer[len] = '\0';
    return strncmp(answer, "HTTP/1.1 200", 12) == 0 && strstr(answer, "\"smollm2\"") != NULL;
}

static void print_log(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        th_note("server: %s", line);
    }
    fclose(f);
}

static void stop_server(llama_server *s) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    close(s->stdin_fd);
    unlink(s->log);
}

/* Starts the server and waits until it is ready; records a failure (with
 * the server's output) and returns false if it is not. */
static bool start_server(const char *python, llama_server *s) {
    s->port = free_port();
    if (!CHECKF(s->port > 0, "no free port")) return false;
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(s->log, sizeof s->log, "/tmp/zoo-llama-server-c-%d.log", (int)getpid());
    int input[2];
    if (!CHECK(pipe(input) == 0)) return false;
    int log = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    s->pid = fork();
    if (s->pid == 0) {
        /* Only async-signal-safe calls between fork and exec. */
        dup2(input[0], 0);
        dup2(log, 1);
        dup2(log, 2);
        close(input[1]);
        execl(python, python, REPO "/tests/llama-server/serve.py", th_model_path(), port, (char *)NULL);
        _exit(127);
    }
    close(input[0]);
    close(log);
    s->stdin_fd = input[1];
    if (!CHECKF(s->pid > 0, "fork failed")) {
        close(s->stdin_fd);
        return false;
    }
    int64_t deadline = th_now_ms() + READY_BOUND_MS;
    while (!lists_the_model(s->port)) {
        int status;
        bool exited = waitpid(s->pid, &status, WNOHANG) == s->pid;
        if (exited || th_now_ms() > deadline) {
            if (exited)
                CHECKF(false, "the server exited before it was ready");
            else
                CHECKF(false, "the server was not ready in %d ms", READY_BOUND_MS);
            print_log(s->log);
            if (exited) {
                close(s->stdin_fd);
                unlink(s->log);
            } else {
                stop_server(s);
            }
            return false;
        }
        th_sleep_ms(250); /* polling interval only: readiness is the server's answer */
    }
    return true;
}

void test_real_llama_server_chat(void) {
    if (!th_require_model()) return;
    const char *python = getenv("ZOO_LLAMA_SERVER_PYTHON");
    if (!python || !*python) python = REPO "/target/llama-server/bin/python";
    if (access(python, X_OK) != 0) {
        /* As a missing model does: a test that cannot run fails. */
        CHECKF(false, "%s is missing: run scripts/fetch-llama-server", python);
        return;
    }
    llama_server server;
    if (!start_server(python, &server)) return;

    char config[512], *err = NULL, *out = NULL;
    snprintf(config, sizeof config,
             "{\"provider\": {\"type\": \"openai\", \"base_url\": \"http://127.0.0.1:%d/v1\", "
             "\"model\": \"smollm2\"}, \"temperature\": 0, \"seed\": 7, \"max_tokens\": 64}",
             server.port);
    zoo_agent *agent = NULL;
    if (CHECK_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err)) {
        chat_ctx ctx;
        chat_ctx_init(&ctx);
        zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
        if (CHECK_STATUS(zoo_agent_chat(agent, "Name three colors.", NULL, &cb, &out, &err), ZOO_OK,
                         err)) {
            char *text = jm_string(out, "text");
            char *stop = jm_string(out, "stop_reason");
            th_note("reply: %s", text ? text : "(null)");
            CHECK(text && *text);
            CHECK_STR(stop, "stop");
            CHECK_STR(chat_ctx_stream(&ctx), text);
            CHECKF(atomic_load(&ctx.tokens) > 1, "%d pieces", atomic_load(&ctx.tokens));
            CHECK(atomic_load(&ctx.bad_pieces) == 0);
            CHECK_STR(ctx.events, "chat_started,turn_started,turn_finished,chat_finished");
            free(text);
            free(stop);
            zoo_string_free(out);
        }
        chat_ctx_destroy(&ctx);
        zoo_agent_free(agent);
    }
    stop_server(&server);
}
