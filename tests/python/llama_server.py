"""llama-cpp-python's OpenAI-compatible server on SmolLM2, run for the tests
and benchmarks that talk to a real third-party server
(tests/llama-server/serve.py holds its settings; scripts/fetch-llama-server
installs it)."""

import json
import os
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = "smollm2"
"""The served model's name (serve.py's `--model_alias`)."""
READY_BOUND_S = 300.0
"""How long python's imports and the model's load may take on a busy two-core machine."""


class LlamaServer:
    """The server on 127.0.0.1 at a free port, ready once /v1/models lists
    the model. `close()` ends it; it also ends by itself when this process
    does (serve.py exits when our pipe to its standard input closes)."""

    def __init__(self, python: pathlib.Path, model_path: str):
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.log = tempfile.NamedTemporaryFile(prefix="zoo-llama-server-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [str(python), str(ROOT / "tests/llama-server/serve.py"), model_path, str(port)],
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
        )
        try:
            self._wait_until_ready()
        except BaseException:
            self.close()
            raise

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + READY_BOUND_S
        while not self._lists_the_model():
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}) before it was ready:\n{self.log_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server was not ready within {READY_BOUND_S} s:\n{self.log_text()}")
            time.sleep(0.25)  # polling interval only: readiness is the server's answer

    def _lists_the_model(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=30) as answer:
                return any(m["id"] == MODEL for m in json.load(answer)["data"])
        except OSError:
            return False

    def log_text(self) -> str:
        """What the server wrote so far."""
        return pathlib.Path(self.log.name).read_text(errors="replace")

    def close(self) -> None:
        """Ends the server and removes its log."""
        self.process.kill()
        self.process.wait()
        if self.process.stdin:
            self.process.stdin.close()
        self.log.close()
        os.unlink(self.log.name)


def free_port() -> int:
    """A port nothing listens on now (the OS's choice for port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
