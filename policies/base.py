"""The policy seam: what every context policy is, with the defaults a policy need not write.

A policy is a small class with a `name` and `render(events) -> list[Message]`, a pure function of the trace:
same events, same messages, and the trace is never changed. Most policies only say what to show: they write
`choose(conversation, view) -> View` (see rendering.py), and the default `render` reads the trace, asks
`choose`, and lays the view out. Because a view can be handed on, policies compose: `elide:2+pinned` is
elide's choice, changed by pinned's (policies/composed.py). Two hooks have defaults that do nothing:
`summary_request(events, count)` lets a policy ask the loop for a model-written summary before a call
(compact), and `tools(trace)` lets it add tools while it is active (pinned, forget); `replay_caveat(events)`
says what a replay cannot show of such a policy (notes the recorded model never pinned). `usage` and
`trial_arguments` are what the help text and the property tests read from the registry. Policies subclass this
Protocol explicitly to inherit those defaults; the loop calls them on every policy. The base also gives each policy
its reader of the trace (`_read`, made on first use), so a policy writes a constructor only to take an argument.
"""
from functools import cached_property
from typing import Callable, Protocol, Sequence

from models import Message
from policies.rendering import Conversation, ConversationReader, View, assemble, lay_out


class Policy(Protocol):
    name: str
    usage = ""  # how it is written on the command line, as the help lists it: window:N
    trial_arguments = ()  # arguments worth trying in the property tests, beside the bare name: range(0, 7)
    # the most tokens it means to show, when it promises a size (budget:T); a replay checks it
    budget: int | None = None
    needs_summaries = False  # True when render shows model-written summaries, which a replay must find or write
    ordered = True  # False when the context may show earlier steps out of the order they happened (budget)
    composable = True  # False when the policy cannot be part of A+B (compact lays out its own summary)

    def __init__(self):
        """A policy that takes no argument (`full`); one that takes one (`window:N`) writes its own constructor."""

    @cached_property
    def _read(self) -> ConversationReader:
        """This policy's own reader of the trace, made on its first call: each later call reads only the events
        added since the one before."""
        return ConversationReader()

    def render(self, events: Sequence[dict]) -> list[Message]:
        """The messages the model is shown on the call made right after `events`."""
        conversation = self._read(events)
        return assemble(conversation, lay_out(conversation, self.choose(conversation, View())))

    def choose(self, conversation: Conversation, view: View) -> View:
        """What to show of `conversation`, starting from `view` (what the policies before this one chose)."""
        return view

    def summary_request(self, events: Sequence[dict], count: Callable[[str], int]) -> tuple[int, list[Message]] | None:
        """None, or (the trace index a new summary will cover up to, the messages asking the model to write it)."""
        return None

    def tools(self, trace) -> list[Callable]:
        """Tools the policy adds while it is active; they write their events into `trace`."""
        return []

    def replay_caveat(self, events: Sequence[dict]) -> str:
        """What a replay of this recorded session under this policy cannot show, in one clause; "" when nothing."""
        return ""
