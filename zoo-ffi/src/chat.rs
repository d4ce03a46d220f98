//! Chatting: blocking and asynchronous chats, their callbacks and options,
//! and the `zoo_chat` handle of an asynchronous chat.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

use zoo_core::{ChatHandle, ChatOptions, Error, Hooks, Response, ToolChoice};

use crate::agent::zoo_agent;
use crate::boundary::{
    guard, guard_void, handle_arg, into_c_string, opt_str_arg, out_arg, str_arg, FfiResult,
};
use crate::hooks::{adopt_hooks, zoo_hooks};
use crate::status::zoo_status;
use crate::tool::{zoo_free_fn, UserData};

/// Receives reply text as it is generated: `len` bytes of UTF-8 at `text`
/// (not NUL-terminated), never a split character. Runs on the inference
/// thread; `text` is valid only during the call.
pub type zoo_token_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, text: *const c_char, len: usize)>;

/// Receives a progress event as JSON (`len` bytes, not NUL-terminated): a
/// `type` (`chat_started`, `turn_started`, `turn_finished`,
/// `tool_call_started`, `tool_call_update`, `tool_call_progress`,
/// `tool_call_finished`, `tool_error`,
/// `history_compacted` (a pass that fitted the history into the window:
/// `level` `fifo`, `truncate_tool_results`, `summarize`, `drop_middle`,
/// `keep_newest` or `custom` for a `context_strategy` hook, the `removed`
/// messages as they were, `tokens_before`, `tokens_after`),
/// `steering_received`, `follow_up_started`,
/// `input_rejected`, `limit_reached`, `retry` (a remote model's request
/// failed and is tried again: `attempt`, `max_retries`, `delay_ms`,
/// `status`, `reason`), `chat_finished`), the `agent_id`, `chat_id` and `seq`
/// of the event, and the fields of its type. `chat_started` comes first and
/// `chat_finished` last. Runs on the inference thread; valid only during
/// the call.
pub type zoo_event_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char, len: usize)>;

/// Receives the end of an asynchronous chat, once, on the inference thread,
/// after the chat's handle has resolved: with `ZOO_OK`, `text` is the
/// response JSON; otherwise it is the error message (`len` bytes, not
/// NUL-terminated, valid only during the call). It may free the agent.
pub type zoo_complete_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: zoo_status,
        text: *const c_char,
        len: usize,
    ),
>;

/// The callbacks of one chat, all called with `user_data`, in order, on the
/// agent's inference thread. Any may be NULL. `free_user_data` (may be NULL)
/// runs exactly once after the last callback: for `zoo_agent_chat`, before
/// it returns; for `zoo_agent_chat_async`, after `on_complete`; and right
/// away if the call fails.
#[repr(C)]
pub struct zoo_chat_callbacks {
    /// Streamed reply text.
    pub on_token: zoo_token_fn,
    /// Progress events as JSON.
    pub on_event: zoo_event_fn,
    /// The end of the chat (`zoo_agent_chat_async` only; must be NULL for
    /// `zoo_agent_chat`).
    pub on_complete: zoo_complete_fn,
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Frees `user_data`.
    pub free_user_data: zoo_free_fn,
    /// Streamed reasoning of a model that reasons before it answers
    /// (`<think>`, gpt-oss's analysis channel), as `on_token` streams text:
    /// never part of the text, and in the response's `thinking`.
    pub on_thinking: zoo_token_fn,
}

/// Which tools a chat may call (the values of `zoo_chat_options.tool_choice`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum zoo_tool_choice {
    /// The agent's configured `tool_choice`.
    ZOO_TOOL_CHOICE_DEFAULT = 0,
    /// The model decides.
    ZOO_TOOL_CHOICE_AUTO = 1,
    /// The first reply must call a tool.
    ZOO_TOOL_CHOICE_REQUIRED = 2,
    /// No tools.
    ZOO_TOOL_CHOICE_NONE = 3,
    /// The first reply must call `zoo_chat_options.tool_name`.
    ZOO_TOOL_CHOICE_NAMED = 4,
}

/// Per-chat options. Zero-initialise (`zoo_chat_options o = {0};`) for the
/// agent's defaults.
#[repr(C)]
pub struct zoo_chat_options {
    /// A `zoo_tool_choice` value; others give `ZOO_INVALID_ARGUMENT`.
    pub tool_choice: i32,
    /// The tool for `ZOO_TOOL_CHOICE_NAMED` (else ignored; may be NULL).
    pub tool_name: *const c_char,
    /// Reply token limit; 0 keeps the agent's.
    pub max_tokens: u32,
    /// Retrieved context shown for this turn only, never stored; may be NULL.
    pub rag_context: *const c_char,
    /// Model replies this chat may take; 0 keeps the agent's `max_turns`.
    pub max_turns: u32,
    /// Tokens this chat may use; 0 keeps the agent's `max_total_tokens`.
    pub max_total_tokens: u64,
    /// Milliseconds this chat may run; 0 keeps the agent's `max_duration_ms`.
    pub max_duration_ms: u64,
    /// Hooks for this chat instead of the agent's (`zoo_agent_set_hooks`);
    /// NULL keeps the agent's, and a struct whose callbacks are all NULL
    /// runs none. Read during the call; its `user_data` is kept until the
    /// chat ends, and its `free_user_data` runs once, after the chat's last
    /// hook call (or right away if the call fails).
    pub hooks: *const zoo_hooks,
}

fn tool_choice(options: &zoo_chat_options) -> FfiResult<Option<ToolChoice>> {
    const DEFAULT: i32 = zoo_tool_choice::ZOO_TOOL_CHOICE_DEFAULT as i32;
    const AUTO: i32 = zoo_tool_choice::ZOO_TOOL_CHOICE_AUTO as i32;
    const REQUIRED: i32 = zoo_tool_choice::ZOO_TOOL_CHOICE_REQUIRED as i32;
    const NONE: i32 = zoo_tool_choice::ZOO_TOOL_CHOICE_NONE as i32;
    const NAMED: i32 = zoo_tool_choice::ZOO_TOOL_CHOICE_NAMED as i32;
    Ok(match options.tool_choice {
        DEFAULT => None,
        AUTO => Some(ToolChoice::Auto),
        REQUIRED => Some(ToolChoice::Required),
        NONE => Some(ToolChoice::None),
        NAMED => {
            let name = str_arg(options.tool_name, "tool_name")?;
            match ToolChoice::parse(name) {
                Ok(ToolChoice::Tool(name)) => Some(ToolChoice::Tool(name)),
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "`tool_name` `{name}` is not a valid tool name"
                    )))
                }
            }
        }
        other => {
            return Err(Error::InvalidArgument(format!(
                "tool_choice {other} is not a zoo_tool_choice value (0 to 4)"
            )))
        }
    })
}

/// Takes ownership of the callbacks' `user_data` first thing, so that every
/// failure path of the call (even a NULL agent) frees it exactly once.
fn callbacks_data(callbacks: *const zoo_chat_callbacks) -> Option<Arc<UserData>> {
    // SAFETY: NULL or a pointer to the caller's struct, read during this call.
    unsafe { callbacks.as_ref() }.map(|c| UserData::new(c.user_data, c.free_user_data))
}

/// Takes ownership of the chat's own hooks first thing, as
/// `callbacks_data` does for the callbacks' `user_data`.
fn chat_hooks(options: *const zoo_chat_options) -> Option<Arc<dyn Hooks>> {
    // SAFETY: NULL or a pointer to the caller's struct, read during this call.
    unsafe { options.as_ref() }.and_then(|o| adopt_hooks(o.hooks))
}

/// What a chat call owns from its first line: the callbacks' `user_data`
/// and the chat's hooks.
struct Adopted {
    data: Option<Arc<UserData>>,
    hooks: Option<Arc<dyn Hooks>>,
}

impl Adopted {
    fn new(options: *const zoo_chat_options, callbacks: *const zoo_chat_callbacks) -> Self {
        Adopted {
            data: callbacks_data(callbacks),
            hooks: chat_hooks(options),
        }
    }
}

/// Builds the core options from the C structs (either may be NULL).
fn chat_options(
    options: *const zoo_chat_options,
    callbacks: *const zoo_chat_callbacks,
    adopted: Adopted,
    allow_complete: bool,
) -> FfiResult<ChatOptions> {
    let Adopted { data, hooks } = adopted;
    let mut out = ChatOptions::new();
    out.hooks = hooks;
    // SAFETY: NULL or a pointer to the caller's struct, read during this call.
    if let Some(options) = unsafe { options.as_ref() } {
        out.tool_choice = tool_choice(options)?;
        out.max_tokens = (options.max_tokens > 0).then_some(options.max_tokens);
        out.rag_context = opt_str_arg(options.rag_context, "rag_context")?.map(str::to_string);
        out.max_turns = Some(options.max_turns);
        out.max_total_tokens = Some(options.max_total_tokens);
        out.max_duration_ms = Some(options.max_duration_ms);
    }
    // SAFETY: as above.
    let (Some(callbacks), Some(data)) = (unsafe { callbacks.as_ref() }, data) else {
        return Ok(out);
    };
    if callbacks.on_complete.is_some() && !allow_complete {
        return Err(Error::InvalidArgument(
            "`on_complete` is for zoo_agent_chat_async; zoo_agent_chat returns the response".into(),
        ));
    }
    if let Some(on_token) = callbacks.on_token {
        let data = data.clone();
        out = out.on_token(move |text| {
            // SAFETY: the caller's callback and user_data; `text` lives
            // until it returns.
            unsafe { on_token(data.ptr(), text.as_ptr().cast(), text.len()) }
        });
    }
    if let Some(on_thinking) = callbacks.on_thinking {
        let data = data.clone();
        out = out.on_thinking(move |text| {
            // SAFETY: as for on_token.
            unsafe { on_thinking(data.ptr(), text.as_ptr().cast(), text.len()) }
        });
    }
    if let Some(on_event) = callbacks.on_event {
        let data = data.clone();
        out = out.on_event(move |event| {
            let json = event.to_json();
            // SAFETY: as for on_token.
            unsafe { on_event(data.ptr(), json.as_ptr().cast(), json.len()) }
        });
    }
    if let Some(on_complete) = callbacks.on_complete {
        let data = data.clone();
        out = out.on_complete(move |result| {
            let (status, text) = match result {
                Ok(response) => (zoo_status::ZOO_OK, response.to_json()),
                Err(error) => (error.code().into(), error.to_string()),
            };
            // SAFETY: as for on_token.
            unsafe { on_complete(data.ptr(), status, text.as_ptr().cast(), text.len()) }
        });
    }
    Ok(out)
}

fn response_json(result: zoo_core::Result<Response>) -> FfiResult<*mut c_char> {
    result.map(|response| into_c_string(response.to_json()))
}

/// Sends `message` and blocks until the reply is complete. A cancelled
/// chat is `ZOO_OK` with `stop_reason` "cancelled". Tool errors are not
/// chat errors: they are in the response's `tool_errors`.
///
/// @param agent The agent.
/// @param message The user's message (UTF-8).
/// @param options The chat's options, or NULL for the agent's defaults.
/// @param callbacks The chat's callbacks, or NULL for none.
/// @param out_response_json On success, the response (`text`, `thinking` when the model
/// reasoned, `stop_reason`, `tool_calls`, `tool_errors`, `usage`, `metrics`); free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_ARGUMENT` (NULLs, bad UTF-8, a bad tool choice, or a call
/// from inside this agent's own callbacks, which would wait for itself), `ZOO_TOOL_NOT_FOUND`
/// (a named tool that is not registered), `ZOO_INVALID_MESSAGE_SEQUENCE`,
/// `ZOO_CONTEXT_OVERFLOW`, `ZOO_INFERENCE_FAILED`, `ZOO_AGENT_NOT_RUNNING`, and for remote
/// providers `ZOO_PROVIDER_FAILED` or `ZOO_AUTHENTICATION_FAILED`.
#[no_mangle]
pub extern "C" fn zoo_agent_chat(
    agent: *const zoo_agent,
    message: *const c_char,
    options: *const zoo_chat_options,
    callbacks: *const zoo_chat_callbacks,
    out_response_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    let blocking = Blocking {
        agent,
        function: "zoo_agent_chat",
        hint: "; use zoo_agent_chat_async",
        options,
        callbacks,
        out_response_json,
    };
    blocking.run(out_error, |agent, options| {
        Ok(agent.chat(str_arg(message, "message")?, options))
    })
}

/// Answers the history as it stands, without a new user message (after
/// `zoo_agent_set_history_json` restored a conversation that ends with tool
/// results, or after a stop cut a reply short), and blocks like
/// `zoo_agent_chat`, with the same options, callbacks, outputs and errors.
///
/// @param agent The agent.
/// @param options The chat's options, or NULL for the agent's defaults.
/// @param callbacks The chat's callbacks, or NULL for none.
/// @param out_response_json On success, the response (`text`, `stop_reason`, `tool_calls`,
/// `tool_errors`, `usage`, `metrics`); free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return As `zoo_agent_chat`; `ZOO_INVALID_MESSAGE_SEQUENCE` when there is nothing to answer
/// (an empty history, a call without its result).
#[no_mangle]
pub extern "C" fn zoo_agent_continue(
    agent: *const zoo_agent,
    options: *const zoo_chat_options,
    callbacks: *const zoo_chat_callbacks,
    out_response_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    let blocking = Blocking {
        agent,
        function: "zoo_agent_continue",
        hint: "",
        options,
        callbacks,
        out_response_json,
    };
    blocking.run(out_error, |agent, options| Ok(agent.continue_chat(options)))
}

/// Drops the last assistant turn (its replies, tool calls and results) and
/// answers the last user message again, blocking like `zoo_agent_chat`. If
/// the new answer fails, or is stopped before the model says anything, the
/// old turn stays.
///
/// @param agent The agent.
/// @param options The chat's options, or NULL for the agent's defaults.
/// @param callbacks The chat's callbacks, or NULL for none.
/// @param out_response_json On success, the response (`text`, `stop_reason`, `tool_calls`,
/// `tool_errors`, `usage`, `metrics`); free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return As `zoo_agent_chat`; `ZOO_INVALID_MESSAGE_SEQUENCE` without a user message.
#[no_mangle]
pub extern "C" fn zoo_agent_regenerate(
    agent: *const zoo_agent,
    options: *const zoo_chat_options,
    callbacks: *const zoo_chat_callbacks,
    out_response_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    let blocking = Blocking {
        agent,
        function: "zoo_agent_regenerate",
        hint: "",
        options,
        callbacks,
        out_response_json,
    };
    blocking.run(out_error, |agent, options| Ok(agent.regenerate(options)))
}

/// The arguments the blocking chats share: `zoo_agent_chat`,
/// `zoo_agent_continue` and `zoo_agent_regenerate` differ only in how the
/// chat starts.
struct Blocking {
    agent: *const zoo_agent,
    function: &'static str,
    /// Appended to the refusal from the agent's own callbacks.
    hint: &'static str,
    options: *const zoo_chat_options,
    callbacks: *const zoo_chat_callbacks,
    out_response_json: *mut *mut c_char,
}

impl Blocking {
    /// Starts the chat with `start` and waits for its response. A call from
    /// the agent's own callbacks or tools is refused: it would wait for itself.
    fn run(
        self,
        out_error: *mut *mut c_char,
        start: impl FnOnce(&zoo_core::Agent, ChatOptions) -> FfiResult<ChatHandle>,
    ) -> zoo_status {
        let adopted = Adopted::new(self.options, self.callbacks);
        guard(out_error, move || {
            let out = out_arg(self.out_response_json, "out_response_json")?;
            let agent = &handle_arg(self.agent, "agent")?.agent;
            let options = chat_options(self.options, self.callbacks, adopted, false)?;
            if agent.on_inference_thread() {
                return Err(Error::InvalidArgument(format!(
                    "{} cannot be called from this agent's own callbacks (it would wait \
                     for itself){}",
                    self.function, self.hint
                )));
            }
            out.write(response_json(start(agent, options)?.wait())?);
            Ok(())
        })
    }
}

/// An asynchronous chat. Free it with `zoo_chat_free` (which does not
/// cancel the chat). Its functions may be called from any thread.
pub struct zoo_chat {
    handle: ChatHandle,
}

/// Sends `message` and returns at once with `*out_chat`. Chats run one at a
/// time in the order sent. `callbacks.on_complete` (if set) runs when it
/// ends; wait, poll or cancel through the handle.
///
/// @param agent The agent.
/// @param message The user's message (UTF-8).
/// @param options The chat's options, or NULL for the agent's defaults.
/// @param callbacks The chat's callbacks, or NULL for none.
/// @param out_chat On success, the chat's handle; free it with `zoo_chat_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8
/// (or a bad tool choice); the chat's own errors come through `zoo_chat_wait` and
/// `on_complete`.
#[no_mangle]
pub extern "C" fn zoo_agent_chat_async(
    agent: *const zoo_agent,
    message: *const c_char,
    options: *const zoo_chat_options,
    callbacks: *const zoo_chat_callbacks,
    out_chat: *mut *mut zoo_chat,
    out_error: *mut *mut c_char,
) -> zoo_status {
    let adopted = Adopted::new(options, callbacks);
    guard(out_error, move || {
        let out = out_arg(out_chat, "out_chat")?;
        let agent = handle_arg(agent, "agent")?;
        let message = str_arg(message, "message")?;
        let options = chat_options(options, callbacks, adopted, true)?;
        let handle = agent.agent.chat(message, options);
        out.write(Box::into_raw(Box::new(zoo_chat { handle })));
        Ok(())
    })
}

/// Waits up to `timeout_ms` (negative: forever) for the chat to end. Do
/// not call it from the agent's own callbacks with a negative timeout.
///
/// @param chat The chat.
/// @param timeout_ms Milliseconds to wait; negative waits until the chat ends.
/// @param out_done Whether the chat has ended.
/// @param out_response_json When the chat ended well, its response (may be NULL; free it with
/// `zoo_string_free`).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` with `*out_done` false if it is still running; `ZOO_OK` with `*out_done`
/// true when it ended well; or the chat's error status (as `zoo_agent_chat` lists) and message.
/// `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_chat_wait(
    chat: *const zoo_chat,
    timeout_ms: i64,
    out_done: *mut bool,
    out_response_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let done = out_arg(out_done, "out_done")?;
        let chat = handle_arg(chat, "chat")?;
        let result = match u64::try_from(timeout_ms) {
            Ok(ms) => chat.handle.wait_timeout(Duration::from_millis(ms)),
            Err(_) => Some(chat.handle.wait()),
        };
        match result {
            None => done.write(false),
            Some(result) => {
                let json = response_json(result)?;
                if out_response_json.is_null() {
                    crate::strings::zoo_string_free(json);
                } else {
                    // SAFETY: non-NULL, pointing to the caller's `char *`.
                    unsafe { *out_response_json = json };
                }
                done.write(true);
            }
        }
        Ok(())
    })
}

/// Whether the chat has ended (`*out_done`), without blocking.
///
/// @param chat The chat.
/// @param out_done Whether the chat has ended.
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_chat_poll(chat: *const zoo_chat, out_done: *mut bool) -> zoo_status {
    guard(std::ptr::null_mut(), || {
        let done = out_arg(out_done, "out_done")?;
        done.write(handle_arg(chat, "chat")?.handle.is_finished());
        Ok(())
    })
}

/// Cancels the chat: a queued chat ends without running, a running one
/// within about 100 ms; either way it ends `ZOO_OK` with stop reason
/// "cancelled" and the partial text.
///
/// @param chat The chat.
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL chat.
#[no_mangle]
pub extern "C" fn zoo_chat_cancel(chat: *const zoo_chat) -> zoo_status {
    guard(std::ptr::null_mut(), || {
        handle_arg(chat, "chat")?.handle.cancel();
        Ok(())
    })
}

/// Frees the handle. The chat itself goes on (cancel it first if it should
/// not); its callbacks still run. NULL is ignored.
///
/// @param chat The handle to free, or NULL.
#[no_mangle]
pub extern "C" fn zoo_chat_free(chat: *mut zoo_chat) {
    guard_void(|| {
        if !chat.is_null() {
            // SAFETY: a handle from zoo_agent_chat_async, freed once.
            drop(unsafe { Box::from_raw(chat) });
        }
    });
}
