"""Prompt templates live here as text files and are rendered with strict substitution.

`string.Template.substitute` raises on a missing variable, so a template and its renderer cannot
drift apart silently.
"""
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Callable, Iterable

from tools import describe

PROMPTS = Path(__file__).parent


@lru_cache(maxsize=None)  # the files do not change while the program runs; read each once
def load(name: str) -> Template:
    return Template((PROMPTS / name).read_text(encoding="utf-8"))


def tool_docs(tools: Iterable[Callable]) -> str:
    """Every tool's signature and docstring, as the prompt lists them."""
    return "\n".join(describe(tool) for tool in tools)


def render_instructions(tools: Iterable[Callable]) -> str:
    """The instruction prompt: how to write Thought/Action/Answer, the tools' documentation, and the rules."""
    return load("react.txt").substitute(tools=tool_docs(tools)).strip()
