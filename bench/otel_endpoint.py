"""What --otel costs a run when its endpoint is down or slow: the same question timed without --otel, with an endpoint
that refuses connections (a closed loopback port), and with one that never answers (a loopback socket that listens
and reads nothing), each run a fresh `python agent.py QUESTION -q` against the tests' loopback Gemini, alternating.

    .venv/bin/python bench/otel_endpoint.py [--rounds 7]

A benchmark, not a test: tests/test_otel.py checks the same in one process, with a bound of a second.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

from repository import ROOT, add_tests_to_path

add_tests_to_path()
from model_servers import GeminiStandIn  # noqa: E402

KEY = "AIza-bench-otel-0000"
REPLIES = ["Thought: add them.\nAction: add_numbers(2, 3)", "Answer: 5"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = closed.getsockname()[1]
    silent = socket.socket()  # accepts connections into its backlog and never reads them
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    endpoints = {"without --otel": None, "endpoint down": down, "endpoint silent": silent.getsockname()[1]}
    times, said = {case: [] for case in endpoints}, {}
    base = {name: value for name, value in os.environ.items() if not name.startswith(("OTEL_", "GEMINI", "GOOGLE"))}
    for _ in range(args.rounds):
        for case, port in endpoints.items():
            with GeminiStandIn(list(REPLIES), key=KEY) as gemini:
                environment = dict(base, GEMINI_API_KEY=KEY, GOOGLE_GEMINI_BASE_URL=gemini.url,
                                   OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", NO_PROXY="127.0.0.1")
                started = time.monotonic()
                done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "What is 2 + 3?", "-q",
                                       *(["--otel"] if port else [])], capture_output=True, text=True, env=environment)
                times[case].append(time.monotonic() - started)
                said[case] = (done.returncode, done.stdout.strip(), done.stderr.strip())
    plain = statistics.median(times["without --otel"])
    for case, seconds in times.items():
        print(f"{case:16} median {statistics.median(seconds):.2f} s ({statistics.median(seconds) - plain:+.2f}), "
              f"range {min(seconds):.2f}–{max(seconds):.2f}; exit {said[case][0]}, answer {said[case][1]!r}, "
              f"stderr {said[case][2]!r}")
    silent.close()


if __name__ == "__main__":
    main()
