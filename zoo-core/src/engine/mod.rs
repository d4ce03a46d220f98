//! The engine: the request queue, the history manager, the agentic loop and
//! the inference thread that runs them.

pub mod agentic_loop;
pub mod history;
pub mod queue;
pub(crate) mod stream_filter;
pub(crate) mod tool_runner;
pub(crate) mod worker;
