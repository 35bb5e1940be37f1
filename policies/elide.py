"""elide:K: every step is kept, but observations older than the last K become a one-line marker.

The model still sees what it did and why, and can call a tool again to re-read an old result. Pick it
when tool results are long (pages, documents) and the reasoning around them is what matters later.
The marker is counted as a marker, not as an observation.
"""
import re
from dataclasses import replace

from policies.base import Policy
from policies.rendering import Conversation, View


ELIDED = re.compile(r"(Observation\d*: )?\[elided: ")  # the marker as a context shows it (see rendering.step_parts)


class ElideObservations(Policy):
    name = "elide"
    usage = "elide:K"
    trial_arguments = range(0, 7)

    def __init__(self, keep: int = 2):
        if keep < 0:
            raise ValueError("elide:K needs K >= 0")
        self.keep = keep
        self.name = f"elide:{keep}"

    def choose(self, conversation: Conversation, view: View) -> View:
        observed = [step for step in conversation.steps if step.observation]
        stand_ins = dict(view.stand_ins)
        for step in observed[: max(len(observed) - self.keep, 0)]:
            marker = _stand_in(step)
            if marker is not None:
                stand_ins.setdefault(step.index, marker)
        return replace(view, stand_ins=stand_ins)


def is_elided(text: str) -> bool:
    """Whether a shown observation is this policy's marker instead of the result."""
    return ELIDED.match(text) is not None


def _stand_in(step) -> str | None:
    """The one-line marker for an old observation, or None to keep one that is shorter than its marker."""
    size = sum(len(observation["text"]) for observation in step.observations)  # several, for native calls
    call = step.action["text"][:200] if len(step.actions) == 1 else \
        f"{len(step.actions)} calls" if step.actions else "the reply"
    marker = f"elided: {call} returned {size:,} characters; call it again to re-read them"
    return marker if len(marker) + 2 < size else None
