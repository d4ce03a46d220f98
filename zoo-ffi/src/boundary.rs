//! The edge between C and Rust: the panic boundary around every export,
//! pointer and UTF-8 checks, and the `out_error` convention.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use zoo_core::Error;

use crate::status::zoo_status;

pub(crate) type FfiResult<T> = Result<T, Error>;

/// Runs an export's body: a panic becomes `Error::Internal`, an error
/// becomes its status, and its message goes to `out_error` when given.
pub(crate) fn guard(
    out_error: *mut *mut c_char,
    body: impl FnOnce() -> FfiResult<()>,
) -> zoo_status {
    let result = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(Error::from_panic(payload.as_ref())));
    match result {
        Ok(()) => zoo_status::ZOO_OK,
        Err(error) => {
            if !out_error.is_null() {
                // SAFETY: the caller passes either NULL (checked above) or a
                // pointer to a `char *` it owns, as documented in zoo.h.
                unsafe { *out_error = into_c_string(error.to_string()) };
            }
            error.code().into()
        }
    }
}

/// Runs a body that cannot report errors (a `void` export), swallowing panics.
pub(crate) fn guard_void(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
}

/// A heap C string for the caller to free with `zoo_string_free`. Interior
/// NULs (which C could not see past) become U+FFFD.
pub(crate) fn into_c_string(text: String) -> *mut c_char {
    let text = if text.contains('\0') {
        text.replace('\0', "\u{fffd}")
    } else {
        text
    };
    CString::new(text)
        .map(CString::into_raw)
        .unwrap_or(std::ptr::null_mut())
}

/// A required string argument.
pub(crate) fn str_arg<'a>(ptr: *const c_char, name: &str) -> FfiResult<&'a str> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("`{name}` is NULL")));
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string that
    // outlives this call (zoo.h documents every string argument so).
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes
        .to_str()
        .map_err(|e| Error::InvalidArgument(format!("`{name}` is not valid UTF-8: {e}")))
}

/// An optional string argument (NULL means none).
pub(crate) fn opt_str_arg<'a>(ptr: *const c_char, name: &str) -> FfiResult<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        str_arg(ptr, name).map(Some)
    }
}

/// A required handle.
pub(crate) fn handle_arg<'a, T>(ptr: *const T, name: &str) -> FfiResult<&'a T> {
    // SAFETY: the caller passes NULL (rejected here) or a live handle that
    // this library created and has not freed, as zoo.h requires.
    unsafe { ptr.as_ref() }.ok_or_else(|| Error::InvalidArgument(format!("`{name}` is NULL")))
}

/// Checks an output pointer before any work is done, so that a call that
/// cannot deliver its result fails before it has effects.
pub(crate) fn out_arg<T>(ptr: *mut T, name: &str) -> FfiResult<OutPtr<T>> {
    if ptr.is_null() {
        Err(Error::InvalidArgument(format!("`{name}` is NULL")))
    } else {
        Ok(OutPtr(ptr))
    }
}

/// A checked, non-NULL output pointer.
pub(crate) struct OutPtr<T>(*mut T);

impl<T> OutPtr<T> {
    /// Writes the output (only ever called on success).
    pub(crate) fn write(self, value: T) {
        // SAFETY: checked non-NULL in `out_arg`; the caller promises it
        // points to writable storage for a `T`.
        unsafe { self.0.write(value) };
    }
}
