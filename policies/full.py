"""Full history: the model sees everything in the trace, every time. The baseline the others are measured against."""
from typing import Sequence

from models import Message
from policies.rendering import join_turns, message_for


class FullHistory:
    name = "full"

    def render(self, events: Sequence[dict]) -> list[Message]:
        return join_turns([m for m in map(message_for, events) if m is not None])
