//! # zoo-core
//!
//! The engine of Zoo-Keeper: GGUF models run in-process through llama.cpp and
//! become tool-using agents. An [`Agent`] owns an inference thread fed by a
//! request queue; each chat runs the agentic loop (infer, parse, validate,
//! execute, inject, repeat) and resolves a [`ChatHandle`] with a [`Response`].
//!
//! The C ABI (`zoo-ffi`), Python and Node bindings all call this crate's API.

pub mod agent;
pub mod backend;
pub mod cancel;
pub mod config;
pub mod context;
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
pub mod skills;
pub mod template;
pub mod thinking;
pub mod tools;

pub use agent::{
    Agent, AgentState, ChatHandle, ChatOptions, SubAgent, SubAgentStep, SubAgentUpdate,
};
#[cfg(feature = "llama")]
pub use backend::llama::{LlamaBackend, Model, ModelParams, ModelSummary};
pub use backend::mock::{MockBackend, MockReply};
pub use backend::remote::{
    AnthropicProvider, GeminiProvider, MaxTokensField, OpenAiProvider, RemoteBackend, ThinkingLevel,
};
pub use backend::{Backend, RetryInfo};
pub use cancel::CancelToken;
pub use config::{Config, QueueMode, TemplateChoice, ToolChoice, ToolExecution};
pub use engine::hooks::{Hooks, InputDecision, ToolCallDecision, TurnDecision};
pub use error::{Error, ErrorCode, Result};
pub use event::{AgentEvent, EventKind};
pub use logs::{LogHandler, LogLevel, LogRecord};
pub use mcp::{HttpTransport, McpClient, McpServerInfo, McpTransport, StdioTransport};
pub use message::{ImageContent, Message, Role, ToolCall};
pub use provider::{MockProvider, Provider};
pub use response::{Metrics, Response, StopReason, ToolCallRecord, ToolErrorRecord, Usage};
pub use session::{SessionData, SessionInfo, SessionStore};
pub use template::TemplateFamily;
pub use tools::registry::{Tool, ToolOptions, ToolRegistry, ToolResult};
pub use tools::{ToolCallFormat, ToolContext, ToolDefinition, ToolOutput};
