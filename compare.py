"""Comparing context policies on the same work, so that only the policy varies.

- Live (`compare_live`): one question, run once per policy with the same model. Tool results are taped on
  the first run and replayed to the others, keyed by tool and arguments; a miss calls the real tool and is
  counted, so the table can say so.
- Replay (`replay`): a recorded session (any `--trace` file). For every model call in it, each policy renders
  what it would have sent given the same recorded replies (teacher forcing). Static: sizes, the tokens the
  session would have billed, peak context, buckets, invariant violations, and whether each planted fact is
  still in the context at each probe point; no model needed. Probe (`probe`): ask each probe question against
  each policy's context, and against no history at all as a control, and score the answers.
"""
import functools
import json
import re
import statistics
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from agent import TinyReAct
from models import Model, ModelConfigError
from policies import Meter, make_policy
from policies.full import FullHistory
from policies.invariants import violations
from replies import STOP_SEQUENCES, cut_at_observation, parse_reply
from tokens import TokenCounter, local_counter
from traces import Trace


def normalise(text: str) -> str:
    """Lower case, punctuation to spaces, spaces collapsed: for matching answers, not for showing them."""
    return " ".join(re.sub(r"[^\w.]+|(?<!\d)\.|\.(?!\d)", " ", text.casefold()).split())


def matches(answer: str | None, expected: str) -> bool:
    """A normalised substring match on whole words: "47" matches "It is 47." but not "470"."""
    return answer is not None and f" {normalise(expected)} " in f" {normalise(answer)} "


# ---------------------------------------------------------------- live comparison

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


def compare_live(question: str, specs: Sequence[str], model: Model, tools: list[Callable], ttl: int = 8,
                 finish: bool = False, expect: str | None = None, repeat: int = 1, counter: TokenCounter | None = None,
                 trace_path: Callable[[str, int], str | None] = lambda spec, attempt: None,
                 progress: Callable[[str], None] = lambda text: None) -> Iterator[LiveRun]:
    """Run `question` once per policy (`repeat` times each) with the same model and the same tool results,
    yielding each run as it ends. `trace_path(spec, attempt)` names a trace file for each run, or None for none."""
    tape = ToolTape()
    taped = [tape.wrap(tool) for tool in tools]
    for number, (spec, attempt) in enumerate([(s, a) for s in specs for a in range(repeat)], 1):
        progress(f"{spec}{f' (run {attempt + 1} of {repeat})' if repeat > 1 else ''} · {number} of {len(specs) * repeat}")
        before = tape.live_calls
        trace = Trace(trace_path(spec, attempt), meta={"policy": spec, "model": model.name, "backend": model.backend})
        try:
            agent = TinyReAct(model, tools=taped, ttl=ttl, policy=make_policy(spec), trace=trace, counter=counter)
            result = agent.query(question, finish=finish)
        finally:
            trace.close()
        if isinstance(result.error, ModelConfigError):
            raise result.error  # a rejected key fails every run the same way: stop at the first
        yield LiveRun(
            agent.policy.name, result.answer, result.stop_reason.value, result.steps, result.model_calls,
            result.usage.input_tokens, result.usage.output_tokens, result.context.peak, round(result.seconds, 2),
            tape.live_calls - before if number > 1 else 0, matches(result.answer, expect) if expect else None)


def summarise_runs(runs: list[LiveRun]) -> list[dict]:
    """One row per policy: medians of the numbers with their range over repeats, answers and correctness."""
    rows = []
    for policy in dict.fromkeys(run.policy for run in runs):
        group = [run for run in runs if run.policy == policy]
        row = {"policy": policy, "runs": len(group), "answers": sorted({str(run.answer) for run in group}),
               "stop_reasons": sorted({run.stop_reason for run in group})}
        for name in ("steps", "model_calls", "input_tokens", "peak_context", "output_tokens", "seconds", "live_tool_calls"):
            values = [getattr(run, name) for run in group]
            row[name] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        if group[0].correct is not None:
            row["correct"] = sum(run.correct for run in group)
        rows.append(row)
    return rows


# ---------------------------------------------------------------- replay

@dataclass
class PolicyReplay:
    policy: str
    measured: bool = True
    note: str = ""
    sizes: list[int] = field(default_factory=list)  # local tokens of the context at each call
    buckets: dict = field(default_factory=dict)
    violations: int = 0
    facts: dict = field(default_factory=dict)  # fact id -> {probe point: True, False, or None (not stated yet)}

    @property
    def total(self) -> int:
        return sum(self.sizes)

    @property
    def peak(self) -> int:
        return max(self.sizes, default=0)


def call_points(events: Sequence[dict]) -> list[int]:
    """The trace index of every reasoning call's reply: the context of that call is everything before it."""
    return [i for i, event in enumerate(events) if event["type"] == "reply"]


def probe_points(header: dict, points: list[int]) -> list[int]:
    """The call numbers the header names for probing; the session's last call if it names none."""
    return header.get("probe_points") or [len(points)]


def stated(fact: dict, events: Sequence[dict]) -> bool:
    return any(fact["text"] in str(event.get("text", "")) for event in events)


def unmeasurable(policy, events: Sequence[dict]) -> bool:
    """True for compact without recorded summaries: replaying it would need a model to write them."""
    return policy.needs_summaries and not any(event["type"] == "summary" for event in events)


def replay(header: dict, events: Sequence[dict], specs: Sequence[str], counter: TokenCounter | None = None) -> list[PolicyReplay]:
    """Static replay: what each policy would have sent at every call of the recorded session."""
    counter = counter or local_counter()
    points = call_points(events)
    probing = probe_points(header, points)
    facts = header.get("facts", [])
    reports = []
    for spec in specs:
        policy = make_policy(spec)
        report = PolicyReplay(policy.name)
        if unmeasurable(policy, events):
            report.measured, report.note = False, "not measured: needs a model to write its summaries, and the trace has none"
            reports.append(report)
            continue
        measure = Meter(counter.count)
        for number, index in enumerate(points, 1):
            prefix = events[:index]
            messages = policy.render(prefix)
            docs = next((e.get("tools", "") for e in reversed(prefix) if e["type"] == "instructions"), "")
            counts = measure(messages, docs)
            report.sizes.append(sum(counts.values()))
            for bucket, count in counts.items():
                report.buckets[bucket] = report.buckets.get(bucket, 0) + count
            report.violations += len(violations(messages, prefix))
            if number in probing:
                context = "\n".join(message.text for message in messages)
                for fact in facts:
                    report.facts.setdefault(fact["id"], {})[number] = (fact["text"] in context) if stated(fact, prefix) else None
        reports.append(report)
    return reports


def probe(header: dict, events: Sequence[dict], specs: Sequence[str], model: Model,
          progress: Callable[[str], None] = lambda text: None, scores: dict | None = None) -> dict:
    """Ask every phrasing of every probe at every probe point where its fact has been stated, against each policy's
    context and against no history ("closed book"). Returns {policy: {probe id: [correct, asked]}}, filled into
    `scores` as the answers come, so that a caller interrupted midway keeps what was asked."""
    points = call_points(events)
    facts = {fact["id"]: fact for fact in header.get("facts", [])}
    instructions = next(e for e in events if e["type"] == "instructions")
    contexts = {policy.name: policy for policy in map(make_policy, specs)}
    scores = scores if scores is not None else {}
    scores.update({name: {} for name in ["closed book", *contexts]})
    for number in probe_points(header, points):
        prefix = events[: points[number - 1]] if 1 <= number <= len(points) else list(events)
        for item in header.get("probes", []):
            fact = facts.get(item["fact"])
            if fact and not stated(fact, prefix):
                continue
            for phrasing in item["questions"]:
                asked = {"type": "question", "text": phrasing}
                for name in scores:
                    progress(f"probe {item['id']} at call {number} · {name}")
                    if name == "closed book":
                        messages = FullHistory().render([instructions, asked])
                    elif unmeasurable(contexts[name], prefix):
                        continue
                    else:
                        messages = contexts[name].render([*prefix, asked])
                    reply = model.generate(messages, STOP_SEQUENCES)
                    text = cut_at_observation(reply.text)
                    answer = parse_reply(text).answer or text
                    tally = scores[name].setdefault(item["id"], [0, 0])
                    tally[0] += matches(answer, item["answer"])
                    tally[1] += 1
    return scores
