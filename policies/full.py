"""full: the model sees everything in the trace, every time. The baseline the others are measured against.

Pick it when runs are short, or to see what a task costs with nothing forgotten.
"""
from typing import Sequence

from models import Message
from policies.rendering import assemble, full_pieces, read_conversation


class FullHistory:
    name = "full"

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = read_conversation(events)
        return assemble(conversation, full_pieces(conversation))
