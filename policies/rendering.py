"""Reading the trace as a conversation, and turning chosen pieces of it back into messages.

Every policy starts from `read_conversation(events)`: the instructions in force, the user's questions, and
the steps under each (a step is one model reply and, when it had an Action or was unreadable, the
observation that answered it). A policy picks what to show; `assemble` lays the pieces out as messages
whose roles alternate as the APIs require (system, then user, model, user, ..., ending with user).
"""
from dataclasses import dataclass, field
from typing import Sequence

from models import Message, Part


@dataclass
class Step:
    reply: dict
    index: int  # position of the reply in the trace
    action: dict | None = None
    observation: dict | None = None
    request: dict | None = None  # the program's request this reply answers (the --finish call)
    parts: list | None = field(default=None, repr=False)  # as rendered once it has its observation: it cannot change


@dataclass
class Turn:
    question: dict
    index: int
    steps: list[Step] = field(default_factory=list)
    request: dict | None = None  # a request not answered yet
    part: tuple | None = field(default=None, repr=False)  # its question, as rendered
    settled: tuple | None = field(default=None, repr=False)  # see settled_pieces()


@dataclass
class Conversation:
    instructions: dict
    turns: list[Turn]
    notes: list[str]
    summary: dict | None  # the latest summary of earlier steps, if any
    laid_out: tuple = field(default=([], (), None), repr=False)  # assemble()'s last pieces, messages and instructions

    @property
    def steps(self) -> list[Step]:
        return [step for turn in self.turns for step in turn.steps]


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
            _read_event(conversation, events[index], index)
        if events:
            self._read, self._last = len(events), events[-1]
        if conversation.instructions is None:
            raise ValueError("the trace has no instructions event")
        return conversation


def _read_event(conversation: Conversation, event: dict, index: int) -> None:
    kind, turns = event["type"], conversation.turns
    if kind == "reset":
        conversation.instructions, conversation.summary = None, None
        turns.clear()
        conversation.notes.clear()
    elif kind == "instructions":
        conversation.instructions = event
    elif kind == "question":
        turns.append(Turn(event, index))
    elif kind == "finish" and turns:
        turns[-1].request = event
    elif kind == "reply" and turns:
        turns[-1].steps.append(Step(event, index, request=turns[-1].request))
        turns[-1].request = None
    elif kind == "action" and turns and turns[-1].steps:
        turns[-1].steps[-1].action = event
    elif kind == "observation" and turns and turns[-1].steps:
        turns[-1].steps[-1].observation = event
    elif kind == "summary":
        conversation.summary = event
    elif kind == "note":
        _apply_note(conversation.notes, event)


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
        turn.part = ("user", Part("question", f"Question: {turn.question['text']}"))
    return turn.part


def step_parts(step: Step, observation: str | None = None) -> list[tuple[str, Part]]:
    """A step as the model saw it; `observation` replaces the observation's text (a placeholder)."""
    if observation is None and step.parts is not None:
        return step.parts
    parts = []
    if step.request:
        parts.append(("user", Part("request", step.request["text"])))
    parts.append(("model", Part("reply", step.reply["text"] or "(empty reply)")))
    if step.observation:
        text = observation if observation is not None else step.observation["text"]
        parts.append(("user", Part("observation", f"Observation{step.observation['step']}: {text}")))
    elif step.action:  # the run ended before the action ran (the --finish call, Ctrl-C): say so, never leave it open
        parts.append(("user", Part("observation", f"Observation{step.reply['step']}: [not run: the run had ended]")))
    if observation is None and step.observation:
        step.parts = parts
    return parts


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
        if number == len(conversation.turns) and turn.steps:
            pieces += step_parts(turn.steps[-1])
        pieces += pending_parts(turn)
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


def recent_pieces(conversation: Conversation, keep: int, all_questions: bool) -> list[tuple[str, Part]]:
    """The last `keep` steps, each with its question, plus the current question (or every question, when
    `all_questions`), and a marker wherever something was left out. Shared by window, user-only and pinned."""
    kept = {id(step) for step in conversation.steps[-keep:]} if keep > 0 else set()
    pieces, left_out = [], [0, 0]  # questions, steps

    def show(piece_list):
        if any(left_out):
            pieces.append(placeholder(_left_out(*left_out)))
            left_out[:] = [0, 0]
        pieces.extend(piece_list)

    for number, turn in enumerate(conversation.turns):
        current = number == len(conversation.turns) - 1
        if all_questions or current or any(id(step) in kept for step in turn.steps):
            show([question_part(turn)])
        else:
            left_out[0] += 1
        for step in turn.steps:
            if id(step) in kept:
                show(step_parts(step))
            else:
                left_out[1] += 1
        if current:
            show(pending_parts(turn))
    return pieces


def _left_out(questions: int, steps: int) -> str:
    counts = [f"{n} earlier {word}{'s' if n != 1 else ''}" for n, word in ((questions, "question"), (steps, "step")) if n]
    return " and ".join(counts) + " not shown"
