//! Starting the agent a command runs: the model loaded with a progress bar,
//! the MCP servers added, and the confirmation hook set.

use std::io::IsTerminal;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use zoo_core::{Agent, Config};

use crate::config_file::Settings;
use crate::confirm::{Confirm, Policy, Question};
use crate::display::Display;

/// A started agent and the questions its confirmation hook asks.
pub struct Launched {
    /// The agent.
    pub agent: Agent,
    /// Questions for the person, when tools need confirmation.
    pub questions: Option<Receiver<Question>>,
}

/// Starts the agent of `settings`.
pub fn launch(settings: &Settings, config: Config, display: Display) -> Result<Launched, String> {
    prepare_store(&config)?;
    let agent = create(config)?;
    for (name, transport) in &settings.mcp_servers {
        match agent.add_mcp_server(name, transport.clone()) {
            Ok(info) => eprintln!("mcp: {name}: {} tools", info.tools.len()),
            // A server that fails leaves the others and the chat usable.
            Err(e) => display.error(&format!("MCP server `{name}`: {e}")),
        }
    }
    let questions = confirmation(settings, &agent);
    Ok(Launched { agent, questions })
}

/// Sets the hook that asks before the `[cli] confirm` tools run.
fn confirmation(settings: &Settings, agent: &Agent) -> Option<Receiver<Question>> {
    if settings.cli.confirm.is_empty() {
        return None;
    }
    let policy = if std::io::stdin().is_terminal() {
        Policy::Ask
    } else if settings.cli.allow_tools {
        Policy::Allow
    } else {
        Policy::Refuse
    };
    let (hook, questions) = Confirm::new(&settings.cli.confirm, policy);
    agent.set_hooks(Some(Arc::new(hook)));
    Some(questions)
}

/// The folder of the session store, made when missing (the user's data
/// folder may not have one for zoo yet).
fn prepare_store(config: &Config) -> Result<(), String> {
    let Some(store) = &config.session_store else {
        return Ok(());
    };
    match std::path::Path::new(store).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot make the folder of {store}: {e}")),
        _ => Ok(()),
    }
}

/// A local model is loaded here, with a progress bar on a terminal; any
/// other agent the engine starts by itself.
#[cfg(feature = "llama")]
fn create(config: Config) -> Result<Agent, String> {
    let Some(path) = config
        .model_path
        .clone()
        .filter(|_| config.provider.is_none())
    else {
        return Agent::create(config).map_err(|e| e.to_string());
    };
    // On stderr, and only when it is a terminal (indicatif hides it
    // otherwise): a script's output stays clean.
    let bar = indicatif::ProgressBar::new(100).with_style(
        indicatif::ProgressStyle::with_template("loading {msg} {bar:30} {percent}%")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(path.clone());
    let shown = bar.clone();
    let params = zoo_core::ModelParams::from(&config);
    let started = std::time::Instant::now();
    let model = zoo_core::Model::load_with_progress(&path, params, move |progress| {
        shown.set_position((progress * 100.0) as u64);
        true
    });
    match &model {
        // The bar gives way to a line saying what was loaded, which stays.
        Ok(_) => {
            bar.set_style(
                indicatif::ProgressStyle::with_template("{msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.finish_with_message(format!(
                "loaded {path} in {:.1} s",
                started.elapsed().as_secs_f64()
            ));
        }
        // The error says what failed; the bar goes.
        Err(_) => bar.finish_and_clear(),
    }
    Agent::with_model(model.map_err(|e| e.to_string())?, config).map_err(|e| e.to_string())
}

#[cfg(not(feature = "llama"))]
fn create(config: Config) -> Result<Agent, String> {
    Agent::create(config).map_err(|e| e.to_string())
}
