"""A+B+...: policies applied in order, each changing what the ones before it chose to show.

`elide:2+pinned` elides old observations, then keeps the last 4 steps and the pinned notes; `user-only:4+facts`
keeps every question and the last 4 steps, then adds the key-facts block. Tools of every part are offered.
compact cannot be composed: it lays out its own summary.
"""
from typing import Callable

from policies.base import Policy
from policies.rendering import Conversation, View


class Composed(Policy):
    def __init__(self, parts: list[Policy]):
        if len(parts) < 2:
            raise ValueError("a composition needs two policies or more, as in elide:2+pinned")
        for part in parts:
            if not part.composable:
                raise ValueError(f"{part.name} cannot be combined with other policies")
        self.parts = parts
        self.name = "+".join(part.name for part in parts)
        self.ordered = all(part.ordered for part in parts)
        self.budget = min((part.budget for part in parts if part.budget), default=None)

    def choose(self, conversation: Conversation, view: View) -> View:
        for part in self.parts:
            view = part.choose(conversation, view)
        return view

    def tools(self, trace) -> list[Callable]:
        return [tool for part in self.parts for tool in part.tools(trace)]

    def replay_caveat(self, events) -> str:
        return "; ".join(caveat for part in self.parts if (caveat := part.replay_caveat(events)))
