//! Tools written in C: a handler with `user_data`, and the setters through
//! which it returns a result or an error (so no memory crosses allocators).
//! A handler registered with `zoo_agent_register_tool_with_context` also
//! gets its call's context: the call id, its cancel token, and progress
//! reports that become the chat's `tool_call_update` and
//! `tool_call_progress` events.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use zoo_core::tools::registry::handler_not_callable;
use zoo_core::{Error, Tool, ToolContext, ToolOptions};

use crate::agent::zoo_agent;
use crate::boundary::{guard, handle_arg, out_arg, str_arg, FfiResult};
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
/// waits for it, and `zoo_agent_free` waits for it too. A handler that can
/// take long should be registered with a context
/// (`zoo_agent_register_tool_with_context`) and watch its cancel token.
pub type zoo_tool_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        arguments_json: *const c_char,
        arguments_len: usize,
        result: *mut zoo_tool_result,
    ),
>;

/// A tool handler that takes its call's context: as `zoo_tool_fn`, with
/// `context`, valid only during the call (from any thread while the
/// handler runs; never after it returns). Read it with
/// `zoo_tool_context_call_id`, `zoo_tool_context_is_cancelled` and
/// `zoo_tool_context_wait_cancelled`; report with
/// `zoo_tool_context_update_json` and `zoo_tool_context_progress`.
pub type zoo_tool_context_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        arguments_json: *const c_char,
        arguments_len: usize,
        context: *const zoo_tool_context,
        result: *mut zoo_tool_result,
    ),
>;

/// Where a tool handler puts its outcome (opaque; only valid during the call).
pub struct zoo_tool_result {
    outcome: Option<Result<Value, String>>,
}

/// The context of one tool call (opaque; only valid during the handler
/// call it is passed to): its id, its cancel token (set when the chat is
/// stopped or the tool's `timeout_ms` passes) and its progress reports.
pub struct zoo_tool_context {
    context: ToolContext,
    /// The call id, NUL-terminated for `zoo_tool_context_call_id`.
    call_id: CString,
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
    /// background, its result discarded; a handler with a context sees its
    /// cancel token set). 0 is no limit; a negative value is
    /// `ZOO_INVALID_ARGUMENT`.
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
/// @param agent The agent.
/// @param name The tool's name.
/// @param description What the tool does, for the model.
/// @param schema_json The JSON schema of the arguments object.
/// @param handler Runs each call.
/// @param user_data Passed to `handler`.
/// @param free_user_data Frees `user_data`, or NULL.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_ARGUMENT` (NULL agent, name or handler, bad name),
/// `ZOO_INVALID_JSON` (schema is not JSON) or `ZOO_TOOL_VALIDATION_FAILED` (schema is not a
/// valid JSON schema of an object).
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
/// @param agent The agent.
/// @param name The tool's name.
/// @param description What the tool does, for the model.
/// @param schema_json The JSON schema of the arguments object.
/// @param options How the tool runs, or NULL for the defaults.
/// @param handler Runs each call.
/// @param user_data Passed to `handler`.
/// @param free_user_data Frees `user_data`, or NULL.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return As `zoo_agent_register_tool`, and `ZOO_INVALID_ARGUMENT` for a negative
/// `options->timeout_ms`.
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
            call_handler(&arguments, |json, len, result| {
                // SAFETY: the caller's handler with its own user_data; the
                // arguments and the result slot live until it returns, as
                // documented.
                unsafe { handler(data.ptr(), json, len, result) }
            })
        })?;
        register(agent, tool, options)
    })
}

/// Registers a tool written in C whose handler also takes its call's
/// context (`zoo_tool_context_fn`), otherwise as
/// `zoo_agent_register_tool_with_options` (`options` may be NULL), with the
/// same errors.
///
/// @param agent The agent.
/// @param name The tool's name.
/// @param description What the tool does, for the model.
/// @param schema_json The JSON schema of the arguments object.
/// @param options How the tool runs, or NULL for the defaults.
/// @param handler Runs each call, with its context.
/// @param user_data Passed to `handler`.
/// @param free_user_data Frees `user_data`, or NULL.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return As `zoo_agent_register_tool_with_options`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn zoo_agent_register_tool_with_context(
    agent: *const zoo_agent,
    name: *const c_char,
    description: *const c_char,
    schema_json: *const c_char,
    options: *const zoo_tool_options,
    handler: zoo_tool_context_fn,
    user_data: *mut c_void,
    free_user_data: zoo_free_fn,
    out_error: *mut *mut c_char,
) -> zoo_status {
    let data = UserData::new(user_data, free_user_data);
    guard(out_error, move || {
        let agent = handle_arg(agent, "agent")?;
        let name = str_arg(name, "name")?;
        let handler = handler.ok_or_else(|| handler_not_callable(name, "NULL"))?;
        let description = str_arg(description, "description")?;
        let schema: Value = serde_json::from_str(str_arg(schema_json, "schema_json")?)
            .map_err(|e| Error::InvalidJson(format!("schema_json: {e}")))?;
        let tool = Tool::with_context(name, description, schema, move |arguments, context| {
            // The id of a call the engine made is `call_N`: never a NUL.
            let call_id = CString::new(context.call_id()).unwrap_or_default();
            let context = zoo_tool_context {
                context: context.clone(),
                call_id,
            };
            call_handler(&arguments, |json, len, result| {
                // SAFETY: as in `zoo_agent_register_tool_with_options`; the
                // context also lives until the handler returns.
                unsafe { handler(data.ptr(), json, len, &context, result) }
            })
        })?;
        register(agent, tool, options)
    })
}

/// Adds the options to `tool` and registers it.
fn register(agent: &zoo_agent, tool: Tool, options: *const zoo_tool_options) -> FfiResult<()> {
    // Checked after the name, so that an error names a valid tool.
    // SAFETY: NULL or the caller's struct, read during this call only.
    let options = match unsafe { options.as_ref() } {
        None => ToolOptions::default(),
        Some(options) => ToolOptions {
            exclusive: options.exclusive,
            timeout: ToolOptions::timeout_ms(tool.name(), options.timeout_ms)?,
        },
    };
    agent.agent.register_tool(tool.with_options(options));
    Ok(())
}

/// Runs a C handler through `invoke` (which calls it with the arguments'
/// JSON, its length and the result slot) and reads its outcome.
fn call_handler(
    arguments: &Value,
    invoke: impl FnOnce(*const c_char, usize, *mut zoo_tool_result),
) -> Result<Value, String> {
    let json = arguments.to_string();
    let len = json.len();
    // JSON text from serde never holds a raw NUL (it would be escaped).
    let json = CString::new(json).map_err(|e| e.to_string())?;
    let mut result = zoo_tool_result { outcome: None };
    invoke(json.as_ptr(), len, &mut result);
    result
        .outcome
        .unwrap_or_else(|| Err("the tool handler returned without setting a result".into()))
}

/// Removes a tool. `*out_removed` (may be NULL) tells whether it existed.
///
/// @param agent The agent.
/// @param name The tool's name.
/// @param out_removed Whether the tool was registered (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
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
///
/// @param result The handler's `result`.
/// @param json The result, JSON text.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`; `ZOO_INVALID_JSON` if `json` does not parse (the outcome is then left as
/// it was: unset, or what an earlier call set); `ZOO_INVALID_ARGUMENT` for a NULL argument or
/// text that is not UTF-8.
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
///
/// @param result The handler's `result`.
/// @param message Why the tool failed, for the model (UTF-8).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
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

fn context_arg<'a>(context: *const zoo_tool_context) -> FfiResult<&'a zoo_tool_context> {
    handle_arg(context, "context")
}

/// Writes `accepted` to `out_accepted` when it is not NULL.
fn write_accepted(out_accepted: *mut bool, accepted: bool) {
    if !out_accepted.is_null() {
        // SAFETY: non-NULL, pointing to the caller's bool.
        unsafe { *out_accepted = accepted };
    }
}

/// Writes the call's id (`call_1`, ...) to `*out_call_id`: a NUL-terminated
/// string owned by the context, valid as long as the context (during the
/// handler call).
///
/// @param context The handler's `context`.
/// @param out_call_id On success, the call's id (do not free it).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_tool_context_call_id(
    context: *const zoo_tool_context,
    out_call_id: *mut *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_call_id, "out_call_id")?;
        out.write(context_arg(context)?.call_id.as_ptr());
        Ok(())
    })
}

/// Writes whether the call is cancelled to `*out_cancelled`: the chat was
/// stopped or the tool's `timeout_ms` passed. Its result is then discarded,
/// and reports made from then on are dropped: return early.
///
/// @param context The handler's `context`.
/// @param out_cancelled Whether the call is cancelled.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_tool_context_is_cancelled(
    context: *const zoo_tool_context,
    out_cancelled: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_cancelled, "out_cancelled")?;
        out.write(context_arg(context)?.context.is_cancelled());
        Ok(())
    })
}

/// Blocks until the call is cancelled or `timeout_ms` milliseconds pass (0
/// looks without waiting) and writes whether it is cancelled to
/// `*out_cancelled`.
///
/// @param context The handler's `context`.
/// @param timeout_ms Milliseconds to wait at most (0 or more).
/// @param out_cancelled Whether the call is cancelled.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or a negative `timeout_ms`.
#[no_mangle]
pub extern "C" fn zoo_tool_context_wait_cancelled(
    context: *const zoo_tool_context,
    timeout_ms: i64,
    out_cancelled: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_cancelled, "out_cancelled")?;
        let context = context_arg(context)?;
        let timeout = u64::try_from(timeout_ms).map_err(|_| {
            Error::InvalidArgument(format!(
                "`timeout_ms` must be 0 or more milliseconds, got {timeout_ms}"
            ))
        })?;
        out.write(
            context
                .context
                .wait_cancelled(Some(Duration::from_millis(timeout))),
        );
        Ok(())
    })
}

/// Reports a partial result (`json`, any JSON value) as a
/// `tool_call_update` event of the call. `*out_accepted` (may be NULL)
/// tells whether it was taken: false once the call has finished, when the
/// report is dropped.
///
/// @param context The handler's `context`.
/// @param json The partial result, JSON text.
/// @param out_accepted Whether the report was taken (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON` if `json` does not parse, or `ZOO_INVALID_ARGUMENT` for
/// a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_tool_context_update_json(
    context: *const zoo_tool_context,
    json: *const c_char,
    out_accepted: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let context = context_arg(context)?;
        let update: Value = serde_json::from_str(str_arg(json, "json")?)
            .map_err(|e| Error::InvalidJson(format!("tool update: {e}")))?;
        write_accepted(out_accepted, context.context.update(update));
        Ok(())
    })
}

/// Reports progress in words (`text`, UTF-8) as a `tool_call_progress`
/// event of the call. `*out_accepted` (may be NULL) tells whether it was
/// taken: false once the call has finished, when the report is dropped.
///
/// @param context The handler's `context`.
/// @param text The progress, in words.
/// @param out_accepted Whether the report was taken (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_tool_context_progress(
    context: *const zoo_tool_context,
    text: *const c_char,
    out_accepted: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let context = context_arg(context)?;
        let text = str_arg(text, "text")?;
        write_accepted(out_accepted, context.context.progress(text));
        Ok(())
    })
}
