"""A trace read as the items a page shows: the model calls (each with what it caused) and the events between
them, what the model was shown at each call, rebuilt with the policy the trace names, what changed between
two calls, and one event of a call as HTML. The run and comparison pages show calls; the replay page, changes.
"""
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from models import Message
from models.services.retry import describe
from policies import make_policy
from policies.elide import is_elided
from tokens import TokenCounter
from tools.approval import approval_line
from views.pages.parts import Store, esc, folded, plural, preview

NOTICES = ["retry", "config_fallback"]  # what a model backend reports during a call
SHOWN_ORDER = {"retry": 0, "config_fallback": 0, "thought": 1, "action": 2, "answer": 3, "reply": 4, "note": 5,
               "forget": 5, "approval": 5, "observation": 6, "error": 7, "usage": 8}


# ---------------------------------------------------------------- reading a trace

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
    """What the model was shown at each call, rebuilt with the policy each context event names; one policy object
    per name, so that rendering stays incremental along the trace."""

    def __init__(self, events: Sequence[dict]):
        self.events, self.policies = list(events), {}

    def at(self, call: Call) -> list[Message] | None:
        name = call.context["policy"] if call.context else None
        if name is None:
            return None
        if name not in self.policies:
            try:
                self.policies[name] = make_policy(name)
            except ValueError:  # a policy this version does not have: its counts are still in the trace
                self.policies[name] = None
        policy = self.policies[name]
        try:
            return policy.render(self.events[: call.index]) if policy else None
        except ValueError:  # events that begin mid-session (a Result's trace) hold no instructions to render from
            return None


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


def change_line(found: list[Change]) -> str:
    """The changes counted by tag, in one line: `+2 added · −1 dropped · 1 elided`."""
    tally = Counter(change.tag for change in found)
    signs = {"added": "+", "dropped": "−"}
    tags = ["added", "dropped", "elided", "marker", "summarised", "pinned", "instructions"]
    line = " · ".join(f'<span class="tag {tag}">{signs.get(tag, "")}{tally[tag]} {tag}</span>'
                      for tag in tags if tally[tag])
    return line or "nothing changed"


def change_list(store: Store, found: list[Change]) -> str:
    items = []
    for change in found:
        label = (f'<span class="tag {change.tag}">{change.tag}</span> {esc(change.role)} · {esc(change.kind)} · '
                 f'{change.tokens:,} tokens · <q>{preview(change.text)}</q>')
        items.append(f"<li>{folded(store, change.text, label, 'change ' + change.tag)}</li>")
    return f'<ul class="changes">{"".join(items)}</ul>'


# ---------------------------------------------------------------- one event of a call

def call_event(store: Store, event: dict, seconds: float | None = None) -> str:
    """One event of a call: the reply's parts, the observation, a note pinned, a retry, an error, the usage (with
    how long the call took, `seconds`, when known)."""
    kind = event["type"]
    if kind == "reply":
        extra = []
        if event.get("blocked"):
            extra.append(f'<p class="error">the reply was blocked: {esc(event["blocked"])}</p>')
        raw = event.get("raw")
        if raw and raw != event["text"]:
            extra.append(folded(store, raw, "the model wrote on, past an Observation of its own: "
                                            f"{len(raw) - len(event['text']):,} more characters, cut before anything "
                                            "saw them", "raw"))
        return folded(store, event["text"], "reply as written", "reply") + "".join(extra)
    if kind in ("thought", "action", "answer"):
        return f'<p class="{kind}"><b>{kind.capitalize()}:</b> {esc(event["text"])}</p>'
    if kind == "observation":
        text = event["text"]
        css = "observation failed" if text.startswith(("Error", "Warning", "Declined")) else "observation"
        label = f'<b>Observation{esc(event.get("step", ""))}</b> ({plural(len(text), "character")}): {preview(text)}'
        return folded(store, text, label, css)
    if kind == "note":
        what = (f'pinned: {esc(event.get("text", ""))}' if event.get("op") == "pin"
                else f'unpinned note {esc(event.get("index"))}')
        return f'<p class="note">note {what}</p>'
    if kind == "usage":
        took = f" · {seconds:.2f} s" if seconds is not None else ""
        said = ("counted locally" if event.get("counted_locally") else "billed" if store.billed
                else "counted, nothing billed")
        return (f'<p class="usage">{said}: {event["input_tokens"]:,} tokens in, {event["output_tokens"]:,} out'
                + (f' ({event["thoughts_tokens"]:,} thinking)' if event.get("thoughts_tokens") else "") + f"{took}</p>")
    if kind == "error":
        return f'<p class="error">error: {esc(event.get("message", ""))}</p>'
    if kind == "forget":
        steps = len(event.get("replies", []))
        return (f'<p class="note">forgot {plural(steps, "earlier step")} mentioning '
                f'<q>{esc(event.get("what", ""))}</q></p>')
    if kind == "approval":
        return f'<p class="approval {esc(event.get("decision", ""))}"><b>Approval:</b> {esc(approval_line(event))}</p>'
    if kind in NOTICES:
        try:
            line = describe(event)
        except (KeyError, TypeError, ValueError):  # an event missing a field the one-line form needs
            line = f"{kind}: " + " · ".join(f"{name} {value}" for name, value in event.items()
                                            if name not in ("type", "t"))

        return f'<p class="notice">{esc(line)}</p>'
    return ""
