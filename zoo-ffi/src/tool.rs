//! Tools written in C: a handler with `user_data`, and the setters through
//! which it returns a result or an error (so no memory crosses allocators).

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use serde_json::Value;
use zoo_core::tools::registry::handler_not_callable;
use zoo_core::{Error, Tool, ToolOptions};

use crate::agent::zoo_agent;
use crate::boundary::{guard, handle_arg, str_arg, FfiResult};
use crate::model::SendPtr;
use crate::status::zoo_status;

/// Frees a `user_data`. Runs exactly once, on whichever thread releases the
/// last reference (possibly the inference thread).
pub type zoo_free_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// A tool handler. Runs on one of the agent's tool threads. With
/// `tool_execution` `"sequential"` (the default) calls run one at a time;
/// with `"parallel"` or `{"batched": N}` the calls of one model reply run
/// at once, each on its own thread (a tool registered `exclusive` never
/// beside another call), so a handler then may run concurrently with
/// itself and with other handlers. `arguments_json` (`arguments_len`
/// bytes, also NUL-terminated) is a JSON object already validated against
/// the tool's schema, valid only during the call. Report the outcome with
/// `zoo_tool_result_set_json` or `zoo_tool_result_set_error` before
/// returning; `result` is valid only during the call. A stop does not wait
/// for a handler: the chat ends as `cancelled` and the handler finishes in
/// the background, its outcome discarded; the agent's next handler call
/// waits for it, and `zoo_agent_free` waits for it too.
pub type zoo_tool_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        arguments_json: *const c_char,
        arguments_len: usize,
        result: *mut zoo_tool_result,
    ),
>;

/// Where a tool handler puts its outcome (opaque; only valid during the call).
pub struct zoo_tool_result {
    outcome: Option<Result<Value, String>>,
}

/// A caller's `user_data` with its finalizer: the finalizer runs when the
/// last owner lets go, exactly once.
pub(crate) struct UserData {
    ptr: SendPtr,
    free: zoo_free_fn,
}

impl UserData {
    pub(crate) fn new(ptr: *mut c_void, free: zoo_free_fn) -> Arc<Self> {
        Arc::new(UserData {
            ptr: SendPtr(ptr),
            free,
        })
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        self.ptr.get()
    }
}

impl Drop for UserData {
    fn drop(&mut self) {
        if let Some(free) = self.free {
            // SAFETY: the caller's finalizer for its own user_data, called
            // once (this value is dropped once), as zoo.h documents.
            unsafe { free(self.ptr.get()) };
        }
    }
}

/// How a tool runs, beside its definition. Zero-initialise
/// (`zoo_tool_options o = {0};`) for the defaults: not exclusive, no time
/// limit.
#[repr(C)]
pub struct zoo_tool_options {
    /// Runs alone: never beside another call of the same reply, even with
    /// `tool_execution` `"parallel"` (for writes and shell commands).
    pub exclusive: bool,
    /// Milliseconds a call may take; one still running after that is
    /// answered with the tool error "tool `name` failed: it did not finish
    /// within N ms" and the chat goes on (the handler finishes in the
    /// background, its result discarded). 0 is no limit; a negative value
    /// is `ZOO_INVALID_ARGUMENT`.
    pub timeout_ms: i64,
}

/// Registers a tool written in C (replacing one of the same name), with
/// the default options: `zoo_agent_register_tool_with_options` with NULL
/// options.
///
/// `name` must match `^[A-Za-z0-9_-]{1,64}$`; `schema_json` is the JSON
/// schema of the arguments object. `handler` runs on the agent's tool
/// thread with `user_data`. `free_user_data` (may be NULL) runs exactly once: when
/// the tool is replaced or unregistered and no call is running, when the
/// agent is freed, or right away if registration fails.
///
/// Returns `ZOO_INVALID_ARGUMENT` (NULL agent, name or handler, bad name),
/// `ZOO_INVALID_JSON` (schema is not JSON) or `ZOO_TOOL_VALIDATION_FAILED`
/// (schema is not a valid JSON schema of an object).
#[no_mangle]
pub extern "C" fn zoo_agent_register_tool(
    agent: *const zoo_agent,
    name: *const c_char,
    description: *const c_char,
    schema_json: *const c_char,
    handler: zoo_tool_fn,
    user_data: *mut c_void,
    free_user_data: zoo_free_fn,
    out_error: *mut *mut c_char,
) -> zoo_status {
    zoo_agent_register_tool_with_options(
        agent,
        name,
        description,
        schema_json,
        std::ptr::null(),
        handler,
        user_data,
        free_user_data,
        out_error,
    )
}

/// Registers a tool written in C as `zoo_agent_register_tool` does, with
/// `options` (may be NULL: the defaults). The options are read during the
/// call; the struct need not outlive it.
///
/// Returns, besides the errors of `zoo_agent_register_tool`,
/// `ZOO_INVALID_ARGUMENT` for a negative `options->timeout_ms`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn zoo_agent_register_tool_with_options(
    agent: *const zoo_agent,
    name: *const c_char,
    description: *const c_char,
    schema_json: *const c_char,
    options: *const zoo_tool_options,
    handler: zoo_tool_fn,
    user_data: *mut c_void,
    free_user_data: zoo_free_fn,
    out_error: *mut *mut c_char,
) -> zoo_status {
    // Owned from the first line, so every early return releases it.
    let data = UserData::new(user_data, free_user_data);
    guard(out_error, move || {
        let agent = handle_arg(agent, "agent")?;
        let name = str_arg(name, "name")?;
        let handler = handler.ok_or_else(|| handler_not_callable(name, "NULL"))?;
        let description = str_arg(description, "description")?;
        let schema: Value = serde_json::from_str(str_arg(schema_json, "schema_json")?)
            .map_err(|e| Error::InvalidJson(format!("schema_json: {e}")))?;
        let tool = Tool::new(name, description, schema, move |arguments| {
            call_handler(handler, &data, &arguments)
        })?;
        // Checked after the name, so that an error names a valid tool.
        // SAFETY: NULL or the caller's struct, read during this call only.
        let options = match unsafe { options.as_ref() } {
            None => ToolOptions::default(),
            Some(options) => ToolOptions {
                exclusive: options.exclusive,
                timeout: ToolOptions::timeout_ms(name, options.timeout_ms)?,
            },
        };
        let tool = tool.with_options(options);
        agent.agent.register_tool(tool);
        Ok(())
    })
}

fn call_handler(
    handler: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *mut zoo_tool_result),
    data: &UserData,
    arguments: &Value,
) -> Result<Value, String> {
    let json = arguments.to_string();
    let len = json.len();
    // JSON text from serde never holds a raw NUL (it would be escaped).
    let json = CString::new(json).map_err(|e| e.to_string())?;
    let mut result = zoo_tool_result { outcome: None };
    // SAFETY: the caller's handler with its own user_data; the arguments and
    // the result slot live until it returns, as documented.
    unsafe { handler(data.ptr(), json.as_ptr(), len, &mut result) };
    result
        .outcome
        .unwrap_or_else(|| Err("the tool handler returned without setting a result".into()))
}

/// Removes a tool. `*out_removed` (may be NULL) tells whether it existed.
#[no_mangle]
pub extern "C" fn zoo_agent_unregister_tool(
    agent: *const zoo_agent,
    name: *const c_char,
    out_removed: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let agent = handle_arg(agent, "agent")?;
        let removed = agent.agent.unregister_tool(str_arg(name, "name")?);
        if !out_removed.is_null() {
            // SAFETY: non-NULL, pointing to the caller's bool.
            unsafe { *out_removed = removed };
        }
        Ok(())
    })
}

fn set_outcome(
    result: *mut zoo_tool_result,
    outcome: FfiResult<Result<Value, String>>,
) -> FfiResult<()> {
    // SAFETY: NULL is rejected; otherwise it is the slot passed to the
    // running handler, valid for the duration of that call.
    let slot = unsafe { result.as_mut() }
        .ok_or_else(|| Error::InvalidArgument("`result` is NULL".into()))?;
    slot.outcome = Some(outcome?);
    Ok(())
}

/// Sets the tool's result to a JSON value (`json` must be valid JSON; a
/// plain string result is written as a JSON string, e.g. "\"sunny\"").
/// Call from inside the handler; a later call replaces an earlier one.
/// Returns `ZOO_INVALID_JSON` if `json` does not parse; the outcome is then left
/// as it was (unset, or what an earlier call set).
#[no_mangle]
pub extern "C" fn zoo_tool_result_set_json(
    result: *mut zoo_tool_result,
    json: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let value = str_arg(json, "json").and_then(|text| {
            serde_json::from_str::<Value>(text)
                .map_err(|e| Error::InvalidJson(format!("tool result: {e}")))
        });
        set_outcome(result, value.map(Ok))
    })
}

/// Reports that the tool failed with `message`. The model is told, and may
/// correct its call; the chat goes on.
#[no_mangle]
pub extern "C" fn zoo_tool_result_set_error(
    result: *mut zoo_tool_result,
    message: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let message = str_arg(message, "message").map(|m| Err(m.to_string()));
        set_outcome(result, message)
    })
}
