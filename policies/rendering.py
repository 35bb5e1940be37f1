"""Reading the trace as a conversation, and turning chosen pieces of it back into messages.

Every policy starts from `read_conversation(events)`: the instructions in force, the user's questions, and
the steps under each (a step is one model reply and, when it had an Action or was unreadable, the
observation that answered it). A policy says what to show as a `View` (steps hidden, observations replaced
by a marked stand-in, steps brought back, blocks of notes), `lay_out` turns a conversation and a view into
pieces, and `assemble` lays the pieces out as messages whose roles alternate as the APIs require (system,
then user, model, user, ..., ending with user). Views compose: each policy of `A+B` changes the view the one
before it made.

Observations are recorded whole (up to a safety cap, see agent.py) and cut to `OBSERVATION_LIMIT` characters
here, when they are shown: the cut is part of what a policy chooses, and the trace keeps every character.
"""
from bisect import bisect_left, bisect_right
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import Sequence

from models import Message, Part, ToolCall
from replies import continued, parse_reply


OBSERVATION_LIMIT = 2_000  # characters of one observation shown to the model, unless a policy chooses otherwise
# The cut in force: OBSERVATION_LIMIT, or what a replay sets with `observations_cut_at` (--observation-cut) to see
# what the cut itself costs. A context variable, so that a setting never leaks past the block that made it.
_CUT: ContextVar[int] = ContextVar("observation_cut", default=OBSERVATION_LIMIT)
USUAL = -1  # a limit argument that means "the cut in force"


def observation_cut() -> int:
    """Characters of one observation shown to the model: OBSERVATION_LIMIT unless a replay set another."""
    return _CUT.get()


@contextmanager
def observations_cut_at(limit: int | None):
    """Within the block, observations are cut at `limit` characters (None: as usual)."""
    token = _CUT.set(limit if limit is not None else _CUT.get())
    try:
        yield
    finally:
        _CUT.reset(token)
INDENT = "  "  # before each continuation line of an observation (replies.continued)


def cap(text: str, limit: int, indent: str = "") -> str:
    """Keep at most `limit` characters: the head and the tail, with a marker saying how much was cut; `indent`
    goes before the tail, whose first line starts mid-line."""
    if len(text) <= limit:
        return text
    budget = max(limit - 40 - len(indent), 0)
    head, tail = text[: budget - budget // 3], text[len(text) - budget // 3:]
    return f"{head}\n[... {len(text) - len(head) - len(tail):,} characters cut ...]\n{indent}{tail}"[:limit]


def observation_text(step: int, text: str, limit: int | None = USUAL, trim: tuple[int, int] | None = None) -> str:
    """An observation as the model is shown it: its continuation lines indented (replies.continued), then cut to
    `limit` characters (None: whole; by default, the cut in force), or to its first and last characters when a
    policy `trim`s it (see shortened). The one rendering: the invariants and the fact states read it back."""
    limit = observation_cut() if limit == USUAL else limit
    return f"Observation{step}: {shortened(continued(text), limit, trim, INDENT)}"  # the cut tail indented too


def shortened(text: str, limit: int | None, trim: tuple[int, int] | None = None, indent: str = "") -> str:
    """`text` cut to `limit` characters (None: whole), or, when `trim` is (head, tail), its first head and last
    tail characters with the same marker between them, if that is shorter: a policy that trims a tool result as a
    vendor does never shows more of it than the cut in force."""
    if trim is not None and len(text) > sum(trim):
        head, tail = trim
        gone = len(text) - head - tail
        trimmed = f"{text[:head]}\n[... {gone:,} characters cut ...]\n{indent}{text[len(text) - tail:]}"
        if limit is None or len(trimmed) <= min(limit, len(text)):
            return trimmed
    return text if limit is None else cap(text, limit, indent)


@dataclass(slots=True)
class Step:
    reply: dict
    index: int  # position of the reply in the trace
    actions: list = field(default_factory=list)  # its action events: one in the text protocol, one a call in native
    observations: list = field(default_factory=list)  # the observation events answering them, in order
    request: dict | None = None  # the program's request this reply answers (the --finish call)
    parts: list | None = field(default=None, repr=False)  # as rendered once it has its observation: it cannot change
    parts_cut: int = field(default=0, repr=False)  # the observation cut they were rendered under
    terms: dict | None = field(default=None, repr=False)  # its words and their counts, for relevance (retrieve, budget)

    @property
    def action(self) -> dict | None:
        return self.actions[0] if self.actions else None

    @property
    def observation(self) -> dict | None:
        """The first observation: the only one, unless the reply made several native calls."""
        return self.observations[0] if self.observations else None


@dataclass(slots=True)
class Turn:
    question: dict
    index: int
    steps: list[Step] = field(default_factory=list)
    request: dict | None = None  # a request not answered yet
    part: tuple | None = field(default=None, repr=False)  # its question, as rendered
    settled: tuple | None = field(default=None, repr=False)  # see settled_pieces()
    terms: dict | None = field(default=None, repr=False)  # its question's words and their counts (retrieve, budget)
    steps_before: int = 0  # steps in the turns before it: a run of turns holds the difference of two of these


@dataclass
class Conversation:
    instructions: dict
    turns: list[Turn]
    notes: list[str]
    summary: dict | None  # the latest summary of earlier steps, if any
    summaries: list[dict] = field(default_factory=list)  # every summary since the last reset, in order
    forgotten: set = field(default_factory=set)  # trace indices of the replies whose steps the model chose to forget
    laid_out: tuple = field(default=([], (), None), repr=False)  # assemble()'s last pieces, messages and instructions
    steps: list[Step] = field(default_factory=list)  # every turn's steps, in order
    stepless: list[int] = field(default_factory=list)  # positions of earlier turns that ended with no step
    # the trace's clock at its latest event that has a time (`t`): when the next call is made. The record of a call made
    # (`context`, and a `warning` about it) is written after the call's context was rendered: its time is not read, so
    # that a context rendered again from the trace as it stood after the call is the one that was sent
    now: float | None = None


AFTER_A_CALL = ("context", "warning")  # events recording a call, written after its context was rendered


def read_conversation(events: Sequence[dict]) -> Conversation:
    """Group the events since the last reset into turns and steps; notes and summaries are folded in."""
    return ConversationReader()(events)


class ConversationReader:
    """`read_conversation` for a trace that grows between calls: each call reads only the events added since
    the one before. The trace is append-only, so events that still hold the last event read, at the same
    place, extend the conversation read so far; any other list of events is read from its start. A policy
    keeps one reader, so rendering on every call costs what the new events cost, not the whole trace."""

    def __init__(self):
        self._read, self._last = 0, None
        self._conversation = Conversation(None, [], [], None)

    def __call__(self, events: Sequence[dict]) -> Conversation:
        if self._read > len(events) or (self._read and events[self._read - 1] is not self._last):
            self.__init__()
        conversation = self._conversation
        for index in range(self._read, len(events)):
            event = events[index]
            if event["type"] in READ:
                _read_event(conversation, event, index)
            if event["type"] not in AFTER_A_CALL and event.get("t").__class__ in (int, float):
                conversation.now = event["t"]
        if events:
            self._read, self._last = len(events), events[-1]
        if conversation.instructions is None:
            raise ValueError("the trace has no instructions event")
        return conversation


# the kinds of event _read_event reads, and nothing else: a step's context, usage and thought events are passed by
READ = {"reset", "instructions", "question", "finish", "reply", "action", "observation", "summary", "note", "forget"}


def _read_event(conversation: Conversation, event: dict, index: int) -> None:
    kind, turns = event["type"], conversation.turns
    if kind == "reset":
        conversation.instructions, conversation.summary, conversation.now = None, None, None
        for kept in (turns, conversation.notes, conversation.forgotten, conversation.steps, conversation.stepless,
                     conversation.summaries):
            kept.clear()
    elif kind == "instructions":
        conversation.instructions = event
    elif kind == "question":
        if turns and not turns[-1].steps:
            conversation.stepless.append(len(turns) - 1)
        turns.append(Turn(event, index, steps_before=len(conversation.steps)))
    elif kind == "finish" and turns:
        turns[-1].request = event
    elif kind == "reply" and turns:
        turns[-1].steps.append(Step(event, index, request=turns[-1].request))
        conversation.steps.append(turns[-1].steps[-1])
        turns[-1].request = None
    elif kind == "action" and turns and turns[-1].steps:
        turns[-1].steps[-1].actions.append(event)
    elif kind == "observation" and turns and turns[-1].steps:
        turns[-1].steps[-1].observations.append(event)
    elif kind == "summary":
        conversation.summary = event
        conversation.summaries.append(event)
    elif kind == "note":
        _apply_note(conversation.notes, event)
    elif kind == "forget":
        conversation.forgotten.update(event["replies"])


def call_after(conversation: Conversation, number: int) -> float | None:
    """When the call after the conversation's `number`-th step (from 0) was made, by the trace's clock: the next
    step's reply, or after the last step the trace's latest time. None when the trace holds no time there."""
    steps = conversation.steps
    return steps[number + 1].reply.get("t") if number + 1 < len(steps) else conversation.now


def pinned_notes(events: Sequence[dict]) -> list[str]:
    """The notes in force: every `pin` note event, less the ones a later `unpin` removed (numbered from 1)."""
    notes = []
    for event in events:
        if event["type"] == "reset":
            notes = []
        elif event["type"] == "note":
            _apply_note(notes, event)
    return notes


def _apply_note(notes: list[str], event: dict) -> None:
    if event["op"] == "pin":
        notes.append(event["text"])
    elif event["op"] == "unpin":
        del notes[event["index"] - 1]


# What each piece looks like in the conversation: (role, Part).

def question_part(turn: Turn) -> tuple[str, Part]:
    if turn.part is None:
        turn.part = ("user", Part("question", f"Question: {turn.question['text']}", said=turn.question["text"]))
    return turn.part


def step_parts(step: Step, stand_in: str | None = None, limit: int = USUAL, trim: tuple[int, int] | None = None,
               inputs: bool = True) -> list[tuple[str, Part]]:
    """A step as the model saw it, its observation cut to `limit` characters (by default, the cut in force) or
    trimmed to (head, tail) characters (`trim`, see shortened); `stand_in` replaces the observation with a marked
    placeholder (elide); `inputs=False` shows its tool calls without their arguments (reply_text)."""
    cut = observation_cut()
    limit = cut if limit == USUAL else limit
    usual = stand_in is None and limit == cut and trim is None and inputs
    if usual and step.parts is not None and step.parts_cut == limit:
        return step.parts
    parts = []
    if step.request:
        parts.append(("user", Part("request", step.request["text"])))
    calls = recorded_calls(step.reply) if "calls" in step.reply else ()
    if calls:  # said: what goes to the service (an empty reply goes empty)
        calls = calls if inputs else tuple(call._replace(arguments="{}") for call in calls)
        parts.append(("model", Part("reply", reply_text(step.reply, inputs), calls=calls, said=step.reply["text"],
                                    native=step.reply.get("native") if inputs else None)))
    else:
        text = reply_text(step.reply, inputs)
        parts.append(("model", Part("reply", text, said=text if step.reply["text"] else "")))
    for number, call in enumerate(calls or [None]):  # each native call answered, in the order made (the loop records
        # one observation a call, in that order); a text step's one observation
        observation = step.observations[number] if number < len(step.observations) else None
        if observation and stand_in is not None:
            said, kind = f"[{stand_in}]", "placeholder"
            shown = f"Observation{observation['step']}: {said}"
        elif observation:
            said, kind = shortened(observation["text"], limit, trim) if call else None, "observation"
            shown = observation_text(observation["step"], observation["text"], limit, trim)
        elif step.action or call:  # the run ended before the action ran (the --finish call, Ctrl-C): say so
            said, kind = "[not run: the run had ended]", "observation"
            shown = f"Observation{step.reply['step']}: {said}"
        else:
            continue
        parts.append(("user", Part(kind, shown, call=call, said=said if call else None)))
    if usual and len(step.observations) >= max(len(calls), 1):
        step.parts, step.parts_cut = parts, limit
    return parts


def reply_text(reply: dict, inputs: bool = True) -> str:
    """A reply as the context shows and counts it: its text; a native reply's calls follow it, one a line (they go
    to the service as calls). With `inputs=False`, its tool calls are shown without their arguments: INPUTS_CLEARED
    stands in the parentheses of its Action (a text reply's first) or of each call."""
    if "calls" not in reply:  # a text reply: most of them
        return (reply["text"] if inputs else _without_inputs(reply["text"])) or "(empty reply)"
    calls = [f"Call: {call['name']}({call['arguments'] if inputs else INPUTS_CLEARED})"
             for call in reply["calls"] or ()]
    text = reply["text"] if inputs or calls else _without_inputs(reply["text"])
    return "\n".join([text] * bool(text) + calls) or "(empty reply)"


INPUTS_CLEARED = "[input cleared]"


def _without_inputs(text: str) -> str:
    action = parse_reply(text).action
    # the Action line's call, not an earlier mention of it
    at = text.find(action, max(text.find("Action"), 0)) if action and "(" in action else -1
    if at < 0:
        return text
    return f"{text[:at]}{action[:action.index('(')]}({INPUTS_CLEARED}){text[at + len(action):]}"


def recorded_calls(reply: dict) -> tuple[ToolCall, ...]:
    """The tool calls a reply event records, as it made them through the native protocol (none for a text reply)."""
    return tuple(ToolCall(call["id"], call["name"], call["arguments"]) for call in reply.get("calls") or ())


def pending_parts(turn: Turn) -> list[tuple[str, Part]]:
    return [("user", Part("request", turn.request["text"]))] if turn.request else []


def placeholder(text: str) -> tuple[str, Part]:
    """A marked stand-in for what a policy left out; it is the only text not taken from the trace."""
    return "user", Part("placeholder", f"[{text}]")


def assemble(conversation: Conversation, pieces: list[tuple[str, Part]]) -> list[Message]:
    """System instructions first, then the pieces, neighbouring pieces of the same role joined in one message.
    When the pieces begin with the ones laid out last time for this conversation (as a history that only grows
    does), the messages made then are reused and only the new pieces are laid out."""
    system = conversation.instructions
    old_pieces, old_messages, old_system = conversation.laid_out
    if system is old_system and old_pieces and pieces[:len(old_pieces)] == old_pieces:
        messages, new = list(old_messages), pieces[len(old_pieces):]
    else:
        messages, new = [Message("system", (Part("instructions", system["text"]),))], pieces
    for role, part in new:
        if messages[-1].role == role:
            messages[-1] = Message(role, messages[-1].parts + (part,))
        else:
            messages.append(Message(role, (part,)))
    conversation.laid_out = (list(pieces), tuple(messages), system)
    return messages


def full_pieces(conversation: Conversation) -> list[tuple[str, Part]]:
    """Every question and every step, in order."""
    pieces = []
    for number, turn in enumerate(conversation.turns, 1):
        pieces += settled_pieces(turn, last=number == len(conversation.turns))
        if number == len(conversation.turns):  # only the current turn's request: an earlier one is not asked again
            pieces += (step_parts(turn.steps[-1]) if turn.steps else []) + pending_parts(turn)
    return pieces


def settled_pieces(turn: Turn, last: bool) -> list[tuple[str, Part]]:
    """A turn's question and the steps of it that can no longer change: all of them once a later turn has begun,
    every step but the newest in the turn going on. Kept on the turn and extended as steps settle."""
    pieces, covered = turn.settled or ([question_part(turn)], 0)
    for step in turn.steps[covered:len(turn.steps) - last]:
        pieces += step_parts(step)
        covered += 1
    turn.settled = (pieces, covered)
    return pieces


@dataclass
class View:
    """What a policy chose to show of a conversation. Steps are named by the trace index of their reply. A view
    starts empty (everything shown, in order); each policy of `A+B+...` changes the view the one before it made."""
    hidden: dict[int, str] = field(default_factory=dict)  # step -> why it is not shown: NOT_SHOWN or FORGOTTEN
    # every step before this trace index is not shown either (NOT_SHOWN), unless `hidden` gives another reason or
    # `retrieved` brings it back: a window says what it hides in one number, however long the session
    hidden_before: int = 0
    stand_ins: dict[int, str] = field(default_factory=dict)  # step -> the marker shown instead of its observation
    # step -> (head, tail): the characters shown of each of its observations, a marker for the middle (shortened)
    trims: dict[int, tuple[int, int]] = field(default_factory=dict)
    bare: set[int] = field(default_factory=set)  # steps whose tool calls are shown without their arguments
    retrieved: set[int] = field(default_factory=set)  # steps brought back for the current question, marked as such
    all_questions: bool = False  # every question is shown, even of turns whose steps are all hidden (user-only)
    blocks: list[tuple[str, Part]] = field(default_factory=list)  # (where: "top" or "end", a block of notes)
    # the order of the earlier turns (their question's index), when not as it happened
    arrangement: list[int] | None = None
    note: str | None = None  # a marker shown first, saying how the view was made (budget's order)
    limit: int = field(default_factory=observation_cut)  # characters of each observation shown

    def parts(self, step: Step) -> list[tuple[str, Part]]:
        """The step as this view shows it: its stand-in, trim, cut, and its calls' arguments or not."""
        index = step.index
        return step_parts(step, self.stand_ins.get(index), self.limit, self.trims.get(index), index not in self.bare)

    def why_hidden(self, step: int) -> str | None:
        """Why the step whose reply is at trace index `step` is not shown (NOT_SHOWN, FORGOTTEN), or None."""
        if step in self.hidden:
            return self.hidden[step]
        return NOT_SHOWN if step < self.hidden_before and step not in self.retrieved else None


NOT_SHOWN, FORGOTTEN = "not shown", "forgotten"


def lay_out(conversation: Conversation, view: View) -> list[tuple[str, Part]]:
    """The pieces a view shows: questions and steps in order (or in the view's arrangement), a marker wherever steps
    or questions were left out, stand-ins for replaced observations, and the view's blocks at the top or before the
    current question."""
    pieces, left_out = [], {NOT_SHOWN: [0, 0], FORGOTTEN: [0, 0]}  # why -> [questions, steps]

    def show(new):
        for why, (questions, steps) in left_out.items():
            if questions or steps:
                pieces.append(placeholder(_left_out(questions, steps, why)))
        left_out[NOT_SHOWN], left_out[FORGOTTEN] = [0, 0], [0, 0]
        pieces.extend(new)

    turns = conversation.turns
    if view.arrangement is not None and turns:  # turns left out of the arrangement are all hidden: said first
        arranged = set(view.arrangement)
        by_index = {turn.index: turn for turn in turns[:-1]}
        turns = ([t for t in turns[:-1] if t.index not in arranged] + [by_index[i] for i in view.arrangement]
                 + [turns[-1]])
    if view.note:
        show([placeholder(view.note)])
    walked = range(len(turns)) if turns is not conversation.turns else _worth_walking(conversation, view)
    last = -1
    for number in walked:
        if number > last + 1:  # the turns between wholly left out, counted without walking them
            left_out[NOT_SHOWN][0] += number - last - 1
            left_out[NOT_SHOWN][1] += turns[number].steps_before - turns[last + 1].steps_before
        last, turn, current = number, turns[number], number == len(turns) - 1
        if view.all_questions or current or not turn.steps or any(view.why_hidden(s.index) is None for s in turn.steps):
            show([question_part(turn)])
        else:
            left_out[NOT_SHOWN][0] += 1
        for step in turn.steps:
            if why := view.why_hidden(step.index):
                left_out[why][1] += 1
                continue
            marker = [placeholder("brought back: an earlier step relevant to the current question")] \
                if step.index in view.retrieved else []
            show(marker + view.parts(step))
        if current:
            show(pending_parts(turn))
    show([])  # steps left out at the very end are said too: nothing disappears without a marker
    for where, part in view.blocks:
        at = 0 if where == "top" else max(i for i, (_, p) in enumerate(pieces) if p.kind == "question")
        pieces.insert(at, ("user", part))
    return pieces


def _worth_walking(conversation: Conversation, view: View) -> list[int]:
    """The positions of the turns lay_out must look at, in order: all of them, unless the view hides every step
    before a point; then the turns from that point on, and, before it, only the turns that show something or hide
    a step for another reason (a question with no step, a step brought back or forgotten). The turns left out are
    counted, not walked, so a window's context is laid out in the same time however long the session."""
    turns = conversation.turns
    if not view.hidden_before or view.all_questions:
        return list(range(len(turns)))
    position = partial(bisect_right, turns, key=attrgetter("index"))  # the turn holding a trace index, plus one
    start = max(bisect_left(turns, view.hidden_before, key=attrgetter("index")) - 1, 0)
    exceptions = {position(index) - 1 for index in view.retrieved if index < view.hidden_before}
    exceptions |= {position(index) - 1 for index, why in view.hidden.items()
                   if why != NOT_SHOWN and index < view.hidden_before}
    exceptions |= {number for number in conversation.stepless if number < start}
    return sorted(exceptions - {-1} | set(range(start, len(turns))))


def _left_out(questions: int, steps: int, why: str = NOT_SHOWN) -> str:
    if why == FORGOTTEN:
        return f"{steps} earlier step{'s' if steps != 1 else ''} forgotten at the model's request"
    counts = [f"{n} earlier {word}{'s' if n != 1 else ''}"
              for n, word in ((questions, "question"), (steps, "step")) if n]
    return " and ".join(counts) + " not shown"
