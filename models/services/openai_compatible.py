"""Any OpenAI-compatible chat server: OpenAI itself, Ollama, llama.cpp's llama-server, vLLM, LM Studio,
OpenRouter. One POST to `{base}/chat/completions`, written with `requests`, the same ReAct text protocol
as Gemini (no native function calling), streamed as server-sent events when the caller streams.

    openai:NAME    OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY required
    ollama:NAME    OLLAMA_HOST (default http://localhost:11434; /v1 is added), no key
    llamacpp:NAME  LLAMACPP_BASE_URL (default http://localhost:8080/v1), no key

The request and the stream follow https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/chat/streaming; Ollama's subset is listed at
https://docs.ollama.com/api/openai-compatibility (stop, stream, stream_options.include_usage are among it).
Servers that think aloud send that text apart (`reasoning_content` in llama.cpp and DeepSeek, `reasoning`
in Ollama) or inline as `<think>…</think>`; it never becomes reply text. A server that reports no usage
gets its tokens counted here (tokens.py), and the reply says "counted locally".

Retries, waits and the call deadline are models/services/retry.py's. Redirects are never followed: the key goes to
the configured host only.
"""
import os
import time
from dataclasses import replace
from urllib.parse import urlsplit

from models import (COUNTED_LOCALLY, MAX_RESPONSE_BYTES, Message, ModelConfigError, ModelError, ModelReply, shortened,
                    within_limit)
from models.services import checked_url, retry
from models.services.keys import check_key, redact
from redaction import shown_url
from models.services import wire
from models.streaming import StreamCut, split_reasoning

# backend: (variable naming the base URL, its default, variable naming the key or None, hint when no server answers)
ENDPOINTS = {
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY", "check OPENAI_BASE_URL"),
    "ollama": ("OLLAMA_HOST", "http://localhost:11434", None, "is Ollama running? `ollama serve`"),
    "llamacpp": ("LLAMACPP_BASE_URL", "http://localhost:8080/v1", None,
                 "is llama-server running? `llama-server -m MODEL.gguf --port 8080`"),
}
# A local or self-hosted server samples when a request names no temperature: llama.cpp's server at 0.8 ("temperature:
# ... Default: `0.8`", llama.cpp tools/server/README.md), Ollama's /v1 at its own default whatever the Modelfile says
# ("PARAMETER temperature from the Modelfile is ignored on /v1/chat/completions", ollama issue #17744). A ReAct step
# wants the most likely text, so they are sent 0 unless TINYREACT_TEMPERATURE says otherwise; OpenAI's own API is sent
# none, as its reasoning models take only their default ("Unsupported value: 'temperature' does not support 0.5 with
# this model. Only the default (1) value is supported.", param "temperature").
TEMPERATURE_VARIABLE = "TINYREACT_TEMPERATURE"
MAX_STOPS = 4  # "Up to 4 sequences": https://platform.openai.com/docs/api-reference/chat/create#chat-create-stop
MAX_REPLY_BYTES = MAX_RESPONSE_BYTES  # a reply larger than this is a broken server, not a ReAct step
MAX_ERROR_BYTES = 65_536  # of an error's body: its message is a line or two
MAX_LIST_BYTES = 4_000_000  # a model list larger than this (some 40,000 models) is no list to read
MAX_SIDE_BYTES = 1_000_000  # of Ollama's /api/ps and /api/show: a few models' details, a Modelfile
CONNECT_SECONDS = 10
FINISHED_GRACE = 2.0  # seconds a stream whose reply is complete is given to send its usage and end
ROLES = {"system": "system", "user": "user", "model": "assistant"}
# finish_reason values: stop, length, content_filter, tool_calls (https://platform.openai.com/docs/api-reference/chat/object)
FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter"}


def endpoint(backend: str) -> tuple[str, str | None]:
    """(base URL, key variable) for a backend, from the environment or the defaults; ModelConfigError, naming the
    variable, for a URL that cannot be used."""
    variable, default, key_variable, _ = ENDPOINTS[backend]
    given = (os.environ.get(variable) or "").strip() or default
    url = _ollama_base(given) + "/v1" if backend == "ollama" else given
    return checked_url(variable, url, given).rstrip("/"), key_variable


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
    hint = ENDPOINTS[backend][3]
    try:
        data = read_small(requests.get, url + "/models", headers, timeout, MAX_LIST_BYTES)
    except requests.ConnectionError:
        raise ModelError(f"no server at {shown} — {hint}") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
        raise ModelError(f"{shown} did not answer in {timeout:g} s ({type(error).__name__})") from None
    except _Unread as problem:
        raise ModelError(f"{shown}/models {problem}") from None
    try:
        listed = wire.json_value(data).get("data") or []
        return sorted({item["id"] for item in listed if isinstance(item, dict) and _named(item.get("id"))})
    except (wire.Malformed, AttributeError, TypeError):
        raise ModelError(f"{shown}/models answered with something other than a model list") from None


class _Unread(Exception):
    """A small answer not read: a status other than 200, too many bytes, or not all of it before the deadline."""


def read_small(send, url: str, headers: dict, seconds: float, limit: int, **request) -> bytes:
    """The body of a short answer (a model list, Ollama's /api/ps and /api/show), read as it arrives and decoded as
    its Content-Encoding says: at most `limit` bytes and `seconds` in all, a drip included; requests' own timeout
    bounds only each read. Raises _Unread, or requests' and urllib3's errors."""
    started = time.monotonic()
    with send(url, headers=headers, timeout=seconds, allow_redirects=False, stream=True, **request) as response:
        if response.status_code != 200:
            raise _Unread(f"answered {response.status_code}")
        data = b""
        while chunk := response.raw.read1(65536, decode_content=True):
            data += chunk
            if len(data) > limit:
                raise _Unread(f"sent more than {limit:,} bytes: stopped reading")
            if time.monotonic() - started > seconds:
                raise _Unread(f"did not finish its answer in {seconds:g} s")
    return data


def temperature_for(backend: str, url: str) -> float | None:
    """The temperature to send: TINYREACT_TEMPERATURE (0 to 2, or `server` for none), else 0 for a local or
    self-hosted server and none for OpenAI's own API (see TEMPERATURE_VARIABLE)."""
    value = os.environ.get(TEMPERATURE_VARIABLE, "").strip()
    if value.lower() in ("server", "none", "default"):
        return None
    if not value:
        return None if backend == "openai" and url == ENDPOINTS["openai"][1] else 0.0
    try:
        temperature = float(value)
    except ValueError:
        temperature = -1.0
    if not 0 <= temperature <= 2:  # NaN fails both comparisons
        raise ModelConfigError(f"{TEMPERATURE_VARIABLE} must be a number from 0 to 2, or `server` to send none; "
                               f"got {value[:40]!r}")
    return temperature


class StreamEndedEarly(ModelError):
    """The connection closed before a streamed reply was complete: asked once more without streaming."""


def make(backend: str, name: str, progress=None) -> "OpenAICompatibleModel":
    """The model of `openai:`, `ollama:` or `llamacpp:` (see models.BACKENDS), as the environment configures it."""
    return OpenAICompatibleModel.for_backend(backend, name)


# Ollama's context, unless a model or the server sets another: "< 24 GiB VRAM: 4k context" (ollama
# docs/context-length.mdx). Its OpenAI-compatible /v1 takes no num_ctx, and a longer prompt is cut from the start,
# the instructions first, with no error (ollama issues #10980, #17427).
OLLAMA_DEFAULT_CONTEXT = 4096


class OpenAICompatibleModel:
    usage_source = "reported by the server"

    def __init__(self, name: str, base_url: str, *, backend: str = "openai", api_key: str | None = None,
                 key_variable: str | None = None):
        # Requests go to the URL as configured (a user and password in it authenticate, as curl would send them);
        # everything shown, the messages, the trace and the pages, names it without them.
        self._request_url = base_url.rstrip("/")
        self.name, self.backend, self.url = name, backend, shown_url(self._request_url)
        self._key_variable = key_variable or "the API key"
        self._api_key = check_key(api_key, self._key_variable) if api_key and api_key.strip() else None
        scheme = urlsplit(self.url).scheme
        if scheme not in ("http", "https"):
            raise ModelConfigError(f"{ENDPOINTS[backend][0]} must be an http:// or https:// URL, got {self.url!r}")
        self.dropped: set[str] = set()  # request fields the server refused, no longer sent
        self.temperature = temperature_for(backend, self.url)
        self._window: int | None = None  # learned once, for Ollama (see window)
        retry.call_deadline()  # an invalid TINYREACT_CALL_DEADLINE is refused now, not at the first question
        self._session = None

    @classmethod
    def for_backend(cls, backend: str, name: str) -> "OpenAICompatibleModel":
        """The model for `openai:`, `ollama:` or `llamacpp:` as the environment configures it."""
        url, key_variable = endpoint(backend)
        key = os.environ.get(key_variable, "") if key_variable else ""
        if key_variable and not key.strip():
            raise ModelConfigError(f"no {key_variable}: set it in the environment or in .env for {backend}:{name} "
                                   f"(the server at {shown_url(url)})")
        return cls(name, url, backend=backend, api_key=key, key_variable=key_variable)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatibleModel({self.backend}:{self.name} at {self.url})"

    @property
    def window(self) -> int | None:
        """The context in tokens the server runs the model with, where that can be learned: Ollama's, which cuts a
        longer prompt silently, so that the loop warns before such a call. The protocol says nothing of it for
        other servers: they refuse what they cannot take."""
        if self.backend != "ollama":
            return None
        if self._window is None:
            self._window = self._ollama_context()
        return self._window

    def _ollama_context(self) -> int:
        """The loaded model's context_length (GET /api/ps, the CONTEXT column of `ollama ps`), else the num_ctx its
        Modelfile sets (POST /api/show, its parameters), else Ollama's default (OLLAMA_DEFAULT_CONTEXT)."""
        import requests

        import urllib3.exceptions

        base = self._request_url.removesuffix("/v1")
        try:
            running = wire.json_value(read_small(requests.get, base + "/api/ps", {}, 2, MAX_SIDE_BYTES)).get("models")
            for model in running if isinstance(running, list) else []:
                if isinstance(model, dict) and self.name in (model.get("name"), model.get("model"),
                                                              str(model.get("name", "")).removesuffix(":latest")):
                    if type(model.get("context_length")) is int and model["context_length"] > 0:
                        return model["context_length"]
            shown = wire.json_value(read_small(requests.post, base + "/api/show", {}, 2, MAX_SIDE_BYTES,
                                               json={"model": self.name}))
            parameters = shown.get("parameters")
            for line in parameters.splitlines() if isinstance(parameters, str) else []:
                name, _, value = line.strip().partition(" ")
                value = value.strip()
                if name == "num_ctx" and value.isdigit() and len(value) <= 9 and int(value) > 0:
                    return int(value)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError, _Unread, wire.Malformed,
                AttributeError):
            pass  # an older Ollama, or none at the URL: the call itself will say so
        return OLLAMA_DEFAULT_CONTEXT

    def generate(self, messages: list[Message], stop: list[str], *, on_text=None, on_event=None) -> ModelReply:
        """One reply; streamed through `on_text` when it is given. Retries, waits and the deadline:
        models/services/retry.py.
        Two failures are asked again once, differently, so that the server's own answer reaches the user: a stream
        that ends early is asked for whole (a server that cannot take the context closes the stream, but answers a
        whole request with its error), and a reply that is empty but for its reasoning is asked for without the stop
        sequence (Ollama, vLLM and llama.cpp apply a stop string inside the reasoning too: vLLM issues #52393 and
        #53066; the loop's own cut at Observation still applies)."""
        chat = [{"role": ROLES[m.role], "content": m.text} for m in messages]
        streaming = [on_text is not None]  # [whether this call still streams]: a broken stream is asked whole once

        def attempt(channel: retry.Channel) -> ModelReply:
            while True:
                body = {"model": self.name, "messages": chat, "stream": streaming[0]}
                if stop and "stop" not in self.dropped:
                    body["stop"] = stop[:MAX_STOPS]
                if self.temperature is not None and "temperature" not in self.dropped:
                    body["temperature"] = self.temperature
                if streaming[0]:
                    body["stream_options"] = {"include_usage": True}  # one last chunk carries the usage
                response = self._post(body)
                with response:
                    if response.status_code == 200:
                        try:
                            reply, reasoned, problem = (self._stream(response, stop, channel) if streaming[0]
                                                        else self._whole(response))
                        except StreamEndedEarly as ended:
                            streaming[0] = False
                            channel.event("warning", message=f"{self._where()}: {ended}; asking once more without "
                                                             "streaming, for the server's own answer",
                                          restart_stream=channel.shown)
                            continue
                        if not reply.text.strip() and reasoned and "stop" in body:
                            self.dropped.add("stop")
                            channel.event("config_fallback", backend=self.backend, model=self.name, field="stop",
                                          variable=None, message="the reply was empty but for its reasoning: the stop "
                                          "sequence was applied inside the reasoning")
                            continue
                        if problem:
                            channel.event("warning", message=f"{self._where()} sent {problem}: its tokens are counted "
                                                             "here instead")
                        return replace(reply, temperature=body.get("temperature"))
                    refused = self._refused_field(response)
                    if refused is None:
                        raise self._explain(response)
                    self.dropped.add(refused)
                    variable = TEMPERATURE_VARIABLE if refused == "temperature" else None
                    channel.event("config_fallback", backend=self.backend, model=self.name, field=refused,
                                  variable=variable, message=_error_message(response, self._api_key))

        return retry.run(attempt, backend=self.backend, where=f"model {self.name} at {self.url}",
                         on_text=on_text, on_event=on_event)

    def _post(self, body: dict):
        import requests

        if self._session is None:
            self._session = requests.Session()
            self._session.trust_env = True  # proxies from the environment, as curl would
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            return self._session.post(self._request_url + "/chat/completions", json=body, headers=headers, stream=True,
                                      allow_redirects=False,
                                      timeout=(retry.read_timeout(CONNECT_SECONDS),
                                               retry.read_timeout(retry.DEFAULT_DEADLINE)))
        except requests.ConnectionError as error:
            if _refused(error):
                raise ModelConfigError(f"no server at {self.url} — {ENDPOINTS[self.backend][3]}") from None
            raise retry.Retryable(None, "connection failed", redact(str(error), self._api_key)) from None
        except requests.Timeout:
            raise retry.Retryable(None, "timed out", f"no answer from {self.url}") from None

    def _chunks(self, response, reading: dict | None = None):
        """The body as it arrives, decoded as its Content-Encoding says (gzip, deflate), chunk by chunk, stopping when
        the caller stopped waiting or it grows too big. Once `reading["finished"]` is set (when the reply was
        complete), a server that keeps the stream open, keep-alive comments included, is read for FINISHED_GRACE
        seconds more only, then the body is taken as ended."""
        import requests

        import urllib3.exceptions

        size, reading = 0, reading if reading is not None else {}
        while not retry.abandoned():
            try:
                chunk = response.raw.read1(65536, decode_content=True)
            except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
                if reading.get("finished"):
                    return
                raise retry.Retryable(None, "connection failed", redact(str(error), self._api_key)) from None
            if not chunk or (reading.get("finished") and time.monotonic() - reading["finished"] > FINISHED_GRACE):
                return
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise ModelError(f"{self._where()} sent more than {MAX_REPLY_BYTES:,} bytes: stopped reading")
            yield chunk

    def _malformed(self, what: str) -> ModelError:
        return ModelError(f"{self._where()} sent {redact(what, self._api_key)}: "
                          "not an OpenAI-compatible chat completion")

    def _whole(self, response, data: bytes | None = None) -> tuple[ModelReply, bool, str | None]:
        """The reply of a request made without streaming, whether it held reasoning, and what was wrong with its
        usage."""
        data = b"".join(self._chunks(response)) if data is None else data
        try:
            answer = wire.json_value(data)
            if wire.error_in(answer) and "choices" not in answer:
                raise self._error_in_200(answer["error"])
            listed = wire.choices(answer, "message")
        except wire.Malformed as problem:
            raise self._malformed(f"{problem} ({data[:80].decode('utf-8', 'replace')!r})") from None
        if not listed:
            raise self._malformed(f"a completion with no choices ({data[:80].decode('utf-8', 'replace')!r})")
        choice = listed[0]
        reasoning, text = split_reasoning(choice.content)
        counts, problem = wire.usage_counts(answer.get("usage"))
        reply = _reply(text, choice.finish, counts)
        return replace(reply, model=_named(answer.get("model"))), bool(reasoning or choice.reasoning), problem

    def _error_in_200(self, error) -> Exception:
        """An error sent with HTTP 200, as OpenRouter does once the model has started ("Otherwise, the returned HTTP
        response status will be 200 and any error ... will be emitted in the response body", its errors page): the
        error's own code decides, as the status would have."""
        error = error if isinstance(error, dict) else {"message": error}
        code = error.get("code") if type(error.get("code")) is int else None
        message = redact(wire.error_in({"error": error}) or "no message", self._api_key)
        if code in retry.RETRY_STATUSES:
            return retry.Retryable(code, "in a 200 answer", message)
        return ModelError(f"{self._where()} answered 200 with an error{f' {code}' if code else ''}: {message}")

    def _stream(self, response, stop: list[str], channel: retry.Channel) -> tuple[ModelReply, bool, str | None]:
        """Server-sent events: `data: {chunk}` events, `data: [DONE]` at the end; usage in the last chunk. A server
        that ignores `stream` and answers with one JSON completion is read as that, and shown at once."""
        reasoned = []
        cut = StreamCut(stop, channel.text, lambda text: (reasoned.append(True),
                                                          channel.event("reasoning", backend=self.backend, text=text)))
        state = {"finish": None, "usage": None, "model": None, "reading": {}, "response": response}
        events, complete, chunks = wire.EventStream(), False, self._chunks(response, state["reading"])
        for chunk in chunks:
            if not events.started and chunk.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):  # no events: one JSON body
                reply, reasoning, problem = self._whole(response, chunk + b"".join(chunks))
                cut.feed(reply.text)
                return replace(reply, text=cut.finish()), reasoning, problem
            complete = any(self._event(data, state, cut, channel, reasoned) for data in events.feed(chunk))
            if complete:
                break
        if not complete:  # the stream ended: an event it left unfinished is read too, if it is whole JSON
            for data in events.end():
                if data.strip() != "[DONE]" and not wire.is_json(data):  # cut mid-line or mid-character
                    raise StreamEndedEarly("the stream ended in the middle of an event")
                self._event(data, state, cut, channel, reasoned)
        if not cut.done and state["finish"] is None and not state.get("ended"):
            raise StreamEndedEarly("the stream ended before the reply was complete")
        counts, problem = wire.usage_counts(state["usage"])
        text = cut.finish()
        reply = _reply(text, cut.ending(state["finish"]), counts)
        return replace(reply, model=_named(state["model"])), bool(reasoned), problem

    def _event(self, data: str, state: dict, cut: StreamCut, channel: retry.Channel, reasoned: list) -> bool:
        """Read one stream event into `state`; True when the reply is complete: [DONE], or the cut reached."""
        if data.strip() == "[DONE]":
            state["ended"] = True
            return True
        try:
            event = wire.json_value(data)
            failed = wire.error_in(event)
            if failed:
                raise ModelError(f"{self._where()} failed in the middle of the reply: {redact(failed, self._api_key)}")
            listed = wire.choices(event, "delta")
        except wire.Malformed as problem:
            raise self._malformed(f"a stream event with {problem} ({data[:80]!r})") from None
        state["usage"] = event.get("usage") if event.get("usage") is not None else state["usage"]
        state["model"] = event.get("model") or state["model"]
        for choice in listed:
            if choice.reasoning:
                reasoned.append(True)
                channel.event("reasoning", backend=self.backend, text=choice.reasoning)
            if choice.content and cut.feed(choice.content):
                return True
            if choice.finish:
                state["finish"] = choice.finish
                state["reading"]["finished"] = time.monotonic()  # only the usage may follow: not waited on for long
                _hurry(state["response"])
        return False

    def _refused_field(self, response) -> str | None:
        """`stop` or `temperature` when a 400 says the model does not take it (some reasoning models take neither):
        the request is sent again without it, once; the loop's own cut at Observation still applies."""
        if response.status_code != 400:
            return None
        message = _error_message(response, self._api_key)
        param = _error_object(response).get("param")
        for field in ("stop", "temperature"):
            if field not in self.dropped and (param == field or f"'{field}'" in message or f"`{field}`" in message):
                return field
        return None

    def _explain(self, response) -> Exception:
        """A non-200 answer as the user should read it: ModelConfigError, ModelError, or Retryable."""
        code = response.status_code
        message = _error_message(response, self._api_key)
        if 300 <= code < 400:
            target = shortened(redact(response.headers.get("location", "an unnamed place"), self._api_key))
            return ModelConfigError(f"{self._where()} answered {code}, redirecting to {target}: not followed, so the "
                                    f"key stays with the configured host; set {ENDPOINTS[self.backend][0]} to the "
                                    "final URL")
        if code in (401, 403):
            return ModelConfigError(f"{self._where()} rejected the API key ({code}): check {self._key_variable}. "
                                    f"{message}")
        if code == 404:
            return ModelConfigError(self._unknown_model(message))
        error = _error_object(response)
        if code == 429 and error.get("code") == "insufficient_quota":
            # Not a rate limit: the account is out of credit, https://platform.openai.com/docs/guides/error-codes
            return ModelError(f"{self._where()}: {message} (insufficient_quota; not retried)")
        if code in retry.RETRY_STATUSES:
            return retry.Retryable(code, response.reason or "", message,
                                   retry.retry_after(response.headers.get("retry-after")))
        return ModelError(f"{self._where()} answered {code} {response.reason or ''}: {message}")

    def _unknown_model(self, message: str) -> str:
        """404: name the models the server has when it lists them, else say the URL may be wrong."""
        try:
            names = list_models(self.backend, timeout=2.0, base_url=self._request_url, api_key=self._api_key or "")
        except ModelError:
            names = None
        if names is None:
            return (f"{self._where()} answered 404 ({message}): no such model, or {ENDPOINTS[self.backend][0]} "
                    "is not an OpenAI-compatible /v1 URL")
        if self.name in names:
            return f"{self._where()} answered 404 for a model it lists ({message}): check {ENDPOINTS[self.backend][0]}"
        shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "") if names else "none"
        # Ollama answers "model 'x' not found, try pulling it first" (api/openai-compatibility): say how.
        pull = f" — to fetch it: ollama pull {self.name}" if self.backend == "ollama" else ""
        return f"{self._where()} has no model {self.name!r}; it has: {shown}{pull}"

    def _where(self) -> str:
        return f"{retry.BACKEND_NAMES[self.backend]} (model {self.name} at {self.url})"


def _reply(text: str, finish: str | None, counts: dict | None) -> ModelReply:
    """A reply with the usage the server reported (wire.usage_counts), or counted locally when it reported none."""
    text, finish = within_limit(text, finish)
    word = FINISH.get(finish) if finish else None
    blocked = "content filter" if word == "content_filter" and not text else None
    if counts is None:
        return ModelReply(text, finish=word, blocked=blocked, usage_source=COUNTED_LOCALLY)
    return ModelReply(text, input_tokens=counts["input"], output_tokens=counts["output"],
                      thoughts_tokens=counts["thoughts"], finish=word, blocked=blocked, cached_tokens=counts["cached"])


def _hurry(response) -> None:
    """Wait at most FINISHED_GRACE for each further read of a stream whose reply is complete: only its usage may
    follow, and a server that never closes it (nor sends [DONE]) must not hold the answer until the deadline."""
    connection = getattr(response.raw, "connection", None) or getattr(response.raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # http.client has let go of the connection's socket (a response that closes it): its reader has it
        reader = getattr(getattr(getattr(response.raw, "_fp", None), "fp", None), "raw", None)
        sock = getattr(reader, "_sock", None)
    if sock is not None:
        try:
            sock.settimeout(FINISHED_GRACE)
        except OSError:
            pass


def _named(model) -> str | None:
    """The model a server says answered, when it says so in a short plain name."""
    return model if isinstance(model, str) and 0 < len(model) <= 200 and model.isprintable() else None


def _error_body(response) -> bytes:
    """The start of an error's body (at most MAX_ERROR_BYTES, as decoded), read once: an error is a few lines."""
    if not hasattr(response, "error_body"):
        body = b""
        try:
            while len(body) < MAX_ERROR_BYTES and not retry.abandoned():  # no reading on once the caller gave up
                chunk = response.raw.read1(MAX_ERROR_BYTES - len(body), decode_content=True)
                if not chunk:
                    break
                body += chunk
        except Exception:  # the body could not be read, or not all of it: what came is the message
            pass
        response.error_body = body
        response.close()
    return response.error_body


def _error_object(response) -> dict:
    try:
        error = wire.json_value(_error_body(response)).get("error")
    except (wire.Malformed, AttributeError):
        return {}
    return error if isinstance(error, dict) else {"message": str(error)} if error else {}


def _error_message(response, key: str | None) -> str:
    """The server's own words for an error, redacted, on one line and shortened."""
    text = _error_body(response)[:2000].decode("utf-8", "replace")
    error = _error_object(response)
    message = str(error.get("message") or text.strip() or response.reason or "")
    return shortened(redact(message, key))


def _refused(error: Exception) -> bool:
    """Whether a requests ConnectionError is a refused connection: nothing listens at the URL.
    requests wraps urllib3's MaxRetryError, whose `reason` was raised from the socket's ConnectionRefusedError."""
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(getattr(reason, "__cause__", None), ConnectionRefusedError)


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
