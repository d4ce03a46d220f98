"""An agent on an OpenAI-compatible server, chosen by config alone
(provider={"type": "openai", "base_url": ...}), against a fake server on
127.0.0.1 (http.server) that plays fixed answers: a native tool call
streamed in pieces, the answer after it, then a 401."""

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
    """Plays `answers` ((status, content type, body) in order) and keeps each request."""

    def __init__(self, answers: list[tuple[int, str, bytes]]):
        self.answers = list(answers)
        self.requests: list[tuple[str, Message, dict]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append((self.path, self.headers, json.loads(body)))
                status, content_type, payload = outer.answers.pop(0)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

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
