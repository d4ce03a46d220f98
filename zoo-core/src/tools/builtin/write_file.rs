//! `write_file`: writes a whole file, creating its parent folders.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{confirmed, str_arg, ConfirmFn, Outcome, Workspace};
use crate::error::Result;
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// Builds the tool on `ws`; `confirm` is asked before each write.
pub fn tool(ws: Arc<Workspace>, confirm: Option<ConfirmFn>) -> Result<Tool> {
    let tool = Tool::with_output(
        "write_file",
        "Write a file in the workspace, replacing what it held; missing parent folders are created.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace"},
                "content": {"type": "string", "description": "The whole new content"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
        move |args, ctx| write(&ws, &confirm, &args, ctx),
    )?;
    // Two writes of one reply must not interleave.
    Ok(tool.exclusive(true))
}

fn write(ws: &Workspace, confirm: &Option<ConfirmFn>, args: &Value, ctx: &ToolContext) -> Outcome {
    let path = str_arg(args, "path")?;
    let content = str_arg(args, "content")?;
    // Checked before the host is asked: nobody is asked about a path that
    // would be refused. Whatever changes while they answer is caught when
    // the file is opened.
    let real = ws.resolve_for_write(path).map_err(|e| e.to_string())?;
    confirmed(confirm, "write_file", args, ctx)?;
    write_text(ws, path, &real, content)?;
    let text = format!("wrote {} bytes to {path}", content.len());
    Ok(ToolOutput::text(text).with_details(json!({"path": path, "bytes": content.len()})))
}

/// Replaces the content of `path`, resolved earlier to `real` (shared with
/// `edit_file`).
pub(super) fn write_text(
    ws: &Workspace,
    path: &str,
    real: &Path,
    content: &str,
) -> std::result::Result<(), String> {
    let mut file = ws
        .open_resolved_write(path, real)
        .map_err(|e| e.to_string())?;
    file.write_all(content.as_bytes())
        .map_err(|e| format!("'{path}': {e}"))
}
