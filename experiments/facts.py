"""Planted facts and probe points: what must still be in a context, where to look for it, and whether it is.
Facts come from a facts file (see conversations/README.md) or, for older traces, from the trace's header."""
import json
import re
from dataclasses import dataclass, field
from typing import Sequence

from policies.rendering import observation_text
from files import read_json
from traces import SURROGATE


def normalise(text: str) -> str:
    """Lower case, punctuation to spaces, spaces collapsed, a minus sign kept with its number: for matching
    answers, not for showing them."""
    signed = re.sub(r"(?<![\w.])-(?=\d)", "minus", text.casefold())
    return " ".join(re.sub(r"[^\w.]+|(?<!\d)\.|\.(?!\d)", " ", signed).split())


def matches(answer: str | None, expected: str) -> bool:
    """A normalised substring match on whole words: "47" matches "It is 47." but not "470" or "-47"."""
    return answer is not None and f" {normalise(expected)} " in f" {normalise(answer)} "


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
    # False: tracked, but not to be kept (a distractor, a superseded value): where it is still in a context is shown,
    # and counted apart, never as recall; it is not asked about, nor given to the facts-only control
    keep: bool = True


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
        if not isinstance(item.get("keep", True), bool):
            return f"fact {number}: \"keep\" must be true or false"
        for name in ("distractors", "stale", "phrasings"):
            values = item.get(name, [])
            if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
                return f"fact {number}: \"{name}\" must be a list of texts"
    return None


def call_points(events: Sequence[dict]) -> list[int]:
    """The trace index of every reasoning call's reply: the context of that call is everything before it."""
    return [i for i, event in enumerate(events) if event["type"] == "reply"]


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


def question_event(text: str) -> dict:
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
        if event["type"] == "observation" and fact.text in event["text"]:
            shown = observation_text(event["step"], event["text"])  # as every policy shows it: cut when too long
            if shown != observation_text(event["step"], event["text"], None) and any(shown in c for c in contexts):
                return "cut"
    return "gone"
