"""window:N: the instructions, the current question and the last N steps (each with its question).

Cheapest as a session grows: the context stops growing. It forgets everything older, including what
the user said at the start. Pick it for independent questions where old steps are noise.
"""
from typing import Sequence

from models import Message
from policies.rendering import assemble, read_conversation, recent_pieces


class SlidingWindow:
    name = "window"

    def __init__(self, steps: int = 4):
        if steps < 0:
            raise ValueError("window:N needs N >= 0")
        self.steps = steps
        self.name = f"window:{steps}"

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = read_conversation(events)
        return assemble(conversation, recent_pieces(conversation, self.steps, all_questions=False))
