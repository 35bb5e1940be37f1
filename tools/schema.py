"""A tool's JSON Schema, for the native protocol: written from the same signature and docstring the text
protocol's prompt shows, so no tool is described twice.

    {"name": "get_temperature", "description": "Get the current air temperature ...",
     "parameters": {"type": "object", "properties": {"latitude": {"type": "number", "description": "-90 to 90,
     north positive."}, ...}, "required": ["latitude", "longitude"]}}

Types come from the annotations (int, float, str, bool, lists and dicts, X | None); a parameter's text is what the
docstring says after its name and a colon, on a line of its own (`name: text`, as in a Google-style Args section)
or in a sentence (`latitude: -90 to 90, north positive.`). The description is the whole docstring, its example
included. Every service takes this shape: OpenAI-compatible servers as `function`, Gemini as a function
declaration (its `parametersJsonSchema`), Qwen's chat template inside `<tools>`.
"""
import inspect
import re
import types
import typing
from functools import lru_cache
from typing import Callable

from tools import signature

JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean", list: "array", tuple: "array",
              dict: "object"}
SECTION = re.compile(r"^(Args|Arguments|Parameters|Params):\s*$")


@lru_cache(maxsize=1024)
def tool_schema(tool: Callable) -> dict:
    """The tool as a function declaration: its name, its docstring and a JSON Schema of its parameters (an MCP
    server's tool: the server's own input schema, unchanged; tools/mcp.py)."""
    doc = inspect.getdoc(tool) or "(no description)"
    if isinstance(getattr(tool, "mcp", None), dict):
        return {"name": tool.__name__, "description": doc, "parameters": tool.mcp["schema"]}
    properties, required = {}, []
    for parameter in signature(tool).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            continue  # any further names: said by additionalProperties below
        described = _type(parameter.annotation)
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            described = {"type": "array", "items": described}
        text = _parameter_text(doc, parameter.name)
        properties[parameter.name] = described | ({"description": text} if text else {})
        if parameter.default is inspect.Parameter.empty and parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            required.append(parameter.name)
    taken = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature(tool).parameters.values())
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": taken}
    return {"name": tool.__name__, "description": doc, "parameters": schema}


def _type(annotation) -> dict:
    """The JSON Schema of an annotation: {} (any value) for none or one JSON has no name for."""
    if annotation in JSON_TYPES:
        return {"type": JSON_TYPES[annotation]}
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type(arguments[0])
    if origin in (typing.Union, types.UnionType):
        kinds = [_type(argument) for argument in arguments if argument is not type(None)]
        if len(kinds) == 1:  # X | None: an X that may be left out
            return kinds[0]
        return {"anyOf": kinds} if all(kinds) else {}
    if origin in JSON_TYPES:
        described = {"type": JSON_TYPES[origin]}
        if origin is list and arguments or origin is tuple and (len(set(arguments) - {Ellipsis}) == 1):
            described["items"] = _type(arguments[0])  # list[int], tuple[int, ...], tuple[int, int]; not tuple[int, str]
        return described
    if origin is typing.Literal:  # values JSON has (an Enum's own value, else its text)
        return {"enum": [value if isinstance(value, (str, int, float, bool)) or value is None else
                         str(getattr(value, "value", value)) for value in arguments]}
    return {}


def _parameter_text(doc: str, name: str) -> str:
    """What the docstring says of one parameter: after `name:` (or `name (type):`), up to the next parameter's
    name or the end of its sentence's line."""
    typed = r"(?:\s*\([^)]*\))?"  # name (int): text
    pattern = re.compile(rf"(?:^|(?<=[.;]\s))\s*{re.escape(name)}{typed}:\s+(.+?)(?=\s+\w+{typed}:\s|$)")
    for line in doc.splitlines():
        if SECTION.match(line.strip()):
            continue
        found = pattern.search(line.strip())
        if found:
            return found.group(1).strip()
    return ""
