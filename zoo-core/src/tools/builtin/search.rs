//! `search`: lines matching a regular expression in the workspace's files,
//! with ripgrep's own crates (binary files skipped, `.gitignore` honoured).

use std::sync::Arc;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{json, Value};

use super::list_files::glob;
use super::walk::{cut_note, walk};
use super::{str_arg, Outcome, Workspace};
use crate::error::Result;
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// Matching lines returned at most; the rest is counted.
pub const MAX_MATCHES: usize = 100;
/// Longer matching lines are cut.
const MAX_LINE_CHARS: usize = 300;

/// Builds the tool on `ws`.
pub fn tool(ws: Arc<Workspace>) -> Result<Tool> {
    Tool::with_output(
        "search",
        "Search the workspace's files for a regular expression; returns path:line: text \
         for each matching line.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)"},
                "path": {"type": "string", "description": "Folder or file to search (default: the workspace)"},
                "include": {"type": "string", "description": "Glob of files to search, e.g. *.py"},
                "case_sensitive": {"type": "boolean", "description": "Match case exactly (default true)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
        move |args, ctx| search(&ws, &args, ctx),
    )
}

fn search(ws: &Workspace, args: &Value, ctx: &ToolContext) -> Outcome {
    let pattern = str_arg(args, "pattern")?;
    let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
    let start = ws.resolve_existing(path).map_err(|e| e.to_string())?;
    let include = glob(args.get("include").and_then(Value::as_str))?;
    let case_sensitive = args
        .get("case_sensitive")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(!case_sensitive)
        .build(pattern)
        .map_err(|e| format!("invalid regular expression: {e}"))?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build();
    let mut lines = Vec::new();
    let mut more = 0usize;
    let mut files = 0usize;
    let cut = walk(
        ws.root(),
        &start,
        None,
        ctx.cancel_token(),
        |entry, relative| {
            let is_file = entry.file_type().is_some_and(|t| t.is_file());
            if !is_file || include.as_ref().is_some_and(|g| !g.is_match(relative)) {
                return true;
            }
            let mut found = false;
            let _ = searcher.search_path(
                &matcher,
                entry.path(),
                UTF8(|number, line| {
                    found = true;
                    if lines.len() < MAX_MATCHES {
                        lines.push(format!("{relative}:{number}: {}", clip(line.trim_end())));
                    } else {
                        more += 1;
                    }
                    Ok(true)
                }),
            );
            files += usize::from(found);
            true
        },
    );
    let mut text = if lines.is_empty() {
        "No matches.".to_owned()
    } else {
        lines.join("\n")
    };
    if more > 0 {
        text.push_str(&format!(
            "\n[{more} more matches not shown; narrow the pattern, path or include]"
        ));
    }
    if let Some(note) = cut_note(cut) {
        text.push_str(&format!("\n{note}"));
    }
    Ok(ToolOutput::text(text).with_details(json!({"matches": lines.len() + more, "files": files})))
}

fn clip(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}…")
}
