"""Unit conversion for the model, on pint (the units library): `convert(25, "degrees Celsius", "°F")` is "77 °F".

pint knows the units and their factors and converts offset scales (°C, °F) as a person means them; this module reads
the units first. pint's parser evaluates any numbers in a unit expression as Python arithmetic (`m*2**9**9` takes
seconds before it is refused for its factor), and reads some everyday spellings as other units ("C" is a coulomb,
"Mb" a megabarn, "fl oz" a femtolitre times an ounce), or not at all ("degrees Celsius", "KM"). So a unit is read
here: a few spellings are rewritten (SPELLINGS), then it must be at most MAX_NAMES names joined by * or /, with
whole powers up to MAX_POWER and no numbers, parentheses or anything else; only then are the names, one by one, and
the rebuilt expression given to pint. Nothing is ever passed to `eval`.

pint is imported, and its registry built, on the first call (about half a second), so that `--help` and runs that
do not offer this tool do not pay for it.
"""
import functools
import math
import re
import sys

from tools.calculator import SIGNIFICANT, written

MAX_UNIT_CHARS = 60  # of a unit as written: "kilometres per hour" is 19
MAX_NAMES = 6  # unit names in one unit: kg*m**2/s**2 has three
MAX_POWER = 4  # of any one name: m**3 for a volume, s**2 in an acceleration

# How people write units where pint reads them otherwise or not at all, rewritten to names pint knows; in order, on
# the unit as written. Temperatures and phrases in any case; data sizes by the usual convention, b a bit and B a
# byte, and GB, MB... decimal (10**9, 10**6 bytes) as pint has them, GiB, MiB... binary.
SPELLINGS = [
    (r"(?i)^\s*c\s*$", "degC"),  # C or F alone, a temperature: not a coulomb or a farad
    (r"(?i)^\s*f\s*$", "degF"),
    (r"(?i)(?:\bdeg(?:rees?)?\s*)?\b(?:celsius|centigrade)\b|(?:\bdeg(?:rees?)?\s*|[°º]\s*)c\b", "degC"),
    (r"(?i)(?:\bdeg(?:rees?)?\s*)?\bfahrenheit\b|(?:\bdeg(?:rees?)?\s*|[°º]\s*)f\b", "degF"),
    (r"(?i)\bdeg(?:rees?)?\s+kelvins?\b|[°º]\s*k\b", "kelvin"),
    (r"[°º]", "degree"),  # alone, an angle: as pint reads it
    (r"(?i)\bfl(?:uid)?\.?\s*(?:oz|ounces?)\b", "fluid_ounce"),
    (r"(?i)\b(nautical)\s+(miles?)\b|\b(light)\s+(years?)\b|\b(metric)\s+(tons?)\b|\b(imperial)\s+(gallons?)\b",
     lambda found: "_".join(part for part in found.groups() if part)),
    (r"(?i)\b(?:sq(?:uare)?)\s+([^\W\d]\w*)", r"\1**2"),  # square feet, sq m
    (r"(?i)\bcubic\s+([^\W\d]\w*)", r"\1**3"),
    (r"(?i)\b([^\W\d]\w*)\s+squared\b", r"\1**2"),
    (r"(?i)\b([^\W\d]\w*)\s+cubed\b", r"\1**3"),
    (r"\b([^\W\d_]+)([234])\b", r"\1**\2"),  # m2, cm3
    ("²", "**2"), ("³", "**3"), ("·", "*"),
    (r"(?i)\s+(?:per|an?)\s+", "/"),  # km per hour, miles an hour
    # kbps, Mbps, mbps: bits a second (a millibit is no one's meaning)
    (r"\b([kKmMgGtTpP]?)bps\b", lambda found: found[1].upper().replace("K", "k") + "bit/s"),
    (r"\b([KMGTP])b\b", lambda found: found[1].replace("K", "k") + "bit"),  # Mb, Gb: bits, not barns or gilberts
    (r"\bKB\b", "kB"),  # kilobytes
]
SPELLINGS = [(re.compile(pattern), replacement) for pattern, replacement in SPELLINGS]
# All in lower case, bit or byte cannot be told apart (and m is milli): refused with the two ways to write it.
AMBIGUOUS = re.compile(r"\b([kmgtp])b\b")
TERM = re.compile(r"([^\W\d]\w*)(?:\s*(?:\*\*|\^)\s*([+-]?\d+))?")
JOIN = re.compile(r"\s*([*/])\s*|\s+")  # a space joins as a product, as in "N m"

ACCEPTS = ("convert takes a number and two units of one kind (temperature, length, mass, time, speed, volume, "
           "data size, area...), each a unit name or symbol as people write them (\"degrees Celsius\", \"°F\", "
           "\"km\", \"miles\", \"pounds\", \"hours\", \"km/h\", \"mph\", \"liters\", \"GB\"), names joined by * or /, "
           f"powers up to {MAX_POWER} (m**2, m²); no numbers in a unit")
# What each kind of quantity is called in an error, by its unit in pint's base units
KINDS = {"kelvin": "a temperature", "meter": "a length", "gram": "a mass", "second": "a time",
         "meter / second": "a speed", "meter ** 3": "a volume", "bit": "a data size", "bit / second": "a data rate",
         "meter ** 2": "an area", "meter / second ** 2": "an acceleration", "1 / second": "a frequency",
         "gram * meter ** 2 / second ** 2": "an energy", "gram / meter / second ** 2": "a pressure",
         "gram * meter / second ** 2": "a force", "gram * meter ** 2 / second ** 3": "a power",
         "radian": "an angle", "dimensionless": "a plain number"}


class Refused(Exception):
    """A unit or value that will not be converted; the message is for the model."""


def convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value from one unit to another; returns the value in to_unit, with to_unit as written.

    value: the number to convert. from_unit, to_unit: units as people write them, such as "degrees Celsius", "°F",
    "km", "miles", "kg", "pounds", "hours", "days", "km/h", "mph", "liters", "gallons", "GB".
    Covers temperature, length, mass, time, speed, volume and data sizes (GB is 10**9 bytes, GiB 2**30).
    Example: convert(25, "degrees Celsius", "degrees Fahrenheit") returns "77 degrees Fahrenheit".
    Refuses an unknown unit, units of different kinds (km to kg) and a value that is not a number, with an Error
    message that says what is accepted.
    """
    try:
        number = _number(value)
        registry = _registry()
        source, target = _unit(registry, from_unit), _unit(registry, to_unit)
        _same_kind(registry, source, target, from_unit, to_unit)
        result = registry.Quantity(number, source).to(target).magnitude
        offset = registry.Quantity(0.0, source).to(target).magnitude  # not 0 between °C, °F and K
    except Refused as refusal:
        return f"Error: {refusal}."
    except Exception as problem:  # pint's own (an offset unit in a product, say): named, never a traceback
        return f"Error: pint could not convert it ({type(problem).__name__}: {str(problem)[:200]}). {ACCEPTS}."
    if not math.isfinite(result):
        return f"Error: the result is too large to represent (past about 1.8e308 {to_unit.strip()})."
    return f"{written(_rounded(result, offset))} {to_unit.strip()}"


@functools.cache
def _registry():
    import pint  # imported here so that `agent.py --help` stays fast

    return pint.UnitRegistry()


def _rounded(result: float, offset: float) -> float:
    """The result rounded to SIGNIFICANT digits of the largest number that made it: a conversion between offset
    scales goes through kelvin, and 32 °F comes out as 5.7e-14 °C (273.15 - 273.15 with binary noise), not 0."""
    scale = abs(offset) + abs(result - offset)
    if not scale or not math.isfinite(scale):
        return result
    return round(result, SIGNIFICANT - 1 - math.floor(math.log10(scale))) + 0.0  # + 0.0: -0.0 is written 0


def _number(value) -> float:
    """The value as a float a conversion can take; Refused for text, a bool, NaN, an infinity or past 1.8e308."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f"the value must be a number, not {value!r:.60}: give the number alone and the units as "
                      "from_unit and to_unit, as in convert(25, \"degrees Celsius\", \"°F\")")
    if isinstance(value, float) and math.isnan(value):
        raise Refused("the value must be a number, not NaN")
    if abs(value) > sys.float_info.max:  # exact for whole numbers of any size, and true for infinities
        raise Refused("the value is too large: convert takes numbers up to about 1.8e308")
    return float(value)


def _unit(registry, written_unit):
    """The pint unit for a unit as a person wrote it; Refused, saying what is accepted, for anything else."""
    if not isinstance(written_unit, str):
        raise Refused(f"a unit must be text, not {type(written_unit).__name__}. {ACCEPTS}")
    text = written_unit.strip()
    if not text:
        raise Refused(f"a unit is empty. {ACCEPTS}")
    if len(text) > MAX_UNIT_CHARS:
        raise Refused(f"a unit is {len(text):,} characters long, more than {MAX_UNIT_CHARS}. {ACCEPTS}")
    for pattern, replacement in SPELLINGS:
        text = pattern.sub(replacement, text)
    if ambiguous := AMBIGUOUS.search(text):
        prefix = ambiguous[1] if ambiguous[1] == "k" else ambiguous[1].upper()
        raise Refused(f"{ambiguous[0]!r} could be bits or bytes: write {prefix}B for bytes or {prefix}bit for bits")
    expression = []
    for operator, name, power in _terms(text, written_unit):
        expression += [operator, _pint_name(registry, name, written_unit) + (f" ** {power}" if power != 1 else "")]
    # pint's parser, given only names it knows, * and /, and small whole powers
    return registry.parse_units(" ".join(expression[1:]))


def _terms(text: str, written_unit: str) -> list[tuple[str, str, int]]:
    """(the operator before it, name, power) of each name in a rewritten unit; Refused unless the whole unit is
    names joined by * or / with whole powers up to MAX_POWER, at most MAX_NAMES of them."""
    terms, position, operator = [], 0, "*"
    while True:
        term = TERM.match(text, position)
        if not term:
            raise Refused(f"{written_unit.strip()!r} is not a unit convert can read. {ACCEPTS}")
        name, power = term[1], int(term[2]) if term[2] else 1
        if not 0 < abs(power) <= MAX_POWER:
            raise Refused(f"{written_unit.strip()!r} has the power {power}: a power is a whole number from 1 to "
                          f"{MAX_POWER} or -1 to -{MAX_POWER}")
        terms.append((operator, name, power))
        if len(terms) > MAX_NAMES:
            raise Refused(f"{written_unit.strip()!r} has more than {MAX_NAMES} unit names. {ACCEPTS}")
        position = term.end()
        if position == len(text):
            return terms
        join = JOIN.match(text, position)
        if not join or join.end() == len(text):
            raise Refused(f"{written_unit.strip()!r} is not a unit convert can read. {ACCEPTS}")
        operator, position = join[1] or "*", join.end()


def _pint_name(registry, name: str, written_unit: str) -> str:
    """pint's own name for a unit name, as written or, when pint knows it only so, in lower case (KM, Hours);
    where pint reads a name two ways (ft: foot or femto-ton) its first reading, as its parser would take."""
    for spelling in dict.fromkeys([name, name.lower()]):
        candidates = registry.parse_unit_name(spelling)
        if candidates:
            prefix, unit, _ = candidates[0]
            try:
                return registry.get_name(prefix + unit)
            except Exception:  # pint's refusal of a prefixed offset unit (kilo-°C): not a unit either
                break
    said = f"{name!r}" if name == written_unit.strip() else f"{name!r} in {written_unit.strip()!r}"
    raise Refused(f"{said} is not a unit convert knows. {ACCEPTS}")


def _same_kind(registry, source, target, from_unit: str, to_unit: str) -> None:
    """Refuses units of different kinds, naming both. Compared by their units in pint's base units, so that a data
    size (bits) and an angle (radians), both without dimension to pint, are kinds apart too."""
    source_base, target_base = registry.get_root_units(source)[1], registry.get_root_units(target)[1]
    if source_base != target_base:
        raise Refused(f"{from_unit.strip()!r} is {_kind(source, source_base)} and {to_unit.strip()!r} is "
                      f"{_kind(target, target_base)}: a unit converts only to another of the same kind")


def _kind(unit, base) -> str:
    """What a unit measures, as an error names it: "a speed ([length] / [time])"; a data size or an angle without
    pint's dimensions, which leave out bits and radians ("1 / [time]" for a data rate)."""
    named = KINDS.get(str(base), "a quantity")
    if unit.dimensionless or "bit" in str(base) or "radian" in str(base):
        return named
    return f"{named} ({unit.dimensionality})"
