//! Steering a running chat and queueing follow-ups: messages sent from any
//! thread while the agent works.

use std::ffi::c_char;

use crate::agent::zoo_agent;
use crate::boundary::{guard, handle_arg, out_arg, str_arg};
use crate::status::zoo_status;

/// Sends `text` (NUL-terminated UTF-8) to the running chat, from any thread:
/// it joins the conversation before the model's next reply, and the tool
/// calls of the current reply not yet started are skipped (the model reads
/// why). Without a running chat it waits for the next one. The config's
/// `steering_mode` says whether a reply takes one queued message or all.
///
/// @param agent The agent.
/// @param text The message.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_agent_steer(
    agent: *const zoo_agent,
    text: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let text = str_arg(text, "text")?;
        handle_arg(agent, "agent")?.agent.steer(text);
        Ok(())
    })
}

/// Queues `text` (NUL-terminated UTF-8) to start a new round when the
/// running chat (or the next) would otherwise end, within the same chat.
/// The config's `follow_up_mode` says whether a round takes one or all.
///
/// @param agent The agent.
/// @param text The message.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_agent_follow_up(
    agent: *const zoo_agent,
    text: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let text = str_arg(text, "text")?;
        handle_arg(agent, "agent")?.agent.follow_up(text);
        Ok(())
    })
}

/// Drops every queued steering and follow-up message. Messages a chat did
/// not take otherwise wait for the next chat; this is the one way to drop
/// them.
///
/// @param agent The agent.
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL agent.
#[no_mangle]
pub extern "C" fn zoo_agent_clear_queues(agent: *const zoo_agent) -> zoo_status {
    guard(std::ptr::null_mut(), || {
        handle_arg(agent, "agent")?.agent.clear_queues();
        Ok(())
    })
}

/// The agent's id, unique in the process: the `agent_id` of its events.
///
/// @param agent The agent.
/// @param out_id On success, the id.
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_agent_id(agent: *const zoo_agent, out_id: *mut u64) -> zoo_status {
    guard(std::ptr::null_mut(), || {
        let out = out_arg(out_id, "out_id")?;
        out.write(handle_arg(agent, "agent")?.agent.id());
        Ok(())
    })
}
