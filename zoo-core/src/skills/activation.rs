//! Activating a skill: its body for the model, and its `allowed-tools` as
//! the only tools shown until it is deactivated. The model activates one
//! through the `load_skill` tool, the host through `Agent::activate_skill`.

use std::sync::{Arc, Weak};

use serde_json::{json, Value};

use super::Skills;
use crate::error::Result;
use crate::tools::output::ToolOutput;
use crate::tools::registry::{Tool, ToolRegistry};

/// The name of the tool that loads a skill.
pub const LOAD_SKILL: &str = "load_skill";

/// Activates `name`: returns its instructions and, when it names its
/// allowed tools, restricts `registry` to them (and `load_skill`, so that
/// another skill can still be loaded).
pub fn activate(skills: &Skills, registry: &ToolRegistry, name: &str) -> Result<String> {
    let body = skills.body(name)?;
    let allowed = skills.get(name).and_then(|s| s.allowed_tools.clone());
    registry.restrict(allowed.map(|mut tools| {
        tools.push(LOAD_SKILL.to_owned());
        tools
    }));
    Ok(body)
}

/// Shows every tool again.
pub fn deactivate(registry: &ToolRegistry) {
    registry.restrict(None);
}

/// The `load_skill` tool: `{"name": one of the skills}` returns the
/// skill's instructions. It holds the registry weakly, since the registry
/// holds it.
pub fn load_skill_tool(skills: Arc<Skills>, registry: Weak<ToolRegistry>) -> Result<Tool> {
    let names: Vec<Value> = skills.list().iter().map(|s| json!(s.name)).collect();
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "enum": names}},
        "required": ["name"],
    });
    Tool::with_output(
        LOAD_SKILL,
        "Loads a skill's instructions by name; call it before a task the skill describes.",
        schema,
        move |args, _| {
            let name = args["name"].as_str().unwrap_or_default();
            let registry = registry
                .upgrade()
                .ok_or_else(|| "the agent has shut down".to_owned())?;
            let body = activate(&skills, &registry, name).map_err(|e| e.to_string())?;
            Ok(ToolOutput::text(body).with_details(json!({"skill": name})))
        },
    )
}
