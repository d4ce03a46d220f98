/*
 * raw_llama.h: what the two C baselines on llama.h share (raw_llama.c,
 * the engine's throughput baseline, and prompt_settings.c): a clock, a
 * quiet log, reading a file and decoding a run of tokens. Each defines
 * BENCH_NAME, its name in error messages, before including it.
 */

#ifndef ZOO_BENCH_RAW_LLAMA_H
#define ZOO_BENCH_RAW_LLAMA_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

static char *read_file(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len + 1);
    if (fread(buf, 1, *len, f) != (size_t)*len) {
        fclose(f);
        free(buf);
        return NULL;
    }
    buf[*len] = 0;
    fclose(f);
    return buf;
}

static int die(const char *msg) {
    fprintf(stderr, "%s: %s\n", BENCH_NAME, msg);
    return 1;
}

/* Decodes tokens[0..n) at positions start.., logits for the last one if asked. */
static int decode(struct llama_context *ctx, struct llama_batch *batch, const llama_token *tokens,
                  int n, int start, bool logits) {
    batch->n_tokens = n;
    for (int i = 0; i < n; i++) {
        batch->token[i] = tokens[i];
        batch->pos[i] = start + i;
        batch->n_seq_id[i] = 1;
        batch->seq_id[i][0] = 0;
        batch->logits[i] = logits && i == n - 1;
    }
    return llama_decode(ctx, *batch);
}

#endif
