"""An MCP tool's input schema, checked against a call within the call's deadline (tools/mcp.py).

The patterns of a server's schema are read with the `regex` module, which can give up: Python's own re cannot, and
a pattern such as ^(a|a)+$ against a long argument would hold the run at 100% CPU with no end. `bounded` makes a
jsonschema validator class whose `pattern`, `patternProperties` and `additionalProperties` (which reads the patterns
too) use it; `until` sets when the check under way, in this thread, must end. Every pattern of one check shares that
deadline, and a value that cannot be checked in time does not fit.
"""
import re
import threading
import time
from functools import partial

_ends = threading.local()


class PatternTooSlow(Exception):
    """A schema's pattern that did not finish checking within the call's deadline."""


def until(ends: float) -> None:
    """The moment (time.monotonic) the checks this thread makes from now on must end by."""
    _ends.value = ends


def bounded(validator_class, deadline: str):
    """`validator_class` with its pattern keywords bounded; `deadline` names the setting a value that took too long
    is said against."""
    import jsonschema

    return jsonschema.validators.extend(validator_class, {
        "pattern": partial(_pattern, deadline=deadline), "patternProperties": partial(_named, deadline=deadline),
        "additionalProperties": partial(_additional, deadline=deadline)})


def _search(pattern: str, text: str) -> bool:
    import regex

    ends = getattr(_ends, "value", None)
    left = None if ends is None else ends - time.monotonic()
    if left is not None and left <= 0:
        raise PatternTooSlow(pattern)
    try:
        return regex.search(pattern, text, timeout=left) is not None
    except TimeoutError:
        raise PatternTooSlow(pattern) from None
    except regex.error:
        return bool(re.search(pattern, text))  # a pattern only Python's re reads: as jsonschema would


def _too_slow(what: str, deadline: str):
    from jsonschema import ValidationError

    return ValidationError(f"checking {what} took longer than the call's deadline ({deadline}); it was not sent")


def _pattern(validator, wanted, instance, schema, deadline: str):
    from jsonschema import ValidationError

    if validator.is_type(instance, "string"):
        try:
            if not _search(wanted, instance):
                yield ValidationError(f"{instance!r} does not match {wanted!r}")
        except PatternTooSlow:
            yield _too_slow(f"it against the pattern {wanted[:60]!r}", deadline)


def _named(validator, patterns, instance, schema, deadline: str):
    if validator.is_type(instance, "object"):
        for wanted, subschema in patterns.items():
            for key, value in instance.items():
                try:
                    found = _search(wanted, key)
                except PatternTooSlow:
                    yield _too_slow(f"the name {key[:60]!r} against the pattern {wanted[:60]!r}", deadline)
                    continue
                if found:
                    yield from validator.descend(value, subschema, path=key, schema_path=wanted)


def _additional(validator, allowed, instance, schema, deadline: str):
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    try:
        extras = sorted(key for key in instance if key not in properties
                        and not any(_search(wanted, key) for wanted in patterns))
    except PatternTooSlow:
        yield _too_slow("its names against the schema's patterns", deadline)
        return
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif allowed is False and extras:
        yield ValidationError(f"{', '.join(map(repr, extras))} {'is' if len(extras) == 1 else 'are'} not among the "
                              "properties it takes")
