"""Tools are plain Python functions. Their signature and docstring are what the model reads of them.

To add a tool, write a typed function with an honest docstring and pass it in the tools list;
`describe` renders it for the prompt and `bind_arguments` checks a model's call against it.
A tool calling a web API requests with `tools.web.get` and is marked `@web.call_deadline`, so that
each request and the whole call have a deadline and every answer a size cap.
Recordings (a shipped conversation, a golden prompt, a saved evaluation) name their tools and are
remade or checked with `tools_named(those names)`: a tool added to DEFAULT_TOOLS changes none.
"""
import inspect
import math
import typing
import re
import sys
import functools
from functools import lru_cache
from inspect import Parameter
from typing import Annotated, Callable, Iterable

from tools.arithmetic import add_numbers, divide_numbers, multiply_numbers, subtract_numbers
from tools.calculator import calculate
from tools.converter import convert
from tools.weather import get_temperature
from tools.wiki import search_wikipedia_page, wikipedia_coordinates, wikipedia_summary

DEFAULT_TOOLS: list[Callable] = [
    add_numbers,
    subtract_numbers,
    multiply_numbers,
    divide_numbers,
    calculate,
    convert,
    get_temperature,
    search_wikipedia_page,
    wikipedia_coordinates,
    wikipedia_summary,
]


# The first release's default tools, the seed's: what was measured with them (bench/run.py's
# comparison with other frameworks, evaluations saved before runs named their tools) still is.
FIRST_DEFAULTS = [
    "add_numbers", "subtract_numbers", "multiply_numbers", "divide_numbers", "get_temperature",
    "search_wikipedia_page", "wikipedia_coordinates", "wikipedia_summary"]

# Every tool the project ships, offered by default or not: what a recording names is looked up among
# these too, so a recording still replays with its tools after one of them leaves the defaults.
# `convert` joined the defaults by the tuning set's rule (docs/embedded-models.md, "Chosen by
# measurement"); every shipped tool is a default today.
SHIPPED: list[Callable] = [*DEFAULT_TOOLS]


def shipped_by_name() -> dict[str, Callable]:
    """Every tool of SHIPPED and of DEFAULT_TOOLS as it is now (with any added since), by name."""
    return {tool.__name__: tool for tool in [*SHIPPED, *DEFAULT_TOOLS]}


def tools_named(names: Iterable[str]) -> list[Callable]:
    """The tools with these names, in this order, from DEFAULT_TOOLS and SHIPPED; KeyError naming
    one that is in neither."""
    registered = shipped_by_name()
    try:
        return [registered[name] for name in names]
    except KeyError as missing:
        raise KeyError(f"no tool named {missing} in DEFAULT_TOOLS or SHIPPED") from None


class Refused(Exception):
    """A call that will not run (unreadable, an unknown tool, bad arguments, a repeat, a person's
    no); the message is what the model is told instead of a result."""

    def __init__(self, message: str, call: str | None = None, refused: str | None = None):
        super().__init__(message)
        # the call refused as a repeat or declined, and which of the two (REPEAT, DECLINED): the
        # trace records both, so the loop can see a model that asks for it again and again
        self.call, self.refused = call, refused


REPEAT, DECLINED = "repeat", "declined"  # why a call was refused, as an observation records it


def call_text(tool: Callable, args: tuple, kwargs: dict) -> str:
    """A checked call as the trace records it, `name(1, x='a')`: what the repeat guard compares."""
    written = [repr(value) for value in args]
    written += [f"{name}={value!r}" for name, value in kwargs.items()]
    return f"{tool.__name__}({', '.join(written)})"


def per_tool(read: Callable) -> Callable:
    """`read(tool)` kept for each tool, read once: a tool does not change. A guarded tool
    (tools/approval.py) is read as the tool it guards, which every run's guard wraps anew."""
    kept = lru_cache(maxsize=1024)(read)

    @functools.wraps(read)
    def reading(tool: Callable):
        return kept(getattr(tool, "__wrapped__", tool))
    return reading


@per_tool  # signatures do not change; reading one is most of a step's cost otherwise
def signature(tool: Callable) -> inspect.Signature:
    """The tool's signature, with annotations as types even where strings (a module with
    `from __future__ import annotations`): arguments are converted to them; prompts show them."""
    try:
        return inspect.signature(tool, eval_str=True)  # the author's annotations, never model text
    except Exception:  # a name only a type checker sees (TYPE_CHECKING): annotations stay strings
        return inspect.signature(tool)


@per_tool
def describe(tool: Callable) -> str:
    """`name(params) -> return` and the docstring indented below it, as the prompt shows it."""
    signature_text = str(signature(tool)).replace("'", "")
    doc = inspect.getdoc(tool) or "(no description)"
    indented = "\n".join(f"    {line}" for line in doc.splitlines() if line.strip())
    return f"{tool.__name__}{signature_text}\n" + indented


def bind_arguments(tool: Callable, args: tuple, kwargs: dict,
                   by_name: bool = False) -> tuple[tuple, dict]:
    """The call the tool will get, as (positional, named) arguments: the model's literal arguments
    matched to the tool's parameters, numeric strings converted where a number is expected. Every
    argument is passed by name, except those of a tool with positional-only parameters or *args.

    Raises TypeError with a message meant for the model when the call does not fit the signature or
    an argument cannot be converted; nothing else escapes, whatever the model wrote.
    """
    plain = plain_parameters(tool)
    arguments = _bind_plain(plain, args, kwargs) if plain is not None else None
    if arguments is not None:
        return (), _converted(tool, arguments)
    # an unusual signature, or a call that does not fit: inspect binds it and words the error
    parameters = signature(tool)
    if by_name:  # all named (a native call): those taken only by position go to their places
        args, kwargs = _positional_by_name(parameters, kwargs)
    try:
        bound = parameters.bind(*args, **kwargs)
    except TypeError as error:
        message = f"{error}; the signature is {tool.__name__}{parameters}".replace("'", "")
        raise TypeError(message) from None
    bound.apply_defaults()
    _converted(tool, bound.arguments)
    return bound.args, bound.kwargs


def named_arguments(tool: Callable, args: tuple, kwargs: dict) -> dict:
    """A checked call's arguments by parameter name, as a person reads and edits them and a native
    call sends them: *rest as a list, **more spread out, a parameter left at its default None left
    out. `bind_arguments(tool, (), named, by_name=True)` gives the call back."""
    named = {}
    parameters = signature(tool).parameters
    for name, value in signature(tool).bind(*args, **kwargs).arguments.items():
        kind, default = parameters[name].kind, parameters[name].default
        if kind is Parameter.VAR_KEYWORD:
            clash = sorted(set(value) & set(parameters))
            if clash:  # spread out, it would hide the value of the parameter it is named like
                raise TypeError(f"a keyword argument named like its parameter {clash[0]!r} cannot "
                                "be shown or checked unambiguously: give each value one name")
            named.update(value)
        elif kind is Parameter.VAR_POSITIONAL:
            named[name] = list(value)
        elif not (value is None and default is None):
            named[name] = value
    return named


def bind_named(tool: Callable, named: dict) -> tuple[tuple, dict]:
    """A call given by name (as `named_arguments` gives it, or a person edited it) checked as a
    model's is, and against an MCP tool's input schema too; TypeError or ValueError, with a message
    for a person, when it does not fit."""
    if hasattr(tool, "check"):  # as written: converted first, {"text": 5} passes a string schema
        tool.check(named)
    return bind_arguments(tool, (), named, by_name=True)


@per_tool
def _parameters(tool: Callable) -> dict[str, tuple]:
    """Each parameter's (annotation, kind, default), an `Annotated[int, ...]` read as int."""
    parameters = signature(tool).parameters.items()
    return {name: (typing.get_args(p.annotation)[0] if typing.get_origin(p.annotation) is Annotated
                   else p.annotation, p.kind, p.default) for name, p in parameters}


def _positional_by_name(parameters: inspect.Signature, kwargs: dict) -> tuple[tuple, dict]:
    """A call whose values are all named, as a native call's are, with the values of parameters
    taken only by position (`x, /`, `*rest`, and those before a `*rest`) moved to their places in
    order, a `*rest` given as a list; what does not fit is left for inspect to word."""
    named, positional = dict(kwargs), []
    starred = any(p.kind is Parameter.VAR_POSITIONAL for p in parameters.parameters.values())
    for parameter in parameters.parameters.values():
        rest = parameter.kind is Parameter.VAR_POSITIONAL
        by_position = parameter.kind is Parameter.POSITIONAL_ONLY or (
            starred and parameter.kind is Parameter.POSITIONAL_OR_KEYWORD)
        if by_position and parameter.name in named:
            positional.append(named.pop(parameter.name))
        elif rest and isinstance(named.get(parameter.name), list):
            positional += named.pop(parameter.name)
        elif by_position or rest:
            break
    return tuple(positional), named


def _converted(tool: Callable, arguments: dict) -> dict:
    """`arguments` (name -> value, a tuple for *args and a dict for **kwargs) with each value
    converted, in place, to its parameter's annotation; returned too."""
    parameters = _parameters(tool)
    for name, value in arguments.items():
        hint, kind, default = parameters[name]
        if value is default:  # the tool's own default, as its author wrote it (`n: int = None`)
            continue
        try:
            if kind is Parameter.VAR_POSITIONAL:
                arguments[name] = tuple(_coerce(name, item, hint) for item in value)
            elif kind is Parameter.VAR_KEYWORD:
                arguments[name] = {key: _coerce(key, item, hint) for key, item in value.items()}
            else:
                arguments[name] = _coerce(name, value, hint)
        except (ValueError, ArithmeticError) as error:  # unforeseen by _coerce: a bad argument too
            raise TypeError(f"{name} could not be read: {error}") from None
    return arguments


@per_tool
def plain_parameters(tool: Callable) -> tuple[tuple[str, object], ...] | None:
    """(name, default) of each parameter when all can be given by position or by name (most tools);
    None otherwise (*args, keyword-only, positional-only), and `inspect` binds the call."""
    parameters = signature(tool).parameters.values()
    if any(parameter.kind is not Parameter.POSITIONAL_OR_KEYWORD for parameter in parameters):
        return None
    return tuple((parameter.name, parameter.default) for parameter in parameters)


def _bind_plain(parameters: tuple[tuple[str, object], ...], args: tuple,
                kwargs: dict) -> dict | None:
    """What `Signature.bind` then `apply_defaults` give for a call that fits (in parameter order);
    None for any call that does not, so that inspect says what is wrong."""
    if len(args) > len(parameters):
        return None
    arguments, named = {}, 0
    for position, (name, default) in enumerate(parameters):
        if position < len(args):
            if name in kwargs:
                return None
            arguments[name] = args[position]
        elif name in kwargs:
            arguments[name], named = kwargs[name], named + 1
        elif default is Parameter.empty:
            return None
        else:
            arguments[name] = default
    return arguments if named == len(kwargs) else None  # else a name that is no parameter


# Commas are accepted only between groups of three digits ("1,000", "12,345.6"): in "2,5" or "1,00"
# the comma may be a decimal comma, and guessing would silently change the number.
_GROUPED_NUMBER = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?")


def _coerce(name: str, value, annotation):
    if annotation in (int, float):
        number = _number(name, value)
        if annotation is int:
            if number != int(number):
                raise TypeError(f"{name} must be a whole number, got {value!r}")
            return int(number)
        return number
    if annotation is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if annotation is str and not isinstance(value, str):
        raise TypeError(f"{name} must be text in quotes, got {value!r}")
    if typing.get_origin(annotation) is typing.Literal:  # one of the values its schema names
        allowed = [getattr(choice, "value", choice) for choice in typing.get_args(annotation)]
        if value not in allowed:
            raise TypeError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
        return typing.get_args(annotation)[allowed.index(value)]
    return value


def _number(name: str, value) -> int | float:
    """A number the model wrote (as text or not) that a float holds; TypeError for anything else."""
    number = value
    if isinstance(value, str):
        text = value.strip()
        if "," in text:
            if not _GROUPED_NUMBER.fullmatch(text):
                raise TypeError(f"{name} must be a number, got {value!r}; write 2.5 for a decimal, "
                                "and 2500 or 2,500 for a thousands separator")
            text = text.replace(",", "")
        try:
            number = float(text)
        except ValueError:
            raise TypeError(f"{name} must be a number, got {value!r}") from None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if isinstance(number, float) and math.isnan(number):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if abs(number) > sys.float_info.max:  # exact for integers of any size, and true for infinities
        raise TypeError(f"{name} is too large: the tools take numbers up to about 1.8e308")
    return number
