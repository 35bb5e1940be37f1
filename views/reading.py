"""A trace read as its model calls: each call with what it caused and the events between them, the questions,
what the model was shown at each call, and what changed between two calls. The pages (views/pages/) and the spans
(views/telemetry.py) read a trace through this module, so neither imports the other.
"""
import json
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from models import Message
from models.sent import sent_digest
from policies import make_policy
from policies.elide import is_elided
from tokens import TokenCounter

NOTICES = ["retry", "config_fallback"]  # what a model backend reports during a call
SHOWN_ORDER = {"retry": 0, "config_fallback": 0, "thought": 1, "action": 2, "answer": 3, "reply": 4, "note": 5,
               "forget": 5, "approval": 5, "observation": 6, "error": 7, "usage": 8}


@dataclass
class Call:
    """One model call and what it caused: the reply, its parts, the tool run and its observation, notices, errors."""
    number: int  # counted from 1 over the whole trace, as replay counts them
    index: int  # where its context event is (or its reply, in a trace without context events)
    context: dict | None
    events: list[dict] = field(default_factory=list)

    def first(self, kind: str) -> dict | None:
        return next((event for event in self.events if event["type"] == kind), None)

    def shown(self) -> list[dict]:
        """Its events in the order a page shows them: what the model wrote, then what it caused, then the bill."""
        return sorted(self.events, key=lambda event: SHOWN_ORDER.get(event["type"], 5))


def timeline(events: Sequence[dict]) -> list:
    """The trace as the items a page shows in order: Calls, and the events between them (questions, summaries,
    resets, new instructions, the TTL's finish request). Event types this page does not know are left out."""
    items, call, number = [], None, 0
    for index, event in enumerate(events):
        kind = event["type"]
        if kind in ("question", "reset", "instructions", "finish", "summary") or (
                kind == "usage" and event.get("purpose") == "summary"):  # a summary call: shown with its summary
            call = None
            items.append(event)
            continue
        # A call begins at its context event; in a trace without them, at the usage or reply after a reply.
        if kind == "context" or (kind in ("usage", "reply") and (call is None or call.first("reply"))):
            number += 1
            call = Call(number, index, event if kind == "context" else None)
            items.append(call)
            if kind == "context":
                continue
        if kind in ("reply", "thought", "action", "answer", "observation", "usage", "note", "forget", "error",
                    "approval", *NOTICES):
            (call.events if call else items).append(event)
    return items


def questions(events: Sequence[dict]) -> list[tuple[int, int]]:
    """(start, end) of each question's events in the trace: from the question to the next question or reset."""
    return [(start, question_end(events, start)) for start, event in enumerate(events) if event["type"] == "question"]


def question_end(events: Sequence[dict], start: int) -> int:
    """Where the events of the question at `start` end: at the next question or reset, else the trace's end."""
    return next((i for i in range(start + 1, len(events)) if events[i]["type"] in ("question", "reset")), len(events))


def seconds(events: Sequence[dict]) -> float:
    times = [event["t"] for event in events if isinstance(event.get("t"), (int, float))]
    return max(times) - min(times) if times else 0.0


def counter_name(events: Sequence[dict], counter: TokenCounter) -> str:
    """The counter that made the trace's counts, as its context events say; else the one given."""
    return next((event["counter"] for event in events if event["type"] == "context" and event.get("counter")),
                counter.name)


class Contexts:
    """What the model was shown at each call: what the run sent, where it is at hand (`sent`, the live run's
    Trace.sent, by the digest each context event records), else rebuilt with the policy each context event names,
    and checked against that digest (`differs`). One policy object per name, so that rendering stays incremental
    along the trace."""

    def __init__(self, events: Sequence[dict], sent: Mapping[str, list[Message]] | None = None):
        self.events, self.policies, self.sent = list(events), {}, sent or {}
        self.instructions: list[int] | None = None  # where the instructions events are, found once when needed
        self.differs: set[int] = set()  # the calls (by their context event's index) whose rebuilt context is not
        # what the trace says was sent: a policy changed since the run, or events that begin mid-session

    def at(self, call: Call) -> list[Message] | None:
        name = call.context["policy"] if call.context else None
        if name is None:
            return None
        digest = call.context.get("sent")
        if digest in self.sent:
            return self.sent[digest]
        messages = self._rebuilt(name, call.index)
        if digest is not None and messages is not None and sent_digest(messages, self._schemas(call.index)) != digest:
            self.differs.add(call.index)
        return messages

    def _rebuilt(self, name: str, index: int) -> list[Message] | None:
        if name not in self.policies:
            try:
                self.policies[name] = make_policy(name)
            except ValueError:  # a policy this version does not have: its counts are still in the trace
                self.policies[name] = None
        policy = self.policies[name]
        try:
            return policy.render(self.events[:index]) if policy else None
        except ValueError:  # events that begin mid-session (a Result's trace) hold no instructions to render from
            return None

    def _schemas(self, index: int) -> str:
        """The tool schemas offered at the call whose context is events[index], as the loop wrote them for its
        digest: the latest instructions' (native), else none."""
        if self.instructions is None:
            self.instructions = [i for i, event in enumerate(self.events) if event["type"] == "instructions"]
        latest = bisect_left(self.instructions, index) - 1
        event = self.events[self.instructions[latest]] if latest >= 0 else {}
        return json.dumps(event["schemas"], ensure_ascii=False) if "schemas" in event else ""


# ---------------------------------------------------------------- what changed between two calls

@dataclass
class Change:
    tag: str  # added, dropped, elided, marker, summarised, pinned, instructions
    role: str
    kind: str
    text: str
    tokens: int


def changes(before: list[Message] | None, after: list[Message], count) -> list[Change]:
    """The parts of `after` that `before` did not have, and the parts it had that `after` lost, each tagged by what
    they are: the policy's own markers, summaries and notes are told apart from plain additions and drops."""
    def parts(messages):
        return Counter((message.role, part.kind, part.text) for message in messages or [] for part in message.parts)

    old, new = parts(before), parts(after)
    found = [Change("dropped", role, kind, text, count(text)) for role, kind, text in (old - new).elements()]
    for role, kind, text in (new - old).elements():
        tag = {"summary": "summarised", "notes": "pinned", "instructions": "instructions"}.get(kind, "added")
        if kind == "placeholder":
            tag = "marker"
        if is_elided(text):
            tag = "elided"
        found.append(Change(tag, role, kind, text, count(text)))
    return found
