"""Secrets never written: the API keys set in the environment, and the user and password of a base URL set there
(`http://user:pass@host/v1`).

Everything the project writes passes through `redacted`: the trace as each event is added (so the file, the pages
and the JSON made from it hold none), the terminal (views.terminal.clean), the JSON it prints and the pages, as a
last guard. `shown_url` is every base URL as it is shown: without its user and password.
"""
import base64
import os
from urllib.parse import unquote, urlsplit, urlunsplit

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY")
URL_VARIABLES = ("OPENAI_BASE_URL", "OLLAMA_HOST", "LLAMACPP_BASE_URL", "GOOGLE_GEMINI_BASE_URL")
MASK = "***"
SHORTEST = 6  # a shorter value ("test", "abc") is no secret worth mangling every text that happens to hold it


def secrets() -> list[str]:
    """The secrets set now, longest first (so that a key holding another is blanked whole)."""
    found = {(os.environ.get(name) or "").strip() for name in KEY_VARIABLES}
    for name in URL_VARIABLES:
        userinfo = _userinfo(os.environ.get(name) or "")
        if userinfo:  # as written, as sent (decoded), and as a Basic Authorization header carries it
            user, _, password = userinfo.partition(":")
            plain = f"{unquote(user)}:{unquote(password)}"
            found |= {userinfo, password, unquote(password), plain, base64.b64encode(plain.encode()).decode()}
    return sorted((value for value in found if len(value) >= SHORTEST), key=len, reverse=True)


def redacted(text: str) -> str:
    """`text` with every secret replaced by ***, also in the forms libraries and JSON print it in."""
    return blanked(text, secrets())


def blanked(text: str, values: list[str]) -> str:
    """`text` with each of `values` replaced by ***, as written and in the forms libraries print it in (repr, bytes)."""
    for value in values:
        for form in (value, repr(value)[1:-1], repr(value.encode())[2:-1]):
            if form:
                text = text.replace(form, MASK)
    return text


def redacted_fields(fields: dict) -> dict:
    """`fields` with every text value, at any depth, redacted; in place, and returned."""
    found = secrets()  # once for the whole event: reading them is most of the work
    if not found:
        return fields
    for name, value in fields.items():
        fields[name] = _redacted_value(value, found)
    return fields


def _redacted_value(value, found: list[str]):
    if isinstance(value, str):
        return blanked(value, found)
    if isinstance(value, dict):
        return {key: _redacted_value(item, found) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted_value(item, found) for item in value]
    return value


def shown_url(url: str) -> str:
    """The URL as it may be shown: any user and password taken out (http://user:pass@host/v1 is http://host/v1)."""
    try:
        parts = urlsplit(url)
        if "@" not in parts.netloc:
            return url
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    except ValueError:  # not a URL one can split: shown with anything before an @ blanked
        return MASK + url.rpartition("@")[2] if "@" in url else url


def _userinfo(url: str) -> str:
    try:
        netloc = urlsplit(url.strip() if "://" in url else "http://" + url.strip()).netloc
    except ValueError:
        return ""
    return netloc.rpartition("@")[0] if "@" in netloc else ""
