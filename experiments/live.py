"""Live comparison: one question, run once per policy (and per protocol: text, native) with the same model. Tool
results are taped on the first run and replayed to the others, keyed by tool and arguments; a miss calls the real
tool and is counted, so the table can say so."""
import functools
import json
import statistics
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from agent import DEFAULT_TTL, TinyReAct
from experiments import warn as _warn
from experiments.facts import matches
from results import unreadable_replies
from models import Model, ModelConfigError
from policies import make_policy
from protocols import make_protocol
from tokens import TokenCounter
from traces import Trace


class ToolTape:
    """Tool results recorded on first use and replayed after, keyed by tool name and arguments."""

    def __init__(self):
        self.results: dict[tuple, object] = {}
        self.live_calls = 0  # calls that ran the real tool after the first run: cache misses

    def wrap(self, tool: Callable) -> Callable:
        @functools.wraps(tool)  # keeps the signature and docstring, so the prompt is unchanged
        def taped(*args, **kwargs):
            key = (tool.__name__, json.dumps([args, kwargs], sort_keys=True, default=repr))
            if key not in self.results:
                self.live_calls += 1
                self.results[key] = tool(*args, **kwargs)
            return self.results[key]
        return taped


@dataclass
class LiveRun:
    policy: str
    answer: str | None
    stop_reason: str
    steps: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    peak_context: int
    seconds: float
    live_tool_calls: int  # after the first run, each one is a cache miss
    correct: bool | None = None
    cached_input_tokens: int = 0  # of input_tokens, what the service served from its prompt cache
    cost: float | None = None  # US dollars at list price (models/prices.json); None when the model has none
    protocol: str = "text"
    unreadable: int = 0  # replies with neither a call nor an answer


def compare_live(question: str, specs: Sequence[str], model: Model, tools: list[Callable], ttl: int = DEFAULT_TTL,
                 finish: bool = False, expect: str | None = None, repeat: int = 1, counter: TokenCounter | None = None,
                 trace_path: Callable[[str, int], str | None] = lambda name, attempt: None,
                 progress: Callable[[str], None] = lambda text: None,
                 traces: list | None = None,
                 warn: Callable[[str], None] = _warn, protocols: Sequence[str] = ("text",),
                 sent: dict | None = None) -> Iterator[LiveRun]:
    """Run `question` once per policy and protocol (`repeat` times each) with the same model and the same tool
    results, yielding each run as it ends. `trace_path(name, attempt)` names a trace file for each run from its
    policy's name (and its protocol's, when there are several), or None for none; a trace file that cannot be
    written is said through `warn`, once, and its run goes on. Each run's (header, events) is appended to `traces`
    when given, and what each of its calls sent is put in `sent` (by digest, Trace.sent)."""
    for speaking in protocols:  # a model that cannot speak one is refused before any run is made
        make_protocol(speaking).check(model)
    tape = ToolTape()
    taped = [tape.wrap(tool) for tool in tools]
    arms = [(s, p, a) for s in specs for p in protocols for a in range(repeat)]
    for number, (spec, speaking, attempt) in enumerate(arms, 1):
        progress(f"{spec}{f' · {speaking}' if len(protocols) > 1 else ''}"
                 f"{f' (run {attempt + 1} of {repeat})' if repeat > 1 else ''} · {number} of {len(arms)}")
        before = tape.live_calls
        policy = make_policy(spec)
        # Named by the policy's own name, not the spec as typed: window:٢ and window:٣ are window:2 and window:3.
        meta = {"policy": policy.name, "model": model.name, "backend": model.backend, "temperature": model.temperature,
                "protocol": speaking}
        path = trace_path(arm_name(policy.name, speaking, protocols), attempt)
        try:
            trace = Trace(path, meta=meta, on_error=warn, sent=sent)
        except OSError as problem:  # the runs before this one are kept: this one runs, unrecorded
            warn(f"cannot write the trace file {path}: {problem.strerror or problem}; this run is not recorded")
            trace = Trace(None, meta=meta, sent=sent)
        try:
            agent = TinyReAct(model, tools=taped, ttl=ttl, policy=policy, trace=trace, counter=counter,
                              protocol=make_protocol(speaking))
            result = agent.query(question, finish=finish)
        finally:
            trace.close()
            if traces is not None:
                traces.append((meta, list(trace.events)))
        if isinstance(result.error, ModelConfigError):
            raise result.error  # a rejected key fails every run the same way: stop at the first
        yield LiveRun(
            agent.policy.name, result.answer, result.stop_reason.value, result.steps, result.model_calls,
            result.usage.input_tokens, result.usage.output_tokens, result.context.peak, round(result.seconds, 2),
            tape.live_calls - before if number > 1 else 0, matches(result.answer, expect) if expect else None,
            result.usage.cached_input_tokens, result.cost.dollars if result.cost else None, speaking,
            unreadable_replies(result.trace))


def arm_name(policy: str, protocol: str, protocols: Sequence[str]) -> str:
    """A run's name in file names: its policy's, and its protocol's when a comparison has several."""
    return f"{policy}.{protocol}" if len(protocols) > 1 else policy


def summarise_runs(runs: list[LiveRun]) -> list[dict]:
    """One row per policy: medians of the numbers with their range over repeats, answers and correctness."""
    rows = []
    for policy, protocol in dict.fromkeys((run.policy, run.protocol) for run in runs):
        group = [run for run in runs if (run.policy, run.protocol) == (policy, protocol)]
        row = {"policy": policy, "protocol": protocol, "runs": len(group),
               "answers": sorted({str(run.answer) for run in group}),
               "stop_reasons": sorted({run.stop_reason for run in group})}
        for name in ("steps", "model_calls", "input_tokens", "peak_context", "output_tokens", "seconds",
                     "live_tool_calls", "unreadable"):
            values = [getattr(run, name) for run in group]
            row[name] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        if group[0].correct is not None:
            row["correct"] = sum(run.correct for run in group)
        costs = [run.cost for run in group]
        if None not in costs:
            row["cost"] = {"median": statistics.median(costs), "min": min(costs), "max": max(costs)}
        cached = [run.cached_input_tokens for run in group]
        row["cached_input_tokens"] = {"median": statistics.median(cached), "min": min(cached), "max": max(cached)}
        rows.append(row)
    return rows
