"""The policy seam: what every context policy is, with the defaults a policy need not write.

A policy is a small class with a `name` and `render(events) -> list[Message]`, a pure function of the trace:
same events, same messages, and the trace is never changed. Two hooks have defaults that do nothing:
`summary_request(events, count)` lets a policy ask the loop for a model-written summary before a call
(compact), and `tools(trace)` lets it add tools while it is active (pinned). Policies subclass this
Protocol explicitly to inherit those defaults; the loop calls all three on every policy.
"""
from typing import Callable, Protocol, Sequence

from models import Message


class Policy(Protocol):
    name: str
    needs_summaries = False  # True when render shows model-written summaries, which a replay must find recorded

    def render(self, events: Sequence[dict]) -> list[Message]:
        """The messages the model is shown on the call made right after `events`."""
        ...

    def summary_request(self, events: Sequence[dict], count: Callable[[str], int]) -> tuple[int, list[Message]] | None:
        """None, or (the trace index a new summary will cover up to, the messages asking the model to write it)."""
        return None

    def tools(self, trace) -> list[Callable]:
        """Tools the policy adds while it is active; they write their events into `trace`."""
        return []
