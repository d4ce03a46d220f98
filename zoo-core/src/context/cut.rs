//! Cutting a long text to its head and tail, with a marker that says how
//! much is gone: for tool results too long to keep whole.

use crate::error::Result;

/// The share of the kept text taken from the head; the rest is the tail,
/// where command output puts its errors and summaries.
const HEAD_SHARE: f64 = 0.6;

/// Cuts `text` (of `tokens` tokens, counted by `count`) to at most `limit`
/// tokens: its head and tail around a marker naming how many tokens were
/// cut. Text within the limit comes back unchanged. Cuts by characters in
/// proportion, then checks with `count` and cuts harder until it fits.
pub fn cut_middle(
    text: &str,
    tokens: u32,
    limit: u32,
    count: &mut dyn FnMut(&str) -> Result<u32>,
) -> Result<String> {
    if tokens <= limit {
        return Ok(text.to_owned());
    }
    let chars: Vec<char> = text.chars().collect();
    let mut keep = (chars.len() as f64 * f64::from(limit) / f64::from(tokens.max(1))) as usize;
    loop {
        let head = (keep as f64 * HEAD_SHARE) as usize;
        let tail = keep - head;
        let kept: String = chars[..head].iter().collect();
        let end: String = chars[chars.len() - tail..].iter().collect();
        let kept_tokens = count(&format!("{kept}{end}"))?;
        let marker = format!(
            "\n[… {} tokens cut …]\n",
            tokens.saturating_sub(kept_tokens)
        );
        let cut = format!("{kept}{marker}{end}");
        if keep == 0 || count(&cut)? <= limit {
            return Ok(cut);
        }
        keep = keep * 3 / 4;
    }
}
