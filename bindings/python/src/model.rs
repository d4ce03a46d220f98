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
    /// Loads a GGUF file with `params_json` (`gpu_layers`, `use_mmap`, `cpu_variant`),
    /// which the core checks as it does for C; the GIL is released while it
    /// loads.
    #[new]
    #[pyo3(signature = (path, params_json = "{}"))]
    fn new(py: Python<'_>, path: String, params_json: &str) -> PyResult<Self> {
        let params = ModelParams::from_json(params_json).py_err()?;
        let model = py.detach(|| Model::load(&path, params)).py_err()?;
        Ok(NativeModel { model })
    }

    /// The path it was loaded from.
    #[getter]
    fn path(&self) -> String {
        self.model.path().to_string()
    }

    /// GGUF metadata: chat template, architecture, name, special tokens (`ModelMetadata`'s JSON).
    fn metadata_json(&self) -> String {
        self.model.metadata().to_json()
    }
}

/// llama.cpp's CPU backend as this process runs it, as JSON (the fields of
/// `zoo_core::BackendInfo`); loads it if no model has been loaded yet. The
/// GIL is released meanwhile.
#[pyfunction]
pub fn backend_info_json(py: Python<'_>) -> PyResult<String> {
    let info = py.detach(zoo_core::backend_info).py_err()?;
    serde_json::to_string(&info)
        .map_err(zoo_core::Error::from)
        .py_err()
}
