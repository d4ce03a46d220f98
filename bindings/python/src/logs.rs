//! Logs for Python: the engine's records (`zoo_core::logs`) handed to the
//! `zoo_keeper` package's `_emit(records)`, which passes them to the
//! `logging` logger `zoo_keeper`.
//!
//! `_emit` runs on the library's `zoo-logs` thread, never on a thread of
//! the engine: a record emitted while some thread holds the GIL (or while
//! Python waits for an engine lock) is queued, not delivered there, so
//! logging can neither deadlock nor slow the engine. Each batch takes the
//! GIL once.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use zoo_core::logs::{self, LogHandler, LogLevel, LogRecord};

use crate::errors::IntoPy;
use crate::thread_state;

/// How long removing the handler waits for a batch in its hands.
const REMOVE_WAIT: Duration = Duration::from_secs(5);

/// The package's `_emit` as a `LogHandler`.
struct PyLogHandler {
    emit: Py<PyAny>,
}

impl LogHandler for PyLogHandler {
    fn log(&self, record: &LogRecord) {
        self.log_batch(std::slice::from_ref(record));
    }

    fn log_batch(&self, records: &[LogRecord]) {
        let items: Vec<(&str, &str, &str, String)> = records
            .iter()
            .map(|r| {
                (
                    r.level.name(),
                    r.target.as_str(),
                    r.message.as_str(),
                    r.fields_json(),
                )
            })
            .collect();
        thread_state::attach(|py| {
            // Nobody to raise to: Python's hook for exceptions that cannot
            // propagate reports it.
            if let Err(error) = self.emit.call1(py, (items,)) {
                error.write_unraisable(py, None);
            }
        });
    }
}

/// Sends the engine's records at `level` (`"off"` to `"trace"`) and above
/// to `emit(records)`, each record a tuple `(level, target, message,
/// fields_json)`; None removes it, waiting (without the GIL) until a batch
/// in its hands is done, so that it is never called afterwards.
#[pyfunction]
#[pyo3(signature = (emit, level))]
pub fn set_log_handler(py: Python<'_>, emit: Option<Py<PyAny>>, level: &str) -> PyResult<()> {
    let level = LogLevel::parse(level).py_err()?;
    let removing = emit.is_none();
    let handler = emit.map(|emit| Arc::new(PyLogHandler { emit }) as Arc<dyn LogHandler>);
    logs::set_handler(level, handler).py_err()?;
    if removing {
        py.detach(|| logs::flush(REMOVE_WAIT));
    }
    Ok(())
}

/// Changes the level records are collected at (`"off"` to `"trace"`).
#[pyfunction]
pub fn set_log_level(level: &str) -> PyResult<()> {
    logs::set_level(LogLevel::parse(level).py_err()?);
    Ok(())
}

/// Records dropped because the handler could not keep up.
#[pyfunction]
pub fn dropped_logs() -> u64 {
    logs::dropped()
}

/// Waits up to `timeout` seconds (GIL released) until every record emitted
/// so far has been handed to the handler; returns whether it has.
#[pyfunction]
pub fn flush_logs(py: Python<'_>, timeout: f64) -> bool {
    let timeout = Duration::try_from_secs_f64(timeout).unwrap_or(Duration::ZERO);
    py.detach(|| logs::flush(timeout))
}
