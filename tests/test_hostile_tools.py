"""Hostile tool calls and hostile tool servers: each ends as an `Error:` observation, in time, in bounded memory.

The servers are loopback stand-ins speaking the real APIs' shapes (MediaWiki api.php, Open-Meteo /v1/forecast)
that misbehave on purpose; the real `requests` and `wikipedia` client code runs against them.
"""
import pytest

from agent import TinyReAct
from models.scripted import ScriptedModel

HUGE = "1" + "0" * 400  # a 401-digit integer literal


def observation_for(action: str) -> str:
    """Run one Action through the real loop and return the observation the model is shown for it."""
    agent = TinyReAct(ScriptedModel([f"Thought: try it\nAction: {action}", "Answer: done"]))
    result = agent.query("q")
    assert result.answer == "done"
    [observation] = [e["text"] for e in result.trace if e["type"] == "observation"]
    return observation


@pytest.mark.parametrize("action, expected", [
    (f"multiply_numbers({HUGE}, 2)", "Error: multiply_numbers(): x is too large"),
    (f'wikipedia_summary("x", {HUGE})', "Error: wikipedia_summary(): sentences is too large"),
    ('add_numbers("1,000", "2,5")', "Error: add_numbers(): y must be a number, got '2,5'"),
    ("add_numbers(x=1, y=2, y=100)", "Error: add_numbers(): keyword argument repeated: y"),
])
def test_bad_arguments_become_error_observations(action, expected):
    assert observation_for(action).startswith(expected)


def test_valid_thousands_separators_still_work():
    assert observation_for('add_numbers("1,000", "12,345.6")') == "13345.6"
