//! Instant resume: a conversation of about 3,000 tokens on SmolLM2, kept
//! in a session. Time to first token of the next message for an agent that
//! reopens the session (its KV snapshot loaded) against a fresh agent given
//! the same history (decoding all of it), alternating, in one process; the
//! snapshot's size and the time to open an agent on it.
//!
//! ```sh
//! cargo run --example resume            # 3 rounds
//! ```

use std::time::Instant;

use zoo_core::{Agent, ChatOptions, Config, Model, ModelParams, SessionStore};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args().nth(1).map_or(Ok(3), |a| a.parse())?;
    let path = std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../models/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        .into()
    });
    let model = Model::load(&path, ModelParams::default())?;
    let dir = std::env::temp_dir().join(format!("zoo-resume-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("chats.db").to_string_lossy().into_owned();
    let base = Config::default()
        .temperature(0.0)
        .context_size(4096)
        .max_tokens(24);
    let config = base.clone().session_store(db.clone()).session("long");

    // Build the conversation: long user messages until ~3,000 tokens.
    let agent = Agent::with_model(model.clone(), config.clone())?;
    let paragraph = "The lighthouse keeper wrote in his log every evening, and the sea kept its own log of storms. ";
    let mut prompt_tokens = 0;
    let mut turn = 0;
    while prompt_tokens < 3000 {
        let text = format!("Part {turn}: {}", paragraph.repeat(8));
        let response = agent.chat(text, ChatOptions::new()).wait()?;
        prompt_tokens = response.usage.prompt_tokens + response.usage.completion_tokens;
        turn += 1;
    }
    let history = agent.history();
    let closing = Instant::now();
    drop(agent);
    let write_ms = closing.elapsed().as_secs_f64() * 1000.0;
    let snapshot = SessionStore::open(&db)?.snapshot_path("long");
    let bytes = std::fs::metadata(&snapshot)?.len();
    println!(
        "conversation: {} messages, {prompt_tokens} tokens; snapshot {:.1} MB, closing the agent (writing it) took {write_ms:.0} ms",
        history.len(),
        bytes as f64 / 1e6
    );

    let question = "What did the keeper write?";
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let resumed = || -> Result<(f64, f64, u32), Box<dyn std::error::Error>> {
            let opened = Instant::now();
            let agent = Agent::with_model(model.clone(), config.clone())?;
            let open_ms = opened.elapsed().as_secs_f64() * 1000.0;
            let r = agent.chat(question, ChatOptions::new()).wait()?;
            // Put the session back as it was for the next round.
            agent.set_history(history.clone())?;
            Ok((
                open_ms,
                r.metrics.time_to_first_token_ms,
                r.usage.cached_tokens,
            ))
        };
        let fresh = || -> Result<f64, Box<dyn std::error::Error>> {
            let agent = Agent::with_model(model.clone(), base.clone())?;
            agent.set_history(history.clone())?;
            Ok(agent
                .chat(question, ChatOptions::new())
                .wait()?
                .metrics
                .time_to_first_token_ms)
        };
        let ((open_ms, snap_ms, cached), fresh_ms) = if round % 2 == 0 {
            let r = resumed()?;
            (r, fresh()?)
        } else {
            let f = fresh()?;
            (resumed()?, f)
        };
        println!(
            "round {round}: resumed {snap_ms:.0} ms to the first token ({cached} tokens from the snapshot, opening {open_ms:.0} ms), fresh {fresh_ms:.0} ms: ratio {:.3}",
            snap_ms / fresh_ms
        );
        ratios.push(snap_ms / fresh_ms);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio (resumed / fresh): {:.3}",
        ratios[ratios.len() / 2]
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
