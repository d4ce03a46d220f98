//! `zoo_keeper._native`: the pyo3 binding of Zoo-Keeper. It calls the
//! `zoo-core` API directly; the Pythonic surface (decorators, schemas from
//! type hints, dataclasses, asyncio) lives in the `zoo_keeper` package.
//!
//! GIL rules: a blocking chat releases the GIL for its whole duration (and
//! wakes every 50 ms to let Ctrl-C through); callbacks from the inference
//! thread attach through one persistent thread state per inference thread
//! (see `thread_state`), not a fresh one per token.

mod agent;
mod backend;
mod errors;
mod event;
mod hooks;
mod logs;
mod model;
mod session;
mod thread_state;
mod tool_context;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<model::NativeModel>()?;
    m.add_class::<agent::NativeAgent>()?;
    m.add_class::<agent::NativeChat>()?;
    m.add_class::<tool_context::NativeToolContext>()?;
    m.add_class::<backend::NativeBackendSink>()?;
    m.add_class::<session::NativeSessionStore>()?;
    m.add_function(wrap_pyfunction!(logs::set_log_handler, m)?)?;
    m.add_function(wrap_pyfunction!(logs::set_log_level, m)?)?;
    m.add_function(wrap_pyfunction!(logs::dropped_logs, m)?)?;
    m.add_function(wrap_pyfunction!(logs::flush_logs, m)?)?;
    m.add_function(wrap_pyfunction!(model::backend_info_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
