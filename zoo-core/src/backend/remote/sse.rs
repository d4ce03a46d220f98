//! A pull reader of server-sent events (`text/event-stream`), as the
//! streaming APIs of model providers use them: the `data` lines of an
//! event are its payload; `event`, `id`, `retry` fields and comments
//! (keep-alive pings) are read past. Lines end with `\n` or `\r\n`. Memory is bounded: a line or an
//! event's data longer than the bound is an error, never held, so a
//! hostile server cannot grow it without limit.

use std::io::{self, BufRead};

/// Why no event could be read.
#[derive(Debug)]
pub(crate) enum SseError {
    /// The connection failed (or was shut down by a cancel).
    Io(io::Error),
    /// A line or an event's data passed the bound (in bytes).
    TooLarge(usize),
}

impl From<io::Error> for SseError {
    fn from(e: io::Error) -> Self {
        SseError::Io(e)
    }
}

/// Reads events one at a time from a buffered byte stream. A line that
/// lies whole in the reader's buffer is read in place; only one that spans
/// two reads is gathered first (a fast stream's cost is in these lines).
pub(crate) struct EventReader<R> {
    reader: R,
    max_bytes: usize,
    /// The start of a line whose end has not been read yet.
    line: Vec<u8>,
}

impl<R: BufRead> EventReader<R> {
    /// A reader whose lines and events are at most `max_bytes` long.
    pub(crate) fn new(reader: R, max_bytes: usize) -> Self {
        EventReader {
            reader,
            max_bytes,
            line: Vec::new(),
        }
    }

    /// The reader the events come from.
    pub(crate) fn reader_mut(&mut self) -> &mut R {
        &mut self.reader
    }

    /// The data of the next event that has any, or `None` when the stream
    /// ends. A last event that the stream ends without its blank line is
    /// still given: some servers close right after their final `data:`.
    pub(crate) fn next_data(&mut self) -> Result<Option<String>, SseError> {
        let mut data: Option<String> = None;
        // Room for the field name before the data.
        let limit = self.max_bytes.saturating_add(16);
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if available.is_empty() {
                // The end: a last line without its line break still counts.
                let last = std::mem::take(&mut self.line);
                if !last.is_empty() {
                    take_line(&last, &mut data, self.max_bytes)?;
                }
                return Ok(data);
            }
            let Some(at) = memchr::memchr(b'\n', available) else {
                if self.line.len() + available.len() > limit {
                    return Err(SseError::TooLarge(self.max_bytes));
                }
                self.line.extend_from_slice(available);
                let n = available.len();
                self.reader.consume(n);
                continue;
            };
            if self.line.len() + at > limit {
                return Err(SseError::TooLarge(self.max_bytes));
            }
            let ended = if self.line.is_empty() {
                take_line(&available[..at], &mut data, self.max_bytes)?
            } else {
                self.line.extend_from_slice(&available[..at]);
                let ended = take_line(&self.line, &mut data, self.max_bytes)?;
                self.line.clear();
                ended
            };
            self.reader.consume(at + 1);
            if ended {
                return Ok(data);
            }
        }
    }
}

/// Takes one line (without its `\n`) into the event's `data`; true when it
/// ends an event that has data (a blank line).
fn take_line(line: &[u8], data: &mut Option<String>, max_bytes: usize) -> Result<bool, SseError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return Ok(data.is_some());
    }
    let (field, value) = match memchr::memchr(b':', line) {
        Some(at) => {
            let value = &line[at + 1..];
            (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &[][..]),
    };
    // Comments (keep-alive pings) have no field; `event`, `id` and
    // `retry` are not needed.
    if field != b"data" {
        return Ok(false);
    }
    let value = match std::str::from_utf8(value) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(value),
    };
    match data {
        Some(held) => {
            if held.len() + 1 + value.len() > max_bytes {
                return Err(SseError::TooLarge(max_bytes));
            }
            held.push('\n');
            held.push_str(&value);
        }
        None => *data = Some(value.into_owned()),
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(stream: &[u8], max: usize) -> Result<Vec<String>, SseError> {
        let mut reader = EventReader::new(stream, max);
        let mut seen = Vec::new();
        while let Some(data) = reader.next_data()? {
            seen.push(data);
        }
        Ok(seen)
    }

    #[test]
    fn reads_data_and_skips_other_fields_and_comments() {
        let stream = b": ping\r\nevent: message\nid: 7\ndata: {\"a\":\ndata:1}\n\nretry: 5\n\n\ndata: [DONE]\n\n";
        assert_eq!(all(stream, 1000).unwrap(), ["{\"a\":\n1}", "[DONE]"]);
    }

    #[test]
    fn lines_split_across_reads_are_gathered() {
        // A buffer of 3 bytes: every line spans several reads.
        let stream: &[u8] = b"data: {\"a\": \"\xc3\xa9\"}\r\n\r\n: ping\n\ndata: two\n\n";
        let mut reader = EventReader::new(io::BufReader::with_capacity(3, stream), 1000);
        assert_eq!(
            reader.next_data().unwrap().as_deref(),
            Some("{\"a\": \"é\"}")
        );
        assert_eq!(reader.next_data().unwrap().as_deref(), Some("two"));
        assert_eq!(reader.next_data().unwrap(), None);
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_given() {
        assert_eq!(
            all(b"data: one\n\ndata: two", 1000).unwrap(),
            ["one", "two"]
        );
    }

    #[test]
    fn lines_and_events_past_the_bound_are_errors() {
        let long = format!("data: {}\n\n", "x".repeat(100));
        assert!(matches!(
            all(long.as_bytes(), 64),
            Err(SseError::TooLarge(64))
        ));
        let many = "data: 0123456789\n".repeat(20) + "\n";
        assert!(matches!(
            all(many.as_bytes(), 64),
            Err(SseError::TooLarge(64))
        ));
        // A line without end is not held past the bound either.
        let endless = "y".repeat(1000);
        assert!(matches!(
            all(endless.as_bytes(), 64),
            Err(SseError::TooLarge(64))
        ));
    }
}
