"""The promises every policy keeps, checked on a rendered context. Used by the property tests and by replay,
which reports the number of violations per policy (it must be 0).

The promises: the instructions in force come first; the current question is there; roles alternate; every
Action is answered by its Observation or by a marker standing in for it, and no Observation appears without
its Action; every piece of text comes from the trace (an observation may be cut, with a marker saying how
much), except markers in brackets and blocks of notes whose every line the trace holds; and, unless the
policy says it arranges steps by relevance (`ordered = False`), what is shown keeps the order it happened in.
"""
import bisect
import re
from typing import Sequence

from models import Message
from policies.rendering import INDENT, observation_text
from replies import continued, parse_reply

MARKER = re.compile(r"(Observation\d+: )?\[.+\]", re.DOTALL)
NOT_RUN = re.compile(r"Observation\d+: \[not run: the run had ended\]")
CUT = re.compile(r"\n\[\.\.\. ([\d,]+) characters cut \.\.\.\]\n")
KEY_FACTS = "Key facts, extracted by rule from the conversation:"


def violations(messages: Sequence[Message], events: Sequence[dict], ordered: bool = True) -> list[str]:
    """What is wrong with `messages` as the context for a model call made right after `events`; [] when nothing."""
    since = max((i + 1 for i, e in enumerate(events) if e["type"] == "reset"), default=0)
    live = events[since:]
    parts = [part for message in messages[1:] for part in message.parts]
    problems = _frame(messages, parts, live) + _unpaired(parts) + _not_held(parts, live)
    if ordered:
        problems += _out_of_order(parts, live, since)
    return problems


def _frame(messages: Sequence[Message], parts: list, live: Sequence[dict]) -> list[str]:
    """The instructions in force first, the current question there, roles alternating from user to user."""
    problems = []
    instructions = [e for e in live if e["type"] == "instructions"]
    questions = [e for e in live if e["type"] == "question"]
    if not messages or messages[0].role != "system" or not instructions or messages[0].text != instructions[-1]["text"]:
        problems.append("the instructions in force are not the first message")
    if questions and f"Question: {questions[-1]['text']}" not in [part.text for part in parts]:
        problems.append("the current question is missing")
    roles = [message.role for message in messages[1:]]
    if not roles or roles[0] != "user" or roles[-1] != "user" or any(a == b for a, b in zip(roles, roles[1:])):
        problems.append(f"roles do not alternate from user to user: {roles}")
    return problems


def _unpaired(parts: list) -> list[str]:
    """Every Action answered by its Observation (or a marker for it), and no Observation without its Action."""
    problems = []
    for before, part, after in zip([None] + parts, parts, parts[1:] + [None]):
        if _answers_a_step(part) and (before is None or before.kind != "reply"):
            problems.append(f"an observation without its action: {part.text[:60]!r}")
        if (part.kind == "reply" and parse_reply(part.text).action is not None
                and not (after and _answers_a_step(after))):
            problems.append(f"an action without its observation: {part.text[:60]!r}")
    return problems


def _not_held(parts: list, live: Sequence[dict]) -> list[str]:
    """Every piece of text comes from the trace, but for markers, notes the trace holds, and cut observations."""
    held = _held(live)
    observations = {}
    for e in live:
        if e["type"] == "observation":
            observations.setdefault(f"Observation{e['step']}: ", []).append(continued(e["text"]))
    return [f"text the trace does not hold: {part.kind} {part.text[:60]!r}" for part in parts
            if not _part_held(part, live, held, observations)]


def _part_held(part, live: Sequence[dict], held: set[str], observations: dict) -> bool:
    if part.kind == "placeholder":
        return MARKER.fullmatch(part.text) is not None
    if part.kind == "notes":
        return _notes_held(part.text, live)
    if part.kind == "summary":
        return part.text.partition("\n")[2] in {e["text"] for e in live if e["type"] == "summary"}
    if part.kind == "observation" and part.text not in held:
        prefix = part.text[:part.text.index(": ") + 2] if ": " in part.text else ""
        return bool(NOT_RUN.fullmatch(part.text)) or any(
            _is_cut(part.text[len(prefix):], whole) for whole in observations.get(prefix, []))
    return part.text in held


def _answers_a_step(part) -> bool:
    """An observation, or a marker standing in for one (elide's)."""
    return part.kind == "observation" or (part.kind == "placeholder" and part.text.startswith("Observation"))


def _held(live: Sequence[dict]) -> set[str]:
    held = {f"Question: {e['text']}" for e in live if e["type"] == "question"}
    held |= {e["text"] or "(empty reply)" for e in live if e["type"] == "reply"}
    held |= {observation_text(e["step"], e["text"], None) for e in live if e["type"] == "observation"}
    held |= {e["text"] for e in live if e["type"] == "finish"}
    return held


def _is_cut(shown: str, whole: str) -> bool:
    """True when `shown` is `whole` with a middle stretch replaced by the marker saying how many characters went."""
    match = CUT.search(shown)
    if not match:
        return False
    head, tail = shown[:match.start()], shown[match.end():].removeprefix(INDENT)  # the tail's line, indented
    return (whole.startswith(head) and whole.endswith(tail)
            and len(head) + len(tail) + int(match.group(1).replace(",", "")) == len(whole))


def _notes_held(text: str, live: Sequence[dict]) -> bool:
    """A pinned-notes block holds pinned notes; a key-facts block holds sentences the user wrote and tool results."""
    header, *lines = text.split("\n")
    if not lines:
        return False
    if header == "Pinned notes:":
        pins = {e["text"] for e in live if e["type"] == "note" and e["op"] == "pin"}
        return all(re.sub(r"^\d+\. ", "", line) in pins for line in lines)
    if header == KEY_FACTS:
        said = [e["text"] for e in live if e["type"] == "question"]
        results = {f"{e['call']} returned {' '.join(e['text'].split())}"  # a result of several lines is shown on one
                   for e in live if e["type"] == "observation" and e.get("call")}
        return all(line.startswith("- ") and (line[2:] in results or any(line[2:] in s for s in said))
                   for line in lines)
    return False


def _out_of_order(parts, live: Sequence[dict], since: int) -> list[str]:
    """Parts taken from the trace must appear in the order of the events they come from."""
    where: dict[str, list[int]] = {}
    for index, e in enumerate(live):
        if e["type"] == "question":
            where.setdefault(f"Question: {e['text']}", []).append(index)
        elif e["type"] == "reply":
            where.setdefault(e["text"] or "(empty reply)", []).append(index)
        elif e["type"] == "observation":
            where.setdefault(observation_text(e["step"], e["text"], None), []).append(index)
    last = -1
    for part in parts:
        if part.kind not in ("question", "reply", "observation") or part.text not in where:
            continue
        indices = where[part.text]
        at = bisect.bisect_right(indices, last)
        if at == len(indices):
            return [f"shown out of the order it happened: {part.kind} {part.text[:60]!r}"]
        last = indices[at]
    return []
