"""An MCP server's tool as a plain Python function (tools/mcp.py reads the servers and makes their tools here).

A tool's input schema becomes the function's signature, a property a parameter, so that the text protocol can call
it as it calls any tool and the native protocol can send its schema whole; its description and its properties' are
the docstring. What a server says is data: control characters dropped, a name cut at MAX_NAME_CHARS, a description at
MAX_DESCRIPTION_CHARS. A call is checked against the input schema, within the call's deadline, before it is sent.
"""
import hashlib
import inspect
import keyword
import re
import time
from typing import Callable

from tools import schema_check
from tools.schema import JSON_TYPES

MAX_DESCRIPTION_CHARS = 4_000
MAX_NAME_CHARS = 60  # of a tool's name as offered: the services take function names of at most 64 (Gemini's, 63)
DEADLINE_VARIABLE = "TINYREACT_MCP_DEADLINE"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every control character but tab and newline
PYTHON_TYPES = {kind: python for python, kind in JSON_TYPES.items() if python is not tuple}  # "array": list, ...


def clean(text: str, limit: int) -> str:
    """Text from a server as data: control characters dropped, cut at `limit` characters (marked)."""
    text = CONTROL.sub("", text)
    return text if len(text) <= limit else text[:limit] + f"… [cut: {len(text):,} characters]"


def mcp_tool(server, tool, name: str) -> Callable:
    """The tool of `server` (a tools.mcp.McpServer: its label, deadline and call) as a plain function named `name`:
    its signature from the input schema's properties (required ones first, the others defaulting to None and then
    left out of the call), its docstring the description and each property's description, and its schema kept whole
    for the native protocol (tools/schema.py). A call is checked against the schema before it is sent."""
    import jsonschema

    schema = tool.input_schema
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [key for key in schema.get("required") or [] if isinstance(key, str) and key in properties]
    parameters, sent_as = _parameters(properties, required)
    validator = schema_check.bounded(jsonschema.validators.validator_for(schema), DEADLINE_VARIABLE)(schema)

    def check(arguments: dict) -> dict:
        """The arguments as they are sent (by the properties' own names; a parameter left at None left out);
        ValueError when they do not fit the input schema, or when its patterns take longer than the call's deadline
        to check."""
        # None left out first: a renamed parameter at its default must not overwrite its property given by name
        arguments = {key: value for key, value in arguments.items() if value is not None or key in required}
        arguments = {sent_as.get(key, key): value for key, value in arguments.items()}
        schema_check.until(time.monotonic() + server.deadline)
        problem = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        if problem is not None:
            where = "/".join(str(part) for part in problem.absolute_path)
            raise ValueError(f"the arguments do not fit the tool's input schema{f' at {where}' if where else ''}: "
                             f"{clean(problem.message, 300)}")
        return arguments

    named = [parameter.name for parameter in parameters if parameter.kind is not parameter.VAR_KEYWORD]

    def call(*args, **arguments):
        # bound to the signature, a value can come by position (inspect passes those before **more that way)
        arguments |= dict(zip(named, args))
        started = time.monotonic()  # the check counts inside the call's deadline
        checked = check(arguments)
        return server.call(tool.name, checked, server.deadline - (time.monotonic() - started))

    described = clean(tool.description or "(no description)", MAX_DESCRIPTION_CHARS)
    written = {key: spelled for spelled, key in sent_as.items()}
    lines = []
    for key, value in properties.items():
        said = clean(str(value.get("description")), 300) if isinstance(value, dict) and value.get("description") else ""
        if key in written:
            lines.append(f"{written[key]} (sent as {clean(key, 80)}){': ' + said if said else ''}")
        elif said:
            lines.append(f"{key}: {said}")
    call.__name__ = call.__qualname__ = name
    call.__doc__ = described + ("\n\nArgs:\n" + "\n".join(f"    {line}" for line in lines) if lines else "")
    call.__signature__ = inspect.Signature(parameters)
    call.check = check  # what an edit of its arguments (tools/approval.py) is checked against, besides its signature
    call.mcp = {"server": server.label, "name": tool.name, "schema": schema, "destructive": destructive(tool)}
    return call


def _parameters(properties: dict, required: list[str]) -> tuple[list[inspect.Parameter], dict[str, str]]:
    """A tool's parameters, a property each, and the property each parameter is sent as where their names differ.
    A property Python cannot spell as it is (`class`, `a-b`) is offered under a name it can (`_class`, `a_b`), so
    that the text protocol can write it; it defaults to None (the input schema says whether it is required), and a
    `**arguments` then takes it by its own name, as a native call sends it."""
    parameters, sent_as = [], {}
    spellable = lambda key: key.isidentifier() and not keyword.iskeyword(key)  # noqa: E731
    for key in sorted(properties, key=lambda key: key not in required or not spellable(key)):
        name = key
        if not spellable(key):
            name = python_name(key)
            while name in properties or name in sent_as:  # a name of its own: `a_b` may be a property too
                name += "_"
            sent_as[name] = key
        kind = properties[key].get("type") if isinstance(properties[key], dict) else None
        empty = inspect.Parameter.empty
        annotation = PYTHON_TYPES.get(kind, empty) if isinstance(kind, str) else empty
        default = empty if key in required and name == key else None
        parameters.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                            annotation=annotation))
    if sent_as:
        rest = "arguments"
        while rest in properties or rest in sent_as:
            rest += "_"
        parameters.append(inspect.Parameter(rest, inspect.Parameter.VAR_KEYWORD))
    return parameters, sent_as


def destructive(tool) -> str:
    """Why a server's tool may destroy what it works on, as its annotations say by the MCP schema's rules; "" when its
    server says it does not (readOnlyHint true, or destructiveHint false: its updates only add). A tool that says
    neither may, by the schema's defaults (readOnlyHint false, destructiveHint true), and the schema asks clients not
    to trust hints from servers they do not trust: so silence is read as destructive, never as safe."""
    annotations = tool.annotations
    if annotations and (annotations.read_only_hint is True or annotations.destructive_hint is False):
        return ""
    if annotations and annotations.destructive_hint is True:
        return "its MCP server marks it destructive"
    return "its MCP server does not mark it read-only or non-destructive, so by MCP's defaults it may be destructive"


def python_name(name: str) -> str:
    """A name as the text protocol can write it and a service takes it as a function's: what is not a letter, digit
    or _ becomes _, and a name longer than MAX_NAME_CHARS is cut, ending in a hash of the whole name, so that two
    long names that differ only past the cut stay apart."""
    spelled = re.sub(r"\W", "_", name, flags=re.ASCII) or "_"
    spelled = "_" + spelled if spelled[0].isdigit() or keyword.iskeyword(spelled) else spelled
    if len(spelled) > MAX_NAME_CHARS:
        spelled = spelled[:MAX_NAME_CHARS - 9] + "_" + hashlib.sha256(name.encode(errors="replace")).hexdigest()[:8]
    return spelled
