//! `NativeModel`: a loaded GGUF file shared by several agents.

use pyo3::prelude::*;
use zoo_core::{Model, ModelParams};

use crate::errors::IntoPy;

/// A loaded model (wrapped by `zoo_keeper.Model`).
#[pyclass(module = "zoo_keeper._native", frozen)]
pub struct NativeModel {
    pub(crate) model: Model,
}

#[pymethods]
impl NativeModel {
    /// Loads a GGUF file; the GIL is released while it loads.
    #[new]
    #[pyo3(signature = (path, gpu_layers = 0, use_mmap = true))]
    fn new(py: Python<'_>, path: String, gpu_layers: i32, use_mmap: bool) -> PyResult<Self> {
        let params = ModelParams {
            gpu_layers,
            use_mmap,
        };
        let model = py.detach(|| Model::load(&path, params)).py_err()?;
        Ok(NativeModel { model })
    }

    /// The path it was loaded from.
    #[getter]
    fn path(&self) -> String {
        self.model.path().to_string()
    }

    /// GGUF metadata: chat template, architecture, name.
    fn metadata_json(&self) -> String {
        let meta = self.model.metadata();
        serde_json::json!({
            "chat_template": meta.chat_template,
            "architecture": meta.architecture,
            "name": meta.name,
        })
        .to_string()
    }
}
