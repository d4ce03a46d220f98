//! Reading the JSON this library returns, for callers without a JSON
//! parser of their own (zoo.hpp reads a response's `text` with it).

use std::ffi::c_char;

use zoo_core::Error;

use crate::boundary::{guard, into_c_string, out_arg, str_arg};
use crate::status::zoo_status;

/// The string member `key` of the JSON object `json` (a response's `text`
/// or `stop_reason`), decoded, in `*out_string` (free with
/// `zoo_string_free`); NULL when the object has no such member or its value
/// is not a string.
///
/// @param json A JSON object.
/// @param key The member's name.
/// @param out_string On success, the member's string, or NULL when there is none.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON` when `json` is not JSON or not an object, or
/// `ZOO_INVALID_ARGUMENT` for a NULL argument or text that is not UTF-8.
#[no_mangle]
pub extern "C" fn zoo_json_string_member(
    json: *const c_char,
    key: *const c_char,
    out_string: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let (json, key) = (str_arg(json, "json")?, str_arg(key, "key")?);
        let out = out_arg(out_string, "out_string")?;
        let value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| Error::InvalidJson(format!("the JSON to read: {e}")))?;
        let object = value.as_object().ok_or_else(|| {
            Error::InvalidJson(format!(
                "the JSON to read is {}, not an object",
                kind(&value)
            ))
        })?;
        let member = object.get(key).and_then(serde_json::Value::as_str);
        out.write(member.map_or(std::ptr::null_mut(), |s| into_c_string(s.to_owned())));
        Ok(())
    })
}

/// What a JSON value is, for a message.
fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
