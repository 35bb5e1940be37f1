"""Secrets never written: the API keys set in the environment, the user and password of a base URL set there
(`http://user:pass@host/v1`), and the values of the headers --otel sends its spans with (an OTLP endpoint's
`Authorization=Basic ...` or API key).

Everything the project writes passes through `redacted`: the trace as each event is added (so the file, the pages
and the JSON made from it hold none), the terminal (views.terminal.clean), the JSON it prints and the pages, as a
last guard. `shown_url` is every base URL as it is shown: without its user and password.
"""
import base64
import os
import re
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY")
URL_VARIABLES = ("OPENAI_BASE_URL", "OLLAMA_HOST", "LLAMACPP_BASE_URL", "GOOGLE_GEMINI_BASE_URL")
# `name=value` pairs separated by commas, each value URL-encoded: every value is taken for a credential
HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
MASK = "***"
# The headers whose values are credentials: Authorization and the like, an API key, a token, a secret, a password
CREDENTIAL_HEADER = re.compile(r"auth|key|token|secret|passw|credential|cookie|signature")
SHORTEST = 6  # a shorter value ("test", "abc") is no secret worth mangling every text that happens to hold it


_worked_out: tuple = (None, [])  # (the environment's values they were worked out from, the secrets and their forms)


def secrets() -> list[str]:
    """The secrets set now, each in every form it travels in (as written, URL-encoded, inside base64), longest
    first, so that a key holding another is blanked whole. Worked out again only when the variables they come from
    change: a trace event asks for them, and that must cost next to nothing."""
    global _worked_out
    given = tuple(map(os.environ.get, KEY_VARIABLES + URL_VARIABLES + HEADER_VARIABLES))
    if given != _worked_out[0]:
        _worked_out = (given, _forms_of(given))
    return _worked_out[1]


def _forms_of(given: tuple) -> list[str]:
    keys, urls = given[:len(KEY_VARIABLES)], given[len(KEY_VARIABLES):len(KEY_VARIABLES) + len(URL_VARIABLES)]
    found = {(value or "").strip() for value in keys}
    for url in urls:
        userinfo = _userinfo(url or "")
        if userinfo:  # as written, as sent (decoded), and as a Basic Authorization header carries it
            user, _, password = userinfo.partition(":")
            plain = f"{unquote(user)}:{unquote(password)}"
            found |= {userinfo, password, unquote(password), plain, base64.b64encode(plain.encode()).decode()}
    for headers in given[len(KEY_VARIABLES) + len(URL_VARIABLES):]:
        found |= _header_values(headers or "")
    found = {value for value in found if len(value) >= SHORTEST}
    for value in list(found):
        found |= {quote(value, safe=""), quote_plus(value), *_inside_base64(value)}
    return sorted((value for value in found if len(value) >= SHORTEST), key=len, reverse=True)


def _header_values(headers: str) -> set[str]:
    """Each value of `name=value,name=value` whose name says it carries a credential (Authorization, an API key, a
    token...), as written and as sent (decoded); of `Scheme credentials`, the credentials too, and of Basic ones, the
    `user:password` they encode and its password. A header such as a dataset's or a tenant's name is no secret, and
    blanking it would blank that word in every answer."""
    found = set()
    for pair in headers.split(","):
        name = unquote(pair.partition("=")[0]).strip().lower()
        if not CREDENTIAL_HEADER.search(name):
            continue
        written = pair.partition("=")[2].strip()
        value = unquote(written).strip()
        found |= {written, value}
        scheme, _, credentials = value.partition(" ")
        credentials = credentials.strip()
        found.add(credentials)
        if scheme.lower() == "basic" and credentials:
            try:
                plain = base64.b64decode(credentials, validate=True).decode("utf-8")
            except ValueError:  # not base64, or not UTF-8 inside (binascii.Error and UnicodeDecodeError are both)
                continue
            found |= {plain, plain.partition(":")[2]}
    return found


def _inside_base64(value: str) -> set[str]:
    """What any base64 text holding `value` holds, wherever `value` starts in it: for each of the three alignments,
    the characters that depend on `value`'s bytes alone (those shared with a neighbour's bytes are left out)."""
    data, forms = value.encode(), set()
    for offset, skip in ((0, 0), (1, 2), (2, 3)):
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        forms.add(encoded[skip:(offset + len(data)) // 3 * 4])
    return forms


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


def redacted_fields(fields: dict, found: list[str] | None = None) -> dict:
    """`fields` with every text value, at any depth, redacted (of `found`, by default the secrets set now); in
    place, and returned."""
    found = secrets() if found is None else found
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


class StreamRedactor:
    """Redaction over a stream of pieces: a secret split across pieces is blanked too. Each piece is joined to
    what was held back, blanked, and shown but for its last characters (one fewer than the longest form of a
    secret), which wait for the next piece or `end`: no secret can begin in what is shown and end after it."""

    def __init__(self):
        self._held = ""

    def feed(self, piece: str) -> str:
        found = secrets()
        text = blanked(self._held + piece, found) if found else self._held + piece
        cut = max(0, len(text) - max((len(value) - 1 for value in found), default=0))
        shown, self._held = text[:cut], text[cut:]
        return shown

    def end(self) -> str:
        rest, self._held = blanked(self._held, secrets()), ""
        return rest
