//! Errors at the edge. A `zoo_core::Error` crosses to JavaScript as an
//! `Error` whose message starts with `[zoo:CODE] `; the package's JS layer
//! (`node/lib/errors.js`) turns it into a `ZooError` with `.code`, so the
//! code is decided here, once, from `Error::code()`.

use zoo_core::{Error, ErrorCode};

/// The marker the JS layer parses: `[zoo:2] invalid config ...`.
pub fn message(code: ErrorCode, text: &str) -> String {
    format!("[zoo:{}] {text}", code.as_i32())
}

/// The JavaScript error for a Zoo-Keeper error.
pub fn to_napi(error: Error) -> napi::Error {
    napi::Error::new(
        napi::Status::GenericFailure,
        message(error.code(), &error.to_string()),
    )
}

/// `Result` conversion at the edge.
pub trait IntoNapi<T> {
    /// Maps the error to a JavaScript error carrying its code.
    fn napi_err(self) -> napi::Result<T>;
}

impl<T> IntoNapi<T> for zoo_core::Result<T> {
    fn napi_err(self) -> napi::Result<T> {
        self.map_err(to_napi)
    }
}

/// Checks that a JavaScript number is an integer in `[min, max]`. Numbers
/// arrive as `f64` so that `-1` is reported instead of wrapping to
/// 4294967295 as a `u32` conversion would.
pub fn integer(name: &str, value: f64, min: i64, max: i64) -> napi::Result<i64> {
    let in_range =
        value.is_finite() && value.fract() == 0.0 && value >= min as f64 && value <= max as f64;
    if in_range {
        Ok(value as i64)
    } else {
        Err(to_napi(zoo_core::Error::out_of_range(
            name, min, max, value,
        )))
    }
}
