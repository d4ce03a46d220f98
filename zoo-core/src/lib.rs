//! # zoo-core
//!
//! The engine of Zoo-Keeper: GGUF models run in-process through llama.cpp and
//! become tool-using agents. An [`Agent`] owns an inference thread fed by a
//! request queue; each chat runs the agentic loop (infer, parse, validate,
//! execute, inject, repeat) and resolves a [`ChatHandle`] with a [`Response`].
//!
//! The C ABI (`zoo-ffi`), Python and Node bindings all call this crate's API.
//!
//! # Example
//!
//! An agent with one tool, on the scripted mock provider (the model file is
//! swapped for a script, so this runs anywhere; with a GGUF file, set
//! `model_path` instead of `provider`). The mock's first reply calls the
//! tool, the engine runs it and shows the result to the model, whose next
//! reply is the answer:
//!
//! ```
//! use serde_json::json;
//! use zoo_core::{Agent, ChatOptions, Config, MockProvider, MockReply, StopReason};
//!
//! let mock = MockProvider::new([
//!     MockReply::tool_call("add", json!({"a": 17, "b": 23})),
//!     MockReply::text("17 + 23 = 40."),
//! ]);
//! let agent = Agent::create(Config::default().provider(mock))?;
//! agent.register_fn("add", "Add two integers", &[("a", "first"), ("b", "second")],
//!     |a: i64, b: i64| a + b)?;
//!
//! let response = agent.chat("What is 17 + 23?", ChatOptions::default()).wait()?;
//! assert_eq!(response.text, "17 + 23 = 40.");
//! assert_eq!(response.stop_reason, StopReason::Stop);
//! assert_eq!(response.tool_calls[0].name, "add");
//! assert_eq!(response.tool_calls[0].result, Some(json!(40)));
//! assert_eq!(agent.history().len(), 4); // user, tool call, tool result, answer
//! # Ok::<(), zoo_core::Error>(())
//! ```
//!
//! `Agent::with_model` runs on a loaded `Model` (feature `llama`, on by
//! default), and [`Config`] lists every setting with its JSON key.

pub mod agent;
pub mod backend;
pub mod cancel;
pub mod config;
pub mod context;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod event;
pub mod logs;
pub mod mcp;
pub mod message;
pub mod provider;
pub mod pyjson;
pub mod response;
pub mod session;
pub(crate) mod settings;
pub mod skills;
pub mod template;
pub mod thinking;
pub mod tools;

pub use agent::{
    Agent, AgentSlot, AgentState, ChatHandle, ChatOptions, SubAgent, SubAgentStep, SubAgentUpdate,
};
pub use backend::host::{
    HostBackend, HostFinish, HostModel, HostOutput, HostProvider, HostRequest, HostSink, HostUsage,
};
#[cfg(feature = "llama")]
pub use backend::llama::{backend_info, LlamaBackend, Model, ModelParams, ModelSummary};
pub use backend::mock::{MockBackend, MockReply};
pub use backend::remote::{
    AnthropicProvider, GeminiProvider, MaxTokensField, OpenAiProvider, RemoteBackend, ThinkingLevel,
};
pub use backend::{Backend, RetryInfo};
pub use cancel::CancelToken;
pub use config::{Config, QueueMode, ToolExecution};
pub use cpu::{BackendInfo, ChosenBy, CpuVariant, RefusedVariant};
pub use engine::hooks::{ContextRequest, Hooks, InputDecision, ToolCallDecision, TurnDecision};
pub use error::{Error, ErrorCode, Result};
pub use event::{AgentEvent, EventKind};
pub use logs::{LogHandler, LogLevel, LogRecord};
pub use mcp::{HttpTransport, McpClient, McpServerInfo, McpTransport, StdioTransport};
pub use message::{ImageContent, Message, Role, ToolCall};
pub use provider::{MockProvider, Provider};
pub use response::{Metrics, Response, StopReason, ToolCallRecord, ToolErrorRecord, Usage};
pub use session::{SessionData, SessionInfo, SessionStore};
pub use template::{TemplateChoice, TemplateFamily};
pub use tools::registry::{Tool, ToolOptions, ToolRegistry, ToolResult};
pub use tools::ToolChoice;
pub use tools::{ToolCallFormat, ToolContext, ToolDefinition, ToolOutput};
