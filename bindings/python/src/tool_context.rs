//! `NativeToolContext`: a tool call's context, passed to a Python tool
//! registered with `with_context` (wrapped by `zoo_keeper.ToolContext`).

use std::time::Duration;

use pyo3::prelude::*;
use serde_json::Value;
use zoo_core::{Error, ToolContext};

use crate::errors::to_py;

/// The context of one tool call: its id, its cancel token, its reports.
/// Any thread may use it; once the call has finished its reports are
/// dropped (and return False).
#[pyclass(module = "zoo_keeper._native", frozen)]
pub struct NativeToolContext {
    pub(crate) context: ToolContext,
}

#[pymethods]
impl NativeToolContext {
    /// The call's id (`call_1`, ...).
    #[getter]
    fn call_id(&self) -> &str {
        self.context.call_id()
    }

    /// Whether the call is cancelled: the chat was stopped or the tool's
    /// `timeout_ms` passed.
    #[getter]
    fn cancelled(&self) -> bool {
        self.context.is_cancelled()
    }

    /// Blocks (without the GIL) until the call is cancelled or `timeout`
    /// seconds pass (`None`: no limit); returns whether it is cancelled.
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
        let context = self.context.clone();
        Ok(py.detach(move || context.wait_cancelled(timeout)))
    }

    /// Reports a partial result (JSON text) as a `tool_call_update` event;
    /// whether it was taken.
    fn update_json(&self, json: &str) -> PyResult<bool> {
        let update: Value = serde_json::from_str(json)
            .map_err(|e| to_py(Error::InvalidJson(format!("tool update: {e}"))))?;
        Ok(self.context.update(update))
    }

    /// Reports progress in words as a `tool_call_progress` event; whether
    /// it was taken.
    fn progress(&self, text: &str) -> bool {
        self.context.progress(text)
    }
}
