"""full: the model sees everything in the trace, every time. The baseline the others are measured against.

Pick it when runs are short, or to see what a task costs with nothing forgotten.
"""
from typing import Sequence

from models import Message
from policies.base import Policy
from policies.rendering import assemble, full_pieces


class FullHistory(Policy):
    name = "full"
    usage = "full"

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = self._read(events)
        return assemble(conversation, full_pieces(conversation))
