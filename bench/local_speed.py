"""How fast are the embedded models, next to llama.cpp on the same GGUF file and the same prompts?

    python bench/local_speed.py [--models qwen,gemma] [--runs 3] [--cold]
    python bench/local_speed.py --models qwen-1.5b   # the opt-in Qwen2.5-Coder 1.5B (requirements-1.5b.txt)

For each model it first runs this project's real loop once on `What is 7 * 6 + 5?` (its prompt, its tools)
to record the three prompts the model is sent, then times the three steps on exactly those prompts, greedy,
each step continuing the previous one's key/value cache, `--runs` times (the median is reported). The same
prompts then run in llama.cpp (llama-cpp-python, 2 threads, cut by the same stop rule) when it is importable
in the Python named by LLAMA_PYTHON (or this one). Each engine runs in a process of its own, so the peak
memory (RSS) printed is that engine's alone. With --cold, the first use (join, check, unpack) is timed too,
into an empty temporary cache folder.
A benchmark, not a test: run it on a quiet machine and read the ratios, not only the seconds.
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from repository import ROOT  # importing it puts ROOT on the import path
QUESTION = "What is 7 * 6 + 5?"
MODELS = {"qwen": "local:qwen2.5-coder-0.5b", "gemma": "local:gemma-270m", "qwen-1.5b": "local:qwen2.5-coder-1.5b"}
THREADS = "2"

LLAMA_SCRIPT = r"""
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from models.embedded.local import StopRule
from llama_cpp import Llama
path, job = sys.argv[2], json.loads(sys.argv[3])
started = time.perf_counter()
llm = Llama(model_path=path, n_ctx=4096, n_threads=2, n_threads_batch=2, verbose=False)
load = time.perf_counter() - started
runs = []
for run in range(job["runs"]):
    llm.reset()
    steps, texts = [], []
    for prompt, opening in job["prompts"]:
        rule, text, generated = StopRule(job["stop"], opening), "", []
        started = time.perf_counter()
        ids = ([llm.token_bos()] if job["bos"] else []) + llm.tokenize(prompt.encode(), add_bos=False, special=False)
        for token in llm.generate(ids, top_k=1, temp=0.0, repeat_penalty=1.0):  # reuses the common prefix
            if token == llm.token_eos() or token in job["end_tokens"] or len(generated) == 256:
                break
            generated.append(token)
            text = llm.detokenize(generated).decode("utf-8", errors="replace")
            if rule.cut(text) >= 0:
                text = text[:rule.cut(text)]
                break
        steps.append(time.perf_counter() - started)
        texts.append(text)
    runs.append({"steps": steps, "texts": texts})
print(json.dumps({"load": load, "runs": runs, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def record_prompts(model) -> list[tuple[str, str]]:
    """The prompts (transcript and opening) the real loop sends `model` for QUESTION, in order."""
    from agent import TinyReAct
    from models.embedded.local import transcript

    sent = []

    class Recording:
        name, backend, usage_source, window = model.name, model.backend, model.usage_source, model.window

        def generate(self, messages, stop, **options):
            sent.append(transcript(messages))
            return model.generate(messages, stop, **options)

    result = TinyReAct(Recording()).query(QUESTION)
    print(f"  the loop's answer: {result.answer!r} in {len(sent)} calls", file=sys.stderr)
    return sent


def worker(name: str, runs: int) -> dict:
    """Ours, in this process: load, record the loop's prompts, then time the steps on them."""
    from agent import STOP_SEQUENCES
    from models import load_model
    from models.embedded.local import StopRule

    started = time.perf_counter()
    model = load_model(MODELS[name])
    load = time.perf_counter() - started
    prompts = record_prompts(model)
    results = []
    for _ in range(runs):
        model.network.cached = []
        steps, texts, decode = [], [], []
        for prompt, opening in prompts:
            started = time.perf_counter()
            ids = model.start + model.tokenizer.encode(prompt)
            text, count, _ = model.complete(ids, StopRule(STOP_SEQUENCES, opening))
            steps.append(time.perf_counter() - started)
            texts.append(text)
            timings = model.network.timings
            if count > 1:
                decode.append((count - 1) / timings["decode_seconds"])
        results.append({"steps": steps, "texts": texts, "prefill_tokens": model.network.timings["prefill_tokens"],
                        "decode": statistics.median(decode) if decode else 0.0})
    return {"load": load, "runs": results, "prompts": prompts, "bos": bool(model.start),
            "end_tokens": sorted(model.end_tokens), "stop": STOP_SEQUENCES,
            "prompt_tokens": [len(model.start + model.tokenizer.encode(p)) for p, _ in prompts],
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def cold_start(name: str) -> float:
    """Seconds for a first use (join, check, unpack, load) into an empty cache folder, in a new process."""
    with tempfile.TemporaryDirectory(dir=os.path.expanduser("~")) as folder:
        environment = dict(os.environ, TINYREACT_CACHE_DIR=folder)
        code = f"import sys; sys.path.insert(0, {ROOT!r}); from models import load_model; load_model({MODELS[name]!r})"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=environment, check=True)
        return time.perf_counter() - started


def run_llama(name: str, ours: dict, runs: int) -> dict | None:
    """The same prompts in llama.cpp, in a separate process; None when llama-cpp-python is not installed."""
    from models.embedded.cache import ModelCache

    python = os.environ.get("LLAMA_PYTHON", sys.executable)
    if subprocess.run([python, "-c", "import llama_cpp"], capture_output=True).returncode != 0:
        return None
    from models.embedded import gemma, qwen

    weights = {"qwen": qwen.SMALL.weights, "qwen-1.5b": qwen.LARGER.weights, "gemma": gemma.WEIGHTS}[name]
    with tempfile.TemporaryDirectory(dir=os.path.expanduser("~")) as folder:
        path = ModelCache(folder).join(weights)
        job = {key: ours[key] for key in ("prompts", "bos", "end_tokens", "stop")} | {"runs": runs}
        done = subprocess.run([python, "-c", LLAMA_SCRIPT, ROOT, str(path), json.dumps(job)], capture_output=True,
                              text=True, timeout=1800, env=dict(os.environ, OMP_NUM_THREADS=THREADS))
    if done.returncode != 0:
        print(f"llama.cpp run failed: {done.stderr.strip()[-500:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def medians(result: dict) -> list[float]:
    return [statistics.median(run["steps"][i] for run in result["runs"])
            for i in range(len(result["runs"][0]["steps"]))]


def report(name: str, ours: dict, llama: dict | None, cold: float | None) -> None:
    steps = medians(ours)
    print(f"\n{name} (numpy), median of {len(ours['runs'])} runs, prompts of {ours['prompt_tokens']} tokens:")
    print(f"  load            {ours['load']:.2f} s"
          f"{f'; first use (join, check, unpack, load) {cold:.1f} s' if cold else ''}")
    print(f"  decode          {statistics.median(r['decode'] for r in ours['runs']):.1f} tokens/s")
    print(f"  ReAct steps     {', '.join(f'{s:.2f}' for s in steps)} s; whole loop {sum(steps):.2f} s")
    print(f"  peak RSS        {ours['peak_mb']:.0f} MiB")
    print(f"  texts           {[t.strip() for t in ours['runs'][-1]['texts']]}")
    if llama is None:
        print("  llama.cpp: absent (pip install llama-cpp-python, or set LLAMA_PYTHON to a Python that has it)")
        return
    theirs = medians(llama)
    print(f"{name} in llama.cpp (llama-cpp-python, 2 threads), same file, prompts and stop rule:")
    print(f"  load            {llama['load']:.2f} s")
    print(f"  ReAct steps     {', '.join(f'{s:.2f}' for s in theirs)} s; whole loop {sum(theirs):.2f} s")
    print(f"  peak RSS        {llama['peak_mb']:.0f} MiB")
    print(f"  texts           {[t.strip() for t in llama['runs'][-1]['texts']]}")
    same = [a == b for a, b in zip(ours["runs"][-1]["texts"], llama["runs"][-1]["texts"])]
    print(f"same greedy text at each step: {same}")
    print(f"ratio, ours / llama.cpp: steps {', '.join(f'{o / t:.1f}x' for o, t in zip(steps, theirs))}; "
          f"whole loop {sum(steps) / sum(theirs):.1f}x (target: at most 3x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen,gemma", help="which embedded models, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="loops to time (the median is reported)")
    parser.add_argument("--cold", action="store_true", help="also time a first use into an empty cache folder")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.runs)))
        return

    import numpy
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
          f"Python {platform.python_version()}, numpy {numpy.__version__}, {THREADS} threads for both engines")
    for name in args.models.split(","):
        cold = cold_start(name) if args.cold else None
        environment = dict(os.environ, OPENBLAS_NUM_THREADS=THREADS, OMP_NUM_THREADS=THREADS)
        done = subprocess.run([sys.executable, __file__, "--worker", name, "--runs", str(args.runs)],
                              capture_output=True, text=True, env=environment, check=True)
        ours = json.loads(done.stdout.strip().splitlines()[-1])
        report(name, ours, run_llama(name, ours, args.runs), cold)


if __name__ == "__main__":
    main()
