"""Comparing context policies on the same work, so that only the policy varies.

- Live (`compare_live`): one question, run once per policy with the same model. Tool results are taped on
  the first run and replayed to the others, keyed by tool and arguments; a miss calls the real tool and is
  counted, so the table can say so.
- Replay (`replay`): a recorded session (any `--trace` file). For every model call in it, each policy renders
  what it would have sent given the same recorded replies (teacher forcing). Static: sizes, the tokens the
  session would have billed (summary calls included), peak context, buckets per call, invariant violations,
  and the state of each planted fact at each probe point (kept, gone, cut by the observation cap, or not
  stated yet); no model needed, except to write the summaries compact:T asks for (`Summaries`).
- Probe (`probe`): ask each fact's phrasings at each probe point against each policy's context and two
  controls (closed book: no history; facts only: a short prompt holding just the facts stated so far), keep
  every answer and classify it (correct, distractor, stale, refusal, other).

Facts and probe points come from a facts file (`load_facts`, see conversations/README.md) or, for older
traces, from the trace's header. Everything returned is a plain dataclass or dict, for the report formats.
"""
import contextlib
import functools
import hashlib
import json
import math
import os
import re
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from agent import TinyReAct
from models import Message, Model, ModelConfigError
from policies import Meter, make_policy
from policies.full import FullHistory
from policies.invariants import violations
from policies.rendering import OBSERVATION_LIMIT, cap
from replies import STOP_SEQUENCES, cut_at_observation, parse_reply
from tokens import TokenCounter, local_counter
from traces import SURROGATE, Trace, as_text, read_json

# Context windows of the models this project knows, in tokens: a context larger than this cannot be sent whole.
CONTEXT_WINDOWS = {"qwen2.5-coder-0.5b": 32_768, "gemma-3-270m": 32_768, "gemini": 1_048_576}


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


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def compare_live(question: str, specs: Sequence[str], model: Model, tools: list[Callable], ttl: int = 8,
                 finish: bool = False, expect: str | None = None, repeat: int = 1, counter: TokenCounter | None = None,
                 trace_path: Callable[[str, int], str | None] = lambda name, attempt: None,
                 progress: Callable[[str], None] = lambda text: None,
                 traces: list | None = None,
                 warn: Callable[[str], None] = _warn) -> Iterator[LiveRun]:
    """Run `question` once per policy (`repeat` times each) with the same model and the same tool results,
    yielding each run as it ends. `trace_path(name, attempt)` names a trace file for each run from its policy's
    name, or None for none; a trace file that cannot be written is said through `warn`, once, and its run goes on.
    Each run's (header, events) is appended to `traces` when given."""
    tape = ToolTape()
    taped = [tape.wrap(tool) for tool in tools]
    for number, (spec, attempt) in enumerate([(s, a) for s in specs for a in range(repeat)], 1):
        progress(f"{spec}{f' (run {attempt + 1} of {repeat})' if repeat > 1 else ''} · {number} of {len(specs) * repeat}")
        before = tape.live_calls
        policy = make_policy(spec)
        # Named by the policy's own name, not the spec as typed: window:٢ and window:٣ are window:2 and window:3.
        meta = {"policy": policy.name, "model": model.name, "backend": model.backend}
        path = trace_path(policy.name, attempt)
        try:
            trace = Trace(path, meta=meta, on_error=warn)
        except OSError as problem:  # the runs before this one are kept: this one runs, unrecorded
            warn(f"cannot write the trace file {path}: {problem.strerror or problem}; this run is not recorded")
            trace = Trace(None, meta=meta)
        try:
            agent = TinyReAct(model, tools=taped, ttl=ttl, policy=policy, trace=trace, counter=counter)
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


# ---------------------------------------------------------------- facts and probe points

@dataclass
class Fact:
    """A planted fact: the text that must still be in a context, and how to probe for it."""
    id: str
    text: str  # the exact text looked for in each context
    gold: str | None = None  # the right answer to its probes; None: it is only looked for, not asked about
    distractors: list[str] = field(default_factory=list)  # wrong values planted to be confused with it
    stale: list[str] = field(default_factory=list)  # values it had before a correction
    phrasings: list[str] = field(default_factory=list)  # the probe questions
    statement: str = ""  # the fact in one sentence, for the facts-only control
    kind: str = ""  # where and how it was planted, in words


@dataclass
class ProbePoint:
    """A moment of the session at which facts are checked and asked about: after events[:index]."""
    label: str  # "turn 12 (call 31)"
    number: int  # what --probe-points selects: the turn (facts file) or the call (trace header)
    index: int


def load_facts(header: dict, path: str | None = None) -> tuple[list[Fact], dict]:
    """The facts, from a facts file when given (it overrides the header's), else from the trace header; and the
    probe points' declaration: {"turns": [...]} or {"calls": [...]}. Raises ValueError naming what is wrong."""
    if path:
        data = read_json(path, "a facts file")
        problem = _facts_file_problem(data)
        if not problem and SURROGATE.search(json.dumps(data, ensure_ascii=False)):
            problem = "it holds a lone surrogate (an escape like \\ud800), which is no text"
        if problem:
            raise ValueError(f"{path} is not a facts file: {problem} (see conversations/README.md)")
        facts = [Fact(**{"statement": item.get("statement") or item["text"], **item}) for item in data["facts"]]
        return facts, {"turns": data.get("probe_turns", [])}
    probes = {item["fact"]: item for item in header.get("probes", [])}
    facts = [Fact(fact["id"], fact["text"], probes.get(fact["id"], {}).get("answer"), kind=fact.get("kind", ""),
                  phrasings=probes.get(fact["id"], {}).get("questions", []), statement=fact["text"])
             for fact in header.get("facts", [])]
    return facts, {"calls": header.get("probe_points") or []}


def _facts_file_problem(data) -> str | None:
    """What is wrong with the shape of a facts file, in a few words; None when nothing is."""
    if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
        return "it needs a \"facts\" list"
    turns = data.get("probe_turns", [])
    if not isinstance(turns, list) or not all(type(turn) is int for turn in turns):
        return "\"probe_turns\" must be a list of whole numbers"
    known = {name for name in Fact.__dataclass_fields__}
    for number, item in enumerate(data["facts"], 1):
        if not isinstance(item, dict):
            return f"fact {number} is not an object"
        if set(item) - known:
            return f"fact {number} has fields it does not know: {', '.join(sorted(set(item) - known))}"
        for name in ("id", "text"):
            if not isinstance(item.get(name), str) or not item[name]:
                return f"fact {number} needs \"{name}\" as text"
        for name in ("gold", "statement", "kind"):
            if item.get(name) is not None and not isinstance(item[name], str):
                return f"fact {number}: \"{name}\" must be text"
        for name in ("distractors", "stale", "phrasings"):
            values = item.get(name, [])
            if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
                return f"fact {number}: \"{name}\" must be a list of texts"
    return None


def probe_points(declared: dict, events: Sequence[dict], outside: list[str] | None = None) -> list[ProbePoint]:
    """Where to probe. Turn N: in place of the N-th question (N one past the last: after the session). Call C (a
    trace header's points): just before the reply of model call C. With none declared: after the last call, if
    there is one. A point past the session (a trace cut short) raises ValueError, or is named in `outside`."""
    questions = [i for i, event in enumerate(events) if event["type"] == "question"]
    calls = call_points(events)
    points = []

    def beyond(problem: str) -> None:
        if outside is None:
            raise ValueError(problem)
        outside.append(problem)

    for turn in declared.get("turns", []):
        if not 1 <= turn <= len(questions) + 1:
            beyond(f"probe turn {turn} is outside the session's turns 1 to {len(questions) + 1}")
            continue
        index = questions[turn - 1] if turn <= len(questions) else len(events)
        points.append(ProbePoint(f"turn {turn} (call {sum(c < index for c in calls) + 1})", turn, index))
    for call in declared.get("calls", []) or ([] if declared.get("turns") or not calls else [len(calls)]):
        if not 1 <= call <= len(calls):
            beyond(f"probe call {call} is outside the session's calls 1 to {len(calls)}")
            continue
        index = calls[call - 1]
        points.append(ProbePoint(f"call {call} (turn {sum(q < index for q in questions)})", call, index))
    return points


def stated(fact: Fact, events: Sequence[dict]) -> bool:
    return any(fact.text in str(event.get("text", "")) for event in events)


def cut_on_record(events: Sequence[dict]) -> int:
    """Observations cut when they were recorded (traces of older versions cut at 2,000 characters; now only a
    result past the 100 kB safety cap): a fact in the part cut is missing from the trace itself."""
    return sum(1 for e in events if e["type"] == "observation" and "characters cut ...]" in e["text"])


def _question(text: str) -> dict:
    return {"type": "question", "text": text}


def fact_state(fact: Fact, prefix: Sequence[dict], contexts: list[str]) -> str:
    """kept (in every context), partly (in some), cut (gone because an observation stating it was shown cut),
    gone, or unstated (not said yet at this point)."""
    if not stated(fact, prefix):
        return "unstated"
    present = [fact.text in context for context in contexts]
    if all(present):
        return "kept"
    if any(present):
        return "partly"
    for event in prefix:
        if event["type"] == "observation" and fact.text in event["text"] and len(event["text"]) > OBSERVATION_LIMIT:
            shown = f"Observation{event['step']}: {cap(event['text'], OBSERVATION_LIMIT)}"
            if any(shown in context for context in contexts):
                return "cut"
    return "gone"


def context_window(model_name: str | None) -> int | None:
    """The context window of a model this project knows, by name or family; None when unknown."""
    name = model_name or ""
    return next((size for known, size in CONTEXT_WINDOWS.items() if name == known or name.startswith(known)), None)


# ---------------------------------------------------------------- replay

@dataclass
class PolicyReplay:
    """One policy over a recorded session. Token counts are local (the replay's counter)."""
    policy: str
    measured: bool = True
    note: str = ""  # why it is not measured, or where its summaries came from
    sizes: list[int] = field(default_factory=list)  # context tokens at each reasoning call
    calls: list[dict] = field(default_factory=list)  # each call's tokens by bucket (instructions, tools, user, ...)
    buckets: dict = field(default_factory=dict)  # the buckets summed over calls
    violations: int = 0
    facts: dict = field(default_factory=dict)  # fact id -> {probe point label: kept, partly, cut, gone or unstated}
    summary_calls: int = 0  # calls compact:T makes to write summaries; their tokens are in `total`
    summary_input: int = 0
    summary_output: int = 0
    over_window: int = 0  # calls whose context is larger than the model's window

    @property
    def total(self) -> int:
        """Input tokens over the session: every reasoning call's context and every summary call's request."""
        return sum(self.sizes) + self.summary_input

    @property
    def peak(self) -> int:
        return max(self.sizes, default=0)


def call_points(events: Sequence[dict]) -> list[int]:
    """The trace index of every reasoning call's reply: the context of that call is everything before it."""
    return [i for i, event in enumerate(events) if event["type"] == "reply"]


def probe_calls(points: list[ProbePoint], events: Sequence[dict]) -> dict[str, int]:
    """The call each probe point comes just before, numbered from 1, by the point's label (for charts)."""
    calls = call_points(events)
    return {point.label: sum(index < point.index for index in calls) + 1 for point in points}


class Summaries:
    """Where a replay gets the summaries compact:T asks for: written by `model` when there is one, and cached in a
    JSON file (`path`) keyed by the policy, the calls the summary covers, the model, and a digest of the request,
    so that a second replay costs nothing. Without a model, only the cache answers."""

    def __init__(self, model: Model | None = None, path: str | None = None, warn: Callable[[str], None] = _warn):
        """A cache file that cannot be read is said once through `warn` and set aside beside it, and a new one is
        started: it holds only what a model can write again, and a replay that needs none of it must not fail."""
        self.model, self.path = model, path
        self.cache: dict[str, dict] = {}
        if path and os.path.lexists(path):
            try:
                entries = json.loads(Path(path).read_text(encoding="utf-8"))
                problem = _cache_problem(entries)
            except OSError as error:  # a folder, no permission
                problem = error.strerror or str(error)
            except (ValueError, RecursionError) as error:  # not UTF-8, not JSON
                problem = f"not JSON in UTF-8: {error}"
            if problem is None:
                self.cache = {entry["key"]: entry for entry in entries}
            else:
                warn(f"the summaries cache {path} cannot be read ({problem}); {self._set_aside()}")

    def text(self, policy: str, calls: tuple[int, int], request: list[Message]) -> tuple[str | None, str]:
        """(the summary, "cached" or "written by MODEL"); (None, "") when there is no model and no cached one."""
        digest = hashlib.sha256("\n".join(m.text for m in request).encode()).hexdigest()[:16]
        for entry in self.cache.values():  # the same request: from this model if there is one, else from any
            if entry["policy"] == policy and entry["digest"] == digest and (not self.model or entry["model"] == self.model.name):
                return entry["text"], f"cached, by {entry['model']}"
        if self.model is None:
            return None, ""
        text = as_text(self.model.generate(request, []).text.strip())
        key = f"{policy} · calls {calls[0]}-{calls[1]} · {self.model.name} · {digest}"
        self.cache[key] = {"key": key, "policy": policy, "calls": list(calls), "model": self.model.name,
                           "digest": digest, "text": text}
        if self.path:
            self._write(json.dumps(list(self.cache.values()), ensure_ascii=False, indent=1) + "\n")
        return text, f"written by {self.model.name}"

    def _set_aside(self) -> str:
        """Move an unreadable cache file out of the way under a name of its own, keeping it; say what became of it."""
        if not os.path.isfile(self.path):
            return "it is not used"
        aside, number = f"{self.path}.unreadable", 1
        while os.path.lexists(aside):
            number += 1
            aside = f"{self.path}.unreadable{number}"
        try:
            os.replace(self.path, aside)
        except OSError:
            return "it is not used"
        return f"it is set aside as {aside}, and a new one started"

    def _write(self, text: str) -> None:
        """Write the cache whole or not at all: a write cut short (a full disk, `ulimit -f`) leaves the last one."""
        temporary = f"{self.path}.{os.getpid()}.tmp"  # in the same folder, so that os.replace is one rename
        try:
            with open(temporary, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _cache_problem(entries) -> str | None:
    """What is wrong with the shape of a summaries cache, in a few words; None when nothing is."""
    if not isinstance(entries, list):
        return "not a list of summaries"
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(name), str)
                                                  for name in ("key", "policy", "model", "digest", "text")):
            return f"summary {number} needs \"key\", \"policy\", \"model\", \"digest\" and \"text\" as text"
    return None


@dataclass
class Summarised:
    """A session as it would have been recorded under a policy that asks for summaries."""
    events: list[dict] | None  # None when a summary it asks for cannot be had
    position: list[int]  # where each recorded event (and the end) now sits
    calls: list[tuple[int, int, str]]  # each summary call: input tokens, output tokens, where its text came from


def summarised(policy, events: Sequence[dict], count: Callable[[str], int], summaries: Summaries | None) -> Summarised:
    """The recorded summaries taken out, and a summary put in wherever `policy` asks for one, before a call's context
    event, as the loop would. A recorded summary is reused where it answers exactly this policy's request (same
    policy, same range); others come from `summaries`."""
    recorded = {(e.get("policy"), e["upto"]): e["text"] for e in events if e["type"] == "summary"}
    base = [e for e in events if e["type"] != "summary"]
    asks_before, previous = set(), 0  # each call's first event: its context event, or its reply
    for index in call_points(base):
        asks_before.add(next((i for i in range(previous, index) if base[i]["type"] == "context"), index))
        previous = index + 1
    session, made, covered = [], [], 0
    for index, event in enumerate(base):
        if index in asks_before:
            request = policy.summary_request(session, count)
            if request is not None:
                upto, messages = request
                text, source = recorded.get((policy.name, upto)), "recorded"
                if text is None and summaries is not None:
                    replies = [e["type"] == "reply" for e in session]
                    calls = (sum(replies[:covered]) + 1, sum(replies[:upto]))
                    text, source = summaries.text(policy.name, calls, messages)
                if text is None:
                    return Summarised(None, [], made)
                made.append((sum(count(m.text) for m in messages), count(text), source))
                session.append({"type": "summary", "upto": upto, "text": text, "policy": policy.name})
                covered = upto
        session.append(event)
    at = {id(event): i for i, event in enumerate(session)}
    position = [len(session)]
    for event in reversed(events):  # a recorded summary taken out sits where the next event does
        position.insert(0, at.get(id(event), position[0]))
    return Summarised(session, position, made)


def replay(header: dict, events: Sequence[dict], specs: Sequence[str], counter: TokenCounter | None = None,
           facts: list[Fact] | None = None, points: list[ProbePoint] | None = None,
           summaries: Summaries | None = None, window: int | None = None) -> list[PolicyReplay]:
    """Static replay: what each policy would have sent at every call of the recorded session, and the state of each
    fact at each probe point. `facts` and `points` default to the trace header's."""
    counter = counter or local_counter()
    if facts is None:
        facts, declared = load_facts(header)
        points = probe_points(declared, events) if points is None else points
    points = points if points is not None else probe_points({}, events)
    reports = []
    for spec in specs:
        policy = make_policy(spec)
        report = PolicyReplay(policy.name)
        session, position = list(events), list(range(len(events) + 1))
        if policy.needs_summaries:
            made = summarised(policy, events, counter.count, summaries)
            if made.events is None:
                report.measured = False
                report.note = ("not measured: it asks for summaries the recording does not hold (none made under "
                               f"{policy.name}); give --model to write them, cached beside the trace")
                reports.append(report)
                continue
            session, position = made.events, made.position
            report.summary_calls = len(made.calls)
            report.summary_input = sum(tokens for tokens, _, _ in made.calls)
            report.summary_output = sum(tokens for _, tokens, _ in made.calls)
            sources = sorted({source for _, _, source in made.calls})
            report.note = f"{len(made.calls)} summaries: {', '.join(sources)}" if made.calls else ""
        measure = Meter(counter.count)
        for index in call_points(session):
            prefix = session[:index]
            messages = policy.render(prefix)
            docs = next((e.get("tools", "") for e in reversed(prefix) if e["type"] == "instructions"), "")
            counts = measure(messages, docs)
            report.sizes.append(sum(counts.values()))
            report.calls.append(counts)
            for bucket, count in counts.items():
                report.buckets[bucket] = report.buckets.get(bucket, 0) + count
            report.violations += len(violations(messages, prefix, policy.ordered))
        report.over_window = sum(size > window for size in report.sizes) if window else 0
        for point in points:
            prefix = session[:position[point.index]]
            for fact in facts:
                asked = fact.phrasings or [None]
                contexts = ["\n".join(m.text for m in policy.render(prefix if q is None else [*prefix, _question(q)]))
                            for q in asked]
                report.facts.setdefault(fact.id, {})[point.label] = fact_state(fact, prefix, contexts)
        reports.append(report)
    return reports


# ---------------------------------------------------------------- probe

VERDICTS = ["correct", "distractor", "stale", "refusal", "other"]
REFUSAL = re.compile(r"\b(?:don'?t know|do not know|not sure|cannot|can'?t|unable|no information|not (?:been )?"
                     r"(?:mentioned|provided|given|stated|specified)|does ?n[o']t (?:say|mention)|unknown|"
                     r"i (?:do not|don'?t) have|not available|no record)\b", re.IGNORECASE)
CONTROLS = ["closed book", "facts only"]


@dataclass
class ProbeAnswer:
    """One probe question asked once, and what came back."""
    condition: str  # a policy's name, or a control: "closed book" (no history), "facts only" (just the facts)
    point: str  # the probe point's label
    fact: str
    phrasing: int  # 1-based, in the fact's list
    repeat: int  # 1-based
    question: str
    answer: str  # the Answer line when there is one, else the whole reply
    verdict: str  # correct, distractor, stale, refusal or other (see classify)
    context_tokens: int  # local count of what was sent


def classify(answer: str, fact: Fact) -> str:
    """correct when the answer holds the gold value (whole words, normalised); else distractor or stale when it holds
    one of those known wrong values; else refusal when it says it does not know; else other."""
    if matches(answer, fact.gold or ""):
        return "correct"
    if any(matches(answer, value) for value in fact.distractors):
        return "distractor"
    if any(matches(answer, value) for value in fact.stale):
        return "stale"
    return "refusal" if REFUSAL.search(answer) else "other"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval for k successes in n trials (95% with the default z); (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def tally(answers: Sequence[ProbeAnswer], by: str) -> dict:
    """{condition: {point or fact: {"k", "n", "low", "high", and a count per verdict}}}, in the order first seen."""
    table: dict = {}
    for answer in answers:
        cell = table.setdefault(answer.condition, {}).setdefault(getattr(answer, by), dict.fromkeys(VERDICTS, 0))
        cell[answer.verdict] += 1
    for row in table.values():
        for cell in row.values():
            cell["n"] = sum(cell[v] for v in VERDICTS)
            cell["k"] = cell["correct"]
            cell["low"], cell["high"] = (round(x, 3) for x in wilson(cell["k"], cell["n"]))
    return table


def probe(events: Sequence[dict], specs: Sequence[str], model: Model, facts: list[Fact], points: list[ProbePoint],
          phrasings: int | None = None, repeat: int = 1, jobs: int = 1, summaries: Summaries | None = None,
          counter: TokenCounter | None = None, progress: Callable[[str], None] = lambda text: None,
          answers: list | None = None) -> list[ProbeAnswer]:
    """Ask each fact's first `phrasings` phrasings (all by default), `repeat` times, at every probe point where the
    fact has been stated, against each policy's context and the two controls. `jobs` calls run at once (for network
    backends; each keeps its own retry rules). Answers are appended to `answers` as they come, so that a caller
    interrupted midway keeps them; returned sorted. Raises ValueError, before any call, for a trace with no
    instructions (one cut short before its first model call): the probes are asked under its instructions."""
    counter = counter or local_counter()
    answers = answers if answers is not None else []
    instructions = next((e for e in events if e["type"] == "instructions"), None)
    if instructions is None:
        raise ValueError("the trace has no instructions to probe with: it holds no instructions event "
                         "(a trace cut short before its first model call has none)")
    sessions = {}
    for spec in specs:
        policy = make_policy(spec)
        made = summarised(policy, events, counter.count, summaries) if policy.needs_summaries else \
            Summarised(list(events), list(range(len(events) + 1)), [])
        if made.events is not None:  # a policy replay could not measure is not asked either
            sessions[policy.name] = (policy, made.events, made.position)
    tasks = []
    for point in points:
        prefix = events[:point.index]
        known = [fact for fact in facts if stated(fact, prefix)]
        for fact in known:
            if not fact.gold:
                continue
            for number, question in enumerate(fact.phrasings[:phrasings], 1):
                asked = _question(question)
                contexts = {"closed book": FullHistory().render([instructions, asked]),
                            "facts only": [Message.of("system", instructions["text"], "instructions"), Message.of(
                                "user", "Facts from earlier in the conversation:\n" + "\n".join(
                                    f"- {f.statement}" for f in known) + f"\n\nQuestion: {question}", "question")]}
                for name, (policy, session, position) in sessions.items():
                    contexts[name] = policy.render([*session[:position[point.index]], asked])
                for condition, messages in contexts.items():
                    for attempt in range(1, repeat + 1):
                        tasks.append((ProbeAnswer(condition, point.label, fact.id, number, attempt, question, "", "",
                                                  sum(counter.count(m.text) for m in messages)), messages, fact))

    def ask(task):
        answer, messages, fact = task
        text = as_text(cut_at_observation(model.generate(messages, STOP_SEQUENCES).text))
        answer.answer = parse_reply(text).answer or text
        answer.verdict = classify(answer.answer, fact)
        return answer

    if jobs <= 1:
        for number, task in enumerate(tasks, 1):
            progress(f"probe {number} of {len(tasks)} · {task[0].condition} · {task[0].fact} at {task[0].point}")
            answers.append(ask(task))
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(ask, task) for task in tasks]
            try:
                for number, future in enumerate(as_completed(futures), 1):
                    progress(f"probe {number} of {len(tasks)}, {jobs} at a time")
                    answers.append(future.result())
            except BaseException:  # Ctrl-C or a failed call: the calls not started are dropped, the answers kept
                for future in futures:
                    future.cancel()
                raise
    order = {condition: n for n, condition in enumerate([*CONTROLS, *sessions])}
    answers.sort(key=lambda a: (order.get(a.condition, 99), a.point, a.fact, a.phrasing, a.repeat))
    return answers
