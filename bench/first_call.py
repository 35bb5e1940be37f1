"""How long a question with a Gemini key waits before its first request, on the first run (an empty model cache,
so the token counter's vocabulary must first be read from the weights package) against later runs.

    python bench/first_call.py [RUNS]

Each run starts `python agent.py -q "What is 2 + 2?"` in a fresh process, with a key and the loopback Gemini
stand-in of the tests (no network), and times from the process's start to the stand-in receiving the first
request. Cold runs each get a new empty TINYREACT_CACHE_DIR; warm runs share one filled beforehand. Medians and
every run are printed, cold and warm interleaved so that a busy machine slows both alike.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from repository import ROOT, add_tests_to_path

add_tests_to_path()
from model_servers import GeminiStandIn  # noqa: E402  (the tests' stand-in, in tests/)


def seconds_to_first_request(cache_dir: str) -> float:
    first = []
    with GeminiStandIn(["Answer: 4"] * 3) as server:
        answer = server.handle
        server.handle = lambda request: first.append(time.perf_counter()) or answer(request)
        env = {**os.environ, "GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": server.url,
               "TINYREACT_CACHE_DIR": cache_dir}
        started = time.perf_counter()
        done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "-q", "What is 2 + 2?"], env=env,
                              capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0 or not first:
        sys.exit(f"the run failed: {done.stderr.strip()[-500:]}")
    return first[0] - started


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    warm_dir = tempfile.mkdtemp(prefix="tinyreact-warm-")
    seconds_to_first_request(warm_dir)
    cold, warm = [], []
    for _ in range(runs):
        cold_dir = tempfile.mkdtemp(prefix="tinyreact-cold-")
        cold.append(seconds_to_first_request(cold_dir))
        shutil.rmtree(cold_dir)
        warm.append(seconds_to_first_request(warm_dir))
    shutil.rmtree(warm_dir)
    print(f"first request after start, {runs} runs each, medians: cold cache {statistics.median(cold):.2f} s, "
          f"warm {statistics.median(warm):.2f} s: the first run waits "
          f"{statistics.median(cold) - statistics.median(warm):+.2f} s")
    print("  cold: " + ", ".join(f"{s:.2f}" for s in sorted(cold)))
    print("  warm: " + ", ".join(f"{s:.2f}" for s in sorted(warm)))


if __name__ == "__main__":
    main()
