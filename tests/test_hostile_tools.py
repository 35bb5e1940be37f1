"""Hostile tool calls and hostile tool servers: each ends as an `Error:` observation, in time, in bounded memory.

The servers are loopback stand-ins speaking the real APIs' shapes (MediaWiki api.php, Open-Meteo /v1/forecast)
that misbehave on purpose; the real `requests` and `wikipedia` client code runs against them.
"""
import pytest
import wikipedia

from agent import TinyReAct
from hostile_servers import Dripping, Flooding, elapsed, seconds_beyond
from models.scripted import ScriptedModel
from servers import FakeOpenMeteo, FakeWikipedia
from test_tools import PAGES
from tools.weather import get_temperature
from tools.web import MAX_BYTES
from tools.wiki import wikipedia_coordinates, wikipedia_summary

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


# ---------------------------------------------------------------- one deadline for the whole tool call

def test_a_summary_of_many_slow_answers_stops_at_the_call_deadline(monkeypatch):
    """Each answer comes well within the request deadline, but the four a summary of an inexact title needs (the
    title, a search, its first hit, the extract) do not fit the call's: the observation says so, and the last
    request is never sent."""
    def summary_from(server, deadline: float) -> str:
        monkeypatch.setattr("tools.web.CALL_DEADLINE_SECONDS", deadline)
        monkeypatch.setenv("WIKIPEDIA_API_URL", server.url + "/w/api.php")
        for cached in (wikipedia.search, wikipedia.summary, wikipedia.suggest):
            cached.clear_cache()  # each run asks its server, as the first one did
        return observation_for('wikipedia_summary("superdome stadium")')

    with FakeWikipedia(PAGES) as quick, FakeWikipedia(PAGES, delay=0.1) as wiki:
        # the time beyond the same run against a Wikipedia that answers at once (the loop's own work, on a busy
        # machine a second or more, is not the tool's deadline)
        observation, seconds = seconds_beyond(lambda: summary_from(quick, 5), lambda: summary_from(wiki, 0.25))
        sent = len(wiki.requests)
    assert observation == ("Error: wikipedia_summary ran out of time: its web requests took more than 0.25 seconds "
                           "together, the deadline for one call. "
                           "The service is slow now; try once more, or go on without it.")
    assert seconds < 0.25 + 0.3  # the four answers alone take 0.4 s
    assert sent < 4


def test_a_dripping_open_meteo_stops_at_the_call_deadline_when_it_comes_first(monkeypatch):
    monkeypatch.setattr("tools.web.DEADLINE_SECONDS", 1)
    monkeypatch.setattr("tools.web.CALL_DEADLINE_SECONDS", 0.2)
    with Dripping(FakeOpenMeteo(), interval=0.02) as meteo:
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        answer, seconds = elapsed(get_temperature, 29.95, -90.08)
    assert answer.startswith("Error: get_temperature ran out of time: its web requests took more than 0.2 seconds")
    assert seconds < 0.2 + 0.3


@pytest.mark.parametrize("redirects, chain", [
    ({"Loop": "Loop"}, "Loop → Loop"),
    ({"Ping": "Pong", "Pong": "Ping"}, "Ping → Pong → Ping"),
    ({f"R{i}": f"R{i + 1}" for i in range(20)}, "R0 → R1 → R2 → R3 → R4 → R5 → R6"),  # past any real chain
])
def test_a_page_that_redirects_in_a_loop_is_an_error_after_a_few_requests(monkeypatch, redirects, chain):
    """The package follows a redirect by calling itself again: a self-redirect made it recurse ~490 requests deep."""
    pages = {title: {"extract": f"{title} is a page."} for title in [*redirects, *redirects.values()]}
    first = next(iter(redirects))
    with FakeWikipedia(pages, redirects=redirects) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        answer = wikipedia_summary(first)
        sent = len(wiki.requests)
    assert answer == f"Error: the Wikipedia page {first!r} redirects in a loop ({chain}); try another title."
    assert sent <= 6  # a handful, not hundreds


# ---------------------------------------------------------------- values no answer can truly hold

@pytest.mark.parametrize("reading, expected", [
    ({"default": True}, "a temperature that is not a number: true"),
    ({"default": float("nan")}, "a temperature that is not a finite number: NaN"),
    ({"default": float("-inf")}, "a temperature that is not a finite number: -Infinity"),
    ({"default": "nan"}, 'a temperature that is not a number: "nan"'),
    ({"default": "15.2"}, 'a temperature that is not a number: "15.2"'),
    ({"default": 1e308}, "a temperature that is outside -100 to 100: 1e+308"),
    ({"default": -999}, "a temperature that is outside -100 to 100: -999"),  # a common missing-data marker
    ({"unit": {"x": 1}}, 'a temperature unit that is not text: {"x": 1}'),
    ({"unit": "°C" * 1000}, f'a temperature unit that is 2,000 characters long: "{"°C" * 19}…'),  # cut to 40
    ({"when": None}, "a time that is not text: null"),
])
def test_an_implausible_open_meteo_reading_is_an_error_saying_what_it_was(monkeypatch, reading, expected):
    with FakeOpenMeteo(**reading) as meteo:
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        assert get_temperature(29.95, -90.08) == f"Error: Open-Meteo sent {expected}."


@pytest.mark.parametrize("coordinates, expected", [
    ((float("nan"), -90.08), "a latitude that is not a finite number: NaN"),
    ((29.95, float("inf")), "a longitude that is not a finite number: Infinity"),
    ((123456, -90.08), "a latitude that is outside -90 to 90: 123456"),
    ((29.95, -123456), "a longitude that is outside -180 to 180: -123456"),
    ((True, -90.08), "a latitude that is not a number: true"),
    (("1" * 3_000_000, -90.08), f'a latitude that is not a number: "{"1" * 38}…'),  # never parsed, nor pasted whole
])
def test_implausible_wikipedia_coordinates_are_an_error_saying_what_they_were(monkeypatch, coordinates, expected):
    with FakeWikipedia({"Caesars Superdome": {"extract": "A stadium.", "coordinates": coordinates}}) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        assert wikipedia_coordinates("Caesars Superdome") == f"Error: Wikipedia sent {expected}."


@pytest.mark.parametrize("extract, expected", [
    ("", 'an extract that is empty: ""'),
    (" \n ", 'an extract that is empty: " \\n "'),
    (None, "an extract that is not text: null"),
    (["A stadium."], 'an extract that is not text: ["A stadium."]'),
])
def test_an_empty_or_missing_wikipedia_extract_is_an_error_observation(monkeypatch, extract, expected):
    with FakeWikipedia({"Caesars Superdome": {"extract": extract}}) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        assert observation_for('wikipedia_summary("Caesars Superdome")') == f"Error: Wikipedia sent {expected}."


def test_a_disambiguation_page_of_tags_left_open_is_read_within_the_call(monkeypatch):
    """html.parser takes time in the square of the nesting: 50 KB of unclosed <li><a> took it 27 s."""
    nested = '<p>Mercury may refer to:</p><ul><li><a href="/wiki/M1">Mercury &amp; <b>planet</b></a></li>' \
             '<li class="tocsection-1"><a href="#x">Contents</a></li>' + "<li><a>" * 7_000
    with FakeWikipedia({"Mercury": {"options": ["x"], "html": nested}}) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        said, seconds = elapsed(wikipedia_summary, "Mercury")
    assert said.startswith("Error: 'Mercury' is ambiguous. It may refer to: Mercury & planet")
    assert "Contents" not in said
    assert seconds < 5
