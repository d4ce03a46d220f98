/*
 * chatctx.h: a recorder for one chat's callbacks, shared by the tests.
 *
 * It collects the streamed text (reset at each `turn_started` event,
 * so that after a chat it holds the last model reply's stream, which is
 * what the response's `text` is), the event types, the on_complete outcome
 * and how many times free_user_data ran. Callbacks run on libzoo's
 * inference thread; counters are atomic and the buffers sit behind a mutex.
 */
#ifndef ZOO_TEST_CHATCTX_H
#define ZOO_TEST_CHATCTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "zoo.h"

typedef struct chat_ctx chat_ctx;

struct chat_ctx {
    pthread_mutex_t mu;
    char *stream;        /* tokens of the current (last) model reply */
    size_t stream_len, stream_cap;
    char events[1024];   /* event types, comma-separated */
    bool events_valid;   /* every event was valid JSON with a string "type" */
    atomic_int tokens;   /* on_token calls */
    atomic_int nevents;  /* on_event calls */
    atomic_int completes;/* on_complete calls */
    atomic_int freed;    /* free_user_data calls */
    atomic_int bad_pieces; /* token pieces that are not whole UTF-8 characters */
    zoo_status complete_status;
    char *complete_text; /* NUL-terminated copy of on_complete's text */
    /* Optional hooks, run inside the callbacks after recording. */
    void (*token_hook)(chat_ctx *ctx, const char *text, size_t len);
    /* Gets each event's JSON, NUL-terminated, valid during the call. */
    void (*event_hook)(chat_ctx *ctx, const char *json);
    void (*complete_hook)(chat_ctx *ctx, zoo_status status);
    void *hook_data;
};

void chat_ctx_init(chat_ctx *ctx);
void chat_ctx_destroy(chat_ctx *ctx);
/* Callbacks recording into ctx; on_complete only when `with_complete`. */
zoo_chat_callbacks chat_ctx_callbacks(chat_ctx *ctx, bool with_complete);
/* The recorded stream as a NUL-terminated string (valid until destroy). */
const char *chat_ctx_stream(chat_ctx *ctx);

#endif /* ZOO_TEST_CHATCTX_H */
