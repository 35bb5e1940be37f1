"""Qwen2.5's own chat template for tools, for the native protocol offline: written out in Python from the template
the model's GGUF file carries (its `tokenizer.chat_template`), so the model is shown tools and results exactly as it
was trained to see them, and its calls are read as the template asks it to write them.

    <|im_start|>system
    {instructions}

    # Tools

    You may call one or more functions to assist with the user query.

    You are provided with function signatures within <tools></tools> XML tags:
    <tools>
    {"type": "function", "function": {schema}}
    </tools>

    For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML
    tags:
    <tool_call>
    {"name": <function-name>, "arguments": <args-json-object>}
    </tool_call><|im_end|>
    <|im_start|>user
    {question}<|im_end|>
    <|im_start|>assistant
    <tool_call>
    {"name": "add_numbers", "arguments": {"x": 2, "y": 3}}
    </tool_call><|im_end|>
    <|im_start|>user
    <tool_response>
    5
    </tool_response><|im_end|>
    <|im_start|>assistant

The control tokens (<|im_start|>, <|im_end|>) are written by this module only: every text from the conversation,
a tool's result included, is encoded as plain text, so a result that contains `<|im_end|>` cannot end a turn.
"""
import json
import re

from models import Message, ToolCall, native_calls

TOOLS_HEADER = ("\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided "
                "with function signatures within <tools></tools> XML tags:\n<tools>")
TOOLS_FOOTER = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
                "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                "<args-json-object>}\n</tool_call>")
# Where a call begins, as llama.cpp's server found one (common/chat.cpp, the Hermes 2 Pro format's open_regex): an
# optional fence, an optional tag, then a JSON object whose first key is "name". Its newer template analysis reads only
# calls inside <tool_call> tags, which these models seldom write (measured: docs/protocols.md).
OPEN = re.compile(r"\s*(?:```(?:xml|json)?\n\s*)?(?:<tool_call>|<function_call>|<tool>|<tools>|<response>|<json>|<xml>|"
                  r"<JSON>)?\s*(?P<call>\{\s*\"name\")")
CLOSE = re.compile(r"\s*(?:</(?:tool_call|function_call|tool|tools|response|json|xml|JSON)>)?\s*(?:```)?")
NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
DECODER = json.JSONDecoder()


def segments(messages: list[Message], tools: list[dict]) -> tuple[list[tuple[str, bool]], int]:
    """The prompt as (text, is_control) pieces, ending with the opening of the assistant's turn, and how many of
    them make the system turn (the instructions and the tools: the start every call of a session shares)."""
    pieces: list[tuple[str, bool]] = []

    def turn(role: str, *texts: str) -> None:
        pieces.extend([("<|im_start|>", True), (role + "\n" if role else "", False)])
        pieces.extend((text, False) for text in texts)
        pieces.extend([("<|im_end|>", True), ("\n", False)])

    system = messages[0].text if messages and messages[0].role == "system" else \
        "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    described = "".join("\n" + _tojson({"type": "function", "function": schema}) for schema in tools)
    turn("system", system, TOOLS_HEADER, described, TOOLS_FOOTER)
    shared = len(pieces)
    for message in messages[1:] if messages and messages[0].role == "system" else messages:
        calls = [call for part in message.parts for call in part.calls]
        if message.role == "model":
            said = "\n\n".join(part.sent for part in message.parts if part.sent)
            written = [("\n" + said) if said else ""] + [_written_call(call) for call in calls]
            if calls:
                turn("", "assistant", *written)
            else:
                turn("assistant", said)
            continue
        results = [part for part in message.parts if part.call is not None]
        if results:  # the tool results of the last reply, one user turn of <tool_response> blocks
            turn("", "user", *(f"\n<tool_response>\n{part.sent}\n</tool_response>" for part in results))
        rest = "\n\n".join(part.sent for part in message.parts if part.call is None)
        if rest:
            turn("user", rest)
    pieces.extend([("<|im_start|>", True), ("assistant\n", False)])
    return pieces, shared


def read_calls(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """What the model said before its first call, and its calls: each JSON object {"name": ..., "arguments": {...}}
    in the forms llama.cpp's server reads for this template (its Hermes 2 Pro parser, common/chat.cpp): after
    <tool_call> (the template's own form), another tag (<function_call>, <tool>, <json>, ...), a ```json fence, or
    bare. The 0.5B model mostly writes it bare. What follows a call that is not whole JSON is one more call, named if
    a name can be found, its text the arguments, so the loop answers it with what is wrong."""
    found = OPEN.search(text)
    if found is None:
        return text.strip(), ()
    said, at, raw = text[:found.start()].strip(), found.start("call"), []
    while at < len(text):
        try:
            value, end = DECODER.raw_decode(text, at)
        except ValueError:
            name = NAME.search(text, at)
            raw.append((None, name.group(1) if name else "", text[at:].strip()))
            break
        if not isinstance(value, dict):
            break
        raw.append((None, value.get("name") if isinstance(value.get("name"), str) else "", value.get("arguments", {})))
        following = OPEN.match(text, CLOSE.match(text, end).end())  # the next call, right after this one
        if following is None:
            break
        at = following.start("call")
    return said, native_calls(raw)


class FirstCall:
    """Where to stop the model's turn: once its first call is whole (one call a reply, as llama.cpp's server does
    unless a request sets parallel_tool_calls; greedy, the 0.5B model otherwise repeats its call until it runs out of
    tokens). A `StopRule` for `LocalModel.complete`; the turn also ends at <|im_end|>."""

    def cut(self, text: str) -> int:
        found = OPEN.search(text)
        if found is None:
            return -1
        try:
            _, end = DECODER.raw_decode(text, found.start("call"))
        except ValueError:
            return -1
        return CLOSE.match(text, end).end() if text[end:].strip() else -1  # its closing tag, once it is written

    def undecided(self, text: str) -> int:
        return len(text)  # nothing is shown as it is written: a call is read whole


def _written_call(call: ToolCall) -> str:
    """A call as the template writes it back: the arguments as a JSON object when they are one, else as given."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        arguments = call.arguments
    return '\n<tool_call>\n{"name": "' + call.name + '", "arguments": ' + _tojson(arguments) + "}\n</tool_call>"


def _tojson(value) -> str:
    """The template's `tojson`: JSON with ", " and ": " between items, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False)
