//! The built-in tools from C: which ones, on which workspace, and the
//! host's confirmation callback asked before `write_file`, `edit_file` and
//! `bash` run.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use serde_json::Value;
use zoo_core::tools::builtin::{BuiltinToolsConfig, ConfirmFn};
use zoo_core::Error;

use crate::agent::zoo_agent;
use crate::boundary::{guard, handle_arg, str_arg};
use crate::status::zoo_status;
use crate::tool::{zoo_free_fn, UserData};

/// Asked before `write_file`, `edit_file` and `bash` run: `tool_name` (NUL-
/// terminated) and the call's arguments as a JSON object
/// (`arguments_len` bytes, also NUL-terminated), both valid only during
/// the call. Return true to let the call run, false to refuse it (the
/// model reads "the user refused this bash call"). Report a failure with
/// `zoo_confirmation_set_error`: the call is refused whatever was
/// returned, and the model reads the message. Runs on one of the agent's
/// tool threads, while the chat waits for it.
pub type zoo_confirm_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        tool_name: *const c_char,
        arguments_json: *const c_char,
        arguments_len: usize,
        confirmation: *mut zoo_confirmation,
    ) -> bool,
>;

/// Where a confirmation callback reports a failure (opaque; only valid
/// during the call).
pub struct zoo_confirmation {
    error: Option<String>,
}

/// Adds built-in tools to `agent`. `options_json` is
/// `{"tools": ["read_file", "write_file", "edit_file", "list_files",
/// "search", "bash"], "workspace": "/path/to/folder", "bash_deny": ["sudo"]}`
/// (`bash_deny` optional), the shape of the config's `builtin_tools`:
/// every path the tools touch is confined to `workspace`, and no `bash`
/// command may contain a `bash_deny` entry. `confirm` (may be NULL: ask
/// nothing) is asked before each `write_file`, `edit_file` and `bash` call,
/// with `user_data`. `free_user_data` (may be NULL) runs exactly once: when
/// none of the tools is registered any more and no call is running, when
/// the agent is freed, or right away if this fails or `confirm` is NULL.
/// Nothing is added on failure.
///
/// @param agent The agent.
/// @param options_json Which tools, the workspace and `bash_deny`, a JSON object.
/// @param confirm Asked before `write_file`, `edit_file` and `bash` run, or NULL.
/// @param user_data Passed to `confirm`.
/// @param free_user_data Frees `user_data`, or NULL.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON` (`options_json` is not JSON) or `ZOO_INVALID_ARGUMENT`
/// (NULL agent or options, a missing, mistyped or unknown key, an unknown tool name, a
/// workspace that is not a folder).
#[no_mangle]
pub extern "C" fn zoo_agent_add_builtin_tools(
    agent: *const zoo_agent,
    options_json: *const c_char,
    confirm: zoo_confirm_fn,
    user_data: *mut c_void,
    free_user_data: zoo_free_fn,
    out_error: *mut *mut c_char,
) -> zoo_status {
    // Owned from the first line, so every early return releases it.
    let data = UserData::new(user_data, free_user_data);
    guard(out_error, move || {
        let agent = handle_arg(agent, "agent")?;
        let config = BuiltinToolsConfig::from_json(str_arg(options_json, "options_json")?)?;
        let confirm = confirm.map(|confirm| confirm_fn(confirm, data));
        let names: Vec<&str> = config.tools.iter().map(String::as_str).collect();
        agent
            .agent
            .add_builtin_tools(&names, config.options(confirm))
    })
}

/// The C callback as the engine's confirmation.
fn confirm_fn(
    confirm: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        *const c_char,
        usize,
        *mut zoo_confirmation,
    ) -> bool,
    data: Arc<UserData>,
) -> ConfirmFn {
    Arc::new(move |tool: &str, arguments: &Value| {
        let json = arguments.to_string();
        let len = json.len();
        // Tool names are `[A-Za-z0-9_-]` and serde's JSON escapes a NUL.
        let (tool, json) = CString::new(tool)
            .and_then(|tool| Ok((tool, CString::new(json)?)))
            .map_err(|e| e.to_string())?;
        let mut confirmation = zoo_confirmation { error: None };
        // SAFETY: the caller's callback with its own user_data; the strings
        // and the confirmation slot live until it returns, as documented.
        let allowed = unsafe {
            confirm(
                data.ptr(),
                tool.as_ptr(),
                json.as_ptr(),
                len,
                &mut confirmation,
            )
        };
        match confirmation.error {
            Some(message) => Err(message),
            None => Ok(allowed),
        }
    })
}

/// Reports that the confirmation callback failed with `message`: the call
/// is refused and the model reads why. Call from inside the callback.
///
/// @param confirmation The callback's `confirmation`.
/// @param message Why the confirmation failed (UTF-8).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_confirmation_set_error(
    confirmation: *mut zoo_confirmation,
    message: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let message = str_arg(message, "message")?;
        // SAFETY: NULL is rejected; otherwise it is the slot passed to the
        // running callback, valid for the duration of that call.
        let slot = unsafe { confirmation.as_mut() }
            .ok_or_else(|| Error::InvalidArgument("`confirmation` is NULL".into()))?;
        slot.error = Some(message.to_owned());
        Ok(())
    })
}
