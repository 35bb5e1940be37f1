"""Numbers a user sets in the environment (TINYREACT_CALL_DEADLINE, GEMINI_TEMPERATURE ...), each read the same
way: within its bounds, or refused in one line that names the setting and quotes at most SHOWN characters of what it
holds (a variable can hold megabytes, or a number of 5,000 digits that Python will not turn into an int). `quoted`
is how any value a user gave is quoted in an error (options, policy parameters)."""
import math
import os

SHOWN = 40


def number(name: str, value: str, lowest: float, highest: float, *, above: bool = False, whole: bool = False,
           seconds: bool = False, besides: str = "") -> float | int:
    """`value`, the text of the setting `name`, as a number from `lowest` (or above it, with `above`) to `highest`;
    a whole number with `whole`. ValueError otherwise, in one line: `seconds` says the unit, `besides` what else the
    setting takes (", or `server` to send none")."""
    text = value.strip()
    try:
        read = int(text) if whole else float(text)
    except ValueError:  # no number, or an integer too long to read
        read = None
    # an int is compared as it is: math.isfinite would turn one of 309 digits or more into a float, and overflow
    if read is not None and (whole or math.isfinite(read)) and (lowest < read if above else lowest <= read) \
            and read <= highest:
        return read
    kind = ("a whole number" if whole else "a number") + (" of seconds" if seconds else "")
    span = f"above {lowest:,} and at most {highest:,}" if above else f"from {lowest:,} to {highest:,}"
    raise ValueError(f"{name} must be {kind} {span}{besides}, got {quoted(value)}")


def quoted(value: str) -> str:
    """A value given by a user, quoted in an error: at most SHOWN characters of it, and ... when there were more."""
    return repr(value) if len(value) <= SHOWN else repr(value[:SHOWN] + "...")


def from_environment(name: str, default: float | int, lowest: float, highest: float, **how) -> float | int:
    """The setting `name` read by `number` (`how`: its keywords), or `default` when it is unset or blank."""
    value = os.environ.get(name, "").strip()
    return number(name, value, lowest, highest, **how) if value else default
