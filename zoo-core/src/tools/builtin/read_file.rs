//! `read_file`: a text file's lines, numbered, a page at a time; an image
//! (PNG, JPEG, GIF, WebP) as image content.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;

use serde_json::{json, Value};

use super::{not_cancelled, str_arg, Outcome, Workspace};
use crate::error::Result;
use crate::message::{ImageContent, MAX_IMAGE_BYTES};
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// Files larger than this are read only a page (`offset`/`limit`) at a time.
pub const MAX_WHOLE_FILE_BYTES: u64 = 1024 * 1024;
/// Lines returned when no `limit` is given.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Longer lines are cut, so one line cannot flood the context.
pub const MAX_LINE_CHARS: usize = 2000;
/// Bytes looked at to tell a binary file (one with a NUL) from text.
const SNIFF_BYTES: usize = 8192;
/// Lines read between two looks at the call's cancel token: paging far
/// into a huge file reads every line before the page.
const LINES_PER_CANCEL_CHECK: u64 = 4096;

/// Builds the tool on `ws`.
pub fn tool(ws: Arc<Workspace>) -> Result<Tool> {
    Tool::with_output(
        "read_file",
        "Read a text file in the workspace. Lines come numbered from 1; use offset \
         (first line) and limit (number of lines) to page through long files. An image \
         (PNG, JPEG, GIF, WebP) comes back as an image.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read (from 1)"},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read"}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        move |args, ctx| read(&ws, &args, ctx),
    )
}

fn read(ws: &Workspace, args: &Value, ctx: &ToolContext) -> Outcome {
    let path = str_arg(args, "path")?;
    let offset = args.get("offset").and_then(Value::as_u64);
    let limit = args.get("limit").and_then(Value::as_u64);
    let real = ws.resolve_existing(path).map_err(|e| e.to_string())?;
    if real.is_dir() {
        return Err(format!(
            "'{path}' is a folder; use list_files to see what it holds"
        ));
    }
    let mut file = ws
        .open_resolved_read(path, &real)
        .map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| format!("'{path}': {e}"))?.len();
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| format!("'{path}': {e}"))?;
    if let Some((kind, mime_type)) = image_kind(&head) {
        return read_image(path, head, file, size, kind, mime_type);
    }
    if head.contains(&0) {
        return Err(format!(
            "'{path}' is a binary file ({size} bytes); only text files can be read"
        ));
    }
    if size > MAX_WHOLE_FILE_BYTES && offset.is_none() && limit.is_none() {
        return Err(format!(
            "'{path}' is {size} bytes, over the 1 MB read limit; read it a page at a time \
             with offset and limit (for example offset 1, limit 500)"
        ));
    }
    let reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    page(
        path,
        reader,
        offset.unwrap_or(1),
        limit.unwrap_or(DEFAULT_LIMIT),
        ctx,
    )
}

/// An image whole, as image content: refused over [`MAX_IMAGE_BYTES`]
/// (from its size before reading, and again while reading, should it grow).
fn read_image(
    path: &str,
    mut bytes: Vec<u8>,
    file: std::fs::File,
    size: u64,
    kind: &str,
    mime_type: &str,
) -> Outcome {
    let too_big = |size: u64| {
        format!(
            "'{path}' is a {kind} image of {size} bytes, over the {} MB image limit",
            MAX_IMAGE_BYTES / (1024 * 1024)
        )
    };
    if size > MAX_IMAGE_BYTES as u64 {
        return Err(too_big(size));
    }
    bytes.reserve(size as usize - bytes.len().min(size as usize));
    file.take((MAX_IMAGE_BYTES + 1 - bytes.len()) as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("'{path}': {e}"))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    let dimensions = imagesize::blob_size(&bytes)
        .ok()
        .map(|s| (s.width, s.height));
    let shape = dimensions.map_or(String::new(), |(w, h)| format!("{w}x{h}, "));
    let text = format!(
        "'{path}' is a {kind} image ({shape}{} bytes); it is attached.",
        bytes.len()
    );
    let details = json!({
        "path": path, "mime_type": mime_type, "bytes": bytes.len(),
        "width": dimensions.map(|d| d.0), "height": dimensions.map(|d| d.1),
    });
    Ok(ToolOutput::text(text)
        .with_details(details)
        .with_image(ImageContent::from_bytes(mime_type, &bytes)))
}

/// Numbers and returns lines `offset..offset+limit`, counting the rest;
/// stops with an error once the call is cancelled.
fn page(
    path: &str,
    mut reader: impl BufRead,
    offset: u64,
    limit: u64,
    ctx: &ToolContext,
) -> Outcome {
    let offset = offset.max(1);
    let mut text = String::new();
    let (mut total, mut shown) = (0u64, 0u64);
    let mut line = Vec::new();
    while next_line(&mut reader, &mut line).map_err(|e| format!("'{path}': {e}"))? {
        total += 1;
        if total % LINES_PER_CANCEL_CHECK == 0 {
            not_cancelled(ctx)?;
        }
        if total < offset || shown >= limit {
            continue;
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end_matches(['\n', '\r']);
        let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
        text.push_str(&format!("{total:>6}\t{cut}\n"));
        shown += 1;
    }
    if shown < total.saturating_sub(offset - 1) {
        let next = offset + shown;
        text.push_str(&format!(
            "[{total} lines in all; continue with offset {next}]\n"
        ));
    }
    Ok(ToolOutput::text(text).with_details(
        json!({"path": path, "total_lines": total, "lines_shown": shown, "offset": offset}),
    ))
}

/// Reads one line into `line`, keeping at most 4 bytes per shown character
/// of it (the rest is skipped, so one huge line cannot fill memory). False
/// at the end of the file.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    let cap = (MAX_LINE_CHARS * 4) as u64;
    let read = reader.by_ref().take(cap).read_until(b'\n', line)?;
    if read == 0 {
        return Ok(false);
    }
    if line.last() != Some(&b'\n') && read as u64 == cap {
        let mut rest = Vec::new();
        loop {
            rest.clear();
            let n = reader.by_ref().take(cap).read_until(b'\n', &mut rest)?;
            if n == 0 || rest.last() == Some(&b'\n') {
                break;
            }
        }
    }
    Ok(true)
}

/// Names the image format from its magic bytes, with its media type.
fn image_kind(head: &[u8]) -> Option<(&'static str, &'static str)> {
    const KINDS: &[(&[u8], &str, &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG", "image/png"),
        (b"\xff\xd8\xff", "JPEG", "image/jpeg"),
        (b"GIF87a", "GIF", "image/gif"),
        (b"GIF89a", "GIF", "image/gif"),
    ];
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Some(("WebP", "image/webp"));
    }
    KINDS
        .iter()
        .find(|(magic, _, _)| head.starts_with(magic))
        .map(|(_, kind, mime)| (*kind, *mime))
}
