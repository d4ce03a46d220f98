"""Zoo-Keeper: local tool-using LLM agents on llama.cpp, in-process.

    from zoo_keeper import Agent

    with Agent(model_path="model.gguf", temperature=0) as agent:
        @agent.tool
        def get_weather(city: str) -> str:
            "Current weather for a city."
            return f"17 degrees in {city}"

        print(agent.chat("Weather in Paris?", tool_choice="required").text)

A tool that takes long can ask for its call's `ToolContext` (a parameter
annotated `ToolContext`): its id, whether it was cancelled, and progress
reports that become events. `Agent(backend=obj)` runs the agent on a model
written in Python (see `BackendRequest`).
"""

from ._agent import Agent, ChatStream, Model
from ._backend import Backend, BackendItem, BackendRequest
from ._hooks import ContextRequest, Deny, EndChat, Reject, Replace, Rewrite, ToolCall, Warn
from ._cpu_backend import backend_info
from ._logs import TRACE, dropped_logs, flush_logs
from ._mcp import McpServerInfo
from ._native import (
    AgentNotRunningError,
    AuthenticationError,
    ContextOverflowError,
    InferenceError,
    InternalError,
    InvalidArgumentError,
    InvalidConfigError,
    InvalidJsonError,
    InvalidMessageSequenceError,
    McpError,
    ModelLoadError,
    OperationCancelledError,
    ProviderError,
    ToolHandlerError,
    ToolNotFoundError,
    ToolRetriesExhaustedError,
    ToolValidationError,
    ZooError,
    ZooIOError,
    __version__,
)
from ._response import Event, Metrics, Response, Thinking, Token, ToolCallRecord, ToolErrorRecord, Usage
from ._schema import function_schema
from ._session import SessionStore
from ._tool_context import ToolContext

__all__ = [
    "Agent",
    "AgentNotRunningError",
    "AuthenticationError",
    "Backend",
    "BackendItem",
    "BackendRequest",
    "ChatStream",
    "ContextOverflowError",
    "ContextRequest",
    "Deny",
    "EndChat",
    "Event",
    "InferenceError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidConfigError",
    "InvalidJsonError",
    "InvalidMessageSequenceError",
    "McpError",
    "McpServerInfo",
    "Metrics",
    "Model",
    "ModelLoadError",
    "OperationCancelledError",
    "ProviderError",
    "Reject",
    "Replace",
    "Response",
    "SessionStore",
    "Rewrite",
    "TRACE",
    "Thinking",
    "Token",
    "ToolCall",
    "ToolContext",
    "ToolCallRecord",
    "ToolErrorRecord",
    "ToolHandlerError",
    "ToolNotFoundError",
    "ToolRetriesExhaustedError",
    "ToolValidationError",
    "Usage",
    "Warn",
    "ZooError",
    "ZooIOError",
    "__version__",
    "backend_info",
    "dropped_logs",
    "flush_logs",
    "function_schema",
]
