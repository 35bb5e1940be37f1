"""How the tools are offered to the model and how its reply is read: the two protocols, side by side.

text (the default, the seed's): the tools' signatures and docstrings are written into the instructions; the model
writes `Thought:`, then `Action: tool(args)` or `Answer:`, as plain text; the program reads those lines
(replies.py) and writes the result back as `ObservationN:`. One action per reply.

native: the tools are sent beside the messages as the service's tool schemas (tools/schema.py, from the same
signatures and docstrings); the model answers with structured tool calls (a name, JSON arguments, an id) that the
service has already told apart from its text; each result goes back answering its call's id. A reply may make
several calls (they run in order); a reply with text and no call is the answer.

Both are read into the same `Reading` (a thought, the actions, an answer) and recorded as the same events (reply,
thought, action, answer, observation); a native action and its observation carry the call's id. Both check a call
against the tool's signature the same way (tools.bind_arguments): what a protocol reads is only the name and the
arguments, and whatever is wrong with them becomes a message the model reads as the call's result.
"""
import json
from pathlib import Path
from string import Template
from typing import Callable, Iterable, NamedTuple

from models import MAX_CALL_CHARS, ModelConfigError, ModelReply, native_calls
from prompts import render_instructions
from replies import STOP_SEQUENCES, ActionError, cut_at_observation, parse_action, parse_reply
from tools.schema import tool_schema

MAX_CALLS = 8  # tool calls run from one native reply; each one past it is answered with an error, not run
MAX_ARGUMENTS_CHARS = MAX_CALL_CHARS - 1  # of one call's JSON arguments (the reader keeps one more, to say it is over)
MAX_DEPTH = 20  # brackets nested in one call's arguments: no tool takes more than a few
NATIVE_PROMPT = Path(__file__).parent / "prompts" / "native.txt"


class Action(NamedTuple):
    """One tool call a reply asks for, as the trace records it: `add_numbers(2, 3)` in the text protocol,
    `add_numbers({"x": 2, "y": 3})` in the native one, with its id and the refusal it gets unread, if any."""
    text: str
    id: str | None = None
    name: str | None = None  # a native call's tool name and JSON arguments, as the service sent them
    arguments: str | None = None
    refused: str | None = None  # the whole observation when the call is not even read (one call too many)

    def recorded(self) -> dict:
        return {"id": self.id} if self.id else {}


class Reading(NamedTuple):
    thought: str | None
    actions: tuple[Action, ...]
    answer: str | None


class TextProtocol:
    """Thought / Action / Answer, written by the model as text."""
    name = "text"
    by_name = False  # an action's values come by position or by name, as written: bound as written
    stop = STOP_SEQUENCES  # a model that writes its own Observation is cut there
    finish_request = ("You have no steps left. Using only the Observations above, write your best final Answer now, "
                      "as: Answer: <answer>")

    @staticmethod
    def written(text: str) -> str:
        """A reply's text as recorded: cut where the model began an Observation of its own."""
        return cut_at_observation(text)

    def instructions(self, tools: Iterable[Callable], model: str) -> str:
        return render_instructions(tools, model)

    def offer(self, tools: Iterable[Callable]) -> dict:
        """What generate() is given beside the messages: nothing, the tools are in the instructions."""
        return {}

    def check(self, model) -> None:
        """Every model speaks the text protocol."""

    def calls(self, reply: ModelReply) -> tuple:
        """The structured calls of a reply this protocol reads: none, the calls are in the text."""
        return ()

    def read(self, text: str, calls: tuple) -> Reading:
        parsed = parse_reply(text)
        return Reading(parsed.thought, (Action(parsed.action),) if parsed.action is not None else (), parsed.answer)

    def call(self, action: Action) -> tuple[str, tuple, dict]:
        """The tool's name and the call's literal arguments; ActionError saying what is wrong."""
        call = parse_action(action.text)
        return call.name, call.args, call.kwargs

    def unreadable(self, reply: ModelReply) -> str:
        """The observation for a reply that has neither an action nor an answer."""
        if reply.finish == "length":
            thinking = f", {reply.thoughts_tokens:,} of them thinking" if reply.thoughts_tokens else ""
            return (f"Error: your reply was cut at the output limit ({reply.output_tokens:,} tokens{thinking}) before "
                    "an Action or Answer. Think less; write a short Thought, then an Action or an Answer.")
        if reply.blocked:
            return (f"Error: your reply was blocked ({reply.blocked}). Rephrase, then write a Thought and an Action or "
                    "an Answer.")
        if not reply.text.strip():
            return "Error: your reply was empty. Write a Thought, then an Action like add_numbers(2, 3) or an Answer."
        return ("Error: your reply had no Action or Answer line. Write a Thought, then either Action: tool(args) or "
                "Answer: <answer>.")


class NativeProtocol:
    """The service's own function calling: tool schemas out, structured calls back."""
    name = "native"
    by_name = True  # a call's values all come by name: those a tool takes only by position are put in their places
    stop: list[str] = []  # nothing to cut: the model does not write the protocol as text
    finish_request = ("You have no steps left. Using only the tool results above, reply now with your best final "
                      "answer as plain text, and call no tool.")

    @staticmethod
    def written(text: str) -> str:
        return text

    def __init__(self, prompt: str | Path = NATIVE_PROMPT):
        self.prompt = Path(prompt)  # the instructions' template: its $tools are the tools' names

    def instructions(self, tools: Iterable[Callable], model: str) -> str:
        names = ", ".join(tool.__name__ for tool in tools)
        return Template(self.prompt.read_text(encoding="utf-8")).substitute(tools=names).strip()

    def offer(self, tools: Iterable[Callable]) -> dict:
        return {"tools": [tool_schema(tool) for tool in tools]}

    def check(self, model) -> None:
        """ModelConfigError for a model whose backend cannot send tool schemas."""
        if not getattr(model, "native_tools", False):
            raise ModelConfigError(f"{model.name} cannot call tools natively here: use --protocol text with it "
                                   "(native calling works with Gemini, the openai, ollama and llamacpp backends "
                                   "and the embedded Qwen models; Gemma 3's chat template has no tools)")

    def calls(self, reply: ModelReply) -> tuple:
        """The reply's calls as the trace records them, whatever a backend put in them (models.native_calls): text
        names and arguments, bounded, each with an id no other call of the reply has."""
        return native_calls((call.id, call.name, call.arguments) for call in reply.calls)

    def read(self, text: str, calls: tuple) -> Reading:
        """Calls (as `calls` made them) become actions, the first MAX_CALLS run, the rest refused; text with no call
        is the answer, text beside calls the thought."""
        said = text.strip() or None
        if not calls:
            return Reading(None, (), said)
        actions = tuple(Action(f"{call.name}({call.arguments})", call.id, call.name, call.arguments,
                               None if number <= MAX_CALLS else
                               f"Error: one reply may make at most {MAX_CALLS} tool calls; this one, number {number}, "
                               "was not run. Make it again in your next reply if you still need it.")
                        for number, call in enumerate(calls, 1))
        return Reading(said, actions, None)

    def call(self, action: Action) -> tuple[str, tuple, dict]:
        return action.name, (), arguments_of(action.arguments)

    def unreadable(self, reply: ModelReply) -> str:
        if reply.finish == "length":
            return ("Error: your reply was cut at the output limit before it said anything. Answer in a few words, or "
                    "call a tool.")
        if reply.blocked:
            return f"Error: your reply was blocked ({reply.blocked}). Rephrase your answer, or call a tool."
        return "Error: your reply was empty. Call a tool, or reply with your answer as text."


PROTOCOLS = {"text": TextProtocol, "native": NativeProtocol}


def make_protocol(name: str):
    """The protocol `--protocol NAME` names; ValueError naming the choices for any other."""
    if name not in PROTOCOLS:
        raise ValueError(f"unknown protocol {name!r}: choose one of {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]()


def arguments_of(text: str) -> dict:
    """A native call's arguments: a JSON object, read within bounds (its size, its nesting). A service that sends the
    object as a JSON string inside the JSON (arguments encoded twice) is read too. ActionError otherwise."""
    if len(text) > MAX_ARGUMENTS_CHARS:
        raise ActionError(f"the arguments are longer than {MAX_ARGUMENTS_CHARS:,} characters, the limit")
    value = text
    for _ in range(2):  # once, and once more for arguments encoded twice
        if not isinstance(value, str):
            break
        if _depth(value) > MAX_DEPTH:
            raise ActionError(f"the arguments nest deeper than {MAX_DEPTH} levels")
        try:
            value = json.loads(value) if value.strip() else {}  # no arguments at all: a call of a tool that takes none
        except ValueError as problem:
            raise ActionError(f"the arguments are not JSON ({problem}): write them as a JSON object, as in "
                              '{"x": 2, "y": 3}') from None
    if not isinstance(value, dict):
        raise ActionError(f"the arguments must be a JSON object of named values, as in {{\"x\": 2}}; got "
                          f"{type(value).__name__} {json.dumps(value)[:60]}")
    return value


def _depth(text: str) -> int:
    """How deeply brackets nest in JSON text, strings skipped: checked before the JSON is read, so no nesting can
    exhaust the reader's recursion."""
    depth = deepest = 0
    inside = escaped = False
    for character in text:
        if inside:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                inside = False
        elif character == '"':
            inside = True
        elif character in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif character in "]}":
            depth -= 1
    return deepest
