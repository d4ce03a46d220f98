//! One persistent Python thread state per inference thread.
//!
//! pyo3's `Python::attach` on a thread without a thread state creates one
//! and destroys it on release: about 9 µs per token callback. Holding one
//! outer `PyGILState_Ensure` for the life of the thread (and releasing the
//! GIL at once) makes every later attach find the thread state and only
//! take the GIL: about 0.2 µs.

use std::cell::Cell;

use pyo3::ffi;

thread_local! {
    static PINNED: Cell<bool> = const { Cell::new(false) };
}

/// Attaches `f` to the interpreter from a thread Python did not start,
/// reusing this thread's pinned thread state.
pub fn attach<R>(f: impl for<'py> FnOnce(pyo3::Python<'py>) -> R) -> R {
    PINNED.with(|pinned| {
        if !pinned.get() {
            // SAFETY: called on a thread that holds neither the GIL nor a
            // thread state (an inference thread, before any callback).
            // `PyGILState_Ensure` creates this thread's state and takes the
            // GIL; `PyEval_SaveThread` gives the GIL back while keeping the
            // state, whose counter stays at one until the thread ends.
            unsafe {
                let _state = ffi::PyGILState_Ensure();
                ffi::PyEval_SaveThread();
            }
            pinned.set(true);
        }
    });
    pyo3::Python::attach(f)
}
