/*
 * test_remote.c: an agent on an OpenAI-compatible server, chosen by config
 * alone ({"provider": {"type": "openai", "base_url": ...}}), against a tiny
 * fake server on 127.0.0.1 that plays fixed answers: a native tool call
 * streamed in pieces, the answer after it, then a 401.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chatctx.h"
#include "harness.h"
#include "json_mini.h"

#define MAX_ANSWERS 4

typedef struct {
    int listener;
    int port;
    const char *answers[MAX_ANSWERS]; /* whole HTTP responses, in order */
    int count;
    char *requests[MAX_ANSWERS]; /* each request as received (head and body) */
    pthread_t thread;
} fake_server;

/* Reads one request (head, then Content-Length bytes of body); NULL on error. */
static char *read_request(int fd) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) return NULL;
    long body_len = -1;
    size_t head_len = 0;
    for (;;) {
        if (body_len >= 0 && len >= head_len + (size_t)body_len) break;
        if (len == cap) {
            char *bigger = realloc(buf, cap * 2 + 1);
            if (!bigger) break;
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + len, cap - len, 0);
        if (n <= 0) {
            free(buf);
            return NULL;
        }
        len += (size_t)n;
        buf[len] = '\0';
        if (body_len < 0) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) continue;
            head_len = (size_t)(end - buf) + 4;
            body_len = 0;
            for (char *line = buf; line < end; line = strstr(line, "\r\n") + 2) {
                if (strncasecmp(line, "content-length:", 15) == 0) body_len = atol(line + 15);
            }
        }
    }
    return buf;
}

static void *serve(void *arg) {
    fake_server *s = arg;
    for (int i = 0; i < s->count; i++) {
        int fd = accept(s->listener, NULL, NULL);
        if (fd < 0) return NULL;
        s->requests[i] = read_request(fd);
        const char *answer = s->answers[i];
        size_t sent = 0, len = strlen(answer);
        while (sent < len) {
            ssize_t n = send(fd, answer + sent, len - sent, MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += (size_t)n;
        }
        shutdown(fd, SHUT_WR);
        /* Until the client has read everything and closed. */
        char drain[256];
        while (recv(fd, drain, sizeof drain, 0) > 0) {
        }
        close(fd);
    }
    return NULL;
}

static bool server_start(fake_server *s) {
    s->listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    if (s->listener < 0 || bind(s->listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(s->listener, 4) != 0 ||
        getsockname(s->listener, (struct sockaddr *)&addr, &alen) != 0) {
        return false;
    }
    s->port = ntohs(addr.sin_port);
    return pthread_create(&s->thread, NULL, serve, s) == 0;
}

/* A 200 answer whose body is these SSE events (each ends with "\n\n"). */
static char *sse_answer(const char *events) {
    size_t len = strlen(events);
    char *out = malloc(len + 256);
    if (!out) return NULL;
    snprintf(out, len + 256,
             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n%s",
             len, events);
    return out;
}

#define DELTA(json) "data: {\"choices\":[{\"index\":0,\"delta\":" json "}]}\n\n"
#define FINISH(why) "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" why "\"}]}\n\n"

static const char *CALL_EVENTS =
    DELTA("{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":"
          "{\"name\":\"get_weather\",\"arguments\":\"\"}}]}")
    DELTA("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\": \"}}]}")
    DELTA("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}]}")
    FINISH("tool_calls")
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":10,"
    "\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n"
    "data: [DONE]\n\n";

static const char *TEXT_EVENTS =
    DELTA("{\"role\":\"assistant\",\"content\":\"It is 17 degrees \"}")
    DELTA("{\"content\":\"in Paris.\"}")
    FINISH("stop")
    "data: [DONE]\n\n";

/* A 401 whose text repeats the key, as some servers do. */
static char *unauthorized_answer(void) {
    const char *body = "{\"error\": {\"message\": \"Incorrect API key: sk-c-secret-key\"}}";
    char *out = malloc(512);
    if (!out) return NULL;
    snprintf(out, 512,
             "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    return out;
}

static void weather(void *user_data, const char *args, size_t len, zoo_tool_result *result) {
    (void)len;
    char *city = jm_string(args, "city");
    CHECK_STR(city, "Paris");
    free(city);
    atomic_fetch_add((atomic_int *)user_data, 1);
    char *err = NULL;
    CHECK_STATUS(zoo_tool_result_set_json(result, "{\"temperature_celsius\":17}", &err), ZOO_OK,
                 err);
}

void test_remote_openai_chat(void) {
    fake_server server = {0};
    char *call = sse_answer(CALL_EVENTS), *text = sse_answer(TEXT_EVENTS);
    char *refused = unauthorized_answer();
    REQUIRE(call && text && refused);
    server.answers[0] = call;
    server.answers[1] = text;
    server.answers[2] = refused;
    server.count = 3;
    REQUIRE(server_start(&server));

    char config[512];
    snprintf(config, sizeof config,
             "{\"temperature\": 0, \"provider\": {\"type\": \"openai\", \"base_url\": "
             "\"http://127.0.0.1:%d/v1\", \"model\": \"served-model\", \"api_key\": "
             "\"sk-c-secret-key\", \"max_retries\": 0}}",
             server.port);
    zoo_agent *agent = NULL;
    char *err = NULL;
    REQUIRE_STATUS(zoo_agent_create(config, &agent, &err), ZOO_OK, err);
    atomic_int calls;
    atomic_init(&calls, 0);
    CHECK_STATUS(zoo_agent_register_tool(agent, "get_weather", "Current weather for a city",
                                         "{\"type\":\"object\",\"properties\":{\"city\":"
                                         "{\"type\":\"string\"}},\"required\":[\"city\"]}",
                                         weather, &calls, NULL, &err),
                 ZOO_OK, err);

    chat_ctx ctx;
    chat_ctx_init(&ctx);
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    char *out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "Weather in Paris?", NULL, &cb, &out, &err), ZOO_OK, err);
    if (out) {
        char *got = jm_string(out, "text");
        CHECK_STR(got, "It is 17 degrees in Paris.");
        CHECK_STR(chat_ctx_stream(&ctx), "It is 17 degrees in Paris.");
        free(got);
        char *name = jm_string(out, "tool_calls.0.name");
        CHECK_STR(name, "get_weather");
        free(name);
        double cached = 0;
        CHECK(jm_number(out, "usage.cached_tokens", &cached) && cached == 32);
        zoo_string_free(out);
    }
    CHECK(atomic_load(&calls) == 1);
    chat_ctx_destroy(&ctx);

    /* Refused credentials: their own status, and the key is not repeated. */
    out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "Again", NULL, NULL, &out, &err),
                 ZOO_AUTHENTICATION_FAILED, err);
    CHECK(out == NULL);
    CHECKF(err && strstr(err, "refused the credentials (HTTP 401): Incorrect API key: [redacted]"),
           "%s", err ? err : "(null)");
    CHECKF(err && !strstr(err, "sk-c-secret-key"), "%s", err ? err : "(null)");
    th_free_string(&err);
    zoo_agent_free(agent);
    pthread_join(server.thread, NULL);
    close(server.listener);

    /* What the server was sent: the model, the key, the tool, then the
     * call's result answering the call by id. */
    const char *first = server.requests[0], *second = server.requests[1];
    REQUIRE(first && second);
    CHECK(strstr(first, "POST /v1/chat/completions HTTP/1.1\r\n") == first);
    CHECK(strstr(first, "Authorization: Bearer sk-c-secret-key\r\n") != NULL ||
          strstr(first, "authorization: Bearer sk-c-secret-key\r\n") != NULL);
    const char *body = strstr(first, "\r\n\r\n") + 4;
    char *model = jm_string(body, "model");
    CHECK_STR(model, "served-model");
    free(model);
    char *tool = jm_string(body, "tools.0.function.name");
    CHECK_STR(tool, "get_weather");
    free(tool);
    CHECK(jm_is(body, "stream", "true"));
    body = strstr(second, "\r\n\r\n") + 4;
    char *answered = jm_string(body, "messages.2.tool_call_id");
    CHECK_STR(answered, "call_1");
    free(answered);
    char *result = jm_string(body, "messages.2.content");
    CHECK_STR(result, "{\"temperature_celsius\":17}");
    free(result);
    for (int i = 0; i < MAX_ANSWERS; i++) free(server.requests[i]);
    free(call);
    free(text);
    free(refused);
}
