/*
 * raw_llama.c: the baseline for zoo-core/benches/throughput.rs, written
 * directly on llama.h and linked to the same llama.cpp shared libraries the
 * Rust build produced (scripts/bench builds and runs it), with the CPU
 * variant given by --backend (a libggml-cpu-<variant>.so of the build's
 * zoo-backends/, the one the engine runs under ZOO_CPU_VARIANT).
 *
 * It loads the model, makes a context (n_ctx, batch = ubatch, threads),
 * tokenizes the already rendered chat prompt the way LlamaBackend does
 * (special tokens parsed, BOS added only when the model wants one and the
 * text does not start with it), decodes it a batch per llama_decode call
 * (as LlamaBackend::decode_prompt does), then generates up to
 * n_gen tokens greedily one at a time (sampler chain: greedy), stopping
 * early only at an end-of-generation token, as the engine does. It prints
 * one JSON line with prompt and generation tokens per second.
 *
 *   raw_llama --model M.gguf --prompt-file P.txt --backend libggml-cpu-V.so
 *             [--n-gen 128] [--threads 2] [--batch 512] [--ctx 2048] [--chunk N]
 *
 * --chunk N decodes the prompt N tokens per llama_decode call instead of a
 * batch (at most the batch size); the chunks and the time of each are
 * printed, which shows what small decode calls cost.
 *
 * The prompt timer covers the prompt's llama_decode calls only (the engine's
 * prompt_ms also includes rendering and tokenizing, well under 1 ms here);
 * the generation timer covers sampling and decoding, as the engine's does.
 */

#define _POSIX_C_SOURCE 199309L

#define BENCH_NAME "raw_llama"
#include "raw_llama.h"

#define MAX_CHUNKS 4096

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt_path = NULL, *backend_path = NULL;
    int n_gen = 128, threads = 2, n_batch = 512, n_ctx = 2048, fixed_chunk = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            return die("every option takes a value");
        }
        if (!strcmp(a, "--model")) model_path = v;
        else if (!strcmp(a, "--prompt-file")) prompt_path = v;
        else if (!strcmp(a, "--backend")) backend_path = v;
        else if (!strcmp(a, "--n-gen")) n_gen = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--batch")) n_batch = atoi(v);
        else if (!strcmp(a, "--ctx")) n_ctx = atoi(v);
        else if (!strcmp(a, "--chunk")) fixed_chunk = atoi(v);
        else {
            fprintf(stderr, "raw_llama: unknown option %s\n", a);
            return 1;
        }
        i++;
    }
    if (!model_path || !prompt_path || !backend_path) {
        return die("--model, --prompt-file and --backend are required");
    }
    long text_len = 0;
    char *text = read_file(prompt_path, &text_len);
    if (!text) {
        return die("cannot read the prompt file");
    }

    struct llama_model *model = load_model(backend_path, model_path);
    if (!model) {
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = n_ctx;
    cparams.n_batch = n_batch;
    cparams.n_ubatch = n_batch;
    cparams.n_threads = threads;
    cparams.n_threads_batch = threads;
    cparams.swa_full = true; /* as LlamaBackend sets it */
    struct llama_context *ctx = llama_init_from_model(model, cparams);
    if (!ctx) {
        return die("cannot create the context");
    }

    /* BOS as LlamaBackend::tokenize adds it. */
    bool add_bos = llama_vocab_get_add_bos(vocab);
    if (add_bos) {
        char bos[64];
        int n = llama_token_to_piece(vocab, llama_vocab_bos(vocab), bos, sizeof bos - 1, 0, true);
        if (n > 0 && n < (int)sizeof bos && text_len >= n && !memcmp(text, bos, n)) {
            add_bos = false;
        }
    }
    int cap = (int)text_len + 16;
    llama_token *tokens = malloc(sizeof(llama_token) * cap);
    int n_prompt = llama_tokenize(vocab, text, (int)text_len, tokens, cap, add_bos, true);
    if (n_prompt <= 0 || n_prompt + n_gen >= n_ctx) {
        return die("tokenize failed or the prompt does not fit the context");
    }

    struct llama_batch batch = llama_batch_init(n_batch, 0, 1);
    int chunk = fixed_chunk > 0 ? fixed_chunk : n_batch;
    if (chunk > n_batch) {
        chunk = n_batch;
    }
    int chunks[MAX_CHUNKS], n_chunks = 0;
    double chunk_ms[MAX_CHUNKS];

    double t0 = now_ms();
    int done = 0;
    while (done < n_prompt) {
        int take = n_prompt - done < chunk ? n_prompt - done : chunk;
        double c0 = now_ms();
        if (decode(ctx, &batch, tokens + done, take, done, done + take == n_prompt)) {
            return die("llama_decode failed on the prompt");
        }
        double took = now_ms() - c0;
        if (n_chunks < MAX_CHUNKS) {
            chunk_ms[n_chunks] = took;
            chunks[n_chunks++] = take;
        }
        done += take;
    }
    double prompt_ms = now_ms() - t0;

    struct llama_sampler *smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());
    double g0 = now_ms();
    int generated = 0;
    for (int i = 0; i < n_gen; i++) {
        llama_token tok = llama_sampler_sample(smpl, ctx, -1);
        if (llama_vocab_is_eog(vocab, tok)) {
            break;
        }
        generated++;
        if (decode(ctx, &batch, &tok, 1, n_prompt + i, true)) {
            return die("llama_decode failed while generating");
        }
    }
    double gen_ms = now_ms() - g0;

    printf("{\"side\":\"raw\",\"chunk\":\"%s\",\"prompt_tokens\":%d,\"prompt_ms\":%.3f,"
           "\"prompt_tps\":%.2f,\"gen_tokens\":%d,\"gen_ms\":%.3f,\"gen_tps\":%.2f,"
           "\"threads\":%d,\"batch\":%d,\"n_ctx\":%d,\"chunks\":[",
           fixed_chunk > 0 ? "fixed" : "batch", n_prompt, prompt_ms, n_prompt * 1000.0 / prompt_ms,
           generated, gen_ms, generated * 1000.0 / gen_ms, threads, n_batch, n_ctx);
    for (int i = 0; i < n_chunks; i++) {
        printf(i ? ",%d" : "%d", chunks[i]);
    }
    printf("],\"chunk_ms\":[");
    for (int i = 0; i < n_chunks; i++) {
        printf(i ? ",%.1f" : "%.1f", chunk_ms[i]);
    }
    printf("]}\n");

    llama_sampler_free(smpl);
    llama_batch_free(batch);
    free(tokens);
    free(text);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
