#define _POSIX_C_SOURCE 200809L

#include "chatctx.h"

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json_mini.h"

void chat_ctx_init(chat_ctx *ctx) {
    memset(ctx, 0, sizeof *ctx);
    pthread_mutex_init(&ctx->mu, NULL);
    ctx->events_valid = true;
    atomic_init(&ctx->tokens, 0);
    atomic_init(&ctx->nevents, 0);
    atomic_init(&ctx->completes, 0);
    atomic_init(&ctx->freed, 0);
    atomic_init(&ctx->bad_pieces, 0);
}

void chat_ctx_destroy(chat_ctx *ctx) {
    pthread_mutex_destroy(&ctx->mu);
    free(ctx->stream);
    free(ctx->complete_text);
    ctx->stream = ctx->complete_text = NULL;
}

const char *chat_ctx_stream(chat_ctx *ctx) {
    pthread_mutex_lock(&ctx->mu);
    if (!ctx->stream) ctx->stream = calloc(1, 1);
    const char *s = ctx->stream;
    pthread_mutex_unlock(&ctx->mu);
    return s;
}

static void append(chat_ctx *ctx, const char *text, size_t len) {
    if (ctx->stream_len + len + 1 > ctx->stream_cap) {
        size_t cap = (ctx->stream_len + len + 1) * 2;
        ctx->stream = realloc(ctx->stream, cap);
        ctx->stream_cap = cap;
    }
    memcpy(ctx->stream + ctx->stream_len, text, len);
    ctx->stream_len += len;
    ctx->stream[ctx->stream_len] = '\0';
}

/* Whether text[0..len) is valid UTF-8 made of whole characters (zoo.h:
 * a token is "never a split character"). */
static bool whole_utf8(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > len) return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
        }
        i += n;
    }
    return true;
}

static void on_token(void *user_data, const char *text, size_t len) {
    chat_ctx *ctx = user_data;
    atomic_fetch_add(&ctx->tokens, 1);
    if (len == 0 || !whole_utf8((const unsigned char *)text, len)) atomic_fetch_add(&ctx->bad_pieces, 1);
    pthread_mutex_lock(&ctx->mu);
    append(ctx, text, len);
    pthread_mutex_unlock(&ctx->mu);
    if (ctx->token_hook) ctx->token_hook(ctx, text, len);
}

static void on_event(void *user_data, const char *json, size_t len) {
    chat_ctx *ctx = user_data;
    atomic_fetch_add(&ctx->nevents, 1);
    /* The event is not NUL-terminated: copy it before reading it. */
    char *copy = malloc(len + 1);
    memcpy(copy, json, len);
    copy[len] = '\0';
    char *type = jm_string(copy, "type");
    pthread_mutex_lock(&ctx->mu);
    if (!type) {
        ctx->events_valid = false;
    } else {
        size_t used = strlen(ctx->events);
        if (used + strlen(type) + 2 < sizeof ctx->events) {
            if (used) strcat(ctx->events, ",");
            strcat(ctx->events, type);
        }
        /* The response's text is the last reply's: restart the stream. */
        if (strcmp(type, "turn_started") == 0) {
            ctx->stream_len = 0;
            if (ctx->stream) ctx->stream[0] = '\0';
        }
    }
    pthread_mutex_unlock(&ctx->mu);
    if (ctx->event_hook) ctx->event_hook(ctx, copy);
    free(type);
    free(copy);
}

static void on_complete(void *user_data, zoo_status status, const char *text, size_t len) {
    chat_ctx *ctx = user_data;
    char *copy = malloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    pthread_mutex_lock(&ctx->mu);
    free(ctx->complete_text);
    ctx->complete_text = copy;
    ctx->complete_status = status;
    pthread_mutex_unlock(&ctx->mu);
    /* Counted last: a test that waits for `completes` then sees the text. */
    atomic_fetch_add(&ctx->completes, 1);
    if (ctx->complete_hook) ctx->complete_hook(ctx, status);
}

static void on_free(void *user_data) {
    chat_ctx *ctx = user_data;
    atomic_fetch_add(&ctx->freed, 1);
}

zoo_chat_callbacks chat_ctx_callbacks(chat_ctx *ctx, bool with_complete) {
    zoo_chat_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.on_token = on_token;
    cb.on_event = on_event;
    cb.on_complete = with_complete ? on_complete : NULL;
    cb.user_data = ctx;
    cb.free_user_data = on_free;
    return cb;
}
