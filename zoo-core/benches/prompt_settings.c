/*
 * prompt_settings.c: llama.cpp's prompt settings (batch, ubatch, flash
 * attention, KV cache type) compared on one model in one process, so that
 * what differs between two figures is the setting, not a process start or
 * a neighbour's burst. scripts/bench-settings builds and runs it.
 *
 *   prompt_settings --model M.gguf --backend libggml-cpu-V.so
 *                   --prompt-file P1.txt [--prompt-file P2.txt]
 *                   [--rounds 10] [--n-gen 32] [--threads 2] [--ctx 2048]
 *
 * Each round makes a fresh context for every setting in turn (the first
 * setting rotating from round to round) and, for each prompt, clears the
 * cache, decodes the prompt a batch per llama_decode call and generates
 * n-gen tokens greedily (never stopping early). One JSON line per
 * measurement. The settings are those of the projects users compare us
 * with, and the alternatives a user could pick:
 *
 *   zoo-keeper        batch 512,  ubatch 512,  flash attention auto, KV f16
 *                     (also node-llama-cpp 3.22's defaults)
 *   llama-server      batch 2048, ubatch 512,  auto, f16 (llama.cpp's common defaults)
 *   llama-cpp-python  batch 512,  ubatch 512,  off,  f16 (0.3.x's Llama() defaults)
 *   ubatch-256, ubatch-1024, ubatch-2048 (batch at least the ubatch)
 *   kv-q8_0           KV cache q8_0 (flash attention on, which it needs)
 *   zoo-keeper-again  zoo-keeper's settings again: the noise to read the rest against
 */

#define _POSIX_C_SOURCE 199309L

#define BENCH_NAME "prompt_settings"
#include "raw_llama.h"

#define MAX_PROMPTS 4

struct setting {
    const char *name;
    int batch, ubatch;
    enum llama_flash_attn_type flash_attn;
    enum ggml_type kv_type;
};

static const struct setting SETTINGS[] = {
    {"zoo-keeper", 512, 512, LLAMA_FLASH_ATTN_TYPE_AUTO, GGML_TYPE_F16},
    {"llama-server", 2048, 512, LLAMA_FLASH_ATTN_TYPE_AUTO, GGML_TYPE_F16},
    {"llama-cpp-python", 512, 512, LLAMA_FLASH_ATTN_TYPE_DISABLED, GGML_TYPE_F16},
    {"ubatch-256", 512, 256, LLAMA_FLASH_ATTN_TYPE_AUTO, GGML_TYPE_F16},
    {"ubatch-1024", 1024, 1024, LLAMA_FLASH_ATTN_TYPE_AUTO, GGML_TYPE_F16},
    /* zoo-keeper again, elsewhere in the order: how far two runs of one
     * setting differ is the noise every other row is read against. */
    {"zoo-keeper-again", 512, 512, LLAMA_FLASH_ATTN_TYPE_AUTO, GGML_TYPE_F16},
    {"ubatch-2048", 2048, 2048, LLAMA_FLASH_ATTN_TYPE_AUTO, GGML_TYPE_F16},
    {"kv-q8_0", 512, 512, LLAMA_FLASH_ATTN_TYPE_ENABLED, GGML_TYPE_Q8_0},
};
#define N_SETTINGS ((int)(sizeof SETTINGS / sizeof SETTINGS[0]))

struct prompt {
    const char *path;
    llama_token *tokens;
    int n;
};

struct run {
    int threads, n_ctx, n_gen;
};

/* Tokenizes a prompt file (special tokens parsed, BOS if the model wants one). */
static int load_prompt(const struct llama_vocab *vocab, struct prompt *p) {
    long len = 0;
    char *text = read_file(p->path, &len);
    if (!text) {
        return die("cannot read a prompt file");
    }
    int cap = (int)len + 16;
    p->tokens = malloc(sizeof(llama_token) * cap);
    p->n = llama_tokenize(vocab, text, (int)len, p->tokens, cap, llama_vocab_get_add_bos(vocab), true);
    free(text);
    return p->n > 0 ? 0 : die("cannot tokenize a prompt file");
}

/* One setting on one prompt in a fresh cache: prompt and generation times. */
static int measure(struct llama_context *ctx, int batch_size,
                   const struct prompt *p, int n_gen, double *prompt_ms, double *gen_ms) {
    llama_memory_clear(llama_get_memory(ctx), true);
    struct llama_batch batch = llama_batch_init(batch_size, 0, 1);
    double t0 = now_ms();
    for (int done = 0; done < p->n; done += batch_size) {
        int take = p->n - done < batch_size ? p->n - done : batch_size;
        if (decode(ctx, &batch, p->tokens + done, take, done, done + take == p->n)) {
            llama_batch_free(batch);
            return die("llama_decode failed on a prompt");
        }
    }
    *prompt_ms = now_ms() - t0;
    struct llama_sampler *smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());
    double g0 = now_ms();
    int failed = 0;
    for (int i = 0; i < n_gen && !failed; i++) {
        llama_token tok = llama_sampler_sample(smpl, ctx, -1);
        failed = decode(ctx, &batch, &tok, 1, p->n + i, true);
    }
    *gen_ms = now_ms() - g0;
    llama_sampler_free(smpl);
    llama_batch_free(batch);
    return failed ? die("llama_decode failed while generating") : 0;
}

/* A context with one setting's parameters. */
static struct llama_context *context_for(struct llama_model *model, const struct setting *s,
                                         const struct run *run) {
    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = run->n_ctx;
    cparams.n_batch = s->batch;
    cparams.n_ubatch = s->ubatch;
    cparams.flash_attn_type = s->flash_attn;
    cparams.type_k = s->kv_type;
    cparams.type_v = s->kv_type;
    cparams.n_threads = run->threads;
    cparams.n_threads_batch = run->threads;
    cparams.swa_full = true; /* as LlamaBackend sets it */
    return llama_init_from_model(model, cparams);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *backend_path = NULL;
    struct prompt prompts[MAX_PROMPTS];
    int n_prompts = 0, rounds = 10;
    struct run run = {.threads = 2, .n_ctx = 2048, .n_gen = 32};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "--backend")) backend_path = v;
        else if (!strcmp(a, "--prompt-file") && n_prompts < MAX_PROMPTS) prompts[n_prompts++].path = v;
        else if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else if (!strcmp(a, "--n-gen")) run.n_gen = atoi(v);
        else if (!strcmp(a, "--threads")) run.threads = atoi(v);
        else if (!strcmp(a, "--ctx")) run.n_ctx = atoi(v);
        else return die("unknown option, or an option without a value");
    }
    if (argc % 2 == 0 || !model_path || !backend_path || n_prompts == 0) {
        return die("--model, --backend and --prompt-file are required, each with a value");
    }
    struct llama_model *model = load_model(backend_path, model_path);
    if (!model) {
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    for (int p = 0; p < n_prompts; p++) {
        if (load_prompt(vocab, &prompts[p])) {
            return 1;
        }
        if (prompts[p].n + run.n_gen >= run.n_ctx) {
            return die("a prompt does not fit the context");
        }
    }
    /* Round 0 warms the page cache and the CPU's caches; it is not printed. */
    for (int round = 0; round <= rounds; round++) {
        for (int i = 0; i < N_SETTINGS; i++) {
            const struct setting *s = &SETTINGS[(i + round) % N_SETTINGS];
            struct llama_context *ctx = context_for(model, s, &run);
            if (!ctx) {
                return die("cannot create a context");
            }
            for (int p = 0; p < n_prompts; p++) {
                double prompt_ms = 0, gen_ms = 0;
                if (measure(ctx, s->batch, &prompts[p], run.n_gen, &prompt_ms, &gen_ms)) {
                    return 1;
                }
                if (round > 0) {
                    printf("{\"round\":%d,\"setting\":\"%s\",\"prompt\":%d,\"prompt_tokens\":%d,"
                           "\"prompt_tps\":%.2f,\"gen_tps\":%.2f}\n",
                           round, s->name, p, prompts[p].n, prompts[p].n * 1000.0 / prompt_ms,
                           run.n_gen * 1000.0 / gen_ms);
                    fflush(stdout);
                }
            }
            llama_free(ctx);
        }
    }
    for (int p = 0; p < n_prompts; p++) {
        free(prompts[p].tokens);
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
