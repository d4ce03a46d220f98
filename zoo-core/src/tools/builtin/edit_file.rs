//! `edit_file`: replaces one exact piece of a text file.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::read_file::MAX_WHOLE_FILE_BYTES;
use super::{confirmed, str_arg, write_file::write_text, ConfirmFn, Outcome, Workspace};
use crate::error::Result;
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// Builds the tool on `ws`; `confirm` is asked before each edit.
pub fn tool(ws: Arc<Workspace>, confirm: Option<ConfirmFn>) -> Result<Tool> {
    let tool = Tool::with_output(
        "edit_file",
        "Replace an exact piece of text in a workspace file. old_text must occur exactly \
         once; include enough surrounding lines to make it unique.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace"},
                "old_text": {"type": "string", "minLength": 1, "description": "The exact text to replace"},
                "new_text": {"type": "string", "description": "What replaces it"}
            },
            "required": ["path", "old_text", "new_text"],
            "additionalProperties": false
        }),
        move |args, ctx| edit(&ws, &confirm, &args, ctx),
    )?;
    Ok(tool.exclusive(true))
}

fn edit(ws: &Workspace, confirm: &Option<ConfirmFn>, args: &Value, ctx: &ToolContext) -> Outcome {
    let path = str_arg(args, "path")?;
    let old = str_arg(args, "old_text")?;
    let new = str_arg(args, "new_text")?;
    let (real, content) = read_text(ws, path)?;
    match content.matches(old).count() {
        0 => return Err(no_match(path, &content, old)),
        1 => {}
        n => {
            return Err(format!(
                "old_text occurs {n} times in '{path}'; include more surrounding lines so it occurs once"
            ))
        }
    }
    confirmed(confirm, "edit_file", args, ctx)?;
    // The file checked and read above; if it was swapped for a symlink while
    // the host was asked, the open refuses it.
    write_text(ws, path, &real, &content.replacen(old, new, 1))?;
    // The line the replaced text began on, counted from 1.
    let at = content.find(old).unwrap_or(0);
    let line = content[..at].matches('\n').count() + 1;
    Ok(ToolOutput::text(format!("edited {path} at line {line}"))
        .with_details(json!({"path": path, "line": line})))
}

/// The file's canonical path and its text.
fn read_text(ws: &Workspace, path: &str) -> std::result::Result<(PathBuf, String), String> {
    let real = ws.resolve_existing(path).map_err(|e| e.to_string())?;
    let file = ws
        .open_resolved_read(path, &real)
        .map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_WHOLE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("'{path}': {e}"))?;
    if bytes.len() as u64 > MAX_WHOLE_FILE_BYTES {
        return Err(format!(
            "'{path}' is over 1 MB; edit_file works on smaller files"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| format!("'{path}' is not UTF-8 text"))?;
    Ok((real, text))
}

/// The error for zero matches: the file's line most like `old`'s first line.
fn no_match(path: &str, content: &str, old: &str) -> String {
    let first = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(old)
        .trim();
    let best = content
        .lines()
        .enumerate()
        .map(|(i, l)| (common_words(l, first), i, l))
        .filter(|(score, _, _)| *score > 0)
        .max_by_key(|(score, i, _)| (*score, std::cmp::Reverse(*i)));
    match best {
        Some((_, i, line)) => format!(
            "old_text was not found in '{path}'; the closest line is {}: {}",
            i + 1,
            line.trim_end()
        ),
        None => {
            format!("old_text was not found in '{path}', nor anything like it; read the file first")
        }
    }
}

/// How many of `b`'s words (with their punctuation) also occur in `a`.
fn common_words(a: &str, b: &str) -> usize {
    let words: Vec<&str> = a.split_whitespace().collect();
    b.split_whitespace().filter(|w| words.contains(w)).count()
}
