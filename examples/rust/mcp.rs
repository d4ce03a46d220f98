//! An agent with the tools of an MCP server: the reference filesystem
//! server (`@modelcontextprotocol/server-filesystem`), confined to a fresh
//! folder holding two notes, answers a question about the folder.
//!
//! ```sh
//! scripts/fetch-models && scripts/fetch-mcp-servers
//! cargo run --example mcp -- "Which notes are in the folder?"
//! ```
//!
//! Any stdio server works the same way: `ZOO_MCP_COMMAND="npx -y some-mcp-server"`
//! replaces the filesystem server (its tools are then `server__<tool>`).

use std::io::Write;
use std::path::PathBuf;

use zoo_core::{Agent, ChatOptions, Config, EventKind, McpTransport, ToolChoice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `RUST_LOG=zoo_core::mcp=info` shows the server's stderr and notifications.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Which notes are in the folder?".to_string());
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let model_path = std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
        repo.join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
            .display()
            .to_string()
    });

    // The folder the server may see, and nothing else.
    let folder = std::env::temp_dir().join(format!("zoo-mcp-example-{}", std::process::id()));
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("groceries.txt"), "eggs, flour, milk\n")?;
    std::fs::write(folder.join("todo.txt"), "call the plumber\n")?;
    let folder = folder.canonicalize()?;

    let transport = match std::env::var("ZOO_MCP_COMMAND") {
        Ok(line) => {
            let mut words = line.split_whitespace();
            let command = words.next().ok_or("ZOO_MCP_COMMAND is empty")?;
            McpTransport::stdio(command).args(words)
        }
        Err(_) => {
            let server = repo.join(
                "tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
            );
            if !server.is_file() {
                return Err(
                    "run scripts/fetch-mcp-servers first (it installs the MCP servers)".into(),
                );
            }
            McpTransport::stdio("node")
                .args([server.display().to_string(), folder.display().to_string()])
        }
    };

    eprintln!("loading {model_path}");
    let agent = Agent::create(
        Config::new(&model_path)
            .temperature(0.0)
            .system_prompt(format!(
                "You help with the files in the folder {}. Use the tools to look at them.",
                folder.display()
            )),
    )?;
    let info = agent.add_mcp_server("files", transport)?;
    eprintln!(
        "{} {} (MCP {}): {} tools: {}",
        info.server_name,
        info.server_version,
        info.protocol_version,
        info.tools.len(),
        info.tools.join(", ")
    );

    println!("> {question}");
    let response = agent
        .chat(
            question,
            ChatOptions::new()
                // Small models rarely call a tool unasked; the first reply must.
                .tool_choice(ToolChoice::Required)
                .on_event(|event| {
                    if let EventKind::ToolCallFinished {
                        name,
                        result,
                        error,
                        ..
                    } = &event.kind
                    {
                        match (result, error) {
                            (Some(result), _) => eprintln!("[{name} -> {result}]"),
                            (_, Some(error)) => eprintln!("[{name} failed: {error}]"),
                            _ => {}
                        }
                    }
                })
                .on_token(|text| {
                    print!("{text}");
                    let _ = std::io::stdout().flush();
                }),
        )
        .wait()?;
    println!();
    eprintln!(
        "{} tool call(s), stop reason {:?}",
        response.tool_calls.len(),
        response.stop_reason
    );
    agent.remove_mcp_server("files");
    std::fs::remove_dir_all(&folder)?;
    Ok(())
}
