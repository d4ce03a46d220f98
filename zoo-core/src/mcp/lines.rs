//! Reading lines with a bound on their length. `BufRead::read_until` keeps
//! reading until it meets the delimiter, so a peer that writes 300 MB
//! without a newline makes it hold 300 MB; reading through `fill_buf` and
//! `consume` checks the bound before each append instead.

use std::io::{BufRead, ErrorKind, Result};

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// The stream ended before any byte of a new line.
    Eof,
    /// A whole line is in the buffer, without its newline (or the last
    /// line of the stream, which had none).
    Complete,
    /// The line is longer than the bound: the buffer holds its first `max`
    /// bytes. `ended` says whether its newline was consumed too; when it was
    /// not, [`skip_line`] discards the rest.
    TooLong { ended: bool },
}

/// Reads one line into `buf` (cleared first), holding at most `max` bytes
/// of it; reports [`Line::TooLong`] as soon as the line passes `max`, so a
/// line that never ends is noticed at once.
pub(crate) fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> Result<Line> {
    buf.clear();
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let content = newline.unwrap_or(available.len());
        let used = newline.map_or(content, |at| at + 1);
        if buf.len() + content > max {
            let room = max - buf.len();
            buf.extend_from_slice(&available[..room]);
            reader.consume(used);
            return Ok(Line::TooLong {
                ended: newline.is_some(),
            });
        }
        buf.extend_from_slice(&available[..content]);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Line::Complete);
        }
    }
}

/// Discards the rest of the current line, its newline included, holding
/// nothing; whether a newline came before the end of the stream.
pub(crate) fn skip_line(reader: &mut impl BufRead) -> Result<bool> {
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(false);
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(true);
            }
            None => {
                let all = available.len();
                reader.consume(all);
            }
        }
    }
}

/// "16 MiB", "1.5 KiB", "900 bytes": a size for messages.
pub(crate) fn size_text(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    let scaled = |unit: u64, name: &str| {
        if bytes.is_multiple_of(unit) {
            format!("{} {name}", bytes / unit)
        } else {
            format!("{:.1} {name}", bytes as f64 / unit as f64)
        }
    };
    if bytes >= MIB {
        scaled(MIB, "MiB")
    } else if bytes >= KIB {
        scaled(KIB, "KiB")
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    #[test]
    fn reads_lines_within_the_bound_and_cuts_longer_ones() {
        let text = b"short\nthis line is too long\nok\nlast";
        // A tiny buffer, so lines span several fill_buf calls.
        let mut reader = BufReader::with_capacity(4, &text[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut reader, &mut buf, 8).unwrap(), Line::Complete);
        assert_eq!(buf, b"short");
        let Line::TooLong { ended } = read_line(&mut reader, &mut buf, 8).unwrap() else {
            panic!("not cut")
        };
        assert_eq!(buf, b"this lin");
        assert!(!ended);
        assert!(skip_line(&mut reader).unwrap());
        assert_eq!(read_line(&mut reader, &mut buf, 8).unwrap(), Line::Complete);
        assert_eq!(buf, b"ok");
        assert_eq!(read_line(&mut reader, &mut buf, 8).unwrap(), Line::Complete);
        assert_eq!(buf, b"last");
        assert_eq!(read_line(&mut reader, &mut buf, 8).unwrap(), Line::Eof);
    }

    #[test]
    fn a_line_that_never_ends_is_reported_without_reading_it_all() {
        // 64 MiB that are never materialized: the reader stops at the bound.
        let endless = std::io::repeat(b'x').take(64 * 1024 * 1024);
        let mut reader = BufReader::new(endless);
        let mut buf = Vec::new();
        let found = read_line(&mut reader, &mut buf, 1000).unwrap();
        assert_eq!(found, Line::TooLong { ended: false });
        assert_eq!(buf.len(), 1000);
        assert!(buf.capacity() < 64 * 1024);
        assert!(!skip_line(&mut reader).unwrap());
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size_text(16 * 1024 * 1024), "16 MiB");
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(900), "900 bytes");
    }
}
