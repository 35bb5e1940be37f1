"""TinyReAct against the frameworks people would pick instead, measured side by side in one run.

    python bench/run.py            # every table; installs the peers on first use
    python bench/run.py --loop     # table 1 for TinyReAct alone: the bare step, the work inline, the loop
    python bench/run.py --protocols  # the loop in the text protocol and in the native one, timed in turn
    python bench/run.py --instructions  # table 1 counted in instructions by callgrind (valgrind), not timed

On first use it creates bench/.venv-peers and installs bench/requirements-peers.txt there (smolagents and
LangChain's classic agents, at the versions measured); the project's own environment is never touched.
It prints four tables, each with the ratio to TinyReAct, on this machine:
1. Loop overhead: the same 20-step task (one arithmetic action per step, then the answer), each framework
   driven by a fake model that answers instantly, so what is timed is the framework. Median of several runs.
   Beside it, in this process, the bare minimum of a text ReAct step (find the Action line, ast-parse it,
   literal_eval the arguments, call the tool), the floor against which TinyReAct's overhead is stated; and
   TinyReAct's own work written as one function (checked to give the same trace and contexts), which splits
   TinyReAct's overhead into the work each step must do and the cost of the code's structure.
2. Start-up: `python agent.py --help` against importing each peer's agent module, each in a fresh interpreter.
3. Prompt tokens: the instructions each framework sends on its first call for the seed's eight tools (same
   docstrings), counted with one tokenizer for all, and their share of a typical first call.
4. Context growth: the input tokens of TinyReAct's 20-step run under each policy, against the quadratic
   (full history) and linear (bounded policies) formulas.
Benchmarks, not tests: nothing in the test suite needs the peers.
"""
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import venv

from repository import ROOT  # importing it puts ROOT on the import path
PEERS = os.path.join(ROOT, "bench", ".venv-peers")
PEERS_PYTHON = os.path.join(PEERS, "bin", "python")
REQUIREMENTS = os.path.join(ROOT, "bench", "requirements-peers.txt")
STEPS = 20
RUNS = int(os.environ.get("BENCH_RUNS", "7"))
QUESTION = "What is the current temperature, in degrees Fahrenheit, at the stadium where Super Bowl LIX was played?"
PEER_IMPORTS = {"smolagents": "from smolagents import ToolCallingAgent",
                "LangChain": "from langchain_classic.agents import AgentExecutor, create_react_agent"}



def seed_tools() -> list:
    """The seed's eight tools, which every framework here is given (tools.FIRST_DEFAULTS)."""
    from tools import FIRST_DEFAULTS, tools_named

    return tools_named(FIRST_DEFAULTS)

def ensure_peers() -> None:
    stamp = os.path.join(PEERS, "installed-requirements.txt")
    with open(REQUIREMENTS) as file:
        wanted = file.read()
    if os.path.exists(stamp) and open(stamp).read() == wanted:
        return
    print(f"installing the peers into {os.path.relpath(PEERS, ROOT)} (once)…", flush=True)
    venv.create(PEERS, with_pip=True, clear=True)
    done = subprocess.run([PEERS_PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
                           REQUIREMENTS], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"installing the peers failed:\n{done.stderr[-2000:]}")
    with open(stamp, "w") as file:
        file.write(wanted)


REPLIES = [f"Thought: add one more\nAction: add_numbers({n}, 1)" for n in range(1, STEPS + 1)] + ["Answer: done"]


class Instant:
    """A model that hands back the next prepared reply and does nothing else, so only the framework is timed."""
    name, backend, usage_source, window = "instant", "bench", "none", None
    native_tools = True

    def __init__(self, replies):
        self.replies = iter(replies)

    def generate(self, messages, stop, **options):
        return next(self.replies)


def per_step_ms(*runs) -> list[float]:
    """Median milliseconds per step of each of `runs`, timed in turn (one run of each, then again, RUNS * 5 times),
    so that a machine that slows down part of the time slows each of them alike; in a new order each round, since
    a run's place in the round changed its time by up to 15% on this machine."""
    for run_once in runs:
        run_once()
    seconds, order, shuffle = [[] for _ in runs], list(range(len(runs))), random.Random(0).shuffle
    for _ in range(RUNS * 5):
        shuffle(order)
        for index in order:
            started = time.perf_counter()
            runs[index]()
            seconds[index].append(time.perf_counter() - started)
    return [statistics.median(times) / STEPS * 1000 for times in seconds]


def tinyreact_run(protocol: str = "text"):
    """One run of TinyReAct's loop on the 20-step task (full policy, no trace file), with the instant model; in the
    native protocol its replies are the same calls, made as structured calls."""
    from agent import TinyReAct
    from models import ModelReply, ToolCall
    from protocols import make_protocol
    seed = seed_tools()

    replies = [ModelReply(text) for text in REPLIES] if protocol == "text" else [
        ModelReply("", calls=(ToolCall("call_1", "add_numbers", f'{{"x": {n}, "y": 1}}'),))
        for n in range(1, STEPS + 1)] + [ModelReply("done")]

    def run_once():
        result = TinyReAct(Instant(replies), tools=seed, protocol=make_protocol(protocol),
                           ttl=STEPS + 5).query("Add one twenty times, starting from 1.")
        assert result.answer == "done" and result.steps == STEPS

    return run_once


# The inlined run is one function on purpose, with no helpers to call: it measures the work without the structure,
# so it stays past the complexity limit that holds everywhere else (pyproject.toml).
def inlined_run(check: bool = False):  # noqa: C901
    """One run of the same work as TinyReAct's loop, for the full policy only, written as one function as tightly as
    we could: the same trace events (a clock read for each), the same messages to the model, the same token counts,
    the same checks on each step that this task's calls meet (the action's length and shape, a known tool, every
    parameter given, the arguments' types, the repeat and unreadable-reply counts read back from the trace, the
    caps, the window); where TinyReAct would refuse or convert, it stops instead. Only the structure is gone: no
    policy object, no general rendering (each message is appended as its event is recorded), no helper functions but
    the reply parser and the query's counts. It shows what the work itself costs, so that TinyReAct's ratio to the
    bare step splits into the work and the structure. With `check`, it first runs TinyReAct once and stops unless
    the two traces (less their timestamps) and every context are equal: on this task's path only (no repeats, no
    refusals happen here)."""
    import ast
    import inspect
    import sys

    from agent import REPLY_LIMIT, RECORD_LIMIT
    from results import summarise
    from models import Message, ModelReply, Part
    from models.sent import Digests
    from prompts import render_instructions, tool_docs
    from replies import MAX_ACTION_CHARS, parse_reply
    from tokens import local_counter
    seed = seed_tools()

    replies = [ModelReply(text) for text in REPLIES]
    tools = {tool.__name__: tool for tool in seed}
    annotations = {name: [(p.name, p.annotation) for p in inspect.signature(tool).parameters.values()]
                   for name, tool in tools.items()}
    instructions, docs = render_instructions(seed), tool_docs(seed)
    counter = local_counter()
    count, clock, largest = counter.count, time.monotonic_ns, sys.float_info.max
    question = "Add one twenty times, starting from 1."
    contexts = []

    def run_once():  # noqa: C901
        started = clock()
        events = [{"type": "instructions", "text": instructions, "tools": docs,
                   "t": (clock() - started) // 1_000_000 / 1000},
                  {"type": "question", "text": question, "t": (clock() - started) // 1_000_000 / 1000}]
        messages = [Message("system", (Part("instructions", instructions),)),
                    Message("user", (Part("question", f"Question: {question}", said=question),))]
        append, name_of_counter = events.append, counter.name
        tools_tokens = count(docs)
        instructions_tokens, user_tokens = count(instructions) - tools_tokens, count(messages[1].parts[0].text)
        model_tokens = observations_tokens = 0
        model, sent, sent_digest = Instant(replies), {}, Digests()
        for step in range(1, STEPS + 6):
            digest = sent_digest(messages)  # what is sent, kept by its digest, as the loop keeps it
            sent[digest] = messages[:]
            append({"type": "context", "policy": "full",
                    "tokens": {"instructions": instructions_tokens, "tools": tools_tokens, "user": user_tokens,
                               "model": model_tokens, "observations": observations_tokens, "notes": 0, "markers": 0},
                    "counter": name_of_counter, "sent": digest, "t": (clock() - started) // 1_000_000 / 1000})
            window = model.window if model.backend != "local" else None
            if window and (instructions_tokens + tools_tokens + user_tokens + model_tokens
                           + observations_tokens) > window:
                raise SystemExit("the context fits the window on this task")
            if check:
                contexts.append(list(messages))
            reply = model.generate(messages, ["\nObservation"])
            append({"type": "usage", "purpose": "step", "input_tokens": reply.input_tokens,
                           "output_tokens": reply.output_tokens, "thoughts_tokens": reply.thoughts_tokens,
                           "t": (clock() - started) // 1_000_000 / 1000})
            raw = reply.text
            text = (raw[:raw.find("\nObservation")] if "\nObservation" in raw else raw).rstrip()[:REPLY_LIMIT]
            append({"type": "reply", "step": step, "text": text, "raw": raw[:REPLY_LIMIT], "blocked": reply.blocked,
                           "t": (clock() - started) // 1_000_000 / 1000})
            part = Part("reply", text or "(empty reply)", said=text)
            messages.append(Message("model", (part,)))
            model_tokens += count(part.text)
            thought, action, answer = parse_reply(text)
            if thought is not None:
                append({"type": "thought", "step": step, "text": thought, "t": (clock() - started) // 1_000_000 / 1000})
            if answer is not None:
                append({"type": "answer", "step": step, "text": answer, "t": (clock() - started) // 1_000_000 / 1000})
                append({"type": "stop", "reason": "answer", "answer": answer,
                        "t": (clock() - started) // 1_000_000 / 1000})
                return summarise(events), events
            append({"type": "action", "step": step, "text": action, "t": (clock() - started) // 1_000_000 / 1000})
            if len(action) > MAX_ACTION_CHARS:
                raise SystemExit("every action is short on this task")
            call = ast.parse(action.strip(), mode="eval").body
            if (type(call) is not ast.Call or type(call.func) is not ast.Name or call.keywords
                    or call.func.id not in tools):
                raise SystemExit("every action calls a tool by position on this task")
            arguments, tool = {}, call.func.id
            if len(call.args) != len(annotations[tool]):
                raise SystemExit("every call gives each parameter on this task")
            for (name, annotation), node in zip(annotations[tool], call.args):
                value = node.value if type(node) is ast.Constant else ast.literal_eval(node)
                if annotation is float and (type(value) not in (int, float) or value != value or abs(value) > largest):
                    raise SystemExit("every argument is a number on this task")
                arguments[name] = value
            key = f"{tool}({', '.join(f'{name}={value!r}' for name, value in arguments.items())})"
            repeats = 0
            for event in reversed(events):
                kind = event["type"]
                if kind == "question" or kind == "observation" and event.get("call") != key:
                    break
                repeats += kind == "observation"
            if repeats >= 3:
                raise SystemExit("no action repeats on this task")
            observation = str(tools[tool](**arguments))[:RECORD_LIMIT]
            append({"type": "observation", "step": step, "text": observation, "call": key,
                           "t": (clock() - started) // 1_000_000 / 1000})
            part = Part("observation", f"Observation{step}: {observation[:2000]}")  # every observation is short here
            messages.append(Message("user", (part,)))
            observations_tokens += count(part.text)
            unreadable = 0
            for event in reversed(events):
                kind = event["type"]
                if kind == "question" or kind == "action":
                    break
                unreadable += kind == "reply"
            if unreadable >= 3:
                raise SystemExit("every reply is readable on this task")
        raise SystemExit("the inlined loop did not answer")

    if check:
        from agent import TinyReAct

        class Recording(Instant):
            def generate(self, messages, stop, **options):
                seen.append(list(messages))
                return super().generate(messages, stop)

        seen = []
        agent = TinyReAct(Recording(replies), tools=seed, ttl=STEPS + 5)
        result = agent.query(question)
        counts, events = run_once()
        untimed = lambda trace: [{k: v for k, v in event.items() if k != "t"} for event in trace]  # noqa: E731
        if untimed(events) != untimed(agent.trace.events) or contexts != seen:
            raise SystemExit("the inlined loop's trace or contexts differ from TinyReAct's: it is not the same work")
        if (counts["steps"], counts["context"]) != (result.steps, result.context):
            raise SystemExit("the inlined loop's counts differ from TinyReAct's")
        contexts.clear()
    return run_once


def bare_run():
    """One run of the least a text ReAct loop must do at each step: find the Action, parse it, call the tool."""
    import ast

    seed = seed_tools()

    tools = {tool.__name__: tool for tool in seed}

    def run_once():
        for text in REPLIES[:-1]:
            call = ast.parse(text.partition("Action: ")[2], mode="eval").body
            tools[call.func.id](*[ast.literal_eval(argument) for argument in call.args])

    return run_once


def wall(command: list[str], runs: int = 7) -> float:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def context_growth() -> list[tuple]:
    """(policy, calls, measured total, formula total, formula) for the 20-step run under each policy."""
    from agent import TinyReAct
    from models import ModelReply
    from policies import make_policy
    seed = seed_tools()

    class Scripted:
        """Replies one arithmetic action per step, then the answer; writes a short summary when compact asks."""
        name, backend, usage_source, window = "scripted", "bench", "none", None

        def __init__(self):
            self.replies = [f"Thought: add one more\nAction: add_numbers({n}, 1)" for n in range(1, STEPS + 1)]
            self.replies.append("Answer: done")

        def generate(self, messages, stop, **options):
            if len(messages) == 1 and messages[0].parts[0].kind == "request":
                return ModelReply("Added one to the running total at every step so far.")
            return ModelReply(self.replies.pop(0))

    def sizes(spec: str) -> list[int]:
        result = TinyReAct(Scripted(), tools=seed, ttl=STEPS + 5, policy=make_policy(spec)).query(
            "Add one twenty times, starting from 1.")
        assert result.answer == "done"
        return [sum(e["tokens"].values()) for e in result.trace if e["type"] == "context"]

    full = sizes("full")
    first, calls = full[0], len(full)
    step = (full[-1] - full[0]) / (calls - 1)  # tokens one step adds: its reply and its observation
    rows = [("full", calls, sum(full), round(calls * first + step * calls * (calls - 1) / 2),
             f"n·P + s·n(n−1)/2 with P={first}, s={step:.1f}: quadratic")]
    for spec, kept in [("window:4", 4), ("user-only:4", 4), ("pinned", 4)]:
        measured = sizes(spec)  # P is this policy's own first call: pinned's prompt also lists its note tools
        formula = sum(measured[0] + min(k, kept) * step for k in range(calls))
        rows.append((spec, len(measured), sum(measured), round(formula),
                     f"Σ P + min(k, {kept})·s with P={measured[0]}: linear once k > {kept}"))
    rows.append(("elide:2", calls, sum(sizes("elide:2")), rows[0][3],
                 "as full: every observation here is shorter than its placeholder"))
    compact = sizes("compact:1200")  # full history's context passes 1,200 tokens at about step 12
    rows.append(("compact:1200", len(compact), sum(compact), None,
                 f"summarised when over T=1,200: peak {max(compact):,}, last call {compact[-1]:,} "
                 "(summary calls not included)"))
    return rows


def loop_only() -> None:
    """Table 1 without the peers: the bare step, TinyReAct's work inline and TinyReAct, timed in turn."""
    inlined_run(check=True)
    bare, inlined, ours = per_step_ms(bare_run(), inlined_run(), tinyreact_run())
    print(f"bare step {bare:.3f} ms · inline {inlined:.3f} ms ({inlined / bare:.1f}×) · TinyReAct {ours:.3f} ms "
          f"({ours / bare:.1f}× the bare step, {ours / inlined:.1f}× its work inline)")


def protocols_only() -> None:
    """The loop's time a step in the text protocol and in the native one, with the bare step for scale."""
    bare, text, native = per_step_ms(bare_run(), tinyreact_run("text"), tinyreact_run("native"))
    print(f"bare step {bare:.3f} ms · text {text:.3f} ms ({text / bare:.1f}×) · native {native:.3f} ms "
          f"({native / bare:.1f}× the bare step, {native / text:.2f}× the text protocol)")


COUNTED_RUNS = 60  # runs of each whose instructions are counted, less those of none: the set-up cancels out
RUNS_OF = {"bare": bare_run, "inline": inlined_run, "tinyreact": tinyreact_run}


def instructions_only() -> None:
    """Table 1 in instructions a step, counted by callgrind, which does not wander with the machine's speed as time
    does: each of the three run COUNTED_RUNS times and none, in processes of their own, with one hash seed."""
    import shutil
    if shutil.which("valgrind") is None:
        sys.exit("--instructions counts with valgrind, which is not installed: apt-get install valgrind")
    counted = {}
    for name in RUNS_OF:
        totals = []
        for runs in (0, COUNTED_RUNS):
            done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                                   __file__, "--run", name, str(runs)], capture_output=True, text=True,
                                  env={**os.environ, "PYTHONHASHSEED": "0"})
            found = [line for line in done.stderr.splitlines() if "Collected :" in line]
            if done.returncode != 0 or not found:
                sys.exit(f"callgrind did not count the {name} runs: {done.stderr.strip()[-300:]}")
            totals.append(int(found[-1].split(":")[-1]))
        counted[name] = (totals[1] - totals[0]) / (COUNTED_RUNS * STEPS)
    bare, inlined, ours = counted.values()
    print(f"bare step {bare:,.0f} · inline {inlined:,.0f} ({inlined / bare:.2f}×) · TinyReAct {ours:,.0f} "
          f"({ours / bare:.2f}× the bare step, {ours / inlined:.2f}× its work inline) instructions a step")


def counted_runs(name: str, runs: int) -> None:
    """What --instructions counts: one run of `name` to warm it, then `runs` more."""
    run_once = RUNS_OF[name]()
    for _ in range(runs + 1):
        run_once()


def main() -> None:
    if sys.argv[1:] == ["--loop"]:
        return loop_only()
    if sys.argv[1:] == ["--instructions"]:
        return instructions_only()
    if sys.argv[1:2] == ["--run"] and len(sys.argv) == 4:
        return counted_runs(sys.argv[2], int(sys.argv[3]))
    if sys.argv[1:] == ["--protocols"]:
        return protocols_only()
    ensure_peers()
    from tokens import count_tokens, local_counter
    from prompts import render_instructions
    seed = seed_tools()

    peers_versions = subprocess.run([PEERS_PYTHON, "-m", "pip", "freeze"], capture_output=True, text=True).stdout
    print(f"TinyReAct benchmarks · {time.strftime('%Y-%m-%d')} · {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()} · peers: "
          + ", ".join(line for line in peers_versions.splitlines() if line.split("==")[0] in
                      ("smolagents", "langchain-classic", "langchain-core")))

    print(f"\n1. Loop overhead: {STEPS}-step task, instant fake model, median of {RUNS * 5} runs, the three timed in "
          "turn, in a new order each round", flush=True)
    inlined_run(check=True)  # fails unless it gives TinyReAct's trace and contexts exactly
    bare, inlined, ours = per_step_ms(bare_run(), inlined_run(), tinyreact_run())
    print(f"   {'bare text ReAct step (ast-parse the Action, literal_eval, call)':<64} {bare:8.3f} ms/step")
    print(f"   {'TinyReAct inlined: the same work in one function, no structure':<64} {inlined:8.3f} ms/step   "
          f"{inlined / bare:6.1f}× the bare step")
    print(f"   {'TinyReAct, full policy, no trace file':<64} {ours:8.3f} ms/step   {ours / bare:6.1f}× the bare step "
          f"(target ≤ 3×: {'met' if ours <= 3 * bare else 'MISSED'}), {ours / inlined:.1f}× its work inline")
    done = subprocess.run([PEERS_PYTHON, os.path.join(ROOT, "bench", "peers.py")], capture_output=True, text=True,
                          env={**os.environ, "BENCH_RUNS": str(RUNS)})
    if done.returncode != 0:
        sys.exit(f"the peers' benchmark failed:\n{done.stderr[-2000:]}")
    peers = json.loads(done.stdout)
    rows = [("TinyReAct", ours)] + [(f"{name} ({peers[key]['agent']})", peers[key]["per_step_ms"])
                                    for name, key in (("smolagents", "smolagents"), ("LangChain", "langchain"))]
    for name, ms in rows:
        print(f"   {name:<64} {ms:8.3f} ms/step   {ms / ours:6.1f}× TinyReAct")
    fastest = min(ms for _, ms in rows[1:])
    print(f"   target: at most 1/10 of the fastest peer ({fastest / 10:.3f} ms): "
          f"{'met' if ours <= fastest / 10 else 'MISSED'} ({fastest / ours:.1f}× faster than the fastest peer)")

    print("\n2. Start-up, fresh interpreter, median of 7", flush=True)
    interpreter = wall([sys.executable, "-c", "pass"])
    ours_help = wall([sys.executable, os.path.join(ROOT, "agent.py"), "--help"])
    imports = {name: wall([PEERS_PYTHON, "-c", statement]) for name, statement in PEER_IMPORTS.items()}
    print(f"   {'python -c pass (reference)':<64} {interpreter * 1000:8.0f} ms")
    print(f"   {'python agent.py --help':<64} {ours_help * 1000:8.0f} ms   {1:6.1f}×")
    for name, seconds in imports.items():
        print(f"   {name + ': ' + PEER_IMPORTS[name]:<64} {seconds * 1000:8.0f} ms   {seconds / ours_help:6.1f}×")
    lightest = min(imports.values())
    print(f"   target: --help under 1/3 of the lightest peer's import ({lightest / 3 * 1000:.0f} ms): "
          f"{'met' if ours_help < lightest / 3 else 'MISSED'}")

    print(f"\n3. First-call instruction tokens for the same eight tools, counted with the {local_counter().name}",
          flush=True)
    ours_text = render_instructions(seed)
    prompts = {
        "TinyReAct": (ours_text, f"Question: {QUESTION}"),
        "smolagents (system prompt + tool schemas)": (peers["smolagents"]["instructions"]
                                                      + peers["smolagents"]["tool_schemas"],
                                                      f"New task:\n{QUESTION}"),
        "LangChain (ReAct prompt before the question)": (peers["langchain"]["instructions"],
                                                         f"Question: {QUESTION}\nThought:"),
    }
    ours_tokens = count_tokens(ours_text)
    smol_tokens = count_tokens(prompts["smolagents (system prompt + tool schemas)"][0])
    for name, (instructions, question) in prompts.items():
        tokens = count_tokens(instructions)
        share = tokens / (tokens + count_tokens(question))
        print(f"   {name:<64} {tokens:8,} tokens  {tokens / ours_tokens:6.1f}×   {share:.0%} of a first call")
    print(f"   target: at most half of smolagents' ({smol_tokens // 2:,}): "
          f"{'met' if ours_tokens <= smol_tokens / 2 else 'MISSED'}")

    print(f"\n4. Context growth over the {STEPS}-step run (input tokens of every call, {local_counter().name})",
          flush=True)
    for spec, calls, measured, formula, how in context_growth():
        against = f"formula {formula:9,} ({measured / formula:.2f}×)" if formula else f"{'':27}"
        print(f"   {spec:<12} {calls:3} calls {measured:9,} tokens   {against}   {how}")


if __name__ == "__main__":
    main()
