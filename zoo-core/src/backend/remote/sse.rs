//! A pull reader of server-sent events (`text/event-stream`), as the
//! streaming APIs of model providers use them: the `data` lines of an
//! event are its payload; `event`, `id`, `retry` fields and comments
//! (keep-alive pings) are read past. Memory is bounded: a line or an
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

/// Reads events one at a time from a buffered byte stream.
pub(crate) struct EventReader<R> {
    reader: R,
    max_bytes: usize,
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

    /// The data of the next event that has any, or `None` when the stream
    /// ends. A last event that the stream ends without its blank line is
    /// still given: some servers close right after their final `data:`.
    pub(crate) fn next_data(&mut self) -> Result<Option<String>, SseError> {
        let mut data: Option<String> = None;
        loop {
            if !self.read_line()? {
                return Ok(data);
            }
            let line = String::from_utf8_lossy(&self.line);
            let line = line.strip_suffix('\r').unwrap_or(&line);
            if line.is_empty() {
                if data.is_some() {
                    return Ok(data);
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            if field != "data" {
                continue;
            }
            match &mut data {
                Some(held) => {
                    if held.len() + 1 + value.len() > self.max_bytes {
                        return Err(SseError::TooLarge(self.max_bytes));
                    }
                    held.push('\n');
                    held.push_str(value);
                }
                None => data = Some(value.to_string()),
            }
        }
    }

    /// Reads one line (without its `\n`) into `self.line`; false at the
    /// end of the stream with nothing read.
    fn read_line(&mut self) -> Result<bool, SseError> {
        self.line.clear();
        // Room for the field name before the data.
        let limit = self.max_bytes.saturating_add(16);
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if available.is_empty() {
                return Ok(!self.line.is_empty());
            }
            let (take, ended) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            let content = if ended { take - 1 } else { take };
            if self.line.len() + content > limit {
                return Err(SseError::TooLarge(self.max_bytes));
            }
            self.line.extend_from_slice(&available[..content]);
            self.reader.consume(take);
            if ended {
                return Ok(true);
            }
        }
    }
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
