//! Strings handed to C, and the library version.

use std::ffi::{c_char, CString};

/// The library version, e.g. "0.1.0" (static; do not free).
///
/// @return The version.
#[no_mangle]
pub extern "C" fn zoo_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Frees a string returned by this library (responses, JSON, error
/// messages). NULL is ignored. Freeing anything else is undefined.
///
/// @param text The string to free, or NULL.
#[no_mangle]
pub extern "C" fn zoo_string_free(text: *mut c_char) {
    crate::boundary::guard_void(|| {
        if !text.is_null() {
            // SAFETY: the caller passes a string this library returned
            // (made by `CString::into_raw`), freed at most once.
            drop(unsafe { CString::from_raw(text) });
        }
    });
}
