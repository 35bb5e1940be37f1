"""The default tools, their documentation, and argument binding; network tools against loopback stand-ins."""
import pytest

from servers import FakeOpenMeteo, FakeWikipedia
from hypothesis import given, settings
from hypothesis import strategies as st

from tools import DEFAULT_TOOLS, _bind_plain, bind_arguments, describe, plain_parameters
from tools.arithmetic import add_numbers, divide_numbers, multiply_numbers, subtract_numbers
from tools.weather import get_temperature
from tools.wiki import search_wikipedia_page, wikipedia_coordinates, wikipedia_summary

PAGES = {
    "Caesars Superdome": {"extract": "The Caesars Superdome is a stadium in New Orleans. It opened in 1975. "
                                     "It seats 73,000.",
                          "coordinates": (29.950833, -90.081111)},
    "Super Bowl LIX": {"extract": "Super Bowl LIX was played on February 9, 2025, at the Caesars Superdome "
                                  "in New Orleans. The Philadelphia Eagles won.", "coordinates": None},
    "Mercury": {"options": ["Mercury (planet)", "Mercury (element)", "Mercury (mythology)"]},
}


def test_default_tools_have_the_seed_names_and_signatures():
    seed = [
        "add_numbers(x: float, y: float) -> float",
        "subtract_numbers(x: float, y: float) -> float",
        "multiply_numbers(x: float, y: float) -> float",
        "divide_numbers(x: float, y: float) -> float",
        "get_temperature(latitude: float, longitude: float) -> str",
        "search_wikipedia_page(query: str) -> str",
        "wikipedia_coordinates(page_title: str) -> str",
        "wikipedia_summary(query: str, sentences: int = 10) -> str",
    ]
    registered = [describe(tool).splitlines()[0] for tool in DEFAULT_TOOLS]
    assert [line for line in registered if line in seed] == seed  # each of them, beside any tool added since
    for tool in DEFAULT_TOOLS:
        assert "Example:" in describe(tool)


def test_arithmetic():
    assert add_numbers(30, 10) == 40 and str(add_numbers(30, 10)) == "40"
    assert subtract_numbers(10, 4) == 6
    assert multiply_numbers(2.5, 2) == 5
    assert divide_numbers(1, 4) == 0.25
    assert multiply_numbers(15.5, 1.8) == 27.9 and add_numbers(0.1, 0.2) == 0.3
    assert divide_numbers(1, 0) == "Error: cannot divide by zero."
    assert multiply_numbers(1e308, 10).startswith("Error")


def test_binding_coerces_numeric_strings_and_reports_bad_calls():
    assert bind_arguments(add_numbers, ("7", " 1,000.5"), {}) == ((), {"x": 7.0, "y": 1000.5})
    assert bind_arguments(add_numbers, ("12,345.6", "-1,000,000"), {}) == ((), {"x": 12345.6, "y": -1000000.0})
    assert bind_arguments(wikipedia_summary, ("Paris",), {"sentences": "3"}) == ((), {"query": "Paris", "sentences": 3})
    assert bind_arguments(search_wikipedia_page, (2025,), {}) == ((), {"query": "2025"})
    with pytest.raises(TypeError, match="missing a required argument"):
        bind_arguments(add_numbers, (1,), {})
    with pytest.raises(TypeError, match="too many"):
        bind_arguments(add_numbers, (1, 2, 3), {})
    with pytest.raises(TypeError, match="x must be a number"):
        bind_arguments(add_numbers, ("seven", 1), {})
    with pytest.raises(TypeError, match="must be a number"):
        bind_arguments(add_numbers, (True, 1), {})
    with pytest.raises(TypeError, match="whole number"):
        bind_arguments(wikipedia_summary, ("Paris", 2.5), {})


@pytest.mark.parametrize("ambiguous", ["2,5", "1,00", "1,0000", "12,34,567", ",100", "1,000,", "1,,000", "0,5e3"])
def test_a_comma_that_may_be_a_decimal_comma_is_refused(ambiguous):
    with pytest.raises(TypeError, match=f"y must be a number, got '{ambiguous}'"):
        bind_arguments(add_numbers, ("1,000", ambiguous), {})


def scale(x: "float", times: "int") -> "str":  # as a module with `from __future__ import annotations` writes them
    """Repeat x. Example: scale(1.5, 2) returns 1.51.5."""
    return str(x) * times


def test_annotations_written_as_strings_convert_and_check_like_the_others():
    assert bind_arguments(scale, ("1,000", 2), {}) == ((), {"x": 1000.0, "times": 2})
    for bad in [(True, "ab"), (1.5, 2.5)]:
        with pytest.raises(TypeError):
            bind_arguments(scale, bad, {})
    assert describe(scale).startswith("scale(x: float, times: int) -> str")


def test_numbers_too_large_for_a_float_are_refused_not_raised():
    huge = 10**400
    with pytest.raises(TypeError, match="x is too large"):
        bind_arguments(multiply_numbers, (huge, 2), {})
    with pytest.raises(TypeError, match="sentences is too large"):
        bind_arguments(wikipedia_summary, ("x", huge), {})
    with pytest.raises(TypeError, match="y is too large"):
        bind_arguments(add_numbers, (1, -huge), {})
    assert bind_arguments(multiply_numbers, (10**300, 2), {}) == ((), {"x": 10**300, "y": 2})


def test_arithmetic_on_huge_integers_returns_an_error_message():
    too_large = "Error: the result is too large to represent."
    assert multiply_numbers(10**400, 2.0) == too_large
    assert divide_numbers(10**400, 3) == too_large
    assert multiply_numbers(10**2200, 10**2200) == too_large  # its digits could not even be printed
    assert add_numbers(10**400, 1) == too_large
    assert multiply_numbers(10**300, 10**300) == too_large  # as 1e300 * 1e300 is
    assert add_numbers(10**20, 1) == 100000000000000000001  # integers that fit stay exact


def test_temperature_from_open_meteo(monkeypatch):
    with FakeOpenMeteo({(29.95, -90.08): 15.2}) as meteo:
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        assert get_temperature(29.9508, -90.0811).startswith("15.2 °C at 2026-11-29T23:45")
        sent = meteo.requests[-1]["query"]
        assert sent["current"] == "temperature_2m" and float(sent["latitude"]) == 29.9508
        assert get_temperature(91, 0).startswith("Error: latitude must be within")
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/wrong")
        assert get_temperature(1, 1) == "Error: Open-Meteo answered HTTP 404: Not Found"


def test_temperature_when_open_meteo_is_unreachable(monkeypatch):
    monkeypatch.setenv("OPEN_METEO_URL", "http://127.0.0.1:9/v1/forecast")
    assert get_temperature(1, 1).startswith("Error: could not reach Open-Meteo")


def test_wikipedia_search_summary_and_coordinates(monkeypatch):
    with FakeWikipedia(PAGES, redirects={"Superdome": "Caesars Superdome"}) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        assert search_wikipedia_page("Super Bowl LIX") == "Super Bowl LIX"
        assert search_wikipedia_page("New Orleans") == "Caesars Superdome; Super Bowl LIX"
        assert search_wikipedia_page("zzyzx") == "No Wikipedia pages match 'zzyzx'."
        assert wikipedia_summary("Super Bowl LIX", 1) == \
            "Super Bowl LIX was played on February 9, 2025, at the Caesars Superdome in New Orleans."
        assert wikipedia_summary("Superdome", sentences=2).startswith("The Caesars Superdome is a stadium")
        assert wikipedia_coordinates("Caesars Superdome") == "latitude 29.9508, longitude -90.0811 (Caesars Superdome)"
        assert wikipedia_coordinates("Super Bowl LIX") == \
            "Error: the Wikipedia page 'Super Bowl LIX' has no coordinates."
        assert all(r["path"] == "/w/api.php" and r["query"]["format"] == "json" for r in wiki.requests)


def test_wikipedia_errors_are_messages(monkeypatch):
    with FakeWikipedia(PAGES) as wiki:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        assert wikipedia_summary("Atlantis") == \
            "Error: no Wikipedia page matches 'Atlantis'. Try search_wikipedia_page first."
        assert wikipedia_summary("Mercury") == \
            "Error: 'Mercury' is ambiguous. It may refer to: Mercury (planet); Mercury (element); Mercury (mythology)."
    with FakeWikipedia(PAGES, status=503) as broken:
        monkeypatch.setenv("WIKIPEDIA_API_URL", broken.url + "/w/api.php")
        assert search_wikipedia_page("Paris") == "Error: Wikipedia answered HTTP 503."


def test_wikipedia_timeout(monkeypatch):
    monkeypatch.setattr("tools.web.DEADLINE_SECONDS", 0.2)
    with FakeWikipedia(PAGES, delay=1.0) as slow:
        monkeypatch.setenv("WIKIPEDIA_API_URL", slow.url + "/w/api.php")
        assert wikipedia_coordinates("Caesars Superdome") == "Error: Wikipedia did not answer within 0.2 seconds."


def _tool_with_a_default(city: str, unit: str = "celsius", days: int = 1) -> str:
    return city


@settings(max_examples=150, deadline=None)
@given(args=st.lists(st.sampled_from(["x", 2, "3", None]), max_size=4),
       names=st.lists(st.sampled_from(["city", "unit", "days", "a", "b", "other"]), max_size=4, unique=True))
def test_the_quick_binding_agrees_with_inspect_on_every_call(args, names):
    """Tools of plain parameters are bound without inspect; a call must fit, or be refused, exactly as inspect says."""
    import inspect

    for tool in (add_numbers, _tool_with_a_default):
        kwargs = {name: 1 for name in names}
        try:
            expected = inspect.signature(tool).bind(*args, **kwargs)
            expected.apply_defaults()
        except TypeError as error:
            with pytest.raises(TypeError, match=str(error).replace("'", "").split(";")[0]):
                bind_arguments(tool, tuple(args), kwargs)
            continue
        quick = _bind_plain(plain_parameters(tool), tuple(args), kwargs)
        assert quick == expected.arguments and list(quick) == list(expected.arguments)


def total(*numbers: float) -> float:
    """Add up any amount of numbers."""
    return sum(numbers)


def label(text: str, /, **labels: str) -> str:
    """The text with its labels."""
    return text + "".join(f" [{name}: {value}]" for name, value in sorted(labels.items()))


def test_tools_with_star_arguments_or_positional_only_parameters_run_with_converted_arguments():
    """A tool may take *args, **kwargs or positional-only parameters: each value is converted to its annotation,
    and the tool gets them the way its signature takes them."""
    assert bind_arguments(total, (1, "2", "1,000"), {}) == ((1, 2.0, 1000.0), {})
    assert bind_arguments(label, ("x",), {"size": 3}) == (("x",), {"size": "3"})
    with pytest.raises(TypeError, match="numbers must be a number, got 'two'"):
        bind_arguments(total, (1, "two"), {})
    with pytest.raises(TypeError, match="positional only"):
        bind_arguments(label, (), {"text": "x"})
    from agent import TinyReAct
    from models.scripted import ScriptedModel

    model = ScriptedModel(["Action: total(1, 2, '3')", "Action: label('box', colour='red', size=3)", "Answer: done"])
    result = TinyReAct(model, tools=[total, label]).query("Add and label.")
    observations = [(event["call"], event["text"]) for event in result.trace if event["type"] == "observation"]
    assert observations == [("total(1, 2, 3.0)", "6.0"),
                            ("label('box', colour='red', size='3')", "box [colour: red] [size: 3]")]


def test_a_literal_parameter_takes_only_the_values_it_names_in_either_protocol():
    import enum
    from typing import Literal

    class Scale(enum.Enum):
        KELVIN = "kelvin"

    def convert(degrees: float, to: Literal["celsius", "fahrenheit", Scale.KELVIN] = "celsius") -> str:
        """Convert degrees to a scale."""
        return f"{degrees} {getattr(to, 'value', to)}"
    assert bind_arguments(convert, (10, "fahrenheit"), {}) == ((), {"degrees": 10.0, "to": "fahrenheit"})
    assert bind_arguments(convert, (), {"degrees": 1, "to": "kelvin"}, by_name=True)[1]["to"] is Scale.KELVIN
    with pytest.raises(TypeError, match="to must be one of 'celsius', 'fahrenheit', 'kelvin', got 'rankine'"):
        bind_arguments(convert, (10, "rankine"), {})
