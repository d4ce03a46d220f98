//! Messages sent while a chat runs. `steer()` messages join the
//! conversation before the model's next reply: a reply being generated
//! when one arrives is ended at once (its prose kept, as after a stop), and
//! the calls of the current reply not yet started are skipped;
//! `follow_up()` messages start a new round when the chat would otherwise
//! end. Both are queued on the agent, not on a
//! chat: what one chat does not take waits for the next, and only
//! `clear_queues()` drops messages.

use std::collections::VecDeque;

use parking_lot::Mutex;

use crate::cancel::CancelToken;
pub use crate::config::QueueMode;

/// The agent's steering and follow-up queues, shared by every thread.
#[derive(Debug, Default)]
pub struct MessageQueues {
    steering: Mutex<VecDeque<String>>,
    follow_ups: Mutex<VecDeque<String>>,
    /// The token of the reply being generated, which a steering message
    /// cancels (the chat goes on).
    reply: Mutex<Option<CancelToken>>,
}

impl MessageQueues {
    /// Queues a message for the next reply of the running chat (or the next
    /// chat), ending the reply being generated, if any.
    pub fn steer(&self, text: String) {
        self.steering.lock().push_back(text);
        if let Some(reply) = &*self.reply.lock() {
            reply.cancel();
        }
    }

    /// Marks a reply as being generated (`Some`, its own token) or done
    /// (`None`): a steering message sent meanwhile ends it.
    pub(crate) fn set_reply(&self, reply: Option<CancelToken>) {
        *self.reply.lock() = reply;
    }

    /// Queues a message for when the running chat (or the next) would end.
    pub fn follow_up(&self, text: String) {
        self.follow_ups.lock().push_back(text);
    }

    /// Drops every queued message.
    pub fn clear(&self) {
        self.steering.lock().clear();
        self.follow_ups.lock().clear();
    }

    /// Whether a steering message waits.
    pub fn has_steering(&self) -> bool {
        !self.steering.lock().is_empty()
    }

    /// Takes steering messages as `mode` says (empty when none wait).
    pub fn take_steering(&self, mode: QueueMode) -> Vec<String> {
        take(&mut self.steering.lock(), mode)
    }

    /// Takes follow-up messages as `mode` says (empty when none wait).
    pub fn take_follow_ups(&self, mode: QueueMode) -> Vec<String> {
        take(&mut self.follow_ups.lock(), mode)
    }

    /// Puts back, at the front and in order, messages a chat took but did
    /// not keep (its turn was undone), so that none is lost.
    pub fn give_back(&self, steering: Vec<String>, follow_ups: Vec<String>) {
        put_front(&mut self.steering.lock(), steering);
        put_front(&mut self.follow_ups.lock(), follow_ups);
    }

    /// Messages waiting: (steering, follow-ups).
    pub fn depths(&self) -> (usize, usize) {
        (self.steering.lock().len(), self.follow_ups.lock().len())
    }
}

fn put_front(queue: &mut VecDeque<String>, messages: Vec<String>) {
    for message in messages.into_iter().rev() {
        queue.push_front(message);
    }
}

fn take(queue: &mut VecDeque<String>, mode: QueueMode) -> Vec<String> {
    match mode {
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
        QueueMode::All => queue.drain(..).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_at_a_time_takes_in_order_and_all_takes_the_rest() {
        let queues = MessageQueues::default();
        for text in ["a", "b", "c"] {
            queues.steer(text.into());
        }
        assert_eq!(queues.take_steering(QueueMode::OneAtATime), ["a"]);
        assert_eq!(queues.take_steering(QueueMode::All), ["b", "c"]);
        assert!(queues.take_steering(QueueMode::All).is_empty());
    }

    #[test]
    fn a_steer_ends_the_reply_in_progress_only() {
        let queues = MessageQueues::default();
        queues.steer("before".into());
        let reply = CancelToken::new();
        queues.set_reply(Some(reply.clone()));
        assert!(
            !reply.is_cancelled(),
            "a message queued earlier does not end it"
        );
        queues.follow_up("later".into());
        assert!(!reply.is_cancelled(), "neither does a follow-up");
        queues.steer("now".into());
        assert!(reply.is_cancelled());
        queues.set_reply(None);
        queues.steer("after".into());
        assert_eq!(queues.depths(), (3, 1));
    }

    #[test]
    fn returned_messages_come_first_and_clear_drops_everything() {
        let queues = MessageQueues::default();
        queues.steer("later".into());
        queues.give_back(vec!["x".into(), "y".into()], vec!["f0".into()]);
        assert_eq!(queues.take_steering(QueueMode::All), ["x", "y", "later"]);
        queues.steer("s".into());
        queues.follow_up("f".into());
        assert_eq!(queues.take_follow_ups(QueueMode::OneAtATime), ["f0"]);
        assert_eq!(queues.depths(), (1, 1));
        queues.clear();
        assert_eq!(queues.depths(), (0, 0));
    }
}
