"""The unit converter: what it answers (checked against pint's own conversions), the spellings people use, what it
refuses and how it says so, its bounds, and that it is offered only by name."""
import logging
import os
import subprocess
import sys
import time

import pint
import pytest

from agent import TinyReAct
from models.scripted import ScriptedModel
from tools import DEFAULT_TOOLS, SHIPPED, describe, tools_named
from tools.converter import MAX_NAMES, MAX_POWER, MAX_UNIT_CHARS, convert

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PINT = pint.UnitRegistry()

# (value, from and to as a person writes them, the same units in pint's own names): every kind the tool covers
TABLE = [
    # temperature: offset scales, converted as values (25 °C is 77 °F), not as differences
    (25, "degrees Celsius", "degrees Fahrenheit", "degree_Celsius", "degree_Fahrenheit"),
    (-40, "°F", "°C", "degree_Fahrenheit", "degree_Celsius"),
    (98.6, "Fahrenheit", "celsius", "degree_Fahrenheit", "degree_Celsius"),
    (0, "C", "K", "degree_Celsius", "kelvin"),
    (300, "kelvin", "F", "kelvin", "degree_Fahrenheit"),
    # length
    (5, "miles", "km", "mile", "kilometer"), (6, "feet", "meters", "foot", "meter"),
    (12, "inches", "cm", "inch", "centimeter"), (3, "nautical miles", "KM", "nautical_mile", "kilometer"),
    # mass
    (70, "kg", "pounds", "kilogram", "pound"), (150, "lbs", "stone", "pound", "stone"),
    (16, "oz", "grams", "ounce", "gram"), (2, "metric tons", "Kg", "metric_ton", "kilogram"),
    # time
    (3, "weeks", "days", "week", "day"), (2.25, "hours", "minutes", "hour", "minute"),
    (90, "mins", "Hours", "minute", "hour"), (1, "year", "days", "year", "day"),
    # speed
    (100, "km/h", "mph", "kilometer / hour", "mile / hour"), (10, "m/s", "km per hour", "meter / second",
                                                                 "kilometer / hour"),
    (30, "miles an hour", "km/h", "mile / hour", "kilometer / hour"), (20, "knots", "m/s", "knot", "meter / second"),
    # volume
    (2, "liters", "gallons", "liter", "gallon"), (8, "fl oz", "ml", "fluid_ounce", "milliliter"),
    (1, "cubic meters", "litres", "meter ** 3", "liter"), (500, "cm³", "cups", "centimeter ** 3", "cup"),
    (1, "m3", "imperial gallons", "meter ** 3", "imperial_gallon"),
    # data sizes and rates: B a byte, b a bit; GB decimal, GiB binary
    (1, "GB", "MB", "gigabyte", "megabyte"), (1, "GiB", "MiB", "gibibyte", "mebibyte"),
    (8, "Mb", "MB", "megabit", "megabyte"), (1, "KB", "bytes", "kilobyte", "byte"),
    (100, "Mbps", "MB/s", "megabit / second", "megabyte / second"),
    # and what pint gives besides: area, energy
    (1, "square feet", "m²", "foot ** 2", "meter ** 2"), (1, "kWh", "J", "kilowatt_hour", "joule"),
]


@pytest.mark.parametrize("value, from_unit, to_unit, pint_from, pint_to", TABLE)
def test_each_kind_converts_as_pint_does(value, from_unit, to_unit, pint_from, pint_to):
    expected = PINT.Quantity(value, pint_from).to(pint_to).magnitude
    number, unit = convert(value, from_unit, to_unit).split(" ", 1)
    assert unit == to_unit  # the unit as the person wrote it
    assert float(number) == pytest.approx(expected, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("call, answer", [
    ((25, "degrees Celsius", "°F"), "77 °F"), ((32, "°F", "°C"), "0 °C"), ((100, "C", "F"), "212 F"),
    ((3, "weeks", "days"), "21 days"), ((5, "miles", "km"), "8.04672 km"), ((1, "GB", "MB"), "1000 MB"),
    ((1, "GiB", "MiB"), "1024 MiB"), ((1, "byte", "bits"), "8 bits"), ((60, "mph", "km/h"), "96.56064 km/h"),
])
def test_answers_are_written_as_people_write_them(call, answer):
    """Binary noise is gone (32 °F goes through kelvin and comes out 5.7e-14 °C unrounded), and a whole number is
    written whole."""
    assert convert(*call) == answer


@pytest.mark.parametrize("spellings, to_unit, answer", [
    (["degrees Celsius", "degree celsius", "Degrees Celsius", "deg C", "degC", "°C", "ºC", "° C", "C", "c",
      "celsius", "centigrade", "degree_Celsius"], "°F", "77 °F"),
    (["degrees Fahrenheit", "Fahrenheit", "deg F", "degF", "°F", "F"], "°C", "-3.88888888889 °C"),
    (["K", "kelvin", "kelvins", "degrees Kelvin", "°K"], "°C", "-248.15 °C"),
    (["km/h", "kph", "KPH", "km per hour", "kilometers per hour", "kilometres an hour", "km h**-1", "km·h^-1"],
     "m/s", "6.944444444444 m/s"),
    (["mph", "MPH", "miles per hour", "miles an hour", "mi/h", "Miles/Hour"], "km/h", "40.2336 km/h"),
    (["hours", "hrs", "hr", "h", "Hours", "HOURS"], "minutes", "1500 minutes"),
    (["fl oz", "fl. oz", "fluid ounces", "floz"], "ml", "739.3382390625 ml"),
    (["square meters", "sq m", "m2", "m²", "m**2", "m^2", "meters squared"], "cm**2", "250000 cm**2"),
    (["cubic feet", "ft3", "ft³", "feet cubed"], "L", "707.9211648 L"),
    (["Mb", "Mbit", "megabits"], "kB", "3125 kB"),
    (["Mbps", "mbps", "Mbit/s", "megabits per second"], "MB/s", "3.125 MB/s"),
])
def test_a_unit_is_read_however_people_write_it(spellings, to_unit, answer):
    for spelling in spellings:
        assert convert(25, spelling, to_unit) == answer, spelling


@pytest.mark.parametrize("spelling, pint_reads", [
    ("C", "coulomb"), ("F", "farad"), ("Mb", "megabarn"), ("Gb", "gilbert"), ("fl oz", "femtoliter * ounce"),
    ("mbps", "millibaud"), ("degrees Celsius", None), ("KM", None), ("Hours", None), ("KB", None), ("m3", None),
])
def test_each_rewritten_spelling_is_one_pint_misreads_or_refuses(spelling, pint_reads):
    """Why SPELLINGS exists: pint's parser alone reads these as other units, or not at all (None). Should a later
    pint read one as people mean it, its rewrite can go."""
    if pint_reads is None:
        with pytest.raises(pint.errors.UndefinedUnitError):
            PINT.parse_units(spelling)
    else:
        assert str(PINT.parse_units(spelling)) == pint_reads


def test_pint_logs_no_warning_for_any_unit_read(caplog):
    """pint warns (through logging, to stderr) when its parser picks one of two readings (Gbps: gigabaud or
    giga-point); the converter picks for it, so that nothing is printed under the run."""
    with caplog.at_level(logging.WARNING, logger="pint"):
        for value, from_unit, to_unit, _, _ in TABLE:
            convert(value, from_unit, to_unit)
        convert(1, "Gbps", "kbit/s")
        convert(1, "ft", "in")
    assert caplog.records == []


def test_an_unknown_unit_is_named_with_what_is_accepted():
    answer = convert(3, "blorps", "m")
    assert answer.startswith("Error: 'blorps' is not a unit convert knows. convert takes a number and two units")
    assert '"degrees Celsius", "°F", "km", "miles"' in answer and answer.endswith("no numbers in a unit.")
    assert convert(3, "km/blorp", "m").startswith("Error: 'blorp' in 'km/blorp' is not a unit convert knows.")


@pytest.mark.parametrize("from_unit, to_unit, says", [
    ("degrees Celsius", "kg", "'degrees Celsius' is a temperature ([temperature]) and 'kg' is a mass ([mass])"),
    ("km/h", "hours", "'km/h' is a speed ([length] / [time]) and 'hours' is a time ([time])"),
    ("liters", "km", "'liters' is a volume ([length] ** 3) and 'km' is a length ([length])"),
    ("GB", "degrees", "'GB' is a data size and 'degrees' is an angle"),  # both without dimension, to pint
    ("GB", "percent", "'GB' is a data size and 'percent' is a plain number"),
    ("Mbps", "Hz", "'Mbps' is a data rate and 'Hz' is a frequency (1 / [time])"),
])
def test_units_of_different_kinds_are_refused_naming_both(from_unit, to_unit, says):
    assert convert(1, from_unit, to_unit) == f"Error: {says}: a unit converts only to another of the same kind."


def test_a_value_that_is_not_a_number_is_refused_with_how_to_write_the_call():
    assert convert("25 degrees", "°C", "°F") == (
        "Error: the value must be a number, not '25 degrees': give the number alone and the units as from_unit and "
        "to_unit, as in convert(25, \"degrees Celsius\", \"°F\").")
    assert convert(True, "km", "m").startswith("Error: the value must be a number, not True")
    assert convert(float("nan"), "km", "m") == "Error: the value must be a number, not NaN."


def test_the_model_sees_the_refusal_of_a_value_that_is_not_a_number():
    model = ScriptedModel(['Action: convert("twenty", "km", "m")', 'Action: convert("20", "km", "m")', "Answer: 20000"])
    result = TinyReAct(model, tools=[convert]).query("How many metres are 20 km?")
    observations = [event["text"] for event in result.trace if event["type"] == "observation"]
    assert observations == ["Error: convert(): value must be a number, got 'twenty'.", "20000 m"]
    assert result.answer == "20000"


@pytest.mark.parametrize("value, says", [
    (float("inf"), "Error: the value is too large: convert takes numbers up to about 1.8e308."),
    (10 ** 400, "Error: the value is too large: convert takes numbers up to about 1.8e308."),
    (1e308, "Error: the result is too large to represent (past about 1.8e308 mm)."),  # 1e314 mm
])
def test_huge_values_are_refused_clearly(value, says):
    assert convert(value, "km", "mm") == says


HOSTILE = [
    "m**99999999",  # pint reads it at once, and converts it to km**99999999 as 0.0
    "m*2**9**9",  # pint computes 2**9**9 before it refuses a factor in a unit: seconds
    "9**9**9 m", "m^(10**10)", "(" * 25 + "m" + ")" * 25, "m*" * 29 + "m", "m/" * 29 + "m", "km " * 15,
    "x" * (MAX_UNIT_CHARS + 1), "k" * MAX_UNIT_CHARS, "__import__('os').system('true')", "m; import os",
    "1e400 m", "m**-99999999", "m**0", "m ** 1.5", "inf", "nan", "dimensionless", "kilo°C", "",
]


@pytest.mark.parametrize("unit", HOSTILE)
def test_a_unit_built_to_be_slow_or_strange_is_refused_at_once(unit):
    convert(1, "m", "km")  # pint's registry is built on the first call: not counted
    for from_unit, to_unit in [(unit, "m"), ("m", unit)]:
        started = time.monotonic()
        answer = convert(1, from_unit, to_unit)
        assert time.monotonic() - started < 0.1
        assert answer.startswith("Error: "), answer


def test_bounds_are_the_documented_ones():
    assert convert(1, "m" + " " * (MAX_UNIT_CHARS - 2) + "s", "m s") == "1 m s"  # at most 60 characters, spaces too
    assert f"more than {MAX_UNIT_CHARS}" in convert(1, "m" + " " * (MAX_UNIT_CHARS - 1) + "s", "m s")
    most = "*".join(["m"] * MAX_NAMES)
    assert convert(1, most, most) == f"1 {most}"
    assert f"more than {MAX_NAMES} unit names" in convert(1, most + "*m", "m")
    assert convert(1, f"km**{MAX_POWER}", f"m**{MAX_POWER}") == f"1000000000000 m**{MAX_POWER}"
    assert convert(1, f"km**-{MAX_POWER}", f"m**-{MAX_POWER}") == "1e-12 m**-4"
    assert f"the power {MAX_POWER + 1}" in convert(1, f"m**{MAX_POWER + 1}", f"km**{MAX_POWER + 1}")


@pytest.mark.parametrize("unit, says", [
    (5, "a unit must be text, not int"), ("  ", "a unit is empty"),
    ("gb", "'gb' could be bits or bytes: write GB for bytes or Gbit for bits"),
    ("kb", "'kb' could be bits or bytes: write kB for bytes or kbit for bits"),
])
def test_units_that_cannot_be_read_say_why(unit, says):
    assert convert(1, unit, "MB").startswith(f"Error: {says}")


def test_convert_is_offered_by_default_after_calculate_and_named_by_evaluate():
    """convert joined the defaults by the tuning set's rule (docs/embedded-models.md, "Chosen by measurement")."""
    assert convert in DEFAULT_TOOLS and convert in SHIPPED
    assert DEFAULT_TOOLS[DEFAULT_TOOLS.index(convert) - 1].__name__ == "calculate"
    assert tools_named(["calculate", "convert"])[1] is convert
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import evaluate
    finally:
        sys.path.remove(os.path.join(ROOT, "bench"))
    assert evaluate.offered_tools("calculate,convert")[1] is convert


def test_the_prompt_shows_its_signature_and_example():
    shown = describe(convert)
    assert shown.startswith("convert(value: float, from_unit: str, to_unit: str) -> str\n")
    assert 'convert(25, "degrees Celsius", "degrees Fahrenheit") returns "77 degrees Fahrenheit"' in shown
    assert convert(25, "degrees Celsius", "degrees Fahrenheit") == "77 degrees Fahrenheit"  # the example holds


def test_pint_is_not_imported_until_a_conversion_is_asked_for():
    code = "import sys, tools; print('pint' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
