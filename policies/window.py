"""window:N: the instructions, the current question and the last N steps (each with its question).

Cheapest as a session grows: the context stops growing. It forgets everything older, including what
the user said at the start. Pick it for independent questions where old steps are noise.
"""
from typing import Sequence

from models import Message
from policies.base import Policy
from policies.rendering import ConversationReader, assemble, recent_pieces


class SlidingWindow(Policy):
    name = "window"
    all_questions = False  # user-only differs only here: it shows every question, not just the current one

    def __init__(self, steps: int = 4):
        kind = type(self).name
        if steps < 0:
            raise ValueError(f"{kind}:N needs N >= 0")
        self.steps = steps
        self._read = ConversationReader()
        self.name = f"{kind}:{steps}"

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = self._read(events)
        return assemble(conversation, recent_pieces(conversation, self.steps, all_questions=self.all_questions))
