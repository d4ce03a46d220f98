//! Hooks written in C: a struct of optional callbacks sharing one
//! `user_data`, each handed its input as JSON and writing its decision as
//! JSON into a `zoo_hook_result` (so no memory crosses allocators).

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use zoo_core::{Error, Hooks, InputDecision, Message, ToolCall, ToolCallDecision, TurnDecision};

use crate::agent::zoo_agent;
use crate::boundary::{guard, handle_arg, str_arg, FfiResult};
use crate::status::zoo_status;
use crate::tool::{zoo_free_fn, UserData};

/// A hook. Runs on the agent's inference thread, one at a time, while a
/// chat is blocked on it. `input_json` (`input_len` bytes, also
/// NUL-terminated) is valid only during the call; its shape is given with
/// each field of `zoo_hooks`. Write the decision with
/// `zoo_hook_result_set_json`; leave `result` unset to change nothing
/// (pass, continue, allow, keep the result, keep the messages). Report a
/// failure with `zoo_hook_result_set_error`: a failing hook fails safe (a
/// failing `filter_input` rejects the message, a failing `before_tool_call`
/// denies the call, any other failure changes nothing) and is passed to
/// `on_error`. A decision that is not valid JSON of the documented shape
/// counts as a failure.
pub type zoo_hook_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        input_json: *const c_char,
        input_len: usize,
        result: *mut zoo_hook_result,
    ),
>;

/// The `on_error` hook: a chat failed with `code` and `message`
/// (`message_len` bytes, also NUL-terminated, valid only during the call),
/// or another hook failed (then `code` is `ZOO_INTERNAL` and the message
/// names the hook). Runs on the inference thread.
pub type zoo_hook_error_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        code: zoo_status,
        message: *const c_char,
        message_len: usize,
    ),
>;

/// Where a hook writes its decision (opaque; only valid during the call).
pub struct zoo_hook_result {
    outcome: Option<Result<Value, String>>,
}

/// The hooks of an agent's chats. Every callback may be NULL (that point
/// changes nothing); zero-initialise (`zoo_hooks h = {0};`) and set the
/// ones you need. The JSON each one receives, and the decision it may
/// write, both in the same shape as every other language:
#[repr(C)]
pub struct zoo_hooks {
    /// Checks the user's message before anything is decoded. Input
    /// `{"message": "..."}`; decision `{"action": "pass"}`,
    /// `{"action": "warn", "warning": "..."}` (appended to the message the
    /// model sees) or `{"action": "reject", "reason": "..."}` (the chat ends
    /// with stop reason `rejected`, an `input_rejected` event, and the
    /// history unchanged).
    pub filter_input: zoo_hook_fn,
    /// Before model reply `turn` (1 for the first). Input `{"turn": 1}`;
    /// decision `{"action": "continue"}` or `{"action": "end"}` (the chat
    /// ends with stop reason `stop` and the last reply's text).
    pub before_turn: zoo_hook_fn,
    /// After model reply `turn`. Input `{"turn": 1, "text": "..."}` (tool
    /// call markup included); no decision.
    pub after_turn: zoo_hook_fn,
    /// Before a tool call runs. Input the call `{"id": "...", "name":
    /// "...", "arguments": {...}}`; decision `{"action": "allow"}`,
    /// `{"action": "deny", "reason": "..."}` (the model reads the reason as
    /// the call's error) or `{"action": "rewrite", "arguments": {...}}` (run
    /// with these arguments, validated again against the tool's schema).
    pub before_tool_call: zoo_hook_fn,
    /// After a tool call. Input `{"call": {...}, "result": <json>}` (the
    /// call as the model wrote it, before any rewrite), or
    /// `{"call": {...}, "error": "..."}` when it failed; decision: the
    /// JSON value the model reads instead (a failed call then succeeds with
    /// it).
    pub after_tool_call: zoo_hook_fn,
    /// Edits the messages sent to the model for the next reply (system
    /// prompt first) without touching the stored history. Input
    /// `{"messages": [{"role": "user", "content": "..."}, ...]}`
    /// (the history's shape); decision: the array of messages to send.
    pub transform_context: zoo_hook_fn,
    /// A chat failed, or another hook did (see `zoo_hook_error_fn`).
    pub on_error: zoo_hook_error_fn,
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Frees `user_data` (may be NULL). Runs exactly once: when the hooks
    /// are replaced or removed and no chat is running them, when the agent
    /// is freed, or right away if `zoo_agent_set_hooks` fails.
    pub free_user_data: zoo_free_fn,
}

/// The C hooks as `zoo_core::Hooks`.
struct CHooks {
    filter_input: zoo_hook_fn,
    before_turn: zoo_hook_fn,
    after_turn: zoo_hook_fn,
    before_tool_call: zoo_hook_fn,
    after_tool_call: zoo_hook_fn,
    transform_context: zoo_hook_fn,
    on_error: zoo_hook_error_fn,
    data: Arc<UserData>,
}

impl CHooks {
    /// Calls `hook` with `input`: its decision, `None` when the hook is
    /// NULL or set nothing, or its failure.
    fn call(
        &self,
        hook: zoo_hook_fn,
        input: impl FnOnce() -> Value,
    ) -> Result<Option<Value>, String> {
        let Some(hook) = hook else {
            return Ok(None);
        };
        let json = input().to_string();
        let len = json.len();
        // JSON text from serde never holds a raw NUL (it would be escaped).
        let json = CString::new(json).map_err(|e| e.to_string())?;
        let mut result = zoo_hook_result { outcome: None };
        // SAFETY: the caller's hook with its own user_data; the input and
        // the result slot live until it returns, as documented.
        unsafe { hook(self.data.ptr(), json.as_ptr(), len, &mut result) };
        result.outcome.transpose()
    }

    /// Calls a hook whose decision has a serde shape.
    fn decide<T: DeserializeOwned + Default>(
        &self,
        hook: zoo_hook_fn,
        input: impl FnOnce() -> Value,
    ) -> Result<T, String> {
        match self.call(hook, input)? {
            None => Ok(T::default()),
            Some(decision) => serde_json::from_value(decision.clone())
                .map_err(|e| format!("the decision {decision} is not valid: {e}")),
        }
    }
}

impl Hooks for CHooks {
    fn filter_input(&self, message: &str) -> Result<InputDecision, String> {
        self.decide(self.filter_input, || json!({ "message": message }))
    }

    fn before_turn(&self, turn: u32) -> Result<TurnDecision, String> {
        self.decide(self.before_turn, || json!({ "turn": turn }))
    }

    fn after_turn(&self, turn: u32, text: &str) -> Result<(), String> {
        self.call(self.after_turn, || json!({ "turn": turn, "text": text }))
            .map(drop)
    }

    fn before_tool_call(&self, call: &ToolCall) -> Result<ToolCallDecision, String> {
        self.decide(self.before_tool_call, || json!(call))
    }

    fn after_tool_call(
        &self,
        call: &ToolCall,
        outcome: &Result<Value, String>,
    ) -> Result<Option<Value>, String> {
        self.call(self.after_tool_call, || match outcome {
            Ok(result) => json!({ "call": call, "result": result }),
            Err(error) => json!({ "call": call, "error": error }),
        })
    }

    fn transform_context(&self, messages: Vec<Message>) -> Result<Vec<Message>, String> {
        match self.call(self.transform_context, || json!({ "messages": &messages }))? {
            None => Ok(messages),
            Some(edited) => serde_json::from_value(edited)
                .map_err(|e| format!("the messages it returned are not valid: {e}")),
        }
    }

    fn on_error(&self, error: &Error) {
        let Some(hook) = self.on_error else {
            return;
        };
        let message = error.to_string();
        let len = message.len();
        let message = CString::new(message.replace('\0', "\u{fffd}")).unwrap_or_default();
        // SAFETY: the caller's hook with its own user_data; the message
        // lives until it returns, as documented.
        unsafe { hook(self.data.ptr(), error.code().into(), message.as_ptr(), len) };
    }
}

/// Sets the hooks every chat of `agent` runs, replacing any earlier ones
/// (a chat already running keeps the hooks it started with). NULL
/// `hooks` removes them. The struct is read during the call and need not
/// outlive it; its `user_data` is kept until `free_user_data` runs (see
/// `zoo_hooks`).
///
/// @param agent The agent.
/// @param hooks The hooks, or NULL to remove them.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL agent.
#[no_mangle]
pub extern "C" fn zoo_agent_set_hooks(
    agent: *const zoo_agent,
    hooks: *const zoo_hooks,
    out_error: *mut *mut c_char,
) -> zoo_status {
    // Owned from the first line, so every early return releases it.
    let adapter = adopt_hooks(hooks);
    guard(out_error, move || {
        let agent = handle_arg(agent, "agent")?;
        agent.agent.set_hooks(adapter);
        Ok(())
    })
}

/// Takes the caller's hooks (NULL: none), owning their `user_data` from
/// here on: it is freed when the returned hooks go, whatever happens.
pub(crate) fn adopt_hooks(hooks: *const zoo_hooks) -> Option<Arc<dyn Hooks>> {
    // SAFETY: NULL or the caller's struct, read during this call only.
    let hooks = unsafe { hooks.as_ref() }?;
    Some(Arc::new(CHooks {
        filter_input: hooks.filter_input,
        before_turn: hooks.before_turn,
        after_turn: hooks.after_turn,
        before_tool_call: hooks.before_tool_call,
        after_tool_call: hooks.after_tool_call,
        transform_context: hooks.transform_context,
        on_error: hooks.on_error,
        data: UserData::new(hooks.user_data, hooks.free_user_data),
    }))
}

fn set_outcome(
    result: *mut zoo_hook_result,
    outcome: FfiResult<Result<Value, String>>,
) -> FfiResult<()> {
    // SAFETY: NULL is rejected; otherwise it is the slot passed to the
    // running hook, valid for the duration of that call.
    let slot = unsafe { result.as_mut() }
        .ok_or_else(|| Error::InvalidArgument("`result` is NULL".into()))?;
    slot.outcome = Some(outcome?);
    Ok(())
}

/// Sets a hook's decision to a JSON value (its shape per hook is given in
/// `zoo_hooks`). Call from inside the hook; a later call replaces an
/// earlier one.
///
/// @param result The hook's `result`.
/// @param json The decision, JSON text.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`; `ZOO_INVALID_JSON` if `json` does not parse (the decision is then left as
/// it was); `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_hook_result_set_json(
    result: *mut zoo_hook_result,
    json: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let value = str_arg(json, "json").and_then(|text| {
            serde_json::from_str::<Value>(text)
                .map_err(|e| Error::InvalidJson(format!("hook decision: {e}")))
        });
        set_outcome(result, value.map(Ok))
    })
}

/// Reports that the hook failed with `message`: it fails safe, as
/// `zoo_hook_fn` says, and the failure reaches `on_error`.
///
/// @param result The hook's `result`.
/// @param message Why the hook failed (UTF-8).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_hook_result_set_error(
    result: *mut zoo_hook_result,
    message: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let message = str_arg(message, "message").map(|m| Err(m.to_string()));
        set_outcome(result, message)
    })
}
