"""How the tools are offered to the model and how its reply is read: two protocols, side by side.

text (the default, the seed's): the tools' signatures and docstrings are written into the
instructions; the model writes `Thought:`, then `Action: tool(args)` or `Answer:`, as text; the
program reads them (replies.py) and writes the result back as `ObservationN:`. One action per reply.

native: the tools are sent beside the messages as the service's tool schemas (tools/schema.py, from
the same signatures and docstrings); the model answers with structured tool calls (a name, JSON
arguments, an id) the service tells apart from its text; each result goes back answering its call's
id. A reply may make several calls, run in order; text with no call is the answer.

Both are read into the same `Reading` (a thought, the actions, an answer) and recorded as the same
events (reply, thought, action, answer, observation); a native action and its observation carry the
call's id. Both check a call against the tool's signature alike (tools.bind_arguments): a protocol
reads only the name and arguments, and what is wrong with them is told the model as the result.

`Protocol` is the whole seam: the loop (agent.py) uses these members and no others.
"""
import json
from pathlib import Path
from string import Template
from typing import Callable, Iterable, Mapping, NamedTuple, Protocol as Seam

from models import MAX_CALL_CHARS, ModelConfigError, ModelReply, ToolCall, native_calls
from prompts import render_instructions, tool_docs
from replies import STOP_SEQUENCES, ActionError, cut_at_observation, parse_action, parse_reply
from tools import bind_arguments
from tools.schema import tool_schema

MAX_CALLS = 8  # tool calls run from one native reply; each past it gets an error, and is not run
# of one call's JSON arguments (the reader keeps one more, to say it is over)
MAX_ARGUMENTS_CHARS = MAX_CALL_CHARS - 1
MAX_DEPTH = 20  # brackets nested in one call's arguments: no tool takes more than a few
NATIVE_PROMPT = Path(__file__).parent / "prompts" / "native.txt"


class Action(NamedTuple):
    """One tool call a reply asks for, as recorded: `add_numbers(2, 3)` in the text protocol,
    `add_numbers({"x": 2, "y": 3})` in the native one, with its id and any refusal when unread."""
    text: str
    id: str | None = None
    name: str | None = None  # a native call's tool name and JSON arguments, as sent
    arguments: str | None = None
    refused: str | None = None  # the whole observation if the call is not even read (one too many)

    def recorded(self) -> dict:
        return {"id": self.id} if self.id else {}


class Reading(NamedTuple):
    thought: str | None
    actions: tuple[Action, ...]
    answer: str | None


class Offer(NamedTuple):
    """How the tools are offered: the instructions, the stop sequences a call is made with, and the
    tool schemas sent beside the messages (None: the tools are in the instructions)."""
    instructions: str
    stop: list[str]
    schemas: list[dict] | None = None


class Protocol(Seam):
    """What the loop asks of a protocol, all of it."""
    name: str  # recorded with the instructions
    finish_request: str  # what the model is asked past the TTL

    def check(self, model) -> None:
        """ModelConfigError for a model that cannot speak this protocol."""

    def offer(self, tools: Iterable[Callable], model: str) -> Offer:
        """The instructions for these tools and model, and what a call sends beside the messages."""

    def recorded(self, reply: ModelReply) -> dict:
        """The reply's text and calls as the trace records them (`text` cut where it must be)."""

    def read(self, reply: dict) -> Reading:
        """The thought, actions and answer of a reply as the trace recorded it."""

    def call(self, action: Action, tools: Mapping[str, Callable]) -> tuple[Callable, tuple, dict]:
        """The tool an action names and its arguments checked against the tool's signature;
        ActionError saying what is wrong, for the model."""

    def unreadable(self, reply: ModelReply) -> str:
        """What the model is told of a reply with neither an action nor an answer."""


class TextProtocol:
    """Thought / Action / Answer, written by the model as text."""
    name = "text"
    finish_request = ("You have no steps left. Using only the Observations above, write your best "
                      "final Answer now, as: Answer: <answer>")

    def check(self, model) -> None:
        """Every model speaks the text protocol."""

    def offer(self, tools: Iterable[Callable], model: str) -> Offer:
        """The tools in the instructions; a model that writes its own Observation is cut there."""
        return Offer(render_instructions(tools, model), STOP_SEQUENCES)

    def recorded(self, reply: ModelReply) -> dict:
        """The text, cut where the model began an Observation of its own; the calls are in it."""
        return {"text": cut_at_observation(reply.text)}

    def read(self, reply: dict) -> Reading:
        parsed = parse_reply(reply["text"])
        actions = (Action(parsed.action),) if parsed.action is not None else ()
        return Reading(parsed.thought, actions, parsed.answer)

    def call(self, action: Action, tools: Mapping[str, Callable]) -> tuple[Callable, tuple, dict]:
        """The call's literal arguments, by position or by name as written, bound as written."""
        call = parse_action(action.text)
        return bound(tools, call.name, call.args, call.kwargs, by_name=False)

    def unreadable(self, reply: ModelReply) -> str:
        """The observation for a reply that has neither an action nor an answer."""
        if reply.finish == "length":
            thoughts = reply.thoughts_tokens
            thinking = f", {thoughts:,} of them thinking" if thoughts else ""
            return (f"Error: your reply was cut at the output limit ({reply.output_tokens:,} tokens"
                    f"{thinking}) before an Action or Answer. Think less; write a short Thought, "
                    "then an Action or an Answer.")
        if reply.blocked:
            return (f"Error: your reply was blocked ({reply.blocked}). Rephrase, then write a "
                    "Thought and an Action or an Answer.")
        if not reply.text.strip():
            return ("Error: your reply was empty. Write a Thought, then an Action like "
                    "add_numbers(2, 3) or an Answer.")
        return ("Error: your reply had no Action or Answer line. Write a Thought, then either "
                "Action: tool(args) or Answer: <answer>.")


class NativeProtocol:
    """The service's own function calling: tool schemas out, structured calls back."""
    name = "native"
    finish_request = ("You have no steps left. Using only the tool results above, reply now with "
                      "your best final answer as plain text, and call no tool.")

    def __init__(self, prompt: str | Path = NATIVE_PROMPT):
        self.prompt = Path(prompt)  # the instructions' template: its $tools are the tools' names

    def offer(self, tools: Iterable[Callable], model: str) -> Offer:
        """The tools' names in the instructions, their schemas beside the messages, and no stop
        sequence: the model does not write the protocol as text."""
        tools = list(tools)
        names = ", ".join(tool.__name__ for tool in tools)
        template = Template(self.prompt.read_text(encoding="utf-8"))
        instructions = template.substitute(tools=names).strip()
        return Offer(instructions, [], [tool_schema(tool) for tool in tools])

    def check(self, model) -> None:
        """ModelConfigError for a model whose backend cannot send tool schemas."""
        if not getattr(model, "native_tools", False):
            raise ModelConfigError(f"{model.name} cannot call tools natively here: use --protocol "
                                   "text with it (native calling works with Gemini, the openai, "
                                   "ollama and llamacpp backends and the embedded Qwen models; "
                                   "Gemma 3's chat template has no tools)")

    def recorded(self, reply: ModelReply) -> dict:
        """The text, and the calls whatever a backend put in them (models.native_calls): text names
        and arguments, bounded, each with an id no other call of the reply has."""
        calls = native_calls((call.id, call.name, call.arguments) for call in reply.calls)
        listed = [call._asdict() for call in calls]
        return {"text": reply.text} | ({"calls": listed} if calls else {})

    def read(self, reply: dict) -> Reading:
        """Calls become actions, the first MAX_CALLS run, the rest refused; text with no call is the
        answer, text beside calls the thought."""
        said = reply["text"].strip() or None
        recorded = reply.get("calls") or ()
        calls = [ToolCall(call["id"], call["name"], call["arguments"]) for call in recorded]
        if not calls:
            return Reading(None, (), said)
        actions = tuple(Action(f"{call.name}({call.arguments})", call.id, call.name, call.arguments,
                               None if number <= MAX_CALLS else
                               f"Error: one reply may make at most {MAX_CALLS} tool calls; this "
                               f"one, number {number}, was not run. Make it again in your next "
                               "reply if you still need it.")
                        for number, call in enumerate(calls, 1))
        return Reading(said, actions, None)

    def call(self, action: Action, tools: Mapping[str, Callable]) -> tuple[Callable, tuple, dict]:
        """The call's JSON arguments, all by name; those taken only by position are put in place."""
        return bound(tools, action.name, (), arguments_of(action.arguments), by_name=True)

    def unreadable(self, reply: ModelReply) -> str:
        if reply.finish == "length":
            return ("Error: your reply was cut at the output limit before it said anything. Answer "
                    "in a few words, or call a tool.")
        if reply.blocked:
            return (f"Error: your reply was blocked ({reply.blocked}). Rephrase your answer, or "
                    "call a tool.")
        return "Error: your reply was empty. Call a tool, or reply with your answer as text."


class Instructed:
    """A protocol with instructions of one's own (a fork's --instructions): `template`, its
    $tools the tools' documentation, in place of the protocol's; all else is the protocol's."""

    def __init__(self, protocol, template: str):
        self.protocol, self.template = protocol, Template(template)

    def __getattr__(self, name):
        return getattr(self.protocol, name)

    def offer(self, tools: Iterable[Callable], model: str) -> Offer:
        tools = list(tools)
        offer = self.protocol.offer(tools, model)
        text = self.template.safe_substitute(tools=tool_docs(tools)).strip()
        return Offer(text, offer.stop, offer.schemas)


PROTOCOLS = {"text": TextProtocol, "native": NativeProtocol}


def make_protocol(name: str):
    """The protocol `--protocol NAME` names; ValueError naming the choices for any other."""
    if name not in PROTOCOLS:
        raise ValueError(f"unknown protocol {name!r}: choose one of {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]()


def bound(tools: Mapping[str, Callable], name: str, args: tuple, kwargs: dict,
          by_name: bool) -> tuple[Callable, tuple, dict]:
    """The tool named and the call's arguments bound to its signature (tools.bind_arguments);
    ActionError saying what is wrong: no such tool, or arguments it cannot take."""
    tool = tools.get(name)
    if tool is None:
        raise ActionError(f"there is no tool named {name!r}. Available tools: {', '.join(tools)}")
    try:
        return (tool, *bind_arguments(tool, args, kwargs, by_name))
    except TypeError as problem:
        raise ActionError(f"{name}(): {problem}") from None


def arguments_of(text: str) -> dict:
    """A native call's arguments: a JSON object, read within bounds (size, nesting); one sent as a
    JSON string inside the JSON (encoded twice) is read too. ActionError otherwise."""
    if len(text) > MAX_ARGUMENTS_CHARS:
        chars = f"{MAX_ARGUMENTS_CHARS:,} characters"
        raise ActionError(f"the arguments are longer than {chars}, the limit")
    value = text
    for _ in range(2):  # once, and once more for arguments encoded twice
        if not isinstance(value, str):
            break
        if _depth(value) > MAX_DEPTH:
            raise ActionError(f"the arguments nest deeper than {MAX_DEPTH} levels")
        try:
            value = json.loads(value) if value.strip() else {}  # blank: a call taking no arguments
        except ValueError as problem:
            raise ActionError(f"the arguments are not JSON ({problem}): write them as a JSON "
                              'object, as in {"x": 2, "y": 3}') from None
    if not isinstance(value, dict):
        raise ActionError(f"the arguments must be a JSON object of named values, as in "
                          f"{{\"x\": 2}}; got {type(value).__name__} {json.dumps(value)[:60]}")
    return value


def _depth(text: str) -> int:
    """How deeply brackets nest in JSON text, strings skipped: checked before the JSON is read, so
    no nesting can exhaust the reader's recursion."""
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
