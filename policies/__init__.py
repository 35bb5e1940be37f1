"""Context policies: what the model is shown on each call, rendered from the append-only trace.

The seam is `policies.base.Policy`: a `name`, `render(events) -> list[Message]` (a pure function of the
trace; by default, the view `choose` makes, laid out), and two hooks with defaults, `summary_request`
(compact) and `tools` (pinned, forget). Register a new policy in POLICIES under a short name; the loop does
not change. `make_policy` reads a policy's argument from the command line by its constructor's signature,
and `A+B` composes policies (policies/composed.py).
"""
import inspect
import math
import typing
from typing import Callable

from models import Message
from settings import quoted
from policies.adk_compact import AdkCompact
from policies.anthropic_clear import AnthropicClear
from policies.anthropic_compact import AnthropicCompact
from policies.base import Policy
from policies.budget import Budget
from policies.claude_code import ClaudeCode
from policies.codex import Codex
from policies.cold import ColdRewrite
from policies.compact import CompactHistory
from policies.composed import Composed
from policies.elide import ElideObservations
from policies.facts import KeyFacts
from policies.forget import Forget
from policies.full import FullHistory
from policies.langchain_summary import LangChainSummary
from policies.openai_compact import OpenAICompact
from policies.openclaw_ttl import OpenClawTTL
from policies.pinned import PinnedNotes
from policies.retrieve import Retrieve
from policies.stable import Stable
from policies.strands_window import StrandsWindow
from policies.user_only import UserOnly
from policies.window import SlidingWindow

POLICIES = {
    "full": FullHistory,
    "window": SlidingWindow,
    "user-only": UserOnly,
    "elide": ElideObservations,
    "pinned": PinnedNotes,
    "compact": CompactHistory,
    "facts": KeyFacts,
    "retrieve": Retrieve,
    "budget": Budget,
    "forget": Forget,
    "stable": Stable,
    "cold": ColdRewrite,
    "anthropic-clear": AnthropicClear,
    "strands-window": StrandsWindow,
    "openclaw-ttl": OpenClawTTL,
    "anthropic-compact": AnthropicCompact,
    "openai-compact": OpenAICompact,
    "claude-code": ClaudeCode,
    "codex": Codex,
    "langchain-summary": LangChainSummary,
    "adk-compact": AdkCompact,
}
POLICY_HELP = ", ".join(kind.usage for kind in POLICIES.values()) + ", or several joined by + (elide:2+pinned)"
BASELINE = FullHistory.name  # what every other policy's cost is measured against: the whole history, as it happened

BUCKET_NAMES = ["instructions", "tools", "user", "model", "observations", "notes", "markers"]
BUCKETS = {"instructions": "instructions", "question": "user", "reply": "model", "observation": "observations",
           "notes": "notes", "summary": "notes", "placeholder": "markers", "request": "markers"}


def make_policy(spec: str) -> Policy:
    """A policy from its command-line form: `full`, `window:4`, `pinned:end`, `compact:8000`, `elide:2+pinned`, or
    with its parameters named, `anthropic-clear:trigger=5000/keep=2` (a parameter that holds several values is
    written once for each: `exclude_tools=a/exclude_tools=b`). A bare argument is converted to the type of the
    constructor's first parameter, a named one to its own parameter's type."""
    if "+" in spec:
        return Composed([make_policy(part) for part in spec.split("+")])
    name, _, argument = spec.strip().partition(":")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {quoted(spec)}; choose from: {POLICY_HELP}")
    kind = POLICIES[name]
    if not argument:
        return kind()
    parameters = list(inspect.signature(kind).parameters)
    if not parameters:
        raise ValueError(f"policy {name!r} takes no argument")
    if "=" in argument:
        return _with_parameters(name, kind, argument)
    convert = typing.get_type_hints(kind.__init__).get(parameters[0], str)
    try:
        value = convert(argument)
    except ValueError:
        raise ValueError(f"policy {name!r} takes a whole number, as in {name}:4; got {quoted(argument)}") from None
    return kind(value)


def _with_parameters(name: str, kind, argument: str) -> Policy:
    """`name:key=value/key=value`: each value converted to its parameter's type (int, float, bool, str, or a tuple
    of str, given once a value); ValueError in one line, naming the policy's parameters, for an unknown key, a key
    given twice, a value of the wrong type, or values the policy refuses."""
    hints = typing.get_type_hints(kind.__init__)
    takes = list(inspect.signature(kind).parameters)
    listed = f"{name} takes " + ", ".join(f"{key}=" for key in takes)
    given: dict = {}
    for pair in argument.split("/"):
        key, equals, value = (text.strip() for text in pair.partition("="))
        if not equals or key not in takes:
            raise ValueError(f"policy {name!r}: unknown parameter {quoted(key or pair)}; {listed}")
        hint = hints.get(key, str)
        if typing.get_origin(hint) is tuple:
            given[key] = given.get(key, ()) + (value,)
            continue
        if key in given:
            raise ValueError(f"policy {name!r}: {key} is given twice; {listed}")
        try:
            given[key] = _converted(value, hint)
        except ValueError:
            raise ValueError(f"policy {name!r}: {key} takes {_TYPE_NAMES.get(hint, 'text')}, got {quoted(value)}; "
                             f"{listed}") from None
    try:
        return kind(**given)
    except ValueError as problem:
        raise ValueError(f"policy {name!r}: {problem}; {listed}") from None


_TYPE_NAMES = {int: "a whole number", float: "a number", bool: "true or false"}


def _converted(value: str, hint):
    if hint is bool:
        if value.lower() not in ("true", "false"):
            raise ValueError(value)
        return value.lower() == "true"
    converted = hint(value)
    if hint is float and math.isnan(converted):  # every comparison with it false; inf is a setting (never)
        raise ValueError(value)
    return converted


def measure(messages: list[Message], tool_docs: str, count: Callable[[str], int]) -> dict[str, int]:
    """Token counts of a rendered context, by bucket: instructions, tools (their docs within the instructions),
    user, model, observations, notes (pinned notes and summaries), markers (placeholders)."""
    return Meter(count)(messages, tool_docs)


class Meter:
    """`measure` for a context measured on every call. Policies reuse the message objects of a history that only
    grows, so the messages that begin the new context as they began the last one are not counted again: the
    running totals up to them are kept."""

    def __init__(self, count: Callable[[str], int]):
        self.count = count
        self._messages: list[Message] = []
        self._totals: list[dict[str, int]] = []  # bucket totals through each of those messages

    def __call__(self, messages: list[Message], tool_docs: str, offered: str = "") -> dict[str, int]:
        """`tool_docs`: the tools' docs within the instructions (text protocol); `offered`: the tool schemas sent
        beside the messages (native protocol), counted as tools too."""
        kept = self._kept(messages)
        self._messages, totals = messages, self._totals[:kept]
        running = dict(totals[-1]) if totals else dict.fromkeys(BUCKET_NAMES, 0)
        for message in messages[kept:]:
            for part in message.parts:
                running[BUCKETS.get(part.kind, "markers")] += self.count(part.text)
            totals.append(dict(running))
        self._totals = totals
        if tool_docs and running["instructions"]:
            running["tools"] = min(self.count(tool_docs), running["instructions"])
            running["instructions"] -= running["tools"]
        if offered:
            running["tools"] += self.count(offered)
        return running

    def _kept(self, messages: list[Message]) -> int:
        """How many messages at the start are the very ones counted last time (the last of them may have grown)."""
        old = self._messages
        for kept in (len(old), len(old) - 1):
            if 0 < kept <= len(messages) and messages[:kept] == old[:kept]:
                return kept
        return 0
