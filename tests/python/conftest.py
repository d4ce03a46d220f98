import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def model_path(name: str = "SmolLM2-135M-Instruct.Q4_1.gguf") -> str:
    path = pathlib.Path(os.environ.get("ZOO_MODELS_DIR", ROOT / "models")) / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/fetch-models first")
    return str(path)


def tool_call(name: str, arguments: dict) -> str:
    import json

    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"
