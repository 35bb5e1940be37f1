"""Static replay: a recorded session (any `--trace` file). For every model call in it, each policy renders what it
would have sent given the same recorded replies (teacher forcing). Sizes, the tokens the session would have billed
(summary calls included), peak context, buckets per call, invariant violations, and the state of each planted fact
at each probe point (kept, gone, cut by the observation cap, or not stated yet); no model needed, except to write
the summaries a summarising policy asks for (`Summaries`: compact:T, the vendors' compaction)."""
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

from experiments import warn as _warn
from experiments.facts import Fact, ProbePoint, call_points, fact_state, load_facts, probe_points, question_event
from models import Message, Model
from policies import Meter, make_policy
from policies.invariants import Checker
from tokens import TokenCounter, local_counter
from files import read_json, write_whole
from traces import as_text, read_trace_file

# A service's prompt cache serves the start of a prompt that repeats the start of a recent one, from a minimum length
# that differs by provider and model (models/prices.json gives it per model, with its source). The replay counts, per
# call, the tokens of its context that repeat the previous call's from the start, part by part: a lower bound on
# what such a cache could serve.

# Context windows of the models this project knows, in tokens: a context larger than this cannot be sent whole.
CONTEXT_WINDOWS = {"qwen2.5-coder-0.5b": 32_768, "qwen2.5-coder-1.5b": 32_768, "gemma-3-270m": 32_768,
                   "gemini": 1_048_576}


def context_window(model_name: str | None) -> int | None:
    """The context window of a model this project knows, by name or family; None when unknown."""
    name = model_name or ""
    return next((size for known, size in CONTEXT_WINDOWS.items() if name == known or name.startswith(known)), None)


@dataclass
class PolicyReplay:
    """One policy over a recorded session. Token counts are local (the replay's counter)."""
    policy: str
    measured: bool = True
    note: str = ""  # why it is not measured, or where its summaries came from
    caveat: str = ""  # what this replay cannot show of the policy (notes the recorded model never pinned)
    sizes: list[int] = field(default_factory=list)  # context tokens at each reasoning call
    calls: list[dict] = field(default_factory=list)  # each call's tokens by bucket (instructions, tools, user, ...)
    buckets: dict = field(default_factory=dict)  # the buckets summed over calls
    violations: int = 0
    facts: dict = field(default_factory=dict)  # fact id -> {probe point label: kept, partly, cut, gone or unstated}
    summary_calls: int = 0  # calls a summarising policy makes to write summaries; their tokens are in `total`
    summary_input: int = 0
    summary_output: int = 0
    over_window: int = 0  # calls whose context is larger than the model's window
    repeated: list[int] = field(default_factory=list)  # at each call, tokens that repeat the previous call's prefix
    times: list[float] = field(default_factory=list)  # when each call was made, in seconds (call_times)
    not_to_keep: list[str] = field(default_factory=list)  # facts tracked but not to be kept (Fact.keep False)
    # a summarising policy's session with its summaries in, at its recorded times: what a later call follows
    summarised: list[dict] | None = field(default=None, repr=False)

    @property
    def total(self) -> int:
        """Input tokens over the session: every reasoning call's context and every summary call's request."""
        return sum(self.sizes) + self.summary_input

    @property
    def peak(self) -> int:
        return max(self.sizes, default=0)

    def cacheable(self, price) -> int:
        """Input tokens over the session that a prefix cache could serve under `price`'s rule: at each call, what
        repeats the previous call's start, when that is at least the rule's minimum and the cache still holds it."""
        return sum(hit for hit, _ in self._cached(price))

    def input_cost(self, price, cached: bool, from_call: int = 1) -> float:
        """The session's input tokens (summary calls included) at a model's list price, in dollars. With `cached`, by
        the price's caching rule, call by call, at the time each call was made: what repeats the previous call's start
        is read at the cached price when it is at least the minimum and the cache still holds it; the rest of a call
        that is at least the minimum is written to the cache, at the write price where the provider bills writes; a
        shorter call is not cached and costs the input price. Summary calls are priced as uncached. From call
        `from_call` on only (a fork's own calls): the calls before it fill the cache but are not counted, nor are
        summary calls."""
        if not cached:
            counted = self.total if from_call == 1 else sum(self.sizes[from_call - 1:])
            return counted * price.input / 1_000_000
        plain, served, written = self.summary_input if from_call == 1 else 0, 0, 0  # input, cached, write prices
        calls = list(zip(self.sizes, self._cached(price)))[from_call - 1:]
        for size, (hit, _) in calls:
            if size < price.minimum:
                plain += size
            else:
                served, written = served + hit, written + size - hit
        if price.write == price.input:  # no write billed: summed with the rest, so a cache never used costs the same
            plain, written = plain + written, 0
        return (plain * price.input + served * price.cached_input + written * price.write) / 1_000_000

    def expired(self, price) -> int:
        """Calls whose repeated start the cache had already let go of when they were made."""
        return sum(cold for _, cold in self._cached(price))

    def _cached(self, price) -> list[tuple[int, bool]]:
        """At each call: the tokens read from the cache, and whether a repeated start long enough to be read had
        expired. A call at least the minimum long writes (or refreshes) its whole prompt in the cache; the prefix
        the next call repeats lives `price.lifetime` seconds after this call, and `price.longest` seconds after the
        call that first wrote it."""
        out, last, first = [], None, None  # when the previous call was made; when its prefix was first written
        times = self.times or [0.0] * len(self.sizes)  # a replay made before times were kept: no call is late
        for size, repeated, at in zip(self.sizes, self.repeated, times):
            long_enough = repeated >= price.minimum and last is not None
            warm = long_enough and at - last <= price.lifetime and at - first <= price.longest
            out.append((repeated if warm else 0, long_enough and not warm))
            if not warm:
                first = at
            last = at if size >= price.minimum else None
        return out


@dataclass(frozen=True)
class Pace:
    """Times for a session whose own are not a person's (a recording made in half a second): `question` seconds
    before each question's first call, `step` seconds before each call after it (--pace)."""
    question: float
    step: float = 0.0

    def said(self) -> dict:
        return {"question": self.question, "step": self.step}


MAX_PACE = 366 * 24 * 3600  # a year between two calls: past it, a pace is a typo


def parse_pace(text: str) -> Pace:
    """`--pace QUESTION[,STEP]` in seconds: 300 (five minutes before each question), 7200,2; ValueError says why not."""
    parts = text.split(",")
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        numbers = []
    if not 1 <= len(parts) <= 2 or len(numbers) != len(parts) or not all(0 <= n <= MAX_PACE for n in numbers):
        raise ValueError(f"--pace takes seconds before each question and, after a comma, before each later call "
                         f"(numbers from 0 to {MAX_PACE:,}, a year), as in 300 or 7200,2; got {text!r}")
    return Pace(*numbers)


def call_times(events: Sequence[dict]) -> list[float]:
    """When each reasoning call of `events` was made, in seconds by the trace's clock: its context event's `t` (else
    its reply's; a call recorded with no time is taken as made with the one before)."""
    times, previous = [], 0
    for index in call_points(events):
        made = next((e.get("t") for e in reversed(events[previous:index]) if e["type"] == "context"),
                    events[index].get("t"))
        known = type(made) in (int, float) and math.isfinite(made)
        times.append(float(made) if known else times[-1] if times else 0.0)
        previous = index + 1
    return times


def paced(events: Sequence[dict], pace: Pace) -> list[dict]:
    """The events with the times a person keeping `pace` would have made them at, from 0: each call `pace.question`
    seconds after the one before when a question came between them, else `pace.step`."""
    times, previous = [], 0
    for index in call_points(events):
        gap = pace.question if any(e["type"] == "question" for e in events[previous:index]) else pace.step
        times.append(times[-1] + gap if times else 0.0)
        previous = index + 1
    return timed(events, times)


def timed(events: Sequence[dict], times: Sequence[float]) -> list[dict]:
    """The events with each call made at its time in `times` (seconds, one a call): every event at the time of the
    call it leads to, those after the last call at the last call's."""
    out, calls = [], iter(zip(times, call_points(events)))
    at, upto = next(calls, (0.0, len(events)))
    for index, event in enumerate(events):
        while index > upto:
            at, upto = next(calls, (at, len(events)))
        out.append({**event, "t": at})
    return out


def probe_calls(points: list[ProbePoint], events: Sequence[dict]) -> dict[str, int]:
    """The call each probe point comes just before, numbered from 1, by the point's label (for charts)."""
    calls = call_points(events)
    return {point.label: sum(index < point.index for index in calls) + 1 for point in points}


class Summaries:
    """Where a replay gets the summaries a summarising policy asks for: written by `model` when there is one, and
    cached in a JSON file (`path`) keyed by the policy, the calls the summary covers, the model, and a digest of the
    request, so that a second replay costs nothing. Without a model, only the cache answers."""

    def __init__(self, model: Model | None = None, path: str | None = None, warn: Callable[[str], None] = _warn):
        """A cache file that cannot be read is said once through `warn` and set aside beside it, and a new one is
        started: it holds only what a model can write again, and a replay that needs none of it must not fail."""
        self.model, self.path = model, path
        self.cache: dict[str, dict] = {}
        if path and os.path.lexists(path):
            try:  # within bounds: a FIFO would block, /dev/zero never end
                entries = read_json(path, "a summaries cache")
                problem = _cache_problem(entries)
            except OSError as error:  # a folder, no permission
                problem = error.strerror or str(error)
            except ValueError as error:  # not a regular file, too large, not JSON in UTF-8
                problem = str(error).removeprefix(f"{path} is not a summaries cache: ")
            if problem is None:
                self.cache = {entry["key"]: entry for entry in entries}
            else:
                warn(f"the summaries cache {path} cannot be read ({problem}); {self._set_aside()}")
            if os.path.exists(path) and not os.path.isfile(path):  # a folder, a device or a pipe: not written either
                self.path = None

    def text(self, policy: str, calls: tuple[int, int], request: list[Message]) -> tuple[str | None, str]:
        """(the summary, "cached" or "written by MODEL"); (None, "") when there is no model and no cached one."""
        digest = hashlib.sha256("\n".join(m.text for m in request).encode()).hexdigest()[:16]
        for entry in self.cache.values():  # the same request: from this model if there is one, else from any
            if (entry["policy"] == policy and entry["digest"] == digest
                    and (not self.model or entry["model"] == self.model.name)):
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
        write_whole(self.path, text.encode("utf-8"))


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
    session, made = [], []
    for index, event in enumerate(base):
        if index in asks_before:
            try:
                due = summary_before(policy, session, count, summaries, recorded)
            except LookupError:
                return Summarised(None, [], made)
            if due:
                session.append(due[0])
                made.append(due[1])
        session.append(event)
    at = {id(event): i for i, event in enumerate(session)}
    position = [len(session)]
    for event in reversed(events):  # a recorded summary taken out sits where the next event does
        position.insert(0, at.get(id(event), position[0]))
    return Summarised(session, position, made)


def summary_before(policy, session: Sequence[dict], count: Callable[[str], int], summaries: Summaries | None,
                   recorded: dict | None = None) -> tuple[dict, tuple[int, int, str]] | None:
    """The summary `policy` asks for before the call made right after `session`, if one is due: its event, and the
    call that wrote it (input tokens, output tokens, where its text came from). From the recording where it answers
    this very request (same policy, same range), else from `summaries`; LookupError when neither has it."""
    request = policy.summary_request(session, count)
    if request is None:
        return None
    upto, messages = request
    text, source = (recorded or {}).get((policy.name, upto)), "recorded"
    if text is None and summaries is not None:
        replies = [e["type"] == "reply" for e in session]
        covered = next((e["upto"] for e in reversed(session) if e["type"] == "summary"), 0)
        text, source = summaries.text(policy.name, (sum(replies[:covered]) + 1, sum(replies[:upto])), messages)
    if text is None:
        raise LookupError(f"{policy.name} asks for a summary that is not to be had")
    return ({"type": "summary", "upto": upto, "text": text, "policy": policy.name},
            (sum(count(m.text) for m in messages), count(text), source))


def repeated_prefix(before: list[Message], messages: list[Message], count: Callable[[str], int]) -> int:
    """Tokens at the start of `messages` that repeat the start of `before`, part by part (the role and the text of
    each part the same, in the same place)."""
    old = [(m.role, p.text) for m in before for p in m.parts]
    tokens = 0
    for number, (role, text) in enumerate((m.role, p.text) for m in messages for p in m.parts):
        if number >= len(old) or old[number] != (role, text):
            break
        tokens += count(text)
    return tokens


def replay(header: dict, events: Sequence[dict], specs: Sequence[str], counter: TokenCounter | None = None,
           facts: list[Fact] | None = None, points: list[ProbePoint] | None = None,
           summaries: Summaries | None = None, window: int | None = None,
           pace: Pace | None = None) -> list[PolicyReplay]:
    """Static replay: what each policy would have sent at every call of the recorded session, and the state of each
    fact at each probe point. `facts` and `points` default to the trace header's; the calls are made at the trace's
    own times, or at `pace`."""
    counter = counter or local_counter()
    if facts is None:
        facts, declared = load_facts(header)
        points = probe_points(declared, events) if points is None else points
    points = points if points is not None else probe_points({}, events)
    reports = []
    for spec in specs:
        policy = make_policy(spec)
        report = PolicyReplay(policy.name, caveat=policy.replay_caveat(events),
                              not_to_keep=[fact.id for fact in facts if not fact.keep])
        session, position = list(events), list(range(len(events) + 1))
        if policy.needs_summaries:
            made = summarised(policy, events, counter.count, summaries)
            if made.events is None:
                report.measured = False
                report.note = ("not measured: it asks for summaries the recording does not hold (none made under "
                               f"{policy.name}); give a summarizer (--summarizer) to write them")
                reports.append(report)
                continue
            session, position = made.events, made.position
            report.summarised = session
            report.summary_calls = len(made.calls)
            report.summary_input = sum(tokens for tokens, _, _ in made.calls)
            report.summary_output = sum(tokens for _, tokens, _ in made.calls)
            sources = sorted({source for _, _, source in made.calls})
            report.note = f"{len(made.calls)} summaries: {', '.join(sources)}" if made.calls else ""
        measure, check, previous, docs, read = Meter(counter.count), Checker(), [], ("", ""), 0
        session = paced(session, pace) if pace else session  # what a policy that reads the clock reads, too
        report.times = call_times(session)
        for index in call_points(session):
            prefix = session[:index]
            messages = policy.render(prefix)
            report.repeated.append(repeated_prefix(previous, messages, counter.count))
            previous = messages
            # the tools in force, looked for only among the events since the last call: their docs within the
            # instructions (text protocol), or the schemas sent beside them (native), as the loop measured them
            docs = next((("", json.dumps(e["schemas"], ensure_ascii=False)) if e.get("schemas") else
                         (e.get("tools", ""), "") for e in reversed(session[read:index])
                         if e["type"] == "instructions"), docs)
            read = index
            counts = measure(messages, *docs)
            report.sizes.append(sum(counts.values()))
            report.calls.append(counts)
            for bucket, count in counts.items():
                report.buckets[bucket] = report.buckets.get(bucket, 0) + count
            report.violations += len(check(messages, prefix, policy.ordered))
        report.over_window = sum(size > window for size in report.sizes) if window else 0
        over = sum(size > policy.budget for size in report.sizes) if policy.budget else 0
        if over:  # budget:T leaves out all it can; what it cannot leave out is the current turn
            report.note = "; ".join(filter(None, [report.note, (
                f"at {over} of {len(report.sizes)} calls the context was larger than {policy.budget:,} tokens: what it "
                "must show (the instructions, the current turn, the policies after it) was larger alone")]))
        for point in points:
            prefix = session[:position[point.index]]
            for fact in facts:
                asked = fact.phrasings or [None]
                contexts = ["\n".join(m.text for m in policy.render(prefix if q is None
                                                                    else [*prefix, question_event(q)]))
                            for q in asked]
                report.facts.setdefault(fact.id, {})[point.label] = fact_state(fact, prefix, contexts)
        reports.append(report)
    return reports


@dataclass
class Replayed:
    """A replay kept with what it replayed: its reports to read, and in Jupyter its page (views/notebook.py)."""
    header: dict = field(repr=False)
    events: list[dict] = field(repr=False)
    reports: list[PolicyReplay] = field(repr=False)
    counter: TokenCounter = field(repr=False)

    def __repr__(self) -> str:
        return (f"Replayed({self.header.get('title') or 'a recorded session'!r}: {len(self.events)} events, policies "
                f"{', '.join(report.policy for report in self.reports)})")


def replay_file(path: str, specs: Sequence[str], counter: TokenCounter | None = None) -> Replayed:
    """The replay of a trace file under `specs`, its planted facts and probe points as its header names them."""
    header, events = read_trace_file(path)
    counter = counter or local_counter()
    return Replayed(header, events, replay(header, events, specs, counter), counter)
