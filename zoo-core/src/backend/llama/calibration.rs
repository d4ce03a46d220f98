//! The call-or-prose threshold of `auto`, calibrated per model.
//!
//! In `auto` mode a reply to a user message is constrained to a call when
//! the model's log-probability of opening one is above a threshold. Models
//! place that probability on very different scales: SmolLM2-135M gives
//! prompts that need a tool about -5 and prompts that need none about -11,
//! while a model that writes calls freely gives nearly every prompt a high
//! score, so one constant fires on every prompt for it. The threshold is
//! therefore measured on the model itself, once per model and call format,
//! from a small built-in set of prompts that need a tool and prompts that
//! need none (its own tools, none of them in the evaluation set), as the
//! value that best separates the two.

use serde_json::json;

use crate::message::Message;
use crate::tools::ToolDefinition;

/// The system prompt of every probe.
pub(super) const PROBE_SYSTEM: &str = "You are a helpful assistant.";

/// Prompts that need one of [`probe_tools`].
pub(super) const NEEDS_TOOL: [&str; 8] = [
    "Email Bob that the meeting moved to 3 pm.",
    "What is Apple's stock price right now?",
    "Put a dentist appointment on my calendar for May 3.",
    "Find me a recipe with chicken and rice.",
    "How is TSLA trading today?",
    "Send an email to alice@example.com saying thank you.",
    "Add an event called standup tomorrow at 9 to my calendar.",
    "Search for a vegetarian lasagna recipe.",
];

/// Prompts that need no tool.
pub(super) const NEEDS_NONE: [&str; 8] = [
    "Hi!",
    "Thanks a lot, bye.",
    "Write a two-line poem about rain.",
    "What is the capital of Italy?",
    "Tell me something funny.",
    "How are you?",
    "Who discovered penicillin?",
    "Describe the colour blue in one sentence.",
];

/// The tools every probe offers.
pub(super) fn probe_tools() -> Vec<ToolDefinition> {
    let tool = |name: &str, description: &str, parameters| ToolDefinition {
        name: name.into(),
        description: description.into(),
        parameters,
    };
    vec![
        tool(
            "send_email",
            "Send an email.",
            json!({"type": "object", "properties": {
                "to": {"type": "string"}, "body": {"type": "string"}}, "required": ["to", "body"]}),
        ),
        tool(
            "get_stock_price",
            "Get the latest price of a stock by its ticker symbol.",
            json!({"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]}),
        ),
        tool(
            "add_calendar_event",
            "Add an event to the user's calendar.",
            json!({"type": "object", "properties": {
                "title": {"type": "string"}, "date": {"type": "string"}}, "required": ["title", "date"]}),
        ),
        tool(
            "search_recipes",
            "Search cooking recipes by ingredient or dish.",
            json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        ),
    ]
}

/// The conversation of one probe.
pub(super) fn probe_messages(prompt: &str) -> Vec<Message> {
    vec![Message::system(PROBE_SYSTEM), Message::user(prompt)]
}

/// The threshold that best separates the scores of prompts that need a tool
/// (`calls`) from those of prompts that need none (`prose`): the midpoint of
/// the gap where (true calls + true prose) is highest, the higher such gap
/// when several tie, so that a model that cannot tell them apart answers in
/// prose rather than calling on every prompt. `f32::INFINITY` (never force
/// a call; a call the model writes itself still runs) when no threshold
/// does better than chance.
pub(super) fn threshold(calls: &[f32], prose: &[f32]) -> f32 {
    let mut all: Vec<f32> = calls.iter().chain(prose).copied().collect();
    all.sort_by(f32::total_cmp);
    let balanced = |t: f32| {
        let hit = calls.iter().filter(|&&s| s > t).count() as f32 / calls.len().max(1) as f32;
        let held = prose.iter().filter(|&&s| s <= t).count() as f32 / prose.len().max(1) as f32;
        (hit + held) / 2.0
    };
    let mut best = (0.5, f32::INFINITY);
    for pair in all.windows(2) {
        let t = (pair[0] + pair[1]) / 2.0;
        let score = balanced(t);
        if score > best.0 || (score == best.0 && best.1.is_finite() && t > best.1) {
            best = (score, t);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separating_scores_give_the_gap_between_them() {
        let t = threshold(&[-5.0, -4.0, -3.0], &[-12.0, -10.0, -8.0]);
        assert!((t - -6.5).abs() < 1e-6, "{t}");
    }

    #[test]
    fn overlapping_scores_give_the_best_split_leaning_to_prose() {
        // One prose prompt scores among the calls: losing it or losing one
        // call is as good, and the split that keeps the prose wins.
        let t = threshold(&[-5.0, -4.0, -3.0, -2.0], &[-12.0, -10.0, -4.5, -9.0]);
        assert!((t - -4.25).abs() < 1e-6, "{t}");
        // Every prompt alike: no threshold beats chance, none is forced.
        assert_eq!(threshold(&[-1.0, -1.0], &[-1.0, -1.0]), f32::INFINITY);
        // A model that scores prose higher than calls is never forced either.
        assert_eq!(threshold(&[-9.0, -8.0], &[-2.0, -1.0]), f32::INFINITY);
    }
}
