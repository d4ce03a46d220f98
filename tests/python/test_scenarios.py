"""The Python runner of the shared scenario suite: every JSON file in
tests/scenarios/ (format in its README) runs here against zoo_keeper.Agent
on the mock, as it runs in the Rust, C and Node runners, and again on a
backend written in Python that replays the mock's script (README: On a host
backend)."""

import dataclasses
import json
import os
import pathlib
import re
import tempfile
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Set

import pytest

import zoo_keeper as zk
from conftest import ROOT

SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.json"))

CODES = {
    "invalid_argument": 1, "invalid_config": 2, "invalid_json": 3, "model_load_failed": 4,
    "invalid_message_sequence": 5, "context_overflow": 6, "inference_failed": 7, "cancelled": 8,
    "tool_not_found": 9, "tool_validation_failed": 10, "tool_retries_exhausted": 11,
    "tool_handler_failed": 12, "agent_not_running": 13, "mcp": 14, "io": 15, "internal": 16,
    "provider_failed": 17, "authentication_failed": 18,
}

TYPES = {"number": (int, float), "string": str, "boolean": bool, "object": dict, "array": list}


def matches(want: Any, got: Any, path: str) -> None:
    """Subset matching as the README defines it; raises AssertionError with the path."""
    if isinstance(want, dict) and "$type" in want:
        kind = want["$type"]
        if kind == "any":
            return
        ok = isinstance(got, TYPES[kind]) and not (kind == "number" and isinstance(got, bool))
        assert ok, f"{path}: want a {kind}, got {got!r}"
        return
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{path}: want an object, got {got!r}"
        for key, value in want.items():
            assert key in got, f"{path}.{key}: missing (got {got!r})"
            matches(value, got[key], f"{path}.{key}")
        return
    if isinstance(want, list):
        assert isinstance(got, list), f"{path}: want an array, got {got!r}"
        assert len(want) == len(got), f"{path}: want {len(want)} items, got {len(got)}: {got!r}"
        for i, (a, b) in enumerate(zip(want, got)):
            matches(a, b, f"{path}.{i}")
        return
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        assert isinstance(got, (int, float)) and not isinstance(got, bool) and want == got, f"{path}: want {want!r}, got {got!r}"
        return
    assert type(want) is type(got) and want == got, f"{path}: want {want!r}, got {got!r}"


# The keys whose texts may quote a tool's failure or a hook's: records,
# events (an input filter's rejection too), the content of the history's
# tool messages, and what on_error received.
QUOTING_KEYS = {"error", "message", "content", "reason", "hook_errors"}


def as_python(value: Any, fail_messages: List[str], quoting: bool = False) -> Any:
    """A tool's `fail` message reaches the engine as Python words it
    (`Exception: message`), so expected texts that quote it say so."""
    if isinstance(value, str) and quoting:
        for message in fail_messages:
            value = value.replace(message, f"Exception: {message}")
        return value
    if isinstance(value, dict):
        keys = QUOTING_KEYS if value.get("role", "tool") == "tool" else QUOTING_KEYS - {"content"}
        return {k: as_python(v, fail_messages, k in keys) for k, v in value.items()}
    if isinstance(value, list):
        return [as_python(v, fail_messages, quoting) for v in value]
    return value


def check_error(want: Optional[Dict[str, Any]], error: Exception, at: str) -> None:
    assert want is not None, f"{at}: unexpected error {type(error).__name__}: {error}"
    assert isinstance(error, zk.ZooError), f"{at}: {error!r} is not a ZooError"
    code = CODES[want["code"]]
    assert type(error).code == code and error.code == code, f"{at}: want {want['code']} ({code}), got {type(error).__name__} ({error.code}): {error}"
    if "message" in want:
        assert str(error) == want["message"], f"{at}.message: want {want['message']!r}, got {str(error)!r}"


# How long `wait_cancelled` and `cancel_seen` wait at most (seconds).
SCENARIO_WAIT = 60.0


class Seen:
    """The tools that saw their call's cancel token set (`cancel_seen`)."""

    def __init__(self) -> None:
        self.names: Set[str] = set()
        self.changed = threading.Condition()

    def add(self, name: str) -> None:
        with self.changed:
            self.names.add(name)
            self.changed.notify_all()

    def wait_for(self, name: str) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: name in self.names, SCENARIO_WAIT)


def handler(agent: zk.Agent, name: str, behavior: Dict[str, Any], seen: Seen) -> Any:
    def run(ctx: zk.ToolContext, **arguments: Any) -> Any:
        if behavior.get("stop"):
            agent.stop()
        if "steer" in behavior:
            agent.steer(behavior["steer"])
        if "follow_up" in behavior:
            agent.follow_up(behavior["follow_up"])
        for report in behavior.get("report", []):
            if "progress" in report:
                ctx.progress(report["progress"])
            else:
                ctx.update(report["update"])
        if "sleep_ms" in behavior:
            time.sleep(behavior["sleep_ms"] / 1000)
        if behavior.get("wait_cancelled"):
            if not ctx.wait_cancelled(SCENARIO_WAIT):
                raise Exception("the cancel token was never set")
            seen.add(name)
            ctx.progress("cancelled")
            return {"cancelled": True}
        if "cancel_seen" in behavior:
            return seen.wait_for(behavior["cancel_seen"])
        if "fail" in behavior:
            raise Exception(behavior["fail"])
        if behavior.get("echo"):
            return arguments
        return behavior.get("return")

    return run


def scripted_hooks(rules: Dict[str, Any], errors: List[str]) -> Dict[str, Any]:
    """The hooks a scenario scripts (README: Hooks), as Python functions
    keyed by the decorators' names."""

    def first(point: str, match: Any) -> Optional[Dict[str, Any]]:
        return next((rule for rule in rules.get(point, []) if match(rule)), None)

    def thrown(rule: Dict[str, Any]) -> None:
        if "throw" in rule:
            raise Exception(rule["throw"])

    def input_filter(message: str) -> Any:
        rule = first("input_filter", lambda r: r.get("contains", "") in message)
        if rule is None:
            return None
        thrown(rule)
        return zk.Reject(rule["reject"]) if "reject" in rule else zk.Warn(rule["warn"])

    def before_turn(turn: int) -> Any:
        rule = first("before_turn", lambda r: r.get("turn", turn) == turn)
        if rule is None:
            return None
        thrown(rule)
        return zk.EndChat

    def after_turn(turn: int, text: str) -> Any:
        rule = first("after_turn", lambda r: r.get("turn", turn) == turn)
        if rule is not None:
            thrown(rule)
        return None

    def before_tool_call(call: zk.ToolCall) -> Any:
        rule = first("before_tool_call", lambda r: r.get("tool", call.name) == call.name)
        if rule is None:
            return None
        thrown(rule)
        return zk.Rewrite(rule["rewrite"]) if "rewrite" in rule else zk.Deny(rule["deny"])

    def after_tool_call(call: zk.ToolCall, result: Any, error: Optional[str]) -> Any:
        rule = first("after_tool_call", lambda r: r.get("tool", call.name) == call.name)
        if rule is None:
            return None
        thrown(rule)
        return zk.Replace(rule["replace"])

    def transform_context(messages: List[Dict[str, Any]]) -> Any:
        rule = first("transform_context", lambda r: True)
        if rule is None:
            return None
        thrown(rule)
        return [m for m in messages if rule["drop_containing"] not in m.get("content", "")]

    def context_strategy(request: zk.ContextRequest) -> Any:
        rule = first("context_strategy", lambda r: True)
        if rule is None:
            return None
        thrown(rule)
        if rule.get("decline"):
            return None
        if rule.get("keep_all"):
            return request.messages
        start = max(request.current_turn - rule.get("keep_last", 0), 0)
        summary = [{"role": "assistant", "content": rule["summary"]}] if "summary" in rule else []
        return summary + request.messages[start:]

    def on_error(error: Exception) -> None:
        errors.append(str(error))

    functions = {
        "input_filter": input_filter, "before_turn": before_turn, "after_turn": after_turn,
        "before_tool_call": before_tool_call, "after_tool_call": after_tool_call,
        "transform_context": transform_context, "context_strategy": context_strategy, "on_error": on_error,
    }
    return {name: fn for name, fn in functions.items() if name in rules and rules[name] is not False}


def hook_throws(scenario: Dict[str, Any]) -> List[str]:
    """Every `throw` message of the scenario's hooks and its chats' hooks."""
    sets = [scenario.get("hooks", {})] + [s.get("options", {}).get("hooks", {}) for s in scenario.get("steps", [])]
    return [rule["throw"] for rules in sets for point in rules.values() if isinstance(point, list) for rule in point if "throw" in rule]


def event_pattern(want: Any) -> Any:
    return {"type": want} if isinstance(want, str) else want


def run_chat(agent: zk.Agent, step: Dict[str, Any], at: str, hook_errors: List[str]) -> None:
    expect = step.get("expect", {})
    events: List[Dict[str, Any]] = []
    options = dict(step.get("options", {}))
    if "hooks" in options:
        options["hooks"] = scripted_hooks(options["hooks"], hook_errors)
    hook_errors.clear()
    try:
        if "chat" in step:
            start = lambda **kw: agent.chat(step["chat"], **kw)  # noqa: E731
        elif "regenerate" in step:
            start = agent.regenerate
        else:
            start = agent.continue_chat
        response = start(on_event=lambda e: events.append({"type": e.type, "agent_id": e.agent_id, "chat_id": e.chat_id, "seq": e.seq, **e.data}), **options)
    except zk.ZooError as error:
        check_error(expect.get("error"), error, at)
    else:
        assert "error" not in expect, f"{at}: want an error, got {response!r}"
        typed_matches_raw(response, at)
        if "response" in expect:
            matches(expect["response"], response.raw, f"{at}.response")
    if "events" in expect:
        matches([event_pattern(e) for e in expect["events"]], events, f"{at}.events")
    if "hook_errors" in expect:
        matches(expect["hook_errors"], hook_errors, f"{at}.hook_errors")


def typed_matches_raw(response: zk.Response, at: str) -> None:
    """The typed Response holds exactly the engine's JSON: a key the
    engine adds (or drops) that the dataclasses do not know fails here."""
    typed = dataclasses.asdict(response)
    typed.pop("raw")
    raw = json.loads(json.dumps(response.raw))
    # The engine leaves out what a reply did not have; the dataclasses
    # hold None for it.
    raw.setdefault("thinking", None)
    for call in raw["tool_calls"]:
        call.setdefault("result", None)
        call.setdefault("error", None)
    assert typed == raw, f"{at}: the typed response differs from the engine's JSON:\n{typed}\n{raw}"


def words(text: str) -> int:
    return len(text.split())


def pieces(text: str) -> List[str]:
    """Words with the whitespace before each, as the mock streams them."""
    return re.findall(r"\s*\S+|\s+$", text)


def mock_tokens(message: Dict[str, Any]) -> int:
    """The mock's rule: a token per word (an image is the 12 words of its
    placeholder), 2 per call plus the words of its arguments' JSON, and 4
    for the message's markup."""
    calls = sum(2 + words(json.dumps(c["arguments"], separators=(",", ":"), ensure_ascii=False)) for c in message.get("tool_calls", []))
    return words(message.get("content", "")) + 12 * len(message.get("images", [])) + calls + 4


class Replay:
    """The mock's script replayed by a backend written in Python, as a
    user's test double would: each reply streamed word by word (after
    piece_delay_ms), cut at max_tokens, then `echo: <message>`; usage and
    token counts by the mock's rule, so that the scenarios' figures hold."""

    def __init__(self, mock: Dict[str, Any]) -> None:
        self.replies: List[str] = list(mock.get("replies", []))
        self.delay = mock.get("piece_delay_ms", 0) / 1000

    def generate(self, request: zk.BackendRequest) -> Iterator[zk.BackendItem]:
        users = [m["content"] for m in request.messages if m["role"] == "user"]
        text = self.replies.pop(0) if self.replies else f"echo: {users[-1] if users else ''}"
        # A reasoning model behind a host gives its reasoning apart.
        if text.startswith("<think>") and "</think>" in text:
            thinking, text = text[len("<think>"):].split("</think>", 1)
            text = text.lstrip()
            yield {"type": "thinking", "text": thinking}
        every = pieces(text)
        sent = every if request.max_tokens is None else every[: request.max_tokens]
        kept = "".join(sent)
        cut = [kept.find(stop) for stop in request.stop if stop in kept]
        kept = kept[: min(cut)] if cut else kept
        # Before the text: a stop string ends the reply where it is seen.
        yield {
            "type": "usage",
            "prompt_tokens": sum(mock_tokens(m) for m in request.messages),
            "cached_tokens": sum(mock_tokens(m) for m in request.messages[: request.stable_prefix]),
            "completion_tokens": len(pieces(kept)),
        }
        for piece in sent:
            if request.wait_cancelled(self.delay):
                return
            yield piece
        if len(sent) < len(every):
            yield {"type": "finish", "reason": "length"}

    def count_tokens(self, message: Dict[str, Any]) -> int:
        return mock_tokens(message)


def host_blocker(scenario: Dict[str, Any]) -> Optional[str]:
    """Why a scenario cannot run on a host backend (README: On a host backend), or None."""
    if "provider" in scenario.get("config", {}):
        return "it checks the provider config itself"
    if any(isinstance(r, dict) for r in scenario.get("mock", {}).get("replies", [])):
        return "a scripted failure is inference_failed; a host's is provider_failed"
    return None


def scenario_config(scenario: Dict[str, Any], host: bool = False) -> Dict[str, Any]:
    """The scenario's config: unless it names a provider, the scenario's
    mock is added as `provider={"type": "mock", ...}`; on a host backend,
    the backend replaying it is added as `backend=`."""
    config = dict(scenario.get("config", {}))
    if host:
        config["backend"] = Replay(scenario.get("mock", {}))
    elif "provider" not in config:
        mock = scenario.get("mock", {})
        config["provider"] = {"type": "mock", "replies": mock.get("replies", []), "piece_delay_ms": mock.get("piece_delay_ms", 0)}
    return config


def make_workspace(root: pathlib.Path, spec: Dict[str, Any]) -> None:
    """The scenario's `files` (text, or `{"bytes": [...]}`) and `symlinks`."""
    for name, content in spec.get("files", {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_bytes(content.encode())
        else:
            path.write_bytes(bytes(content["bytes"]))
    for name, target in spec.get("symlinks", {}).items():
        os.symlink(target, root / name)


def scripted_confirm(script: Dict[str, Any]) -> Any:
    """`confirm` of `builtin_tools`: per tool "allow", "refuse" or {"fail": message}."""

    def confirm(tool: str, arguments: Dict[str, Any]) -> bool:
        answer = script.get(tool, "allow")
        if isinstance(answer, dict):
            raise Exception(answer["fail"])
        return bool(answer == "allow")

    return confirm


def expect_files(want: Dict[str, Any], workspace: Optional[pathlib.Path], at: str) -> None:
    assert workspace is not None, f"{at}: expect_files needs a workspace"
    for name, content in want.items():
        path = workspace / name
        got = path.read_text() if path.exists() else None
        matches(content, got, f"{at}.files.{name}")


def run_scenario(scenario: Dict[str, Any], workspace: Optional[pathlib.Path] = None, host: bool = False) -> None:
    try:
        agent = zk.Agent(**scenario_config(scenario, host))
    except zk.ZooError as error:
        check_error(scenario.get("create_error"), error, "create")
        return
    assert "create_error" not in scenario, f"create: want the error {scenario['create_error']}, got an agent"
    seen = Seen()
    with agent:
        hook_errors: List[str] = []
        for name, fn in scripted_hooks(scenario.get("hooks", {}), hook_errors).items():
            getattr(agent, name)(fn)
        for tool in scenario.get("tools", []):
            want = tool.get("register_error")
            try:
                options = {key: tool[key] for key in ("exclusive", "timeout_ms") if key in tool}
                agent.register_tool(tool["name"], tool.get("description", ""), tool.get("parameters", {"type": "object"}), handler(agent, tool["name"], tool["behavior"], seen), **options)
            except zk.ZooError as error:
                check_error(want, error, f"tool {tool['name']}")
            else:
                assert want is None, f"tool {tool['name']}: want the error {want}, got none"
        builtin = scenario.get("builtin_tools")
        if builtin is not None:
            assert workspace is not None
            confirm = scripted_confirm(builtin["confirm"]) if "confirm" in builtin else None
            agent.add_builtin_tools(builtin["tools"], workspace=workspace, confirm=confirm, bash_deny=builtin.get("bash_deny", []))
        for sub in scenario.get("subagents", []):
            agent.add_subagent(sub["name"], sub["description"], tools=sub.get("tools", []), **sub.get("config", {}))
        for i, step in enumerate(scenario.get("steps", [])):
            at = f"steps.{i}"
            if "chat" in step or "continue_chat" in step or "regenerate" in step:
                run_chat(agent, step, at, hook_errors)
            elif "set_history" in step:
                want = step.get("expect", {}).get("error")
                try:
                    agent.history = step["set_history"]
                except zk.ZooError as error:
                    check_error(want, error, at)
                else:
                    assert want is None, f"{at}: want an error, got none"
            elif "unregister_tool" in step:
                removed = agent.unregister_tool(step["unregister_tool"])
                if "removed" in step.get("expect", {}):
                    matches(step["expect"]["removed"], removed, f"{at}.removed")
            elif "set_system_prompt" in step:
                agent.set_system_prompt(step["set_system_prompt"])
            elif "clear_history" in step:
                agent.clear_history()
            elif "steer" in step:
                agent.steer(step["steer"])
            elif "follow_up" in step:
                agent.follow_up(step["follow_up"])
            elif "clear_queues" in step:
                agent.clear_queues()
            elif "expect_history" in step:
                matches(step["expect_history"], agent.history, f"{at}.history")
            elif "activate_skill" in step:
                expect = step.get("expect", {})
                try:
                    body = agent.activate_skill(step["activate_skill"])
                except zk.ZooError as error:
                    check_error(expect.get("error"), error, at)
                else:
                    assert "error" not in expect, f"{at}: want an error, got none"
                    if "result" in expect:
                        matches(expect["result"], body, f"{at}.result")
            elif "deactivate_skill" in step:
                agent.deactivate_skill()
            elif "expect_tools" in step:
                matches(step["expect_tools"], [t["name"] for t in agent.tools], f"{at}.tools")
            elif "expect_files" in step:
                expect_files(step["expect_files"], workspace, at)
            else:
                pytest.fail(f"{at}: unknown step {step}")


def test_the_suite_is_there() -> None:
    assert len(SCENARIOS) >= 25


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Any) -> None:
    run_file(path, host=False)


# The scenarios a host backend can run; the others are listed with the
# reason in the README (On a host backend).
ON_A_HOST = [p for p in SCENARIOS if host_blocker(json.loads(p.read_text())) is None]


def test_most_scenarios_run_on_a_host_backend() -> None:
    assert len(ON_A_HOST) >= len(SCENARIOS) - 15


@pytest.mark.parametrize("path", ON_A_HOST, ids=[p.stem for p in ON_A_HOST])
def test_scenario_on_a_host_backend(path: Any) -> None:
    run_file(path, host=True)


def run_file(path: Any, host: bool) -> None:
    text = path.read_text()
    scenario = json.loads(text)
    assert scenario["name"] == path.stem
    if "workspace" not in scenario:
        run_prepared(scenario, host=host)
        return
    with tempfile.TemporaryDirectory() as folder:
        workspace = pathlib.Path(folder).resolve()
        make_workspace(workspace, scenario["workspace"])
        # A scenario with a workspace reads with `$WORKSPACE` as its path.
        run_prepared(json.loads(text.replace("$WORKSPACE", str(workspace))), workspace, host)


def run_prepared(scenario: Dict[str, Any], workspace: Optional[pathlib.Path] = None, host: bool = False) -> None:
    fails = [t["behavior"]["fail"] for t in scenario.get("tools", []) if "fail" in t["behavior"]] + hook_throws(scenario)
    confirm = scenario.get("builtin_tools", {}).get("confirm", {})
    fails += [answer["fail"] for answer in confirm.values() if isinstance(answer, dict)]
    scenario["steps"] = as_python(scenario.get("steps", []), fails)
    run_scenario(scenario, workspace, host)
