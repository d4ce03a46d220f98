//! Built-in tools for a coding or file assistant (issue 20), registered only
//! when asked for: [`builtin_tools`] builds them on a [`Workspace`], which
//! confines every path they touch to one root folder.
//!
//! Each result is a JSON object: `text` (what the model reads) beside
//! structured details (`path`, counts). Each tool honours its call's cancel
//! token (the chat's stop and the tool's time limit): walks, searches and
//! long reads stop early, `bash` kills its command, and a write or command
//! whose call was cancelled while the host was asked to confirm it does not
//! happen.

#[cfg(unix)]
pub mod bash;
#[cfg(unix)]
mod beneath;
pub mod edit_file;
pub mod list_files;
pub mod read_file;
mod refused;
pub mod search;
pub mod walk;
pub mod workspace;
pub mod write_file;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// What a built-in tool's handler returns: its output, or the error the
/// model reads.
type Outcome = std::result::Result<ToolOutput, String>;

pub use workspace::{PathRefused, Workspace};

/// The names of the built-in tools that exist so far.
pub const BUILTIN_TOOL_NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "search",
    "bash",
];

/// Asked before a tool that changes something runs: the tool's name and its
/// arguments; `Ok(false)` refuses the call (a tool error the model reads),
/// and so does `Err(message)` (the host's callback failed: the model reads
/// the message, and it is logged).
pub type ConfirmFn = Arc<dyn Fn(&str, &Value) -> std::result::Result<bool, String> + Send + Sync>;

/// The error every front door gives for a confirmation callback that
/// cannot be called (a number, a string): `got` names what it was.
pub fn confirm_not_callable(got: &str) -> Error {
    Error::InvalidArgument(format!(
        "the confirm callback of the built-in tools must be a function, got {got}"
    ))
}

/// How the built-in tools are set up.
#[derive(Clone)]
pub struct BuiltinOptions {
    /// The folder every path is confined to.
    pub workspace: PathBuf,
    /// Asked before `write_file`, `edit_file` and `bash` run; `None` asks
    /// nothing.
    pub confirm: Option<ConfirmFn>,
    /// Text no `bash` command may contain, checked before anything is
    /// spawned. A deny list is not a sandbox: it stops the obvious, nothing more.
    pub bash_deny: Vec<String>,
}

impl fmt::Debug for BuiltinOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltinOptions")
            .field("workspace", &self.workspace)
            .field("confirm", &self.confirm.is_some())
            .field("bash_deny", &self.bash_deny)
            .finish()
    }
}

/// The config's `builtin_tools`: which tools, on which workspace. The same
/// object is what every front door's `add_builtin_tools` reads, beside its
/// confirmation callback (a config holds no callback: with the config key,
/// a `before_tool_call` hook can allow or deny each call instead).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuiltinToolsConfig {
    /// The tools to register, by name (see [`BUILTIN_TOOL_NAMES`]).
    pub tools: Vec<String>,
    /// The folder every path is confined to.
    pub workspace: String,
    /// Text no `bash` command may contain.
    #[serde(default)]
    pub bash_deny: Vec<String>,
}

impl BuiltinToolsConfig {
    /// Reads `{"tools": [...], "workspace": "...", "bash_deny": [...]}`
    /// (`bash_deny` optional), as the front doors' `add_builtin_tools` pass it.
    ///
    /// # Errors
    /// [`Error::InvalidJson`] for text that is not JSON;
    /// [`Error::InvalidArgument`] naming the key for a missing, mistyped or
    /// unknown one.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::InvalidJson(format!("the built-in tools' options: {e}")))?;
        serde_path_to_error::deserialize(value).map_err(|e| {
            let at = e.path().to_string();
            let at = if at == "." {
                String::new()
            } else {
                format!(" `{at}`")
            };
            Error::InvalidArgument(format!(
                "the built-in tools' options{at}: {}; they are {{\"tools\": [names], \
                 \"workspace\": folder, \"bash_deny\": [texts]}}",
                e.into_inner()
            ))
        })
    }

    /// The options these name, with the host's confirmation callback.
    pub fn options(&self, confirm: Option<ConfirmFn>) -> BuiltinOptions {
        BuiltinOptions {
            workspace: PathBuf::from(&self.workspace),
            confirm,
            bash_deny: self.bash_deny.clone(),
        }
    }

    /// The tools it names, built.
    pub fn build(&self) -> Result<Vec<Tool>> {
        let names: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        builtin_tools(&names, &self.options(None))
    }
}

/// Builds the named built-in tools.
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown name or a workspace that is not
/// an existing folder.
pub fn builtin_tools(names: &[&str], options: &BuiltinOptions) -> Result<Vec<Tool>> {
    let ws = Arc::new(Workspace::new(&options.workspace)?);
    names
        .iter()
        .map(|name| match *name {
            "read_file" => read_file::tool(ws.clone()),
            "write_file" => write_file::tool(ws.clone(), options.confirm.clone()),
            "edit_file" => edit_file::tool(ws.clone(), options.confirm.clone()),
            "list_files" => list_files::tool(ws.clone()),
            "search" => search::tool(ws.clone()),
            #[cfg(unix)]
            "bash" => bash::tool(
                ws.clone(),
                options.bash_deny.clone(),
                options.confirm.clone(),
            ),
            other => Err(Error::InvalidArgument(format!(
                "unknown built-in tool `{other}`; the built-in tools are {}",
                BUILTIN_TOOL_NAMES.join(", ")
            ))),
        })
        .collect()
}

/// Asks the host, if it wants to be asked, whether `tool` may run; a call
/// cancelled meanwhile (asking may take long) does not run either.
fn confirmed(
    confirm: &Option<ConfirmFn>,
    tool: &str,
    args: &Value,
    ctx: &ToolContext,
) -> std::result::Result<(), String> {
    if let Some(ask) = confirm {
        match ask(tool, args) {
            Ok(true) => {}
            Ok(false) => return Err(format!("the user refused this {tool} call")),
            Err(message) => {
                tracing::warn!(tool, %message, "the confirmation callback failed");
                return Err(format!(
                    "the {tool} call was refused: the confirmation callback failed: {message}"
                ));
            }
        }
    }
    not_cancelled(ctx)
}

/// An error once the call is cancelled (the chat was stopped or the tool's
/// time limit passed): its result would be discarded anyway.
fn not_cancelled(ctx: &ToolContext) -> std::result::Result<(), String> {
    if ctx.is_cancelled() {
        return Err("the call was cancelled (the chat was stopped or its time ran out)".into());
    }
    Ok(())
}

/// A string argument the schema already requires.
fn str_arg<'a>(args: &'a Value, key: &str) -> std::result::Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{key}` must be a string"))
}
