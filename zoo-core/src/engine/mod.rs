//! The engine: the request queue, the history manager, the agentic loop and
//! the inference thread that runs them.

pub mod agentic_loop;
pub(crate) mod completion;
pub mod history;
pub mod hooks;
pub mod limits;
pub mod options;
pub mod queue;
pub(crate) mod session_log;
pub mod state;
pub mod steering;
pub(crate) mod stream_filter;
pub(crate) mod tool_runner;
pub(crate) mod worker;
