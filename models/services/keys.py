"""API keys: checked before the first request, and never shown.

A key with a newline or a space inside (a paste gone wrong) would reach the HTTP library, whose error
message quotes the header value, key included. So keys are checked up front, and every message a network
backend builds from a server's or a library's words passes through `redact`.
"""
from models import ModelConfigError
from redaction import blanked  # as every secret is: *** wherever it was


def check_key(key: str, variable: str) -> str:
    """The key without surrounding whitespace; ModelConfigError (which never quotes it) if it cannot be sent."""
    key = key.strip()
    if any(not character.isprintable() or character.isspace() for character in key):
        raise ModelConfigError(f"{variable} contains a space, a line break or another character that cannot be sent "
                               "in an HTTP header: set it again, the key alone")
    if not key.isascii():
        raise ModelConfigError(f"{variable} contains characters outside ASCII, which an HTTP header cannot carry: "
                               "set it again, the key alone")
    return key


def redact(text: str, key: str | None) -> str:
    """`text` with every occurrence of the key replaced, also in the forms libraries print it in (repr, bytes)."""
    return blanked(text, [key]) if key else text
