"""The promises every policy keeps, checked on a rendered context. Used by the property tests and by replay,
which reports the number of violations per policy (it must be 0).

The promises: the instructions in force come first; the current question is there; roles alternate; every
Action is answered by its Observation or by a marker standing in for it, and no Observation appears without
its Action; every piece of text comes from the trace (an observation may be cut, with a marker saying how
much), except markers in brackets and blocks of notes whose every line the trace holds; and, unless the
policy says it arranges steps by relevance (`ordered = False`), what is shown keeps the order it happened in.

A `Checker` keeps what it has read of a trace that grows between calls (as `ConversationReader` does), so checking
every call of a long replay costs what each context holds, not the whole trace again at every call.
"""
import bisect
import re
from typing import Sequence

from models import Message
from policies.rendering import INDENT, observation_text, reply_text
from replies import continued, parse_reply

MARKER = re.compile(r"(Observation\d+: )?\[.+\]", re.DOTALL)
NOT_RUN = re.compile(r"Observation\d+: \[not run: the run had ended\]")
CUT = re.compile(r"\n\[\.\.\. ([\d,]+) characters cut \.\.\.\]\n")
KEY_FACTS = "Key facts, extracted by rule from the conversation:"


def violations(messages: Sequence[Message], events: Sequence[dict], ordered: bool = True) -> list[str]:
    """What is wrong with `messages` as the context for a model call made right after `events`; [] when nothing."""
    return Checker()(messages, events, ordered)


class Held:
    """What the live part of a trace (since its last reset) holds, in the forms the checks look things up by."""

    def __init__(self):
        self.read = 0  # events read so far, live or not
        self.instructions = self.question = None  # the texts in force
        self.native = False  # whether the instructions in force are the native protocol's: no Action lines to read
        self.texts: set[str] = set()  # every question, reply, observation and finish as a context shows it
        self.where: dict[str, list[int]] = {}  # question, reply or observation text -> its event indices, in order
        self.observations: dict[str, list[str]] = {}  # "ObservationN: " -> the whole texts of step N's observations
        self.said: list[str] = []  # the user's questions
        self.results: set[str] = set()  # "call returned result", as key facts show a tool's result
        self.pins: set[str] = set()
        self.summaries: set[str] = set()

    def add(self, e: dict) -> None:
        index, self.read = self.read, self.read + 1
        kind, text = e["type"], e.get("text")
        if kind == "reset":
            self.__init__()
            self.read = index + 1
        elif kind == "instructions":
            self.instructions, self.native = text, e.get("protocol") == "native"
        elif kind == "question":
            self.question = text
            self.said.append(text)
            self._shown(f"Question: {text}", index)
        elif kind == "reply":
            shown, bare = reply_text(e), reply_text(e, inputs=False)  # bare: as a policy clearing inputs shows it
            for said in (shown, bare) if bare != shown else (shown,):
                self._shown(said, index)
        elif kind == "observation":
            self._shown(observation_text(e["step"], text, None), index)
            self.observations.setdefault(f"Observation{e['step']}: ", []).append(continued(text))
            if e.get("call"):  # a result of several lines is shown on one
                self.results.add(f"{e['call']} returned {' '.join(text.split())}")
        elif kind == "finish":
            self.texts.add(text)
        elif kind == "note" and e["op"] == "pin":
            self.pins.add(text)
        elif kind == "summary":
            self.summaries.add(text)

    def _shown(self, text: str, index: int) -> None:
        self.texts.add(text)
        self.where.setdefault(text, []).append(index)


class Checker:
    """`violations` for a trace that grows between calls: each call reads only the events added since the one
    before; any other list of events is read from its start."""

    def __init__(self):
        self._held, self._last = Held(), None
        self._acts: dict[str, bool] = {}  # reply text -> whether it holds an Action

    def __call__(self, messages: Sequence[Message], events: Sequence[dict], ordered: bool = True) -> list[str]:
        held = self._held
        if held.read > len(events) or (held.read and events[held.read - 1] is not self._last):
            self._held = held = Held()
        for e in events[held.read:]:
            held.add(e)
        self._last = events[-1] if events else None
        parts = [part for message in messages[1:] for part in message.parts]
        problems = _frame(messages, parts, held) + self._unpaired(parts, held.native) + _not_held(parts, held)
        if ordered:
            problems += _out_of_order(parts, held)
        return problems

    def _unpaired(self, parts: list, native: bool = False) -> list[str]:
        """Every Action answered by its Observation (or a marker for it), and no Observation without its Action;
        in the native protocol, every call answered right after its reply, in order, and no result without its
        call (a service refuses a history with either)."""
        problems, paired = [], set()
        for position, part in enumerate(parts):
            if part.calls:
                answers = parts[position + 1:position + 1 + len(part.calls)]
                if [answer.call.id if answer.call else None for answer in answers] != [c.id for c in part.calls]:
                    problems.append(f"a tool call without its result: {part.text[:60]!r}")
                paired.update(range(position + 1, position + 1 + len(answers)))
        for position, (before, part, after) in enumerate(zip([None] + parts, parts, parts[1:] + [None])):
            if part.call is not None:
                if position not in paired:
                    problems.append(f"a tool result without its call: {part.text[:60]!r}")
            elif _answers_a_step(part) and (before is None or before.kind != "reply" or before.calls):
                problems.append(f"an observation without its action: {part.text[:60]!r}")
            elif part.kind == "reply" and not native and self._acts_in(part.text) \
                    and not (after and _answers_a_step(after)):
                problems.append(f"an action without its observation: {part.text[:60]!r}")
        return problems

    def _acts_in(self, text: str) -> bool:
        if text not in self._acts:
            self._acts[text] = parse_reply(text).action is not None
        return self._acts[text]


def _frame(messages: Sequence[Message], parts: list, held: Held) -> list[str]:
    """The instructions in force first, the current question there, roles alternating from user to user."""
    problems = []
    if not messages or messages[0].role != "system" or held.instructions is None \
            or messages[0].text != held.instructions:
        problems.append("the instructions in force are not the first message")
    if held.question is not None and f"Question: {held.question}" not in {part.text for part in parts}:
        problems.append("the current question is missing")
    roles = [message.role for message in messages[1:]]
    if not roles or roles[0] != "user" or roles[-1] != "user" or any(a == b for a, b in zip(roles, roles[1:])):
        problems.append(f"roles do not alternate from user to user: {roles}")
    return problems


def _not_held(parts: list, held: Held) -> list[str]:
    """Every piece of text comes from the trace, but for markers, notes the trace holds, and cut observations."""
    return [f"text the trace does not hold: {part.kind} {part.text[:60]!r}" for part in parts
            if not _part_held(part, held)]


def _part_held(part, held: Held) -> bool:
    if part.kind == "placeholder":
        return MARKER.fullmatch(part.text) is not None
    if part.kind == "notes":
        return _notes_held(part.text, held)
    if part.kind == "summary":
        return part.text.partition("\n")[2] in held.summaries
    if part.kind == "observation" and part.text not in held.texts:
        prefix = part.text[:part.text.index(": ") + 2] if ": " in part.text else ""
        return bool(NOT_RUN.fullmatch(part.text)) or any(
            _is_cut(part.text[len(prefix):], whole) for whole in held.observations.get(prefix, []))
    return part.text in held.texts


def _answers_a_step(part) -> bool:
    """An observation, or a marker standing in for one (elide's)."""
    return part.kind == "observation" or (part.kind == "placeholder" and part.text.startswith("Observation"))


def _is_cut(shown: str, whole: str) -> bool:
    """True when `shown` is `whole` with a middle stretch replaced by the marker saying how many characters went."""
    match = CUT.search(shown)
    if not match:
        return False
    head, tail = shown[:match.start()], shown[match.end():].removeprefix(INDENT)  # the tail's line, indented
    return (whole.startswith(head) and whole.endswith(tail)
            and len(head) + len(tail) + int(match.group(1).replace(",", "")) == len(whole))


def _notes_held(text: str, held: Held) -> bool:
    """A pinned-notes block holds pinned notes; a key-facts block holds sentences the user wrote and tool results."""
    header, *lines = text.split("\n")
    if not lines:
        return False
    if header == "Pinned notes:":
        return all(re.sub(r"^\d+\. ", "", line) in held.pins for line in lines)
    if header == KEY_FACTS:
        return all(line.startswith("- ") and (line[2:] in held.results or any(line[2:] in s for s in held.said))
                   for line in lines)
    return False


def _out_of_order(parts, held: Held) -> list[str]:
    """Parts taken from the trace must appear in the order of the events they come from."""
    last = -1
    for part in parts:
        if part.kind not in ("question", "reply", "observation") or part.text not in held.where:
            continue
        indices = held.where[part.text]
        at = bisect.bisect_right(indices, last)
        if at == len(indices):
            return [f"shown out of the order it happened: {part.kind} {part.text[:60]!r}"]
        last = indices[at]
    return []
