"""Context policies: what the model is shown on each call, rendered from the append-only trace.

A policy is a small class with one method, `render(events) -> list[Message]`. It must be a pure function
of the trace (same events, same messages) and must never change the trace. Register a new one in
POLICIES under a short name; the loop does not change.
"""
from typing import Protocol, Sequence

from models import Message
from policies.full import FullHistory


class Policy(Protocol):
    name: str

    def render(self, events: Sequence[dict]) -> list[Message]: ...


POLICIES = {"full": FullHistory}


def make_policy(spec: str) -> Policy:
    """A policy from its command-line name, e.g. `full`."""
    name, _, args = spec.partition(":")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {spec!r}; choose from: {', '.join(POLICIES)}")
    if args:
        raise ValueError(f"policy {name!r} takes no arguments, got {args!r}")
    return POLICIES[name]()
