"""Reading what the model wrote: the Thought/Action/Answer lines of a reply, and the tool call in an Action.

Model text is hostile input. Nothing here executes it: an Action is parsed with `ast` and accepted only
as a call of a known name with literal arguments, which `ast.literal_eval` turns into plain values.
"""
import ast
import re
import warnings
from typing import NamedTuple

MAX_ACTION_CHARS = 2_000
# Asked of every backend, and replies are cut at an Observation line too: some backends ignore stop sequences.
STOP_SEQUENCES = ["\nObservation"]

# A keyword at the start of a line, optionally numbered ("Action3:") and optionally bold ("**Action:**").
_BEFORE, _AFTER = r"^[ \t]*\**[ \t]*", r"[ \t]*\d*[ \t]*\**[ \t]*:"
_LINE = re.compile(_BEFORE + "(Thought|Action|Answer)" + _AFTER + r"\**[ \t]*(.*)$", re.MULTILINE)
# The start of a line _LINE reads as an Answer; and a last line that could still grow into one, as a reply streams.
_ANSWER = re.compile(_BEFORE + "Answer" + _AFTER, re.MULTILINE)
_ANSWER_BEGUN = re.compile(r"[ \t]*\**[ \t]*(?:Answer[ \t]*\d*[ \t]*\**[ \t]*|"
                           + "|".join("Answer"[:n] for n in range(5, 0, -1)) + ")?")
# Where the model starts writing an observation of its own: a line that starts with `Observation`, or `ObservationN:`
# anywhere after other text, as in `Action2: add_numbers(42, 42) Observation2: 84`; bold markers included.
_OBSERVATION = re.compile(r"^[ \t]*\**[ \t]*Observation|(?:\*+[ \t]*)?\bObservation[ \t]*\d*[ \t]*\**[ \t]*:",
                          re.MULTILINE)
# The end of a text that could still become one, as a reply streams in: `… Observ`, `… Observation2`.
_OBSERVATION_BEGUN = re.compile(r"(?:^[ \t]*\**[ \t]*|(?:\*+[ \t]*)?\b)(?:Observation[ \t]*\d*[ \t]*\**[ \t]*|"
                                + "|".join("Observation"[:n] for n in range(10, 0, -1)) + r")$"
                                + r"|^[ \t]*\**[ \t]*$|\*+[ \t]*$", re.MULTILINE)


class Reply(NamedTuple):
    thought: str | None = None
    action: str | None = None
    answer: str | None = None


class ActionCall(NamedTuple):
    name: str
    args: tuple
    kwargs: dict


class ActionError(ValueError):
    """An Action that cannot be run; its message is fed back to the model as the observation."""


def continued(text: str) -> str:
    """A tool's output as the model and the terminal are shown it, after `ObservationN: `: every line after the first
    indented by two spaces, so that no line of it (an `Answer: 42` in a page, an `Action: ...`) begins like a line
    of the protocol. Line breaks of every kind (CR, CRLF, U+2028 ...) count as line breaks."""
    return "\n  ".join(text.splitlines())


def observation_at(text: str, start: int = 0) -> int:
    """Where, at or after `start`, the model begins an observation of its own (see _OBSERVATION); -1 if nowhere."""
    match = _OBSERVATION.search(text, start) if "Observation" in text else None
    return match.start() if match else -1


def observation_may_begin(text: str) -> int:
    """The index from which the end of `text` could still grow into the start of an observation; len(text) if none."""
    match = _OBSERVATION_BEGUN.search(text, max(0, text.rfind("\n") + 1, len(text) - 40))
    return match.start() if match else len(text)


def answer_at(text: str, start: int = 0) -> int:
    """Where, at or after `start`, a line that parse_reply reads as an Answer begins; -1 if nowhere."""
    match = _ANSWER.search(text, start) if "Answer" in text else None
    return match.start() if match else -1


def answer_may_begin(text: str) -> int:
    """The start of the last line of `text` if it could still grow into an Answer line (`**Ans`); len(text) if not."""
    last = text.rfind("\n") + 1
    return last if _ANSWER_BEGUN.fullmatch(text, last) else len(text)


def cut_at_observation(text: str) -> str:
    """Drop everything from the first Observation the model wrote itself, at the start of a line or after other
    text on it: the model must not write its own."""
    at = observation_at(text)
    return text[:at].rstrip() if at >= 0 else text.rstrip()


def parse_reply(text: str) -> Reply:
    """Find the thought, the first Action and the Answer; an Answer counts only if no Action comes before it."""
    thought = action = answer = None
    matches = list(_LINE.finditer(text))
    for i, match in enumerate(matches):
        keyword, rest = match.group(1), match.group(2).strip()
        if keyword == "Thought" and thought is None:
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            thought = (rest + text[match.end():end]).strip() or None
        elif keyword == "Action":
            action = rest.strip("`").strip() or None
            if action:  # an empty Action line is no action: a later line may still hold one
                break
        elif keyword == "Answer":
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            answer = (rest + text[match.end():end]).strip() or None
            if answer:
                break
    return Reply(thought, action, answer)


# Python warns on stderr about some source it still parses (`1or 2`, an invalid escape such as "\d"). Actions are
# parsed under this file name, and its warnings are not shown: a model's text is news for the model, not a warning
# for the user. The filter names no other source, so it holds for every thread without changing any other warning.
ACTION_SOURCE = "<model action>"
warnings.filterwarnings("ignore", category=SyntaxWarning, module=ACTION_SOURCE)
warnings.filterwarnings("ignore", category=DeprecationWarning, module=ACTION_SOURCE)


def parse_action(text: str) -> ActionCall:
    """Turn `tool_name(1, "two", k=3.5)` into a name and literal arguments, or raise ActionError."""
    if len(text) > MAX_ACTION_CHARS:
        raise ActionError(f"the action is {len(text):,} characters long; the limit is {MAX_ACTION_CHARS:,}")
    source = text.strip()
    try:
        tree = ast.parse(source, filename=ACTION_SOURCE, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ActionError(f"could not parse the action {_quote(text)}; write one call like add_numbers(2, 3)") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ActionError(f"the action {_quote(text)} is not a tool call; write one call like add_numbers(2, 3)")
    args = tuple([_literal(node, call.func.id, source) for node in call.args])
    kwargs = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ActionError(f"{call.func.id}(): **arguments are not allowed; name each argument")
        if keyword.arg in kwargs:  # Python's compiler refuses this, but `ast.parse` lets it through
            raise ActionError(f"{call.func.id}(): keyword argument repeated: {keyword.arg}")
        kwargs[keyword.arg] = _literal(keyword.value, call.func.id, source)
    return ActionCall(call.func.id, args, kwargs)


def _literal(node: ast.AST, name: str, source: str):
    if type(node) is ast.Constant:  # a number or a string, most arguments: literal_eval would return its value
        return node.value
    if isinstance(node, ast.Starred):
        raise ActionError(f"{name}(): *arguments are not allowed; write each value")
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise ActionError(
            f"{name}(): arguments must be literal values such as 3, 2.5 or \"text\", "
            f"not {_quote(ast.get_source_segment(source, node) or '')}"  # as written: unparse could recurse too deep
        ) from None


def _quote(text: str, limit: int = 80) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "…")
