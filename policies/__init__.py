"""Context policies: what the model is shown on each call, rendered from the append-only trace.

A policy is a small class with `name` and `render(events) -> list[Message]`. Rendering is a pure function
of the trace: same events, same messages, and the trace is never changed. Two optional extras: `tools(trace)`
adds tools while the policy is active (pinned), and `summary_request(events)` asks the loop for a model-written
summary before a call (compact). Register a new policy in POLICIES under a short name; the loop does not change.
"""
from typing import Protocol, Sequence

from models import Message
from policies.compact import CompactHistory
from policies.elide import ElideObservations
from policies.full import FullHistory
from policies.pinned import PinnedNotes
from policies.user_only import UserOnly
from policies.window import SlidingWindow
from tokens import count_tokens


class Policy(Protocol):
    name: str

    def render(self, events: Sequence[dict]) -> list[Message]: ...


POLICIES = {
    "full": FullHistory,
    "window": SlidingWindow,
    "user-only": UserOnly,
    "elide": ElideObservations,
    "pinned": PinnedNotes,
    "compact": CompactHistory,
}
POLICY_HELP = "full, window:N, user-only:N, elide:K, pinned[:top|end], compact:T"

BUCKETS = {"instructions": "instructions", "question": "user", "reply": "model", "observation": "observations",
           "notes": "notes", "summary": "notes", "placeholder": "markers", "request": "markers"}


def policy_tools(policy: Policy, trace) -> list:
    """The tools a policy adds while it is active (pinned notes), writing their events into `trace`."""
    return policy.tools(trace) if hasattr(policy, "tools") else []


def make_policy(spec: str) -> Policy:
    """A policy from its command-line form: `full`, `window:4`, `pinned:end`, `compact:8000`."""
    name, _, argument = spec.strip().partition(":")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {spec!r}; choose from: {POLICY_HELP}")
    if not argument:
        return POLICIES[name]()
    if name == "full":
        raise ValueError("policy 'full' takes no argument")
    if name == "pinned":
        return PinnedNotes(argument)
    try:
        number = int(argument)
    except ValueError:
        raise ValueError(f"policy {name!r} takes a whole number, as in {name}:4; got {argument!r}") from None
    return POLICIES[name](number)


def measure(messages: list[Message], tool_docs: str = "") -> dict[str, int]:
    """Local token counts of a rendered context, by bucket: instructions, tools (their docs within the
    instructions), user, model, observations, notes (pinned notes and summaries), markers (placeholders)."""
    counts = dict.fromkeys(["instructions", "tools", "user", "model", "observations", "notes", "markers"], 0)
    for message in messages:
        for part in message.parts:
            counts[BUCKETS.get(part.kind, "markers")] += count_tokens(part.text)
    if tool_docs and counts["instructions"]:
        counts["tools"] = min(count_tokens(tool_docs), counts["instructions"])
        counts["instructions"] -= counts["tools"]
    return counts
