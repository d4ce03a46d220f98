//! Chat events handed to Python as `zoo_keeper.Event` objects. They are
//! built here rather than by the class's own `__init__`: a frozen
//! dataclass sets each field through `object.__setattr__`, which with the
//! Python-side unpacking cost about 1.4 µs of an event's 2 µs budget
//! (BENCHMARKS.md, "Events and logs").

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use zoo_core::AgentEvent;

/// `zoo_keeper._response.Event`, looked up once.
static EVENT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `event` as an `Event`: `type`, `agent_id`, `chat_id` and `seq` as its
/// fields, every other key of the event's JSON object in its `data` dict.
pub(crate) fn to_python<'py>(py: Python<'py>, event: &AgentEvent) -> PyResult<Bound<'py, PyAny>> {
    let class = EVENT.import(py, "zoo_keeper._response", "Event")?;
    let data = pythonize::pythonize(py, event)?.cast_into::<PyDict>()?;
    // An instance without `__init__`: its fields go straight into its
    // `__dict__`, where the dataclass's own methods read them.
    let object = class.call_method1(intern!(py, "__new__"), (class,))?;
    let fields = object
        .getattr(intern!(py, "__dict__"))?
        .cast_into::<PyDict>()?;
    let keys = [
        intern!(py, "type"),
        intern!(py, "agent_id"),
        intern!(py, "chat_id"),
        intern!(py, "seq"),
    ];
    for key in keys {
        if let Some(value) = data.get_item(key)? {
            data.del_item(key)?;
            fields.set_item(key, value)?;
        }
    }
    fields.set_item(intern!(py, "data"), data)?;
    Ok(object)
}
