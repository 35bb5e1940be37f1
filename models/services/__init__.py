"""The network services: Gemini (gemini.py) and any OpenAI-compatible server (openai_compatible.py, its requests
built by openai_request.py), with what they share: retries and deadlines (retry.py), reading a response body
(wire.py), keys (keys.py), and the check of a base URL setting, made once where the setting is read."""
from urllib.parse import urlsplit

from models import ModelConfigError
from redaction import shown_url


def checked_url(variable: str, url: str, given: str | None = None) -> str:
    """`url` if `requests` can send to it: http or https, a host, no spaces, a port from 1 to 65535; otherwise
    ModelConfigError in one line naming the setting `variable` and what it was `given` (by default `url`), with any
    user and password left out."""
    given = given if given is not None else url
    shown = shown_url(given) if "://" in given else shown_url("http://" + given).removeprefix("http://")
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    problem = _url_problem(url)
    if problem:
        raise ModelConfigError(f"{variable} is not a URL that can be used ({problem}): {shown!r}; "
                               "write it like http://localhost:8080/v1")
    return url


def _url_problem(url: str) -> str | None:
    if any(character.isspace() or ord(character) < 32 for character in url):
        return "it holds a space or a control character"
    try:
        parts = urlsplit(url)
    except ValueError as error:  # an unclosed [ of an IPv6 address
        return str(error)
    try:
        port = parts.port
    except ValueError:  # a port of text, or past 65535
        return "the port is not a number from 1 to 65535"
    if parts.netloc.endswith(":"):
        return "the port is empty"
    if parts.scheme not in ("http", "https"):
        return "it must begin with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0 is no port"
    return None
