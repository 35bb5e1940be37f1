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
# The instruction template each model is given, by its name or the start of one; any other model is given react.txt.
# Data, not branches: a template is a file here. Each entry is chosen by an evaluation (bench/evaluate.py).
# Qwen2.5-Coder 0.5B (embedded, or as Ollama names it): react-small.txt, seven worked examples (one calculation, a
# whole expression in one call, a unit turned into a number, no tool, a call corrected, a result that is undefined, a
# tool that cannot be reached) against react.txt's one: 32/40 on the tuning set, where the profile before it (a chain
# of single operations) got 22/40 (bench/results/tuning-*.json; docs/embedded-models.md has the held-out test set).
# Its undefined-result Thought says to answer ("so I say so in the Answer"), no longer "calling again gives the same
# error": chosen with convert among the defaults by the tuning set's rule, 32/40 in 79 model calls with the 0.5B and
# 2/40 in 130 with Gemma (bench/results/tuning-units-*.json, docs/embedded-models.md, "Chosen by measurement").
# Qwen2.5-Coder 1.5B (embedded, or as Ollama names it): react-small.txt too, chosen when the profile was a chain of
# single operations (32/40 against react.txt's 29/40 on the tuning set through llama.cpp); kept, not chosen again.
PROFILES: dict[str, str] = {"qwen2.5-coder-0.5b": "react-small.txt", "qwen2.5-coder:0.5b": "react-small.txt",
                            "qwen2.5-coder-1.5b": "react-small.txt", "qwen2.5-coder:1.5b": "react-small.txt"}


@lru_cache(maxsize=None)  # the files do not change while the program runs; read each once
def load(name: str) -> Template:
    return Template((PROMPTS / name).read_text(encoding="utf-8"))


def tool_docs(tools: Iterable[Callable]) -> str:
    """Every tool's signature and docstring, as the prompt lists them."""
    return "\n".join(describe(tool) for tool in tools)


def template_for(model: str) -> str:
    """The template file `model` is given (see PROFILES)."""
    return next((template for name, template in PROFILES.items() if model.startswith(name)), "react.txt")


def render_instructions(tools: Iterable[Callable], model: str = "") -> str:
    """The instruction prompt for `model`: how to write Thought/Action/Answer, the tools' documentation, the rules."""
    return load(template_for(model)).substitute(tools=tool_docs(tools)).strip()


def template_problem(path: str) -> str | None:
    """What keeps the file at `path` from rendering as an instruction template, in a few words; None when it renders.
    A template takes one variable, $tools; a dollar sign is written $$."""
    try:
        Template(Path(path).read_text(encoding="utf-8")).substitute(tools="")
    except OSError as problem:
        return problem.strerror or str(problem)
    except UnicodeDecodeError:
        return "not text in UTF-8"
    except KeyError as unknown:
        return f"${unknown.args[0]} is no variable of a template: it takes $tools only (write $$ for a dollar sign)"
    except ValueError:  # a $ that begins no variable name
        return "a $ begins no variable: a template takes $tools, and $$ for a dollar sign"
    return None
