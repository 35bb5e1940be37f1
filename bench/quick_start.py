"""How long does the README's quick start take, as a user runs it: this checkout against an earlier one, side by side.

    python bench/quick_start.py [--before REV] [--runs 5] [--question "What is 7 * 6 + 5?"]

Each round runs the real command, `python agent.py -q QUESTION` with no key (the embedded Qwen), in an earlier
commit (a git worktree of REV, by default the last commit before the evaluation work began) and in this checkout,
one after the other, and times it from start to exit, loading included. Two cases each:

- first run: no saved prompt start, as on a user's first question (models/embedded/prefixes.py saves the
  instructions' keys and values after it);
- later run: the next run of the same command, which loads the saved start where the checkout saves one.

Each checkout gets a cache folder of its own in a temporary directory: the model folders of the real cache
(models.embedded.cache.cache_root) are linked file by file, except the saved starts, so nothing is unpacked again and
the user's own saved starts are neither used nor touched. A warm-up run per checkout comes first, untimed.
A benchmark, not a test: run it on a quiet machine and read the ranges, not only the medians.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from repository import ROOT, earlier_checkout  # importing it puts ROOT on the import path

BEFORE = "7974695"  # the README split, before the evaluation, the Qwen profile and the saved starts


def linked_cache(real: str, folder: str) -> str:
    """A cache root in `folder` whose model folders link every file of the real ones but hold no saved starts."""
    os.makedirs(folder, exist_ok=True)
    for model in os.listdir(real) if os.path.isdir(real) else []:
        source, target = os.path.join(real, model), os.path.join(folder, model)
        if not os.path.isdir(source):
            continue
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(source):
            if name != "prefixes" and not os.path.exists(os.path.join(target, name)):
                os.symlink(os.path.join(source, name), os.path.join(target, name))
    return folder


def timed(checkout: str, cache: str, question: str) -> tuple[float, str]:
    """Seconds for one run of the quick start in `checkout`, and its answer."""
    env = {**os.environ, "TINYREACT_CACHE_DIR": cache, "GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "agent.py", "-q", question], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: the run failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return seconds, done.stdout.strip()


def forget_starts(cache: str) -> None:
    for model in os.listdir(cache):
        shutil.rmtree(os.path.join(cache, model, "prefixes"), ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default=BEFORE, help=f"the earlier commit (default: {BEFORE})")
    parser.add_argument("--runs", type=int, default=5, help="rounds (default: 5)")
    parser.add_argument("--question", default="What is 7 * 6 + 5?")
    args = parser.parse_args()
    from models.embedded.cache import cache_root

    with (earlier_checkout(args.before) as earlier,
          tempfile.TemporaryDirectory(prefix="quick-start-", ignore_cleanup_errors=True) as work):
        checkouts = {f"before ({args.before})": earlier, "now": ROOT}
        caches = {label: linked_cache(str(cache_root()), os.path.join(work, f"cache-{n}"))
                  for n, label in enumerate(checkouts)}
        for label, checkout in checkouts.items():  # warm-up: anything a checkout unpacks differently, once
            print(f"warm-up, {label}: {timed(checkout, caches[label], args.question)[1]!r}", flush=True)
        times = {(label, case): [] for label in checkouts for case in ("first run", "later run")}
        for round_ in range(args.runs):
            for label, checkout in checkouts.items():
                forget_starts(caches[label])
                for case in ("first run", "later run"):
                    seconds, answer = timed(checkout, caches[label], args.question)
                    times[label, case].append(seconds)
                    print(f"round {round_ + 1}, {label}, {case}: {seconds:.2f} s, answered {answer!r}", flush=True)
        print(f"\n| {args.question} | first run | later run |\n| --- | ---: | ---: |")
        for label in checkouts:
            cells = [f"{statistics.median(t):.1f} s ({min(t):.1f}–{max(t):.1f})"
                     for t in (times[label, "first run"], times[label, "later run"])]
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
