"""TinyReAct against a real llama.cpp server: the OpenAI-compatible API as llama-cpp-python serves it today.

    LLAMA_PYTHON=/path/to/python-with-llama-cpp-python[server] python bench/llama_server.py

Serves the embedded Qwen file with llama.cpp's server (llama-cpp-python, on a free local port) and runs, as a user
would, `python agent.py QUESTION --model llamacpp:qwen2.5-coder-0.5b`: the quick-start question, its usage, cost
and temperature lines; then the same question streamed (through a pseudo-terminal, so that the replies stream as
they do for a user); then a context past the server's, streamed, to show what the server says and what TinyReAct
makes of it. Everything it prints is the program's own output. A benchmark script, not a test: it needs the
llama-cpp-python server, which takes about 15 minutes to build (pip install "llama-cpp-python[server]").
"""
import os
import pty
import subprocess
import sys
import tempfile

from repository import ROOT  # importing it puts ROOT on the import path
QUESTION = "What is 7 * 6 + 5?"


def agent(*args: str, url: str, terminal: bool = False) -> tuple[int, str]:
    """agent.py with these arguments against the server at `url`: its exit code and all it printed."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE", "TINYREACT_MODEL"))}
    environment.update(LLAMACPP_BASE_URL=url, WIKIPEDIA_API_URL="http://127.0.0.1:9/w/api.php",
                       OPEN_METEO_URL="http://127.0.0.1:9/v1/forecast", COLUMNS="120")
    command = [sys.executable, os.path.join(ROOT, "agent.py"), *args]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900)
        return done.returncode, done.stdout + done.stderr
    reader, writer = pty.openpty()  # stdout is a terminal: replies stream, as they do for a user
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=writer, stderr=writer, env=environment)
    os.close(writer)
    output = b""
    while True:
        try:
            piece = os.read(reader, 4096)
        except OSError:
            break
        if not piece:
            break
        output += piece
    os.close(reader)
    return process.wait(timeout=900), output.decode("utf-8", "replace")


def main() -> None:
    from evaluate import llama_server
    from models.embedded.cache import ModelCache
    from models.embedded.qwen import SMALL

    python = os.environ.get("LLAMA_PYTHON")
    if not python:
        raise SystemExit("set LLAMA_PYTHON to a Python that has llama-cpp-python[server]")
    with tempfile.TemporaryDirectory(dir=os.path.expanduser("~")) as folder:
        weights = str(ModelCache(folder).join(SMALL.weights))  # the embedded Qwen's file, served by its name
        server, url = llama_server(python, folder, weights, SMALL.name, context=2048)
        try:
            for title, args, terminal in [
                ("the quick-start question, piped", [QUESTION, "--model", "llamacpp:qwen2.5-coder-0.5b"], False),
                ("the same, on a terminal (streamed)", [QUESTION, "--model", "llamacpp:qwen2.5-coder-0.5b"], True),
                ("its JSON", [QUESTION, "--model", "llamacpp:qwen2.5-coder-0.5b", "--json"], False),
                ("a context past the server's 2,048 tokens, streamed",
                 ["Summarise: " + "the figures rose and fell " * 400, "--model", "llamacpp:qwen2.5-coder-0.5b"], True),
            ]:
                code, output = agent(*args, url=url, terminal=terminal)
                if "--json" in args:
                    import json
                    result = json.loads(output.strip().splitlines()[-1])
                    output = json.dumps({key: result[key] for key in ("answer", "stop_reason", "usage", "cost",
                                                                      "temperatures", "model_calls")}, indent=1)
                print(f"\n$ python agent.py {' '.join(a if len(a) < 60 else a[:40] + '…' for a in args)}"
                      f"   # {title}, exit {code}\n{output.rstrip()}", flush=True)
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
