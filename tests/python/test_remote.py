"""An agent on a remote model, chosen by config alone: an OpenAI-compatible
server (provider={"type": "openai", "base_url": ...}), Anthropic
({"type": "anthropic", ...}) and Gemini ({"type": "gemini", ...}), each
against a fake server on 127.0.0.1 (http.server) that plays fixed answers:
native tool calls streamed in pieces, the answer after them, a rate limit
retried (a `retry` event), a refused key."""

import http.server
import json
import threading
from email.message import Message

import pytest

import zoo_keeper as zk


def sse(*events: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def delta(d: dict, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


CALL = sse(
    delta({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
    delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
    delta({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
    delta({}, "tool_calls"),
    {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 32}}},
)
TEXT = sse(delta({"role": "assistant", "content": "It is 17 degrees "}), delta({"content": "in Paris."}), delta({}, "stop"))
REFUSED = json.dumps({"error": {"message": "Incorrect API key: sk-py-secret-key"}}).encode()


class FakeServer:
    """Plays `answers` ((status, content type, body[, headers]) in order) and keeps each request."""

    def __init__(self, answers: list[tuple]):
        self.answers = list(answers)
        self.requests: list[tuple[str, Message, dict]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append((self.path, self.headers, json.loads(body)))
                status, content_type, payload, *extra = outer.answers.pop(0)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.root = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.base_url = f"{self.root}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer([(200, "text/event-stream", CALL), (200, "text/event-stream", TEXT), (401, "application/json", REFUSED)])
    yield s
    s.close()


def test_an_agent_on_an_openai_compatible_server(server: FakeServer) -> None:
    provider = {"type": "openai", "base_url": server.base_url, "model": "served-model",
                "api_key": "sk-py-secret-key", "max_retries": 0}
    with zk.Agent(provider=provider, temperature=0) as agent:
        @agent.tool
        def get_weather(city: str) -> dict:
            """Current weather for a city."""
            return {"city": city, "temperature_celsius": 17}

        pieces: list[str] = []
        response = agent.chat("Weather in Paris?", on_token=pieces.append)
        assert response.text == "It is 17 degrees in Paris."
        assert "".join(pieces) == "It is 17 degrees in Paris."
        assert [(c.name, c.arguments, c.result) for c in response.tool_calls] == [
            ("get_weather", {"city": "Paris"}, {"city": "Paris", "temperature_celsius": 17})
        ]
        assert response.usage.cached_tokens == 32

        with pytest.raises(zk.AuthenticationError) as refused:
            agent.chat("Again")
        assert refused.value.code == 18
        assert "refused the credentials (HTTP 401): Incorrect API key: [redacted]" in str(refused.value)
        assert "sk-py-secret-key" not in str(refused.value)

    path, headers, first = server.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-py-secret-key"
    assert first["model"] == "served-model"
    assert first["stream"] is True
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather"]
    _, _, second = server.requests[1]
    assert second["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][2] == {"role": "tool", "tool_call_id": "call_1",
                                     "content": '{"city":"Paris","temperature_celsius":17}'}


def test_provider_errors_have_their_classes() -> None:
    assert (zk.ProviderError.code, zk.AuthenticationError.code) == (17, 18)
    assert issubclass(zk.ProviderError, zk.ZooError) and issubclass(zk.AuthenticationError, zk.ZooError)
    with pytest.raises(zk.InvalidConfigError, match=r"provider\.base_url"):
        zk.Agent(provider={"type": "openai"})
    failing = FakeServer([(500, "application/json", b'{"error": {"message": "boom"}}')])
    try:
        with zk.Agent(provider={"type": "openai", "base_url": failing.base_url, "max_retries": 0}) as agent:
            with pytest.raises(zk.ProviderError) as failed:
                agent.chat("Hi")
        assert str(failed.value) == f"provider openai ({failing.base_url}) failed with HTTP 500: boom"
        assert failed.value.code == 17
    finally:
        failing.close()


def anthropic_events(*events: dict) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def block_delta(index: int, delta: dict) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": delta}


ANTHROPIC_CALL = anthropic_events(
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
     "usage": {"input_tokens": 20, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 0, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}},
    block_delta(0, {"type": "input_json_delta", "partial_json": '{"city": '}),
    {"type": "ping"},
    block_delta(0, {"type": "input_json_delta", "partial_json": '"Paris"}'}),
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 12}},
    {"type": "message_stop"},
)
ANTHROPIC_TEXT = anthropic_events(
    {"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [],
     "usage": {"input_tokens": 60, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    block_delta(0, {"type": "text_delta", "text": "It is 17 degrees "}),
    block_delta(0, {"type": "text_delta", "text": "in Paris."}),
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 8}},
    {"type": "message_stop"},
)
RATE_LIMITED = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "Too many requests"}}).encode()


def weather_agent(provider: dict) -> zk.Agent:
    agent = zk.Agent(provider=provider, temperature=0)

    @agent.tool
    def get_weather(city: str) -> dict:
        """Current weather for a city."""
        return {"city": city, "temperature_celsius": 17}

    return agent


def test_an_agent_on_anthropic_with_a_retry_event() -> None:
    server = FakeServer([
        (429, "application/json", RATE_LIMITED, {"Retry-After": "0"}),
        (200, "text/event-stream", ANTHROPIC_CALL),
        (200, "text/event-stream", ANTHROPIC_TEXT),
    ])
    try:
        provider = {"type": "anthropic", "base_url": server.root, "model": "claude-sonnet-4-5",
                    "api_key": "sk-ant-py-key"}
        events: list[zk.Event] = []
        with weather_agent(provider) as agent:
            response = agent.chat("Weather in Paris?", on_event=events.append)
        assert response.text == "It is 17 degrees in Paris."
        assert [(c.name, c.arguments) for c in response.tool_calls] == [("get_weather", {"city": "Paris"})]
        assert (response.usage.prompt_tokens, response.usage.cached_tokens) == (50 + 60, 30)
        retries = [e for e in events if e.type == "retry"]
        assert [e.data for e in retries] == [
            {"attempt": 1, "max_retries": 2, "delay_ms": 0, "status": 429, "reason": "HTTP 429: Too many requests"}
        ]
        assert [e.type for e in events][:3] == ["chat_started", "turn_started", "retry"]
        assert [e.seq for e in events] == list(range(len(events)))
        path, headers, first = server.requests[1]
        assert path == "/v1/messages"
        assert headers["x-api-key"] == "sk-ant-py-key"
        assert headers["anthropic-version"] == "2023-06-01"
        assert first["model"] == "claude-sonnet-4-5" and first["stream"] is True
        assert first["tools"][0]["input_schema"]["properties"] == {"city": {"type": "string"}}
        _, _, second = server.requests[2]
        assert second["messages"][2] == {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": '{"city":"Paris","temperature_celsius":17}'}]}
    finally:
        server.close()


def gemini_sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


def candidate(parts: list, finish: str | None = None) -> dict:
    c: dict = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
    if finish:
        c["candidates"][0]["finishReason"] = finish
        c["usageMetadata"] = {"promptTokenCount": 40, "cachedContentTokenCount": 32, "candidatesTokenCount": 7}
    return c


GEMINI_CALL = gemini_sse(candidate([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]),
                         candidate([{"text": ""}], "STOP"))
GEMINI_TEXT = gemini_sse(candidate([{"text": "It is 17 degrees "}]), candidate([{"text": "in Paris."}], "STOP"))


def test_an_agent_on_gemini_and_a_refused_key() -> None:
    refused = json.dumps({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                    "status": "INVALID_ARGUMENT"}}).encode()
    server = FakeServer([
        (200, "text/event-stream", GEMINI_CALL),
        (200, "text/event-stream", GEMINI_TEXT),
        (403, "application/json", refused),
    ])
    try:
        provider = {"type": "gemini", "base_url": server.root, "model": "gemini-2.5-flash",
                    "api_key": "AIza-py-secret", "max_retries": 0}
        with weather_agent(provider) as agent:
            response = agent.chat("Weather in Paris?")
            assert response.text == "It is 17 degrees in Paris."
            assert response.tool_calls[0].result == {"city": "Paris", "temperature_celsius": 17}
            assert response.usage.cached_tokens == 64
            with pytest.raises(zk.AuthenticationError) as refused_error:
                agent.chat("Again")
        assert str(refused_error.value) == (
            f"provider gemini ({server.root}) refused the credentials (HTTP 403): "
            "API key not valid. Please pass a valid API key.")
        path, headers, first = server.requests[0]
        assert path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        assert headers["x-goog-api-key"] == "AIza-py-secret"
        declaration = first["tools"][0]["functionDeclarations"][0]
        assert (declaration["name"], declaration["description"]) == ("get_weather", "Current weather for a city.")
        assert declaration["parameters"]["properties"] == {"city": {"type": "string"}}
        assert not {"additionalProperties", "$schema"} & declaration["parameters"].keys()
        _, _, second = server.requests[1]
        assert second["contents"][2] == {"role": "user", "parts": [{"functionResponse": {
            "name": "get_weather", "response": {"output": {"city": "Paris", "temperature_celsius": 17}}}}]}
    finally:
        server.close()


def test_bad_remote_provider_keys_are_named() -> None:
    with pytest.raises(zk.InvalidConfigError, match=r"provider\.model.*is required"):
        zk.Agent(provider={"type": "anthropic"})
    with pytest.raises(zk.InvalidConfigError, match=r"provider\.thinking"):
        zk.Agent(provider={"type": "gemini", "model": "gemini-2.5-flash", "thinking": "lots"})
