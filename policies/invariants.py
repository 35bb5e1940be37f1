"""The promises every policy keeps, checked on a rendered context. Used by the property tests and by replay,
which reports the number of violations per policy (it must be 0)."""
import re
from typing import Sequence

from models import Message
from replies import parse_reply

ELIDED = re.compile(r"Observation\d+: \[elided: .+ returned [\d,]+ characters; call it again to re-read them\]", re.DOTALL)
NOT_RUN = re.compile(r"Observation\d+: \[not run: the run had ended\]")


def violations(messages: Sequence[Message], events: Sequence[dict]) -> list[str]:
    """What is wrong with `messages` as the context for a model call made right after `events`; [] when nothing."""
    since = max((i + 1 for i, e in enumerate(events) if e["type"] == "reset"), default=0)
    live = events[since:]
    problems = []
    instructions = [e for e in live if e["type"] == "instructions"]
    questions = [e for e in live if e["type"] == "question"]
    if not messages or messages[0].role != "system" or not instructions or messages[0].text != instructions[-1]["text"]:
        problems.append("the instructions in force are not the first message")
    parts = [part for message in messages[1:] for part in message.parts]
    if questions and f"Question: {questions[-1]['text']}" not in [part.text for part in parts]:
        problems.append("the current question is missing")
    roles = [message.role for message in messages[1:]]
    if not roles or roles[0] != "user" or roles[-1] != "user" or any(a == b for a, b in zip(roles, roles[1:])):
        problems.append(f"roles do not alternate from user to user: {roles}")
    for before, part, after in zip([None] + parts, parts, parts[1:] + [None]):
        if part.kind == "observation" and (before is None or before.kind != "reply"):
            problems.append(f"an observation without its action: {part.text[:60]!r}")
        if part.kind == "reply" and parse_reply(part.text).action is not None and (after is None or after.kind != "observation"):
            problems.append(f"an action without its observation: {part.text[:60]!r}")
    allowed = {f"Question: {e['text']}" for e in questions}
    allowed |= {e["text"] or "(empty reply)" for e in live if e["type"] == "reply"}
    allowed |= {f"Observation{e['step']}: {e['text']}" for e in live if e["type"] == "observation"}
    allowed |= {e["text"] for e in live if e["type"] == "finish"}
    pins = {e["text"] for e in live if e["type"] == "note" and e["op"] == "pin"}
    summaries = {e["text"] for e in live if e["type"] == "summary"}
    for part in parts:
        if part.kind == "placeholder":
            ok = re.fullmatch(r"\[.+\]", part.text) is not None
        elif part.kind == "notes":
            header, *lines = part.text.split("\n")
            ok = header == "Pinned notes:" and bool(lines) and all(re.sub(r"^\d+\. ", "", line) in pins for line in lines)
        elif part.kind == "summary":
            ok = part.text.partition("\n")[2] in summaries
        elif part.kind == "observation" and part.text not in allowed:
            ok = bool(ELIDED.fullmatch(part.text) or NOT_RUN.fullmatch(part.text))
        else:
            ok = part.text in allowed
        if not ok:
            problems.append(f"text the trace does not hold: {part.kind} {part.text[:60]!r}")
    return problems
