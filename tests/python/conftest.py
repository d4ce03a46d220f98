import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


# What a test needs beyond the package is marked, so that the quick tier
# (`scripts/test --quick`: pytest -m "not model and not mcp_servers and not llama_server", with
# ZOO_TEST_QUICK=1) leaves it out; a test that needs them without its
# marker fails there (see model_path and test_mcp.npm_server).
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "model: needs a GGUF model (scripts/fetch-models)")
    config.addinivalue_line("markers", "mcp_servers: needs the MCP servers from npm (scripts/fetch-mcp-servers)")
    config.addinivalue_line("markers", "llama_server: needs llama-cpp-python's server (scripts/fetch-llama-server)")


def quick_tier_guard(what: str, marker: str) -> None:
    """Fails a test that reaches for `what` in the quick tier, which left
    out every test marked `marker`: the marker is missing."""
    if os.environ.get("ZOO_TEST_QUICK") == "1":
        pytest.fail(f"this test needs {what}: mark it @pytest.mark.{marker} (the quick tier runs without it)")


def model_path(name: str = "SmolLM2-135M-Instruct.Q4_1.gguf") -> str:
    quick_tier_guard("a model", "model")
    path = pathlib.Path(os.environ.get("ZOO_MODELS_DIR", ROOT / "models")) / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/fetch-models first")
    return str(path)


def tool_call(name: str, arguments: dict) -> str:
    import json

    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def llama_server_python() -> pathlib.Path:
    """The python of scripts/fetch-llama-server's venv ($ZOO_LLAMA_SERVER_PYTHON,
    else target/llama-server/bin/python); a missing server fails the test,
    as a missing model does."""
    quick_tier_guard("llama-cpp-python's server", "llama_server")
    python = pathlib.Path(os.environ.get("ZOO_LLAMA_SERVER_PYTHON", ROOT / "target/llama-server/bin/python"))
    if not python.exists():
        # As a missing model does: a test that cannot run fails.
        pytest.fail(f"{python} is missing: run scripts/fetch-llama-server")
    return python
