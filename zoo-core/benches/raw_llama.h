/*
 * raw_llama.h: what the two C baselines on llama.h share (raw_llama.c,
 * the engine's throughput baseline, and prompt_settings.c): a clock, a
 * quiet log, reading a file, loading the model and decoding a run of
 * tokens. Each defines BENCH_NAME, its name in error messages, before
 * including it.
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

/* Loads the CPU backend at backend_path (one libggml-cpu-<variant>.so),
 * then the model on the CPU; NULL, said on stderr, when either fails. */
static struct llama_model *load_model(const char *backend_path, const char *model_path) {
    llama_log_set(quiet_log, NULL);
    if (!ggml_backend_load(backend_path)) {
        die("cannot load the CPU backend");
        return NULL;
    }
    llama_backend_init();
    struct llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(model_path, mparams);
    if (!model) {
        die("cannot load the model");
    }
    return model;
}

#endif
