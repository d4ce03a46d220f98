//! The REPL's slash commands.

use zoo_core::SessionStore;

use crate::listing;
use crate::repl::Repl;
use crate::verbose;

const HELP: &str = "\
/help            this list
/clear           forget the conversation
/system TEXT     set the system prompt (/system alone removes it)
/tools           the tools the model has
/skills          the skills there are
/skill NAME      use a skill (/skill off stops using it)
/model PATH      switch to another GGUF model, keeping the conversation
/session [ID]    the current session, or switch to session ID
/sessions        the sessions of the store
/save [FILE]     write the conversation to FILE as JSON (default
                 zoo-chat-SESSION.json in the current folder)
/debug [on|off]  show the prompt as rendered and the raw model output
/quit            leave (or Ctrl-D); Ctrl-C stops a reply";

/// Whether the REPL goes on.
pub enum Flow {
    /// Read the next line.
    Continue,
    /// Leave.
    Quit,
}

/// The first lines: what runs, where the conversation is kept, how to get help.
pub fn banner(repl: &Repl) {
    let Ok(launched) = repl.launched() else {
        return;
    };
    let config = launched.agent.config();
    let model = match (&config.provider, &config.model_path) {
        (Some(provider), _) => format!("{} provider", provider.type_name()),
        (None, Some(path)) => path.clone(),
        (None, None) => "no model".into(),
    };
    let session = match (launched.agent.session_id(), &config.session_store) {
        (Some(id), Some(store)) => format!(", session {id} in {store}"),
        _ => String::new(),
    };
    repl.display.note(&format!(
        "zoo chat: {model}{session}. /help lists the commands."
    ));
}

/// Runs the slash command `line`.
pub fn run(repl: &mut Repl, line: &str) -> Result<Flow, String> {
    let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    match name {
        "/quit" | "/exit" => return Ok(Flow::Quit),
        "/help" => println!("{HELP}"),
        "/clear" => agent(repl)?.clear_history().map_err(|e| e.to_string())?,
        "/system" => agent(repl)?
            .set_system_prompt((!rest.is_empty()).then(|| rest.to_owned()))
            .map_err(|e| e.to_string())?,
        "/tools" => tools(repl)?,
        "/skills" => skills(repl)?,
        "/skill" => skill(repl, rest)?,
        "/model" => model(repl, rest)?,
        "/session" => session(repl, rest)?,
        "/sessions" => listing::print_sessions(&store(repl)?)?,
        "/save" => save(repl, rest)?,
        "/debug" => debug(repl, rest),
        other => return Err(format!("unknown command {other}; /help lists them")),
    }
    Ok(Flow::Continue)
}

fn agent(repl: &Repl) -> Result<&zoo_core::Agent, String> {
    Ok(&repl.launched()?.agent)
}

fn tools(repl: &Repl) -> Result<(), String> {
    let tools = agent(repl)?.tools();
    if tools.is_empty() {
        println!("No tools.");
    }
    for tool in tools {
        println!("{}  {}", tool.name, tool.description);
    }
    Ok(())
}

fn skills(repl: &Repl) -> Result<(), String> {
    let skills = agent(repl)?.skills();
    if skills.is_empty() {
        println!("No skills (the config's `skills` lists the folders they are in).");
    }
    for skill in skills {
        println!("{}  {}", skill.name, skill.description);
    }
    Ok(())
}

fn skill(repl: &Repl, name: &str) -> Result<(), String> {
    let agent = agent(repl)?;
    match name {
        "" => Err("/skill NAME uses a skill; /skills lists them".into()),
        "off" => {
            agent.deactivate_skill();
            repl.display.note("No skill is active.");
            Ok(())
        }
        name => {
            agent.activate_skill(name).map_err(|e| e.to_string())?;
            repl.display.note(&format!("Skill {name} is active."));
            Ok(())
        }
    }
}

fn model(repl: &mut Repl, path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("/model PATH switches to the GGUF file at PATH".into());
    }
    let mut config = agent(repl)?.config().clone();
    config.provider = None;
    config.model_path = Some(path.to_owned());
    config.session = agent(repl)?.session_id();
    repl.relaunch(config)?;
    repl.display.note(&format!("Now on {path}."));
    Ok(())
}

fn session(repl: &mut Repl, id: &str) -> Result<(), String> {
    if id.is_empty() {
        match agent(repl)?.session_id() {
            Some(id) => println!("{id}"),
            None => println!("No session: the conversation is not kept."),
        }
        return Ok(());
    }
    store(repl)?;
    let mut config = agent(repl)?.config().clone();
    config.session = Some(id.to_owned());
    repl.relaunch(config)?;
    let messages = agent(repl)?.history().len();
    repl.display
        .note(&format!("Session {id} ({messages} messages)."));
    Ok(())
}

/// The session store of the agent's config.
fn store(repl: &Repl) -> Result<std::path::PathBuf, String> {
    agent(repl)?
        .config()
        .session_store
        .clone()
        .map(Into::into)
        .ok_or_else(|| "no session store: start zoo with --store FILE".into())
}

fn save(repl: &Repl, file: &str) -> Result<(), String> {
    let agent = agent(repl)?;
    let file = if file.is_empty() {
        default_save_file(agent.session_id().as_deref())?
    } else {
        std::path::PathBuf::from(file)
    };
    let json = match (agent.session_id(), &agent.config().session_store) {
        // The store's export, which SessionStore::import_json reads back.
        (Some(id), Some(path)) => SessionStore::open(path)
            .and_then(|store| store.export_json(&id))
            .map_err(|e| e.to_string())?,
        _ => serde_json::to_string_pretty(&agent.history()).map_err(|e| e.to_string())?,
    };
    let shown = file.display();
    std::fs::write(&file, json).map_err(|e| format!("{shown}: {e}"))?;
    repl.display.note(&format!("Saved to {shown}."));
    Ok(())
}

/// Where a bare `/save` writes: `zoo-chat-SESSION.json` in the current
/// folder, or `zoo-chat-SECONDS.json` (the Unix time) without a session;
/// absolute, so the message says exactly where.
fn default_save_file(session: Option<&str>) -> Result<std::path::PathBuf, String> {
    let name = match session {
        // A session id is any text: only the safe characters make the name.
        Some(id) => id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect(),
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .to_string(),
    };
    let here = std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?;
    Ok(here.join(format!("zoo-chat-{name}.json")))
}

fn debug(repl: &Repl, arg: &str) {
    let on = match arg {
        "on" => true,
        "off" => false,
        _ => !verbose::is_on(),
    };
    verbose::set(on);
    let state = if on { "on" } else { "off" };
    repl.display.note(&format!("Debug output is {state}."));
}

#[cfg(test)]
mod tests {
    use super::default_save_file;

    #[test]
    fn a_bare_save_names_its_file_after_the_session_or_the_time() {
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            default_save_file(Some("trip/plans 2")).unwrap(),
            here.join("zoo-chat-trip_plans_2.json")
        );
        let name = default_save_file(None).unwrap();
        let name = name.file_name().unwrap().to_str().unwrap();
        let seconds = name
            .strip_prefix("zoo-chat-")
            .and_then(|n| n.strip_suffix(".json"))
            .unwrap();
        assert!(seconds.parse::<u64>().unwrap() > 1_700_000_000, "{name}");
    }
}
