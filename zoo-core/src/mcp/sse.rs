//! A reader of server-sent events (the `text/event-stream` format), as far
//! as MCP's Streamable HTTP uses it: `data` lines make up an event's
//! payload; `event`, `id`, `retry` and comments are read past.

use std::io::BufRead;

/// Reads events from `reader` and hands each event's data to `on_data`
/// until the stream ends or `on_data` returns `false`.
pub(crate) fn read_events(
    reader: &mut impl BufRead,
    mut on_data: impl FnMut(&str) -> bool,
) -> std::io::Result<()> {
    let mut data: Option<String> = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            // A last event without its blank line is dispatched all the same.
            if let Some(d) = data.take() {
                on_data(&d);
            }
            return Ok(());
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            if let Some(d) = data.take() {
                if !on_data(&d) {
                    return Ok(());
                }
            }
            continue;
        }
        if text.starts_with(':') {
            continue;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text, ""),
        };
        if field == "data" {
            match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_data_lines_and_skips_other_fields() {
        let stream =
            b": comment\nevent: message\nid: 1\ndata: {\"a\":\ndata: 1}\n\nretry: 5\n\ndata: last";
        let mut seen = Vec::new();
        read_events(&mut &stream[..], |d| {
            seen.push(d.to_string());
            true
        })
        .unwrap();
        assert_eq!(seen, ["{\"a\":\n1}", "last"]);
    }

    #[test]
    fn stops_when_asked() {
        let stream = b"data: 1\n\ndata: 2\n\n";
        let mut seen = Vec::new();
        read_events(&mut &stream[..], |d| {
            seen.push(d.to_string());
            false
        })
        .unwrap();
        assert_eq!(seen, ["1"]);
    }
}
