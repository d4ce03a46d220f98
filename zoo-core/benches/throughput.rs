//! Prompt and generation throughput of the engine on a real model, to be
//! compared with raw llama.cpp (`benches/raw_llama.c`) on the same model,
//! threads, batch size and prompt. `scripts/bench` builds both and runs them
//! interleaved; run alone, this prints one JSON line for one measurement.
//!
//! Why: the engine wraps llama.cpp in an agent (template rendering, prompt
//! decode with a cancel flag llama.cpp checks, streaming, stop-string matching), and
//! none of that should cost throughput compared with llama.cpp's own loop.
//!
//! One measurement is one chat on a fresh agent (`Agent::with_model`,
//! temperature 0, `max_tokens` = `--n-gen`) whose user message is the text
//! of `--prompt-file`; a fresh agent has an empty KV cache, so the whole
//! prompt is decoded (`usage.cached_tokens` is checked to be 0). Prompt
//! tokens/s is `usage.prompt_tokens / metrics.prompt_ms`; generation tokens/s
//! is `usage.completion_tokens / metrics.generation_ms`.
//!
//! ```sh
//! cargo bench -p zoo-core --bench throughput -- \
//!     [--model M.gguf] [--prompt-file zoo-core/benches/prompt.txt] [--n-gen 128] \
//!     [--threads 2] [--batch 512] [--ctx 2048] [--render-prompt OUT]
//! cargo bench -p zoo-core --bench throughput -- --backend-info
//! ```
//!
//! llama.cpp's CPU variant is the best this machine runs, or
//! `ZOO_CPU_VARIANT`'s; each line names it. `--backend-info` prints the
//! backend information (`zoo_core::backend_info()`) as JSON and exits.
//!
//! `--render-prompt OUT` writes the chat prompt exactly as the engine renders
//! it (the model's chat template around the user message) to OUT and exits:
//! `raw_llama` tokenizes that file, so both sides decode the same tokens.

use std::path::PathBuf;

use serde_json::json;
use zoo_core::{Agent, ChatOptions, Config, LlamaBackend, Message, Model, ModelParams};

struct Args {
    model: PathBuf,
    prompt_file: PathBuf,
    n_gen: u32,
    threads: u32,
    batch: u32,
    ctx: u32,
    render_prompt: Option<PathBuf>,
}

fn parse_args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut args = Args {
        model: root.join("../models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        prompt_file: root.join("benches/prompt.txt"),
        n_gen: 128,
        threads: 2,
        batch: 512,
        ctx: 2048,
        render_prompt: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        if arg == "--bench" {
            continue; // added by `cargo bench`
        }
        let value = it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        let number = || {
            value
                .parse::<u32>()
                .unwrap_or_else(|_| panic!("{arg}: not a number: {value}"))
        };
        match arg.as_str() {
            "--model" => args.model = value.clone().into(),
            "--prompt-file" => args.prompt_file = value.clone().into(),
            "--n-gen" => args.n_gen = number(),
            "--threads" => args.threads = number(),
            "--batch" => args.batch = number(),
            "--ctx" => args.ctx = number(),
            "--render-prompt" => args.render_prompt = Some(value.clone().into()),
            _ => panic!("unknown option {arg}"),
        }
    }
    args
}

fn main() {
    if std::env::args().any(|a| a == "--backend-info") {
        let info = zoo_core::backend_info().expect("llama.cpp's CPU backend loads");
        println!("{}", serde_json::to_string(&info).expect("JSON"));
        return;
    }
    let args = parse_args();
    let text = std::fs::read_to_string(&args.prompt_file)
        .unwrap_or_else(|e| panic!("{}: {e}", args.prompt_file.display()));
    let model = Model::load(&args.model, ModelParams::default()).expect("the model loads");
    let config = Config::new(args.model.display().to_string())
        .temperature(0.0)
        .seed(1)
        .threads(args.threads)
        .batch_size(args.batch)
        .context_size(args.ctx)
        .max_tokens(args.n_gen);

    if let Some(out) = &args.render_prompt {
        let backend = LlamaBackend::new(&model, &config).expect("a context");
        let prompt = backend
            .template()
            .render(&[Message::user(text)], &[], true)
            .expect("the template renders");
        std::fs::write(out, prompt).expect("the prompt file is written");
        return;
    }

    let agent = Agent::with_model(model, config).expect("the agent starts");
    let response = agent
        .chat(text, ChatOptions::new())
        .wait()
        .expect("the chat succeeds");
    let usage = response.usage;
    let metrics = response.metrics;
    assert_eq!(
        usage.cached_tokens, 0,
        "a fresh agent must decode everything"
    );
    println!(
        "{}",
        json!({
            "side": "ours",
            "prompt_tokens": usage.prompt_tokens,
            "prompt_ms": metrics.prompt_ms,
            "prompt_tps": f64::from(usage.prompt_tokens) * 1000.0 / metrics.prompt_ms,
            "gen_tokens": usage.completion_tokens,
            "gen_ms": metrics.generation_ms,
            "gen_tps": f64::from(usage.completion_tokens) * 1000.0 / metrics.generation_ms,
            "threads": args.threads,
            "batch": args.batch,
            "n_ctx": args.ctx,
            "stop_reason": response.stop_reason,
            "cpu_variant": zoo_core::backend_info().expect("loaded").cpu_variant,
        })
    );
}
