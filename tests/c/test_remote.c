/*
 * test_remote.c: an agent on a remote model, chosen by config alone: an
 * OpenAI-compatible server ({"provider": {"type": "openai", "base_url":
 * ...}}), Anthropic ({"type": "anthropic", "model": ...}) and Gemini
 * ({"type": "gemini", "model": ...}), each against a tiny fake server on
 * 127.0.0.1 that plays fixed answers: native tool calls streamed in
 * pieces, the answer after them, a rate limit retried (a `retry` event),
 * a refused key.
 */
#define _GNU_SOURCE /* strcasestr */

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

/* An answer with a status, a JSON body and one extra header line (or ""). */
static char *status_answer(int status, const char *extra_header, const char *body) {
    size_t cap = strlen(body) + strlen(extra_header) + 256;
    char *out = malloc(cap);
    if (!out) return NULL;
    snprintf(out, cap,
             "HTTP/1.1 %d Scripted\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "%sConnection: close\r\n\r\n%s",
             status, strlen(body), extra_header, body);
    return out;
}

/* Keeps the JSON of the chat's retry events (hook_data is a 1 KiB buffer). */
static void keep_retry(chat_ctx *ctx, const char *json) {
    if (!jm_is(json, "type", "\"retry\"")) return;
    char *kept = ctx->hook_data;
    pthread_mutex_lock(&ctx->mu);
    snprintf(kept, 1024, "%s", json);
    pthread_mutex_unlock(&ctx->mu);
}

#define AEVENT(type, json) "event: " type "\ndata: " json "\n\n"
#define ABLOCK_DELTA(delta) AEVENT("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":" delta "}")

static const char *ANTHROPIC_CALL =
    AEVENT("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
           "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":20,"
           "\"cache_read_input_tokens\":30,\"output_tokens\":1}}}")
    AEVENT("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
           "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}")
    ABLOCK_DELTA("{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \"}")
    AEVENT("ping", "{\"type\":\"ping\"}")
    ABLOCK_DELTA("{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Paris\\\"}\"}")
    AEVENT("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
    AEVENT("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},"
           "\"usage\":{\"output_tokens\":12}}")
    AEVENT("message_stop", "{\"type\":\"message_stop\"}");

static const char *ANTHROPIC_TEXT =
    AEVENT("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\","
           "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":60,\"output_tokens\":1}}}")
    AEVENT("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
           "{\"type\":\"text\",\"text\":\"\"}}")
    ABLOCK_DELTA("{\"type\":\"text_delta\",\"text\":\"It is 17 degrees \"}")
    ABLOCK_DELTA("{\"type\":\"text_delta\",\"text\":\"in Paris.\"}")
    AEVENT("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
    AEVENT("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
           "\"usage\":{\"output_tokens\":8}}")
    AEVENT("message_stop", "{\"type\":\"message_stop\"}");

/* One chat with the weather tool on `config`; the server's answers must be
 * a retried 429 (Retry-After: 0), a call and a text. Returns the chat's
 * outcome for the caller's checks of the requests. */
static void weather_chat_with_a_retry(fake_server *server, const char *config) {
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
    char retry[1024] = "";
    ctx.event_hook = keep_retry;
    ctx.hook_data = retry;
    zoo_chat_callbacks cb = chat_ctx_callbacks(&ctx, false);
    char *out = NULL;
    CHECK_STATUS(zoo_agent_chat(agent, "Weather in Paris?", NULL, &cb, &out, &err), ZOO_OK, err);
    if (out) {
        char *text = jm_string(out, "text");
        CHECK_STR(text, "It is 17 degrees in Paris.");
        free(text);
        zoo_string_free(out);
    }
    CHECK_STR(chat_ctx_stream(&ctx), "It is 17 degrees in Paris.");
    CHECK(atomic_load(&calls) == 1);
    CHECK_STR(ctx.events,
              "chat_started,turn_started,retry,turn_finished,tool_call_started,tool_call_finished,"
              "turn_started,turn_finished,chat_finished");
    double attempt = 0, max_retries = 0, delay = -1, status = 0, seq = 0;
    CHECKF(jm_number(retry, "attempt", &attempt) && attempt == 1, "%s", retry);
    CHECKF(jm_number(retry, "max_retries", &max_retries) && max_retries == 2, "%s", retry);
    CHECKF(jm_number(retry, "delay_ms", &delay) && delay == 0, "%s", retry);
    CHECKF(jm_number(retry, "status", &status) && status == 429, "%s", retry);
    CHECKF(jm_number(retry, "seq", &seq) && seq == 2, "%s", retry);
    char *reason = jm_string(retry, "reason");
    CHECK_STR(reason, "HTTP 429: Too many requests");
    free(reason);
    chat_ctx_destroy(&ctx);
    zoo_agent_free(agent);
    pthread_join(server->thread, NULL);
    close(server->listener);
}

void test_remote_anthropic_chat(void) {
    fake_server server = {0};
    char *limited = status_answer(429, "Retry-After: 0\r\n",
                                  "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
                                  "\"message\":\"Too many requests\"}}");
    char *call = sse_answer(ANTHROPIC_CALL), *text = sse_answer(ANTHROPIC_TEXT);
    REQUIRE(limited && call && text);
    server.answers[0] = limited;
    server.answers[1] = call;
    server.answers[2] = text;
    server.count = 3;
    REQUIRE(server_start(&server));
    char config[512];
    snprintf(config, sizeof config,
             "{\"provider\": {\"type\": \"anthropic\", \"base_url\": \"http://127.0.0.1:%d\", "
             "\"model\": \"claude-sonnet-4-5\", \"api_key\": \"sk-ant-c-key\"}}",
             server.port);
    weather_chat_with_a_retry(&server, config);

    const char *first = server.requests[1], *second = server.requests[2];
    REQUIRE(first && second);
    CHECK(strstr(first, "POST /v1/messages HTTP/1.1\r\n") == first);
    CHECK(strcasestr(first, "x-api-key: sk-ant-c-key\r\n") != NULL);
    CHECK(strcasestr(first, "anthropic-version: 2023-06-01\r\n") != NULL);
    const char *body = strstr(first, "\r\n\r\n") + 4;
    char *tool = jm_string(body, "tools.0.name");
    CHECK_STR(tool, "get_weather");
    free(tool);
    body = strstr(second, "\r\n\r\n") + 4;
    char *answered = jm_string(body, "messages.2.content.0.tool_use_id");
    CHECK_STR(answered, "call_1");
    free(answered);
    char *result = jm_string(body, "messages.2.content.0.content");
    CHECK_STR(result, "{\"temperature_celsius\":17}");
    free(result);
    for (int i = 0; i < MAX_ANSWERS; i++) free(server.requests[i]);
    free(limited);
    free(call);
    free(text);
}

#define GCHUNK(json) "data: " json "\r\n\r\n"

static const char *GEMINI_CALL =
    GCHUNK("{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":"
           "{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}]},\"index\":0}]}")
    GCHUNK("{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"\"}]},"
           "\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":40,"
           "\"cachedContentTokenCount\":32,\"candidatesTokenCount\":7}}");

static const char *GEMINI_TEXT =
    GCHUNK("{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"It is 17 degrees \"}]},"
           "\"index\":0}]}")
    GCHUNK("{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"in Paris.\"}]},"
           "\"finishReason\":\"STOP\",\"index\":0}]}");

void test_remote_gemini_chat(void) {
    fake_server server = {0};
    char *limited = status_answer(429, "",
                                  "{\"error\":{\"code\":429,\"message\":\"Too many requests\","
                                  "\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":"
                                  "\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"0s\"}]}}");
    char *call = sse_answer(GEMINI_CALL), *text = sse_answer(GEMINI_TEXT);
    REQUIRE(limited && call && text);
    server.answers[0] = limited;
    server.answers[1] = call;
    server.answers[2] = text;
    server.count = 3;
    REQUIRE(server_start(&server));
    char config[512];
    snprintf(config, sizeof config,
             "{\"provider\": {\"type\": \"gemini\", \"base_url\": \"http://127.0.0.1:%d\", "
             "\"model\": \"gemini-2.5-flash\", \"api_key\": \"AIza-c-key\"}}",
             server.port);
    weather_chat_with_a_retry(&server, config);

    const char *first = server.requests[1], *second = server.requests[2];
    REQUIRE(first && second);
    CHECK(strstr(first, "POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse HTTP/1.1\r\n") ==
          first);
    CHECK(strcasestr(first, "x-goog-api-key: AIza-c-key\r\n") != NULL);
    const char *body = strstr(first, "\r\n\r\n") + 4;
    char *tool = jm_string(body, "tools.0.functionDeclarations.0.name");
    CHECK_STR(tool, "get_weather");
    free(tool);
    body = strstr(second, "\r\n\r\n") + 4;
    char *name = jm_string(body, "contents.2.parts.0.functionResponse.name");
    CHECK_STR(name, "get_weather");
    free(name);
    double celsius = 0;
    CHECK(jm_number(body, "contents.2.parts.0.functionResponse.response.output.temperature_celsius", &celsius) &&
          celsius == 17);
    for (int i = 0; i < MAX_ANSWERS; i++) free(server.requests[i]);
    free(limited);
    free(call);
    free(text);
}
