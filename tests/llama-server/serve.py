"""Runs llama-cpp-python's OpenAI-compatible server (its own
`python -m llama_cpp.server`, unchanged) on SmolLM2 with the settings every
test and benchmark against it shares, until its standard input closes.

    target/llama-server/bin/python tests/llama-server/serve.py MODEL.gguf PORT

Serves on 127.0.0.1:PORT as model `smollm2` (GET /v1/models lists it once
the model is loaded). The harness keeps a pipe to our standard input: when
the harness ends, however it ends (a failed test, a panic, a kill), the pipe
closes and the server exits with it, so no server outlives its tests.

Chat template: SmolLM2's own (in its GGUF) writes every turn as
`<|im_start|>ROLE\nCONTENT<|im_end|>`, which fails on an assistant turn
that holds only tool calls (no `content`), the turn an agentic loop sends
back with the tools' results, and never shows the model the tools.
smollm2_tokenizer_config.json holds the same template plus the tools in the
system prompt (the Hermes wording our local engine also knows) and calls
written as `<tool_call>` JSON; results stay `<|im_start|>tool` turns as
SmolLM2's template writes them: wrapped in `<tool_response>` markup instead,
SmolLM2-135M answers by echoing the result in that markup, which is no
answer (our local engine bans those tokens after a result; a server
cannot). `--chat_format hf-tokenizer-config` makes the server use the file.
A request whose `tool_choice` names a function then gets that function's
call, its arguments held to the function's JSON schema by a grammar,
streamed as OpenAI `tool_calls` deltas (llama-cpp-python's handler for
every Jinja template does that). `--chat_format chatml-function-calling`,
the other way to get tool calls, leaves the tools' results out of the
prompt, so it is not used.
"""

import os
import pathlib
import runpy
import sys
import threading

HERE = pathlib.Path(__file__).resolve().parent


def exit_when_stdin_closes() -> None:
    """Ends the process once the harness's pipe closes (it never writes)."""
    sys.stdin.buffer.read()
    os._exit(0)


def own_libraries_only() -> None:
    """Starts this script again without LD_LIBRARY_PATH when it has one.

    `cargo test` runs a test with LD_LIBRARY_PATH holding our build's folders,
    llama.cpp's among them, and the loader reads it before the wheel's own
    RUNPATH: the server then ran our libggml, which loads every CPU variant
    beside it, also the one GCC 12 miscompiles (sapphirerapids, left out of
    zoo-backends but still in llama-cpp-sys-2's build folder), and on a CPU
    with AMX it stopped with SIGILL in the middle of the Rust tests. The
    server is a peer: it runs the llama.cpp its wheel carries.
    """
    if os.environ.pop("LD_LIBRARY_PATH", None) is not None:
        os.execv(sys.executable, [sys.executable, *sys.argv])


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: serve.py MODEL.gguf PORT")
    own_libraries_only()
    model, port = sys.argv[1], sys.argv[2]
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    sys.argv = [
        "llama_cpp.server",
        "--model", model,
        "--model_alias", "smollm2",
        "--host", "127.0.0.1",
        "--port", port,
        "--n_ctx", "4096",
        "--n_threads", "2",
        "--n_threads_batch", "2",
        "--chat_format", "hf-tokenizer-config",
        "--hf_tokenizer_config_path", str(HERE / "smollm2_tokenizer_config.json"),
        "--verbose", "false",
    ]  # fmt: skip
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
