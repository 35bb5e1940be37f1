"""user-only:N: the instructions, every user message of the session verbatim, and the last N steps.

The user's words are never forgotten; the model's and the tools' are, once they are N steps old.
Pick it for long conversations where the user's standing instructions and facts must survive.
"""
from typing import Sequence

from models import Message
from policies.rendering import assemble, read_conversation, recent_pieces


class UserOnly:
    name = "user-only"

    def __init__(self, steps: int = 4):
        if steps < 0:
            raise ValueError("user-only:N needs N >= 0")
        self.steps = steps
        self.name = f"user-only:{steps}"

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = read_conversation(events)
        return assemble(conversation, recent_pieces(conversation, self.steps, all_questions=True))
