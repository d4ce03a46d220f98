//! A coding agent in a few lines: the built-in tools on a workspace, every
//! change confirmed on the terminal. It is given a tiny project whose test
//! fails and asked to fix it.
//!
//! ```sh
//! cargo run --example coding_agent                  # SmolLM2 from models/
//! ZOO_MODEL=path/to/bigger.gguf cargo run --example coding_agent
//! ```
//!
//! A 135M model will rarely manage the fix; a 7B model does. What it shows
//! is the shape: tools confined to the workspace, the host deciding each
//! write and each command.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use zoo_core::tools::builtin::BuiltinOptions;
use zoo_core::{Agent, ChatOptions, Config};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = std::env::temp_dir().join(format!("zoo-coding-agent-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    std::fs::write(
        workspace.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )?;
    std::fs::write(
        workspace.join("test_calc.py"),
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    )?;
    let model = std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../models/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        .into()
    });
    let config = Config::new(model)
        .temperature(0.0)
        .max_turns(12)
        .system_prompt(
            "You fix code. Read the files, run the tests with bash, edit, and run them again.",
        );
    let agent = Agent::create(config)?;
    agent.add_builtin_tools(
        &[
            "list_files",
            "read_file",
            "search",
            "edit_file",
            "write_file",
            "bash",
        ],
        BuiltinOptions {
            workspace: workspace.clone(),
            confirm: Some(Arc::new(ask)),
            bash_deny: vec!["sudo".into(), "rm -rf /".into()],
        },
    )?;
    let response = agent
        .chat(
            "The test in test_calc.py fails. Find out why with `python -m pytest -q` and fix calc.py.",
            ChatOptions::new().on_token(|t| {
                print!("{t}");
                let _ = std::io::stdout().flush();
            }),
        )
        .wait()?;
    println!(
        "\n\n[{:?}] {} tool calls\n{}",
        response.stop_reason,
        response.tool_calls.len(),
        std::fs::read_to_string(workspace.join("calc.py"))?
    );
    std::fs::remove_dir_all(&workspace)?;
    Ok(())
}

/// Asks on the terminal; refused when nobody is there to answer.
fn ask(tool: &str, args: &serde_json::Value) -> bool {
    println!("\n[{tool}] {args}");
    if !std::io::stdin().is_terminal() {
        return false;
    }
    print!("allow? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    line.trim().eq_ignore_ascii_case("y")
}
