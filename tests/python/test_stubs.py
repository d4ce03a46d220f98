"""The type stubs describe the compiled module and pass mypy."""

import inspect
import pathlib
import subprocess
import sys

import zoo_keeper
from zoo_keeper import _native

STUB = pathlib.Path(zoo_keeper.__file__).with_name("_native.pyi")


def test_stub_names_match_the_module():
    text = STUB.read_text()
    public = {n for n in dir(_native) if not n.startswith("_")}
    for name in public:
        assert f"class {name}" in text or f"{name}:" in text or f"def {name}(" in text, f"{name} missing from _native.pyi"
    for cls in (_native.NativeAgent, _native.NativeModel, _native.NativeChat, _native.NativeToolContext, _native.NativeBackendSink):
        for member, _ in inspect.getmembers(cls):
            if not member.startswith("_"):
                assert f"def {member}(" in text, f"{cls.__name__}.{member} missing from _native.pyi"


def test_stub_signatures_match_the_module():
    """mypy's stubtest compares every class, method and parameter of the
    stub with the compiled module's own signatures."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "zoo_keeper._native"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_package_type_checks():
    assert STUB.with_name("py.typed").exists()
    example = pathlib.Path(__file__).with_name("typed_example.py")
    # The package's example too, as a user's code would be checked.
    user_example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "agent.py"
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(example), str(user_example)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
