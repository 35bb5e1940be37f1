"""elide:K: every step is kept, but observations older than the last K become a one-line placeholder.

The model still sees what it did and why, and can call a tool again to re-read an old result. Pick it
when tool results are long (pages, documents) and the reasoning around them is what matters later.
"""
from typing import Sequence

from models import Message
from policies.base import Policy
from policies.rendering import ConversationReader, assemble, pending_parts, question_part, step_parts


class ElideObservations(Policy):
    name = "elide"

    def __init__(self, keep: int = 2):
        if keep < 0:
            raise ValueError("elide:K needs K >= 0")
        self.keep = keep
        self._read = ConversationReader()
        self.name = f"elide:{keep}"

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = self._read(events)
        observed = [step for step in conversation.steps if step.observation]
        old = {id(step) for step in observed[: max(len(observed) - self.keep, 0)]}
        pieces = []
        for turn in conversation.turns:
            pieces.append(question_part(turn))
            for step in turn.steps:
                pieces += step_parts(step, _placeholder(step) if id(step) in old else None)
            pieces += pending_parts(turn)
        return assemble(conversation, pieces)


def _placeholder(step) -> str | None:
    """The one-line stand-in for an old observation, or None to keep one that is shorter than its stand-in."""
    text = step.observation["text"]
    call = step.action["text"][:200] if step.action else "the reply"
    stand_in = f"[elided: {call} returned {len(text):,} characters; call it again to re-read them]"
    return stand_in if len(stand_in) < len(text) else None
