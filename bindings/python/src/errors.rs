//! The exception classes: `ZooError` (with `.code`) and one subclass per
//! `zoo_core::ErrorCode`. Errors are converted here, once, at the edge.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::{create_exception, PyTypeInfo};
use zoo_core::{Error, ErrorCode};

create_exception!(
    _native,
    ZooError,
    PyException,
    "Base class of every Zoo-Keeper error; `.code` is the stable error code."
);
create_exception!(
    _native,
    InvalidArgumentError,
    ZooError,
    "A bad argument (code 1)."
);
create_exception!(
    _native,
    InvalidConfigError,
    ZooError,
    "A bad configuration value (code 2)."
);
create_exception!(
    _native,
    InvalidJsonError,
    ZooError,
    "Text that should be JSON is not (code 3)."
);
create_exception!(
    _native,
    ModelLoadError,
    ZooError,
    "The model could not be loaded (code 4)."
);
create_exception!(
    _native,
    InvalidMessageSequenceError,
    ZooError,
    "A message breaks the role order (code 5)."
);
create_exception!(
    _native,
    ContextOverflowError,
    ZooError,
    "The prompt cannot fit the context (code 6)."
);
create_exception!(
    _native,
    InferenceError,
    ZooError,
    "llama.cpp failed (code 7)."
);
create_exception!(
    _native,
    OperationCancelledError,
    ZooError,
    "The operation was cancelled (code 8)."
);
create_exception!(
    _native,
    ToolNotFoundError,
    ZooError,
    "No tool has that name (code 9)."
);
create_exception!(
    _native,
    ToolValidationError,
    ZooError,
    "Tool arguments or schema are invalid (code 10)."
);
create_exception!(
    _native,
    ToolRetriesExhaustedError,
    ZooError,
    "A tool kept failing (code 11)."
);
create_exception!(
    _native,
    ToolHandlerError,
    ZooError,
    "A tool handler failed (code 12)."
);
create_exception!(
    _native,
    AgentNotRunningError,
    ZooError,
    "The agent is closed (code 13)."
);
create_exception!(
    _native,
    McpError,
    ZooError,
    "An MCP server failed (code 14)."
);
create_exception!(_native, ZooIOError, ZooError, "An I/O error (code 15).");
create_exception!(
    _native,
    InternalError,
    ZooError,
    "A bug in Zoo-Keeper (code 16)."
);
create_exception!(
    _native,
    ProviderError,
    ZooError,
    "A remote model provider failed (code 17)."
);
create_exception!(
    _native,
    AuthenticationError,
    ZooError,
    "A remote model provider refused the credentials (code 18)."
);

/// Adds the classes to the module, each with its `code`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let base = py.get_type::<ZooError>();
    base.setattr("code", 0)?;
    m.add("ZooError", base)?;
    for code in ErrorCode::ALL {
        let class = class_of(py, code);
        class.setattr("code", code.as_i32())?;
        m.add(class.name()?, class)?;
    }
    Ok(())
}

fn class_of(py: Python<'_>, code: ErrorCode) -> Bound<'_, pyo3::types::PyType> {
    match code {
        ErrorCode::InvalidArgument => InvalidArgumentError::type_object(py),
        ErrorCode::InvalidConfig => InvalidConfigError::type_object(py),
        ErrorCode::InvalidJson => InvalidJsonError::type_object(py),
        ErrorCode::ModelLoadFailed => ModelLoadError::type_object(py),
        ErrorCode::InvalidMessageSequence => InvalidMessageSequenceError::type_object(py),
        ErrorCode::ContextOverflow => ContextOverflowError::type_object(py),
        ErrorCode::InferenceFailed => InferenceError::type_object(py),
        ErrorCode::Cancelled => OperationCancelledError::type_object(py),
        ErrorCode::ToolNotFound => ToolNotFoundError::type_object(py),
        ErrorCode::ToolValidationFailed => ToolValidationError::type_object(py),
        ErrorCode::ToolRetriesExhausted => ToolRetriesExhaustedError::type_object(py),
        ErrorCode::ToolHandlerFailed => ToolHandlerError::type_object(py),
        ErrorCode::AgentNotRunning => AgentNotRunningError::type_object(py),
        ErrorCode::Mcp => McpError::type_object(py),
        ErrorCode::Io => ZooIOError::type_object(py),
        ErrorCode::Internal => InternalError::type_object(py),
        ErrorCode::ProviderFailed => ProviderError::type_object(py),
        ErrorCode::AuthenticationFailed => AuthenticationError::type_object(py),
    }
}

/// The Python exception for a Zoo-Keeper error.
pub fn to_py(error: Error) -> PyErr {
    Python::attach(|py| PyErr::from_type(class_of(py, error.code()), error.to_string()))
}

/// `Result` conversion at the edge.
pub trait IntoPy<T> {
    /// Maps the error to its exception class.
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for zoo_core::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
