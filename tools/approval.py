"""A person's yes before a tool runs.

Which calls need one: with `confirm` (--confirm, or /confirm on in a chat), every call; without it, the calls of an
MCP server's tool that may be destructive (tools/mcp.py's `destructive`: marked so, or not marked read-only or
non-destructive, which MCP's defaults read as destructive); with `yes` (--yes, or
TINYREACT_YES=1), none is asked about and each is recorded as allowed by it. The person answers y (run it), n
(decline it: the model is told), e (edit the arguments, which are checked again) or a (allow this tool for the rest of
the session). With no one to ask (no terminal), a call that needs a yes is declined, never left waiting.

The question is asked at the tool's boundary: `guarded` wraps each tool the loop (agent.py) is given, so the loop
just calls the tool; the guard records every decision in the trace. Asking on a terminal is the command line's
(cli/approval.py), handed in as `ask`.
"""
import functools
import json
from dataclasses import dataclass
from typing import Callable

from tools import DECLINED, Refused, bind_named, call_text, named_arguments

# A person's answer: (tool, its arguments by name, why a yes is needed, what was wrong with the last edit or None) ->
# (one of "y", "n", "e", "a"; with "e", the arguments as the person edited them, as JSON text). EOFError: no answer.
Ask = Callable[[Callable, dict, str, str | None], tuple[str, str | None]]
CHOICES = {"y": "run it", "n": "decline it", "e": "edit its arguments", "a": "allow this tool for the session"}


@dataclass(frozen=True)
class Decision:
    run: bool
    arguments: dict  # what the tool runs with: as the model gave them, or as the person edited them
    by: str  # who or what decided, as the trace and the pages say it
    why: str  # why a yes was needed
    edited: bool = False

    @property
    def word(self) -> str:
        return "edited" if self.edited else "allowed" if self.run else "declined"


class Approval:
    def __init__(self, ask: Ask | None = None, confirm: bool = False, yes: bool = False):
        self.ask, self.confirm, self.yes = ask, confirm, yes
        self.allowed: set[str] = set()  # tools the person allowed for the rest of the session

    def why(self, tool: Callable) -> str | None:
        """Why a call of `tool` needs a person's yes; None when it needs none."""
        if self.confirm:
            return "--confirm asks before every tool call"
        return getattr(tool, "mcp", {}).get("destructive") or None

    def asks(self, tool: Callable) -> bool:
        """Whether a call of `tool` will be put to a person (not allowed already, not declined for want of one)."""
        return self.why(tool) is not None and not self.yes and tool.__name__ not in self.allowed and \
            self.ask is not None

    def decide(self, tool: Callable, arguments: dict, check: Callable[[dict], object]) -> Decision | None:
        """Whether the call runs, and with which arguments; None when it needs no yes. `check` raises TypeError or
        ValueError, with a message for the person, for edited arguments the tool cannot take."""
        why = self.why(tool)
        if why is None:
            return None
        if self.yes:
            return Decision(True, arguments, "--yes", why)
        if tool.__name__ in self.allowed:
            return Decision(True, arguments, "the person, for the session", why)
        if self.ask is None:
            return Decision(False, arguments, "no one to ask (no terminal)", why)
        problem = None
        while True:
            try:
                answered, text = self.ask(tool, arguments, why, problem)
            except EOFError:
                return Decision(False, arguments, "no answer (the input ended)", why)
            if answered == "e":
                edited, problem = _edited(text, check)
                if problem is None:
                    return Decision(True, edited, "the person", why, edited=edited != arguments)
                continue
            if answered == "a":
                self.allowed.add(tool.__name__)
                return Decision(True, arguments, "the person, for the session", why)
            return Decision(answered == "y", arguments, "the person", why)


def guarded(tool: Callable, approval: Approval, trace) -> Callable:
    """`tool` behind `approval`. A call that needs a person's yes is first checked against the tool's own input schema
    (an MCP tool's; a call that cannot run is told to the model, the person is not asked), then asked about, and the
    decision recorded in `trace` as an approval event. A call the person declined earlier in the same question is
    declined again without asking. A declined call raises Refused, whose message tells the model; an edited one runs
    with the person's arguments, checked as written, and the event records them as they ran. The guard has the
    tool's name, signature, docstring and attributes."""
    @functools.wraps(tool)
    def guard(*args, **kwargs):
        if approval.why(tool) is None:
            return tool(*args, **kwargs)
        try:
            named = named_arguments(tool, args, kwargs)
            if hasattr(tool, "check") and approval.asks(tool):  # no one is asked about a call that cannot run
                tool.check(named)
        except (TypeError, ValueError) as problem:
            raise Refused(f"Error: {tool.__name__}(): {problem}.") from None
        call, asked = call_text(tool, args, kwargs), shown(named)
        if _declined_before(trace, tool.__name__, asked):
            raise Refused(f"Declined: {call} was declined already in this question, and not asked again. Go on "
                          "without it, or give your Answer and say what was not done.", call, DECLINED)
        decision = approval.decide(tool, named, lambda edited: bind_named(tool, edited))
        if decision.edited:
            args, kwargs = bind_named(tool, decision.arguments)
        ran = {"edited": shown(named_arguments(tool, args, kwargs))} if decision.edited else {}
        trace.add("approval", tool=tool.__name__, decision=decision.word, by=decision.by, why=decision.why,
                  arguments=asked, **ran)
        if not decision.run:
            because = "the person declined it" if decision.by == "the person" else \
                f"it needs a person's yes and got none: {decision.by}"
            raise Refused(f"Declined: {call} was not run, because {because}. Do not ask for it again; go on "
                          "without it, or give your Answer and say what was not done.", call, DECLINED)
        return tool(*args, **kwargs)
    return guard


def _declined_before(trace, name: str, arguments: str) -> bool:
    """Whether the person declined this very call earlier in the question under way."""
    for event in reversed(trace):
        if event["type"] in ("question", "reset"):
            return False
        if event["type"] == "approval" and (event.get("tool"), event.get("arguments")) == (name, arguments) and \
                event.get("decision") == "declined" and event.get("by") == "the person":
            return True
    return False


def shown(arguments: dict) -> str:
    """Arguments as a person reads them before saying yes: JSON in ASCII, so that no control or direction character a
    model put in them can hide or reorder what runs (each is an escape such as \\u009d), and a value JSON cannot hold
    (a set, bytes) as its Python repr."""
    return json.dumps(arguments, ensure_ascii=True, default=repr)


def choice(typed: str) -> str | None:
    """A person's answer as one of CHOICES: the letter or its word (y, yes, n, no, e, edit, a, always); None for
    anything else, which is asked again ("abort" is not "a")."""
    words = {"y": "y", "yes": "y", "n": "n", "no": "n", "e": "e", "edit": "e", "a": "a", "always": "a"}
    return words.get(typed.strip().lower())


def _edited(text: str | None, check: Callable[[dict], object]) -> tuple[dict, str | None]:
    """Arguments as the person edited them, and what is wrong with them (None when the tool can take them)."""
    try:
        edited = json.loads(text or "")
    except ValueError as problem:
        return {}, f"that is not JSON ({problem}): write the arguments as an object, like {{\"name\": \"value\"}}"
    if not isinstance(edited, dict):
        return {}, "the arguments are a JSON object, like {\"name\": \"value\"}"
    try:
        check(edited)
    except (TypeError, ValueError) as problem:
        return edited, str(problem)
    return edited, None


def approval_line(event: dict) -> str:
    """An approval event of a trace in one line, as the terminal and the pages show it."""
    edited = f", run as {event['edited']}" if event.get("edited") else ""
    why = f" (a yes was needed: {event['why']})" if event.get("why") else ""
    return (f"{event.get('tool', '?')} {event.get('arguments', '')} {event.get('decision', '?')} by "
            f"{event.get('by', '?')}{edited}{why}")
