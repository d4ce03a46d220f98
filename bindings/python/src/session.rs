//! `NativeSessionStore`: the SQLite file conversations are kept in, to
//! list, load, rename, delete, export and import sessions from Python.
//! Shapes cross as JSON, the core's serde types; `zoo_keeper.SessionStore`
//! turns them into dicts.

use pyo3::prelude::*;
use zoo_core::{Error, SessionStore};

use crate::errors::IntoPy;

/// An open session store (wrapped by `zoo_keeper.SessionStore`).
#[pyclass(module = "zoo_keeper._native", frozen)]
pub struct NativeSessionStore {
    store: SessionStore,
}

fn json_err(e: serde_json::Error) -> PyErr {
    crate::errors::to_py(Error::from(e))
}

#[pymethods]
impl NativeSessionStore {
    /// Opens (or creates) the store at `path`; the GIL is released meanwhile.
    #[new]
    fn new(py: Python<'_>, path: String) -> PyResult<Self> {
        let store = py.detach(|| SessionStore::open(&path)).py_err()?;
        Ok(NativeSessionStore { store })
    }

    /// The file the store lives in.
    #[getter]
    fn path(&self) -> String {
        self.store.path().display().to_string()
    }

    /// Every session as a JSON array, the most recently updated first.
    fn sessions_json(&self, py: Python<'_>) -> PyResult<String> {
        serde_json::to_string(&py.detach(|| self.store.sessions()).py_err()?).map_err(json_err)
    }

    /// One session (with its messages) as JSON.
    fn load_json(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        serde_json::to_string(&py.detach(|| self.store.load(id)).py_err()?).map_err(json_err)
    }

    /// Deletes a session; false when there was none.
    fn delete(&self, py: Python<'_>, id: &str) -> PyResult<bool> {
        py.detach(|| self.store.delete(id)).py_err()
    }

    /// Sets a session's title.
    fn rename(&self, py: Python<'_>, id: &str, title: &str) -> PyResult<()> {
        py.detach(|| self.store.rename(id, title)).py_err()
    }

    /// Sets a session's metadata (JSON text).
    fn set_metadata_json(&self, py: Python<'_>, id: &str, json: &str) -> PyResult<()> {
        let metadata = serde_json::from_str(json)
            .map_err(|e| Error::InvalidJson(format!("metadata: {e}")))
            .py_err()?;
        py.detach(|| self.store.set_metadata(id, &metadata))
            .py_err()
    }

    /// One session as pretty JSON, for backups.
    fn export_json(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        py.detach(|| self.store.export_json(id)).py_err()
    }

    /// Reads an exported session into the store; returns its id.
    fn import_json(&self, py: Python<'_>, json: &str) -> PyResult<String> {
        py.detach(|| self.store.import_json(json)).py_err()
    }

    /// One session as JSON Lines, system prompt first.
    fn transcript_jsonl(&self, py: Python<'_>, id: &str) -> PyResult<String> {
        py.detach(|| self.store.transcript_jsonl(id)).py_err()
    }
}
