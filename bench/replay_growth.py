"""How replay time grows with the trace: this checkout against an earlier one, side by side.

    python bench/replay_growth.py [--before REV] [--runs 3] [--times 1,2,4,8]

The trace is conversations/long.jsonl (32 questions, 84 model calls) played K times over in one session, each
round's questions marked with their round so that no text repeats; each checkout replays it, in a fresh
interpreter of its own, under the command line's default policies and under `window:2` alone (a policy whose
context stays the same size however long the session, so its replay should grow no faster than the trace). No
facts are scored: what is timed is the per-call work, rendering, counting and checking the invariants. The median
of `--runs` runs, seconds, and each time over the time for K = 1.

A benchmark, not a test: run it on a quiet machine.
"""
import argparse
import json
import statistics
import subprocess
import sys

from repository import ROOT, earlier_checkout

BEFORE = "1fd6681"  # the last commit before the invariants were checked incrementally
POLICY_SETS = {"default policies": "full,window:2,user-only:4,elide:2,pinned,compact:8000", "window:2": "window:2"}

TIMED = r"""
import json, sys, time
sys.path.insert(0, ".")
from experiments.replay import replay
from tokens import local_counter
from traces import read_trace_file

header, events = read_trace_file("conversations/long.jsonl")
times, specs, runs = json.loads(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
counter = local_counter()
replay(header, events, specs, counter, facts=[], points=[])  # warm: the counter's cache, the imports
result = {}
for k in times:
    grown = [events[0]] + [dict(e, text=f"{e['text']} ({r})") if e["type"] == "question" and r else e
                           for r in range(k) for e in events[1:]]
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        replay(header, grown, specs, counter, facts=[], points=[])
        seconds.append(time.perf_counter() - started)
    result[k] = seconds
print(json.dumps(result))
"""


def timed(checkout: str, times: list[int], specs: str, runs: int) -> dict[int, list[float]]:
    done = subprocess.run([sys.executable, "-c", TIMED, json.dumps(times), specs, str(runs)], cwd=checkout,
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: the replay failed: {done.stderr.strip()[-300:]}")
    return {int(k): v for k, v in json.loads(done.stdout).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default=BEFORE, help=f"the earlier commit (default: {BEFORE})")
    parser.add_argument("--runs", type=int, default=3, help="runs per length (default: 3)")
    parser.add_argument("--times", default="1,2,4,8", help="how many times the conversation is played (1,2,4,8)")
    args = parser.parse_args()
    times = [int(k) for k in args.times.split(",")]
    with earlier_checkout(args.before) as earlier:
        for name, specs in POLICY_SETS.items():
            print(f"\n{name}: seconds, median of {args.runs} (× the time for K = {times[0]})\n")
            print("| K (calls) | " + " | ".join(f"{k} ({84 * k})" for k in times) + " |")
            print("| --- |" + " ---: |" * len(times))
            for label, checkout in ((f"before ({args.before})", earlier), ("now", ROOT)):
                medians = {k: statistics.median(t) for k, t in timed(checkout, times, specs, args.runs).items()}
                print(f"| {label} | " + " | ".join(
                    f"{medians[k]:.3f} ({medians[k] / medians[times[0]]:.1f}×)" for k in times) + " |", flush=True)


if __name__ == "__main__":
    main()
