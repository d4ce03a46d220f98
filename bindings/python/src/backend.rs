//! Backends written in Python: the package's runner (which drives the
//! user's `generate`, a sync or async generator) as the engine's
//! `HostModel`, and `NativeBackendSink`, where the runner puts each item.

use std::time::Duration;

use pyo3::prelude::*;
use zoo_core::{Error, HostModel, HostOutput, HostRequest, HostSink, Message};

use crate::agent::describe;
use crate::errors::to_py;
use crate::thread_state;

/// A backend whose calls run Python: `run(request_json, sink)` produces a
/// reply, `count(message_json) -> int` (optional) counts tokens. Both run
/// on the agent's host thread with the GIL; an exception fails the call
/// with Python's words (`ValueError: ...`), never a crash.
pub struct PyBackend {
    pub(crate) run: Py<PyAny>,
    pub(crate) count: Option<Py<PyAny>>,
}

impl HostModel for PyBackend {
    fn generate(&mut self, request: &HostRequest, sink: &HostSink) -> Result<(), String> {
        let json = request.to_json();
        let sink = NativeBackendSink { sink: sink.clone() };
        thread_state::attach(|py| {
            self.run
                .call1(py, (json, sink))
                .map(drop)
                .map_err(|error| describe(py, &error))
        })
    }

    fn counts_tokens(&self) -> bool {
        self.count.is_some()
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32, String> {
        let count = self.count.as_ref().ok_or("this backend counts no tokens")?;
        let json = serde_json::to_string(message).map_err(|e| e.to_string())?;
        thread_state::attach(|py| {
            let tokens = count
                .call1(py, (json,))
                .map_err(|error| describe(py, &error))?;
            tokens.extract::<u32>(py).map_err(|_| {
                let got = tokens
                    .bind(py)
                    .repr()
                    .map(|r| r.to_string())
                    .unwrap_or_default();
                format!("count_tokens must return a whole number from 0 to 4294967295, got {got}")
            })
        })
    }
}

/// Where a Python backend puts one reply (wrapped by the package's
/// `BackendRequest`). Any thread may use it; once the reply has ended,
/// emits are dropped and return False.
#[pyclass(module = "zoo_keeper._native", frozen)]
pub struct NativeBackendSink {
    sink: HostSink,
}

impl NativeBackendSink {
    /// Emits an item; when the engine's queue is full, waits without the
    /// GIL, which the chat's Python callbacks need to drain it.
    fn put(&self, py: Python<'_>, item: HostOutput) -> bool {
        match self.sink.try_emit(item) {
            Ok(taken) => taken,
            Err(item) => {
                let sink = self.sink.clone();
                py.detach(move || sink.emit(item))
            }
        }
    }
}

#[pymethods]
impl NativeBackendSink {
    /// Emits a piece of the reply's text; whether it was taken.
    fn text(&self, py: Python<'_>, text: String) -> bool {
        self.put(py, HostOutput::Text { text })
    }

    /// Emits one item in its JSON form (`{"type": "tool_call", ...}`);
    /// whether it was taken. Raises `InvalidJsonError` for another shape.
    fn emit_json(&self, py: Python<'_>, json: &str) -> PyResult<bool> {
        let item = HostOutput::from_json(json).map_err(to_py)?;
        Ok(self.put(py, item))
    }

    /// Whether the reply is no longer wanted (a stop, the chat's time
    /// limit, a stop string, an error item).
    #[getter]
    fn cancelled(&self) -> bool {
        self.sink.is_cancelled()
    }

    /// Blocks (without the GIL) until the reply is no longer wanted or
    /// `timeout` seconds pass (`None`: no limit); returns `cancelled`.
    #[pyo3(signature = (timeout = None))]
    fn wait_cancelled(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = timeout
            .map(|seconds| {
                Duration::try_from_secs_f64(seconds).map_err(|_| {
                    to_py(Error::InvalidArgument(format!(
                        "`timeout` must be a number of seconds from 0, or None, got {seconds}"
                    )))
                })
            })
            .transpose()?;
        let sink = self.sink.clone();
        Ok(py.detach(move || sink.wait_cancelled(timeout)))
    }

    /// Calls `callback()` once the reply is no longer wanted (at once if it
    /// already is), on the thread that ends it, with the GIL; dropped
    /// unrun when the reply completes first. Its exceptions are ignored.
    fn on_cancel(&self, callback: Py<PyAny>) {
        self.sink.cancel_token().on_cancel(move || {
            thread_state::attach(|py| {
                let _ = callback.call0(py);
            });
        });
    }
}
