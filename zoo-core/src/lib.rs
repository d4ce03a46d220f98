//! # zoo-core
//!
//! The engine of Zoo-Keeper: GGUF models run in-process through llama.cpp and
//! become tool-using agents. An [`Agent`] owns an inference thread fed by a
//! request queue; each chat runs the agentic loop (infer, parse, validate,
//! execute, inject, repeat) and resolves a [`ChatHandle`] with a [`Response`].
//!
//! The C ABI (`zoo-ffi`), Python and Node bindings all call this crate's API.

#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod message;
pub mod template;
pub mod tools;

pub use config::{Config, TemplateChoice, ToolChoice};
pub use error::{Error, ErrorCode, Result};
pub use message::{Message, Role, ToolCall};
