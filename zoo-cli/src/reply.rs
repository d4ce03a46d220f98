//! One chat with the person watching: the reply streams, tool calls show,
//! the main thread answers the confirmation hook's questions, and Ctrl-C
//! stops the reply in flight.

use std::sync::mpsc::Receiver;
use std::time::Duration;

use zoo_core::{ChatHandle, ChatOptions, Response};

use crate::confirm::{Answer, Question};
use crate::display::Display;
use crate::interrupt::InChat;

/// How often the main thread looks for questions and Ctrl-C while the
/// reply runs: the person's side, so a few tens of milliseconds is instant.
const LOOK_EVERY: Duration = Duration::from_millis(30);

/// What asks a question on the terminal: `None` when the person pressed
/// Ctrl-C instead of answering.
pub type Ask<'a> = dyn FnMut(&str) -> Option<Answer> + 'a;

/// The options that stream the reply and show tool calls on `display`.
pub fn options(display: Display) -> ChatOptions {
    ChatOptions::new()
        .on_token(move |text| display.token(text))
        .on_event(move |event| display.event(event))
}

/// Waits for the chat of `handle`, answering `questions` with `ask`; a
/// Ctrl-C (or a question left unanswered by one) stops the chat, which
/// then ends as `cancelled` with what it had.
pub fn wait(
    handle: ChatHandle,
    questions: Option<&Receiver<Question>>,
    ask: &mut Ask<'_>,
) -> zoo_core::Result<Response> {
    let in_chat = InChat::begin();
    loop {
        if in_chat.interrupted() {
            handle.cancel();
        }
        while let Some(question) = questions.and_then(|q| q.try_recv().ok()) {
            let answer = ask(&question.text);
            if answer.is_none() {
                handle.cancel();
            }
            let _ = question.answer.send(answer.unwrap_or(Answer::No));
        }
        if let Some(result) = handle.wait_timeout(LOOK_EVERY) {
            return result;
        }
    }
}
