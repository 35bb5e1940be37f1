"""The policy seam: what every context policy is, with the defaults a policy need not write.

A policy is a small class with a `name` and `render(events) -> list[Message]`, a pure function of
the trace: same events, same messages, and the trace never changed. Most policies only say what to
show: they write `choose(conversation, view) -> View` (rendering.py), and the default `render` reads
the trace, asks `choose`, and lays the view out. A view can be handed on, so policies compose:
`elide:2+pinned` is elide's choice, changed by pinned's (policies/composed.py). Two hooks do nothing
by default: `summary_request` asks the loop for a model-written summary before a call (compact), and
`tools` adds tools while the policy is active (pinned, forget); `replay_caveat` says what a replay
cannot show of such a policy (notes the recorded model never pinned). `usage` and `trial_arguments`
feed the help text and the property tests. Policies subclass this Protocol explicitly to inherit
those defaults; the loop calls them on every policy. The base also gives each policy its trace
reader (`_read`, made on first use), so a policy writes a constructor only to take an argument.
"""
import inspect
from functools import cached_property
from typing import Callable, Protocol, Sequence

from models import Message
from policies.rendering import Conversation, ConversationReader, View, assemble, lay_out


class Policy(Protocol):
    name: str
    usage = ""  # how it is written on the command line, as the help lists it: window:N
    trial_arguments = ()  # arguments the property tests try beside the bare name: range(0, 7)
    # the most tokens it means to show, when it promises a size (budget:T); a replay checks it
    budget: int | None = None
    needs_summaries = False  # True: it shows model summaries, which a replay must find or write
    ordered = True  # False if the context may show earlier steps out of order (budget)
    composable = True  # False if it cannot be part of A+B (compact lays out its own summary)

    def __init__(self):
        """Takes no argument (`full`); a policy that takes one (`window:N`) writes its own."""

    @cached_property
    def _read(self) -> ConversationReader:
        """This policy's own reader of the trace, made on its first call: each later call reads only
        the events added since the one before."""
        return ConversationReader()

    def render(self, events: Sequence[dict]) -> list[Message]:
        """The messages the model is shown on the call made right after `events`."""
        conversation = self._read(events)
        return assemble(conversation, lay_out(conversation, self.choose(conversation, View())))

    def choose(self, conversation: Conversation, view: View) -> View:
        """What to show of `conversation`, starting from `view` (what earlier policies chose)."""
        return view

    def summary_request(self, events: Sequence[dict],
                        count: Callable[[str], int]) -> tuple[int, list[Message]] | None:
        """None, or (the index a new summary covers up to, the messages asking the model for it)."""
        return None

    def tools(self, trace) -> list[Callable]:
        """Tools the policy adds while it is active; they write their events into `trace`."""
        return []

    def replay_caveat(self, events: Sequence[dict]) -> str:
        """What a replay under this policy cannot show of `events`, in one clause; "" if nothing."""
        return ""


def written(name: str, policy: Policy, **values) -> str:
    """How a policy with named parameters is written, as make_policy reads it: `name` alone when
    every value is the constructor's default, else `name:key=value/...` for those that are not (in
    the constructor's order, a tuple's values one key each), so that two settings of one policy
    never share a name in a report."""
    parameters = inspect.signature(type(policy)).parameters
    changed = []
    for key, parameter in parameters.items():
        value = values.get(key, parameter.default)
        if value == parameter.default:
            continue
        for one in value if isinstance(value, tuple) else (value,):
            changed.append(f"{key}={str(one).lower() if isinstance(one, bool) else one}")
    return f"{name}:{'/'.join(changed)}" if changed else name
