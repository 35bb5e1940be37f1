"""Where the OpenAI-compatible servers are and what they list: each backend's base URL setting (checked once, where
it is read), Ollama's host forms, the model list (`GET /models`) and Ollama's side doors (`/api/ps`, `/api/show`),
all read through one bounded reader; the temperature a server is sent; and the rows `--models` shows."""
import os
import time

import settings
from models import ModelConfigError, ModelError, backend_record
from models.services import checked_url, wire
from models.services.keys import check_key
from redaction import shown_url

# A local or self-hosted server samples when a request names no temperature: llama.cpp's server at 0.8 ("temperature:
# ... Default: `0.8`", llama.cpp tools/server/README.md), Ollama's /v1 at its own default whatever the Modelfile says
# ("PARAMETER temperature from the Modelfile is ignored on /v1/chat/completions", ollama issue #17744). A ReAct step
# wants the most likely text, so they are sent 0 unless TINYREACT_TEMPERATURE says otherwise; OpenAI's own API is sent
# none, as its reasoning models take only their default ("Unsupported value: 'temperature' does not support 0.5 with
# this model. Only the default (1) value is supported.", param "temperature").
TEMPERATURE_VARIABLE = "TINYREACT_TEMPERATURE"
MAX_LIST_BYTES = 4_000_000  # a model list larger than this (some 40,000 models) is no list to read
MAX_SIDE_BYTES = 1_000_000  # of Ollama's /api/ps and /api/show: a few models' details, a Modelfile
# Ollama's context, unless a model or the server sets another: "< 24 GiB VRAM: 4k context" (ollama
# docs/context-length.mdx). Its OpenAI-compatible /v1 takes no num_ctx, and a longer prompt is cut from the start,
# the instructions first, with no error (ollama issues #10980, #17427).
OLLAMA_DEFAULT_CONTEXT = 4096


def endpoint(backend: str) -> tuple[str, str | None]:
    """(base URL, key variable) for a backend, from the environment or the defaults; ModelConfigError, naming the
    variable, for a URL that cannot be used."""
    record = backend_record(backend)  # an OpenAI-compatible server's: its url_variable, url and key_variable
    given = (os.environ.get(record.url_variable) or "").strip() or record.url
    url = _ollama_base(given) + "/v1" if backend == "ollama" else given
    return checked_url(record.url_variable, url, given).rstrip("/"), record.key_variable


def _ollama_base(host: str) -> str:
    """OLLAMA_HOST as Ollama itself reads it: `host`, `host:port` or a URL; port 11434 unless a scheme says
    otherwise."""
    scheme, found, rest = host.partition("://")
    if not found:
        scheme, rest = "http", host
    hostport = rest.split("/")[0]
    if ":" not in hostport.rsplit("]", 1)[-1]:
        hostport += ":11434" if not found else (":443" if scheme == "https" else ":80")
    return f"{scheme}://{hostport}"


def list_models(backend: str, timeout: float = 2.0, base_url: str | None = None,
                api_key: str | None = None) -> list[str]:
    """The model ids a server lists at GET {base}/models; ModelError when it cannot be asked."""
    import requests

    import urllib3.exceptions

    url, key_variable = endpoint(backend)
    url = (base_url or url).rstrip("/")
    shown = shown_url(url)
    key = api_key if api_key is not None else (os.environ.get(key_variable, "") if key_variable else "")
    headers = {"Authorization": f"Bearer {check_key(key, key_variable or 'the API key')}"} if key.strip() else {}
    hint = backend_record(backend).hint
    try:
        data = read_small(requests.get, url + "/models", headers, timeout, MAX_LIST_BYTES)
    except requests.ConnectionError:
        raise ModelError(f"no server at {shown} — {hint}") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
        raise ModelError(f"{shown} did not answer in {timeout:g} s ({type(error).__name__})") from None
    except Unread as problem:
        raise ModelError(f"{shown}/models {problem}") from None
    try:
        listed = wire.json_value(data).get("data") or []
        return sorted({item["id"] for item in listed if isinstance(item, dict) and wire.model_name(item.get("id"))})
    except (wire.Malformed, AttributeError, TypeError):
        raise ModelError(f"{shown}/models answered with something other than a model list") from None


class Unread(Exception):
    """A small answer not read: a status other than 200, too many bytes, or not all of it before the deadline."""


def read_small(send, url: str, headers: dict, seconds: float, limit: int, **request) -> bytes:
    """The body of a short answer (a model list, Ollama's /api/ps and /api/show), read as it arrives and decoded as
    its Content-Encoding says: at most `limit` bytes and `seconds` in all, a drip included; requests' own timeout
    bounds only each read. Raises Unread, or requests' and urllib3's errors."""
    started = time.monotonic()

    def late() -> bool:
        if time.monotonic() - started > seconds:
            raise Unread(f"did not finish its answer in {seconds:g} s")
        return False
    with send(url, headers=headers, timeout=seconds, allow_redirects=False, stream=True, **request) as response:
        if response.status_code != 200:
            raise Unread(f"answered {response.status_code}")
        try:
            return b"".join(wire.body_chunks(response, limit, late))
        except wire.TooLarge:
            raise Unread(f"sent more than {limit:,} bytes: stopped reading") from None


def temperature_for(backend: str, url: str) -> float | None:
    """The temperature to send: TINYREACT_TEMPERATURE (0 to 2, or `server` for none), else 0 for a local or
    self-hosted server and none for OpenAI's own API (see TEMPERATURE_VARIABLE)."""
    value = os.environ.get(TEMPERATURE_VARIABLE, "").strip()
    if value.lower() in ("server", "none", "default"):
        return None
    if not value:
        return None if backend == "openai" and url == backend_record("openai").url else 0.0
    try:
        return settings.number(TEMPERATURE_VARIABLE, value, 0, 2, besides=", or `server` to send none")
    except ValueError as problem:
        raise ModelConfigError(str(problem)) from None


def ollama_context(request_url: str, name: str) -> int:
    """The context Ollama runs `name` with: the loaded model's context_length (GET /api/ps, the CONTEXT column of
    `ollama ps`), else the num_ctx its Modelfile sets (POST /api/show, its parameters), else Ollama's default
    (OLLAMA_DEFAULT_CONTEXT)."""
    import requests

    import urllib3.exceptions

    base = request_url.removesuffix("/v1")
    try:
        running = wire.json_value(read_small(requests.get, base + "/api/ps", {}, 2, MAX_SIDE_BYTES)).get("models")
        for model in running if isinstance(running, list) else []:
            if isinstance(model, dict) and name in (model.get("name"), model.get("model"),
                                                          str(model.get("name", "")).removesuffix(":latest")):
                if type(model.get("context_length")) is int and model["context_length"] > 0:
                    return model["context_length"]
        shown = wire.json_value(read_small(requests.post, base + "/api/show", {}, 2, MAX_SIDE_BYTES,
                                           json={"model": name}))
        parameters = shown.get("parameters")
        for line in parameters.splitlines() if isinstance(parameters, str) else []:
            name, _, value = line.strip().partition(" ")
            value = value.strip()
            if name == "num_ctx" and value.isascii() and value.isdigit() and len(value) <= 9 and int(value) > 0:
                return int(value)
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError, Unread, wire.Malformed,
            AttributeError):
        pass  # an older Ollama, or none at the URL: the call itself will say so
    return OLLAMA_DEFAULT_CONTEXT


MAX_LISTED = 50  # models shown per server by --models; the rest are counted


def available(backend: str, probe_seconds: float) -> list[dict]:
    """The rows `--models` shows for one server: each model it lists (asked with a deadline of `probe_seconds`),
    or why none can run. The public OpenAI API is not asked: listing costs nothing, but a key is all it needs."""
    try:
        url, key_variable = endpoint(backend)
    except ModelConfigError as problem:
        return [dict(spec=f"{backend}:MODEL", backend=backend, ready=False, why=str(problem))]
    row = dict(spec=f"{backend}:MODEL", backend=backend, url=shown_url(url))
    if key_variable and not os.environ.get(key_variable, "").strip():
        return [row | dict(ready=False, why=f"no {key_variable} set")]
    if backend == "openai" and not os.environ.get("OPENAI_BASE_URL"):
        return [row | dict(ready=True, why="")]
    try:
        names = list_models(backend, timeout=probe_seconds)
    except ModelError as problem:
        return [row | dict(ready=False, why=str(problem))]
    if not names:
        return [row | dict(ready=False, why="the server lists no models")]
    rows = [row | dict(spec=f"{backend}:{name}", ready=True, why="") for name in names[:MAX_LISTED]]
    if len(names) > MAX_LISTED:
        rows.append(row | dict(spec=f"{backend}:…", ready=True,
                               why=f"{len(names) - MAX_LISTED:,} more: the server lists {len(names):,} models"))
    return rows
