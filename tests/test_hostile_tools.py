"""Hostile tool calls and hostile tool servers: each ends as an `Error:` observation, in time, in bounded memory.

The servers are loopback stand-ins speaking the real APIs' shapes (MediaWiki api.php, Open-Meteo /v1/forecast)
that misbehave on purpose; the real `requests` and `wikipedia` client code runs against them.
"""
import pytest

from agent import TinyReAct
from hostile_servers import Dripping, Flooding, elapsed
from models.scripted import ScriptedModel
from servers import FakeOpenMeteo, FakeWikipedia
from test_tools import PAGES
from tools.weather import get_temperature
from tools.web import MAX_BYTES
from tools.wiki import wikipedia_summary

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


# ---------------------------------------------------------------- hostile servers

DEADLINE = 0.6


@pytest.fixture
def short_deadline(monkeypatch):
    monkeypatch.setattr("tools.web.DEADLINE_SECONDS", DEADLINE)


def test_a_wikipedia_that_drips_its_answer_is_cut_off_at_the_deadline(monkeypatch, short_deadline):
    with Dripping(FakeWikipedia(PAGES), interval=0.05) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        answer, seconds = elapsed(wikipedia_summary, "Caesars Superdome")
    assert answer == f"Error: Wikipedia did not answer within {DEADLINE:g} seconds."
    assert seconds < DEADLINE + 0.5  # the old per-read timeout let it run on for many seconds


def test_an_open_meteo_that_drips_its_headers_is_cut_off_at_the_deadline(monkeypatch, short_deadline):
    with Dripping(FakeOpenMeteo(), interval=0.05, headers_too=True) as meteo:
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        answer, seconds = elapsed(get_temperature, 29.95, -90.08)
    assert answer == f"Error: Open-Meteo did not answer within {DEADLINE:g} seconds."
    assert seconds < DEADLINE + 0.5  # the old per-read timeout let it run on for many seconds


def test_a_slow_but_steady_answer_within_the_deadline_is_read(monkeypatch):
    monkeypatch.setattr("tools.web.DEADLINE_SECONDS", 5)
    with Dripping(FakeOpenMeteo({(29.95, -90.08): 15.2}), interval=0.001) as meteo:
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        assert get_temperature(29.95, -90.08).startswith("15.2 °C at 2026-11-29T23:45")


@pytest.mark.parametrize("mode, size", [("declared", 300_000_000), ("undeclared", 300_000_000), ("gzip", 40_000_000)])
def test_a_huge_wikipedia_answer_is_not_read_whole(monkeypatch, mode, size):
    with Flooding(size, mode) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        answer = wikipedia_summary("Flood")
    assert answer == f"Error: Wikipedia's answer was larger than {MAX_BYTES:,} bytes; reading stopped there."
    if mode != "gzip":  # a gzip body is small on the wire: there the cap is on what it decompresses to
        assert wiki.sent < size / 10  # the client hung up after a few MB; the rest was never sent


def test_a_huge_open_meteo_answer_is_refused_with_a_message(monkeypatch):
    with Flooding(50_000_000, "undeclared") as meteo:
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        assert get_temperature(1, 1) == \
            f"Error: Open-Meteo's answer was larger than {MAX_BYTES:,} bytes; reading stopped there."
