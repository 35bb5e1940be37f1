"""forget: the model may drop earlier steps from its own view with a `forget(what)` tool; the last steps it did
not forget, and everything else, are shown as under full history.

Each call is a `forget` trace event naming the steps it dropped (by the trace index of their reply), so a
replay shows exactly what the model saw. Forgotten steps are replaced by a marker saying so. Composed
(`forget+elide:2`), the other policies decide the rest. Pick it for long sessions with a capable model that
knows when a long result has served its purpose.
"""
from dataclasses import replace
from typing import Callable

from policies.base import Policy
from policies.rendering import FORGOTTEN, Conversation, View


class Forget(Policy):
    name = "forget"
    usage = "forget"

    def choose(self, conversation: Conversation, view: View) -> View:
        steps = {step.index for step in conversation.steps}
        return replace(view,
                       hidden=view.hidden | {index: FORGOTTEN for index in conversation.forgotten if index in steps})

    def tools(self, trace) -> list[Callable]:
        """forget, writing its forget events into this trace."""

        def forget(what: str) -> str:
            """Drop from your view every earlier step whose action or observation mentions `what` (ignoring case),
            to make room once a long result has served its purpose. The steps stay in the record; you will see a
            marker where they were. Example: forget("wikipedia_summary(\\"Lisbon\\"") returns "Forgot 1 earlier step."
            """
            needle = " ".join(what.split()).casefold()
            if not needle:
                return "Error: say what to forget: a word or call that the steps to drop mention."
            events = trace.events
            since = max((i + 1 for i, e in enumerate(events) if e["type"] == "reset"), default=0)
            latest = max((i for i, e in enumerate(events) if e["type"] == "reply"), default=len(events))
            replies, current = [], None
            for index in range(since, latest):  # the step calling forget is never dropped
                event = events[index]
                if event["type"] == "reply":
                    current = index
                elif event["type"] in ("action", "observation") and current is not None \
                        and needle in event["text"].casefold() and current not in replies:
                    replies.append(current)
            if not replies:
                return f"Error: no earlier step mentions {what!r}; nothing was forgotten."
            trace.add("forget", what=what, replies=replies)
            return f"Forgot {len(replies)} earlier step{'s' if len(replies) != 1 else ''}."

        return [forget]

    def replay_caveat(self, events) -> str:
        if any(event["type"] == "forget" for event in events):
            return ""
        return ("the recorded replies never call forget, so here it shows what the other policies choose (alone, the "
                "full history); record a session under forget (--record) to see it forget")
