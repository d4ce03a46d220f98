//! Generation speed beside busy processes: the default thread setting
//! (threads 0, which follows the free cores) against a fixed count of every
//! core, idle and beside one and two processes that keep a core busy. Runs
//! interleaved, several rounds, and prints the medians and their ratios as
//! JSON lines: the benchmark of the CPU issue's "threads that share".
//!
//! ```sh
//! cargo run --example busy_cores -- MODEL [ROUNDS] [TOKENS]
//! ```

use std::process::{Child, Command, Stdio};

use zoo_core::{Agent, ChatOptions, Config, Model, ModelParams};

const PROMPT: &str = "Write a long story about a dragon who learns to cook.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .ok_or("usage: busy_cores MODEL [ROUNDS] [TOKENS]")?;
    let rounds: usize = args.get(2).map_or(Ok(3), |r| r.parse())?;
    let tokens: u32 = args.get(3).map_or(Ok(128), |t| t.parse())?;
    let cores = std::thread::available_parallelism()?.get() as u32;
    let model = Model::load(path, ModelParams::default())?;
    let mut idle_auto = 0.0;
    for busy in 0..=2 {
        let hogs: Vec<Child> = (0..busy).map(|_| hog()).collect::<Result<_, _>>()?;
        let (mut auto, mut fixed) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            auto.push(tokens_per_second(&model, 0, tokens)?);
            fixed.push(tokens_per_second(&model, cores, tokens)?);
        }
        for mut child in hogs {
            child.kill()?;
            child.wait()?;
        }
        let (auto, fixed) = (median(&mut auto), median(&mut fixed));
        if busy == 0 {
            idle_auto = auto;
        }
        println!(
            "{{\"busy_processes\": {busy}, \"default_tps\": {auto:.1}, \"all_cores_tps\": {fixed:.1}, \
             \"default_vs_all_cores\": {:.2}, \"default_vs_idle_default\": {:.2}}}",
            auto / fixed,
            auto / idle_auto
        );
    }
    Ok(())
}

/// A process that keeps one core busy until killed.
fn hog() -> std::io::Result<Child> {
    Command::new("yes")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// Greedy generation speed of one chat on a fresh agent.
fn tokens_per_second(
    model: &Model,
    threads: u32,
    tokens: u32,
) -> Result<f64, Box<dyn std::error::Error>> {
    let config = Config::default()
        .temperature(0.0)
        .threads(threads)
        .max_tokens(tokens);
    let agent = Agent::with_model(model.clone(), config)?;
    let response = agent.chat(PROMPT, ChatOptions::new()).wait()?;
    Ok(response.metrics.tokens_per_second)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
