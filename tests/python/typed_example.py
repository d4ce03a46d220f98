"""A user program that must type-check under mypy --strict (see test_stubs.py)."""

import pathlib
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional

import zoo_keeper as zk


def run(path: str) -> Optional[str]:
    with zk.Agent(model_path=path, temperature=0.0) as agent:

        @agent.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @agent.tool(exclusive=True, timeout_ms=500)
        def save(text: str) -> str:
            """Save the text."""
            return text

        agent.register_tool("echo", "Echo", {"type": "object"}, lambda **kw: kw, exclusive=False, timeout_ms=None)

        # A tool that takes its call's context.
        @agent.tool(timeout_ms=30_000)
        def crawl(url: str, ctx: zk.ToolContext) -> int:
            """Crawl a site."""
            pages = 0
            while not ctx.cancelled and pages < 3:
                pages += 1
                taken: bool = ctx.progress(f"{ctx.call_id}: page {pages} of {url}")
                ctx.update({"pages": pages, "taken": taken})
            stopped: bool = ctx.wait_cancelled(0.0)
            return pages if not stopped else 0

        # Hook decorators keep the function's type.
        @agent.before_tool_call
        def guard(call: zk.ToolCall) -> Optional[zk.Deny]:
            return zk.Deny("not now") if call.name == "save" else None

        @agent.input_filter
        def check(message: str) -> Optional[zk.Reject]:
            return zk.Reject("empty") if not message else None

        denied: Optional[zk.Deny] = guard(zk.ToolCall(id="1", name="save", arguments={}))
        assert denied is not None and check("hi") is None

        # Built-in tools with a confirmation (sync or async).
        def confirm(tool: str, arguments: Dict[str, Any]) -> bool:
            return tool != "bash" or "rm" not in str(arguments.get("command"))

        agent.add_builtin_tools(["read_file", "bash"], workspace=".", confirm=confirm, bash_deny=["sudo"])
        agent.add_builtin_tools(["list_files"], workspace=pathlib.Path("."))

        tokens: List[str] = []
        response: zk.Response = agent.chat("2 + 3?", on_token=tokens.append)
        for item in agent.stream("again"):
            if isinstance(item, zk.Token):
                tokens.append(item.text)
        return response.text if response.stop_reason == "stop" else None


class Gateway:
    """A backend written in Python: a generator of the reply's items."""

    def generate(self, request: zk.BackendRequest) -> Iterator[zk.BackendItem]:
        if request.cancelled or request.wait_cancelled(0.0):
            return
        last: Dict[str, Any] = request.messages[-1]
        temperature: float = request.sampling["temperature"]
        yield f"You said {last['content']} at {temperature}"
        if request.tools and request.tool_choice != "none":
            yield {"type": "tool_call", "name": request.tools[0]["name"], "arguments": {}}
        yield {"type": "thinking", "text": "short"}
        yield {"type": "usage", "prompt_tokens": 10, "completion_tokens": 2}
        yield {"type": "finish", "reason": "stop"}

    def count_tokens(self, message: Dict[str, Any]) -> int:
        return len(str(message["content"])) // 4 + 4


class AsyncGateway:
    """The same as an async generator."""

    async def generate(self, request: zk.BackendRequest) -> AsyncIterator[zk.BackendItem]:
        yield {"type": "text", "text": str(request.max_tokens)}


def on_backends() -> str:
    with zk.Agent(backend=Gateway(), provider={"type": "host", "thinking": "low"}) as agent:
        text: str = agent.chat("hi").text
    with zk.Agent(backend=AsyncGateway()) as other:
        text += other.chat("hi").text
    return text
