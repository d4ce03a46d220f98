//! A coding agent in a few lines: the built-in tools on a temporary
//! workspace holding a tiny project whose test fails, and every write,
//! edit and command confirmed on the terminal. It shows what the model did
//! (each call and what came back), then runs the test itself to say
//! honestly whether the fix worked.
//!
//! ```sh
//! cargo run --example coding_agent                        # SmolLM2 from models/
//! ZOO_MODEL=path/to/bigger.gguf cargo run --example coding_agent
//! ZOO_PROVIDER='{"type": "openai", "base_url": "http://127.0.0.1:8080/v1"}' \
//!     cargo run --example coding_agent
//! yes y | cargo run --example coding_agent               # allow everything
//! ```
//!
//! A 135M model rarely manages the fix (it may not call a tool at all); a
//! 7B model or a remote one does. `zoo-core/tests/coding_agent_example.rs`
//! drives this file on the mock with a scripted fix that succeeds.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use zoo_core::tools::builtin::BuiltinOptions;
use zoo_core::{Agent, ChatOptions, Config, EventKind, ToolChoice};

/// The tiny project: `add` subtracts, and its test says so.
pub const CALC: &str = "def add(a, b):\n    return a - b\n";
/// The project's test, run with `python3 test_calc.py`.
pub const TEST: &str = "from calc import add\n\nassert add(2, 3) == 5, f\"add(2, 3) returned {add(2, 3)}, expected 5\"\nprint(\"all tests passed\")\n";
/// What the agent is asked.
pub const TASK: &str = "The test in test_calc.py fails. Run it with `python3 test_calc.py`, \
                        read calc.py, fix it with edit_file, and run the test again.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = config_from_env()?;
    // Whether the fix worked is in the report: a model that could not fix
    // the project is an outcome, not an error.
    run(
        config,
        std::io::BufReader::new(std::io::stdin()),
        std::io::stdout(),
    )?;
    Ok(())
}

/// The agent's config: `ZOO_PROVIDER` (a provider object as JSON), else
/// `ZOO_MODEL`, else SmolLM2 from the repository's `models/`.
pub fn config_from_env() -> zoo_core::Result<Config> {
    let base = match std::env::var("ZOO_PROVIDER") {
        Ok(provider) => Config::from_json(&format!("{{\"provider\": {provider}}}"))?,
        Err(_) => Config::new(std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../models/SmolLM2-135M-Instruct.Q4_1.gguf"
            )
            .into()
        })),
    };
    Ok(base
        .temperature(0.0)
        .max_turns(12)
        .max_tokens(256)
        .max_tool_result_tokens(400)
        .system_prompt(
            "You fix code. Run the tests with bash, read the files, fix them with edit_file, \
             and run the tests again. Call one tool at a time.",
        ))
}

/// Makes the project in a temporary workspace, lets the agent work on it
/// (each write, edit and command asked on `input`: `y` allows, anything
/// else or the end of the input refuses), reports on `output`, and returns
/// whether the test passes afterwards.
pub fn run(
    config: Config,
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<bool, Box<dyn std::error::Error>> {
    let workspace = std::env::temp_dir().join(format!("zoo-coding-agent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&workspace);
    std::fs::create_dir_all(&workspace)?;
    std::fs::write(workspace.join("calc.py"), CALC)?;
    std::fs::write(workspace.join("test_calc.py"), TEST)?;
    let result = work(config, &workspace, input, output);
    std::fs::remove_dir_all(&workspace)?;
    result
}

fn work(
    config: Config,
    workspace: &Path,
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<bool, Box<dyn std::error::Error>> {
    let out = Arc::new(Mutex::new(output));
    let agent = Agent::create(config)?;
    agent.add_builtin_tools(
        &["list_files", "read_file", "edit_file", "write_file", "bash"],
        BuiltinOptions {
            workspace: workspace.to_owned(),
            confirm: Some(confirm_on(input, out.clone())),
            bash_deny: vec!["sudo".into(), "rm -rf".into()],
        },
    )?;
    say(&out, &format!("Task: {TASK}\n"));
    let shown = out.clone();
    // The first reply must call a tool (a small model would otherwise only
    // talk about the task); after a call succeeds the model is free again.
    let options = ChatOptions::new()
        .tool_choice(ToolChoice::Required)
        .on_event(move |event| show(&shown, &event.kind));
    let response = agent.chat(TASK, options).wait()?;
    let (passed, report) = run_test(workspace)?;
    say(
        &out,
        &format!(
            "\nThe model said: {}\n[{:?}] {} tool calls, {} tokens\ncalc.py is now:\n{}\
             python3 test_calc.py after the agent's work: {}\n{report}",
            response.text.trim(),
            response.stop_reason,
            response.tool_calls.len(),
            response.usage.total_tokens,
            std::fs::read_to_string(workspace.join("calc.py"))?,
            if passed { "passes" } else { "still fails" },
        ),
    );
    Ok(passed)
}

/// The confirmation: the call on the terminal, then a line of `input`.
fn confirm_on(
    input: impl BufRead + Send + 'static,
    out: Arc<Mutex<impl Write + Send + 'static>>,
) -> zoo_core::tools::builtin::ConfirmFn {
    let input = Mutex::new(input);
    Arc::new(move |tool: &str, args: &serde_json::Value| {
        say(&out, &format!("  allow {tool} {args}? [y/N] "));
        let mut line = String::new();
        let read = input
            .lock()
            .map_err(|_| "the terminal is gone".to_string())?
            .read_line(&mut line)
            .map_err(|e| format!("reading the answer: {e}"))?;
        if read == 0 {
            say(&out, "(no answer: refused)\n");
            return Ok(false);
        }
        say(&out, &format!("{}\n", line.trim()));
        Ok(line.trim().eq_ignore_ascii_case("y"))
    })
}

/// What the model did, as it happens.
fn show(out: &Mutex<impl Write>, event: &EventKind) {
    match event {
        EventKind::ToolCallStarted {
            name, arguments, ..
        } => say(out, &format!("> {name} {arguments}\n")),
        EventKind::ToolCallFinished {
            result: Some(result),
            ..
        } => {
            let text = result["text"]
                .as_str()
                .map_or(result.to_string(), str::to_owned);
            say(out, &format!("< {}\n", indent(&text)));
        }
        EventKind::ToolCallFinished {
            error: Some(error), ..
        } => say(out, &format!("< error: {error}\n")),
        _ => {}
    }
}

fn say(out: &Mutex<impl Write>, text: &str) {
    if let Ok(mut out) = out.lock() {
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

fn indent(text: &str) -> String {
    text.trim_end().replace('\n', "\n  ")
}

/// Runs the project's test: whether it passed, and what it printed.
fn run_test(workspace: &Path) -> std::io::Result<(bool, String)> {
    let run = Command::new("python3")
        .arg("test_calc.py")
        .current_dir(workspace)
        .output()?;
    let printed =
        String::from_utf8_lossy(&run.stdout).into_owned() + &String::from_utf8_lossy(&run.stderr);
    Ok((run.status.success(), printed))
}
