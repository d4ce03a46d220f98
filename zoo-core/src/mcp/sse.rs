//! A reader of server-sent events (the `text/event-stream` format), as far
//! as MCP's Streamable HTTP uses it: `data` lines make up an event's
//! payload; `event`, `id`, `retry` and comments are read past. No event
//! larger than the bound is ever held: it is read past and reported.

use std::io::BufRead;

use super::lines::{read_line, skip_line, Line};

/// One event as [`read_events`] hands it over.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event<'a> {
    /// The event's data (its `data` lines joined by newlines).
    Data(&'a str),
    /// An event whose data passed the bound; it was read past.
    TooLarge,
}

/// Reads events from `reader` and hands each to `on_event` until the
/// stream ends or `on_event` returns `false`. An event's data is at most
/// `max_bytes`.
pub(crate) fn read_events(
    reader: &mut impl BufRead,
    max_bytes: usize,
    mut on_event: impl FnMut(Event<'_>) -> bool,
) -> std::io::Result<()> {
    // Room for the longest field name and its colon before the data.
    let max_line = max_bytes.saturating_add(16);
    let mut data: Option<String> = None;
    let mut oversized = false;
    let mut line = Vec::new();
    loop {
        let text = match read_line(reader, &mut line, max_line)? {
            Line::Eof => {
                // A last event without its blank line is dispatched all the same.
                if oversized {
                    on_event(Event::TooLarge);
                } else if let Some(d) = data.take() {
                    on_event(Event::Data(&d));
                }
                return Ok(());
            }
            Line::TooLong { ended } => {
                if !ended {
                    skip_line(reader)?;
                }
                oversized = true;
                data = None;
                continue;
            }
            Line::Complete => String::from_utf8_lossy(&line),
        };
        let text = text.trim_end_matches('\r');
        if text.is_empty() {
            let keep_going = if std::mem::take(&mut oversized) {
                on_event(Event::TooLarge)
            } else {
                match data.take() {
                    Some(d) => on_event(Event::Data(&d)),
                    None => true,
                }
            };
            if !keep_going {
                return Ok(());
            }
            continue;
        }
        if text.starts_with(':') || oversized {
            continue;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text, ""),
        };
        if field == "data" {
            let held = data.as_ref().map_or(0, |d| d.len() + 1);
            if held + value.len() > max_bytes {
                oversized = true;
                data = None;
                continue;
            }
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

    fn collect(stream: &[u8], max: usize) -> Vec<String> {
        let mut seen = Vec::new();
        read_events(&mut &stream[..], max, |event| {
            seen.push(match event {
                Event::Data(d) => d.to_string(),
                Event::TooLarge => "(too large)".to_string(),
            });
            true
        })
        .unwrap();
        seen
    }

    #[test]
    fn joins_data_lines_and_skips_other_fields() {
        let stream =
            b": comment\nevent: message\nid: 1\ndata: {\"a\":\ndata: 1}\n\nretry: 5\n\ndata: last";
        assert_eq!(collect(stream, 1000), ["{\"a\":\n1}", "last"]);
    }

    #[test]
    fn stops_when_asked() {
        let stream = b"data: 1\n\ndata: 2\n\n";
        let mut seen = Vec::new();
        read_events(&mut &stream[..], 1000, |event| {
            seen.push(format!("{event:?}"));
            false
        })
        .unwrap();
        assert_eq!(seen, ["Data(\"1\")"]);
    }

    #[test]
    fn events_past_the_bound_are_reported_and_read_past() {
        // One long line, then an event made of many short lines.
        let long = format!("data: {}\n\n", "x".repeat(100));
        let many = "data: 0123456789\n".repeat(20) + "\n";
        let stream = format!("data: before\n\n{long}{many}data: after\n\n");
        assert_eq!(
            collect(stream.as_bytes(), 64),
            ["before", "(too large)", "(too large)", "after"]
        );
        // Unended at the end of the stream: still reported.
        assert_eq!(
            collect(format!("data: {}", "y".repeat(100)).as_bytes(), 64),
            ["(too large)"]
        );
    }
}
