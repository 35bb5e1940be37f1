"""Any OpenAI-compatible chat server: OpenAI itself, Ollama, llama.cpp's llama-server, vLLM, LM Studio,
OpenRouter. One POST to `{base}/chat/completions`, written with `requests`, streamed as server-sent events when
the caller streams. In the text protocol the tools are in the instructions; in the native one they go as `tools`
(`{"type": "function", "function": schema}`), the reply's `tool_calls` come back (streamed as deltas whose
arguments arrive in pieces, joined by their index), and each result goes back as a `tool` message answering its
`tool_call_id` (https://platform.openai.com/docs/guides/function-calling).

    openai:NAME    OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY required
    ollama:NAME    OLLAMA_HOST (default http://localhost:11434; /v1 is added), no key; native tools go to its
                   own /api/chat instead (models/services/ollama_chat.py)
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
import json
import os
import time
from dataclasses import replace
from urllib.parse import urlsplit

from models import (COUNTED_LOCALLY, MAX_CALLS_READ, MAX_RESPONSE_BYTES, Message, ModelConfigError, ModelError,
                    ModelReply, backend_record, native_calls, shortened, within_limit)
from models.services import endpoints, retry, wire
from models.services.endpoints import TEMPERATURE_VARIABLE, available, list_models, temperature_for
from models.services.keys import check_key, redact
from models.services.openai_request import native_chat, plain_chat, request_body
from models.streaming import StreamCut, split_reasoning
from redaction import shown_url

# make and available: what models.BACKENDS asks for; native_chat: what Ollama's /api/chat and bench/ take from here
__all__ = ["OpenAICompatibleModel", "make", "available", "native_chat"]

MAX_REPLY_BYTES = MAX_RESPONSE_BYTES  # a reply larger than this is a broken server, not a ReAct step
MAX_ERROR_BYTES = 65_536  # of an error's body: its message is a line or two
CONNECT_SECONDS = 10
FINISHED_GRACE = 2.0  # seconds a stream whose reply is complete is given to send its usage and end
# finish_reason values: stop, length, content_filter, tool_calls (https://platform.openai.com/docs/api-reference/chat/object)
FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter"}


class StreamEndedEarly(ModelError):
    """The connection closed before a streamed reply was complete: asked once more without streaming."""


def make(backend: str, name: str, progress=None) -> "OpenAICompatibleModel":
    """The model of `openai:`, `ollama:` or `llamacpp:` (see models.BACKENDS), as the environment configures it."""
    return OpenAICompatibleModel.for_backend(backend, name)


class OpenAICompatibleModel:
    usage_source = "reported by the server"

    def __init__(self, name: str, base_url: str, *, backend: str = "openai", api_key: str | None = None,
                 key_variable: str | None = None):
        # Requests go to the URL as configured (a user and password in it authenticate, as curl would send them);
        # everything shown, the messages, the trace and the pages, names it without them.
        self._request_url = base_url.rstrip("/")
        self.name, self.backend, self.url = name, backend, shown_url(self._request_url)
        self._record = backend_record(backend)  # its label, URL variable and hint, for messages
        self._key_variable = key_variable or "the API key"
        self._api_key = check_key(api_key, self._key_variable) if api_key and api_key.strip() else None
        scheme = urlsplit(self.url).scheme
        if scheme not in ("http", "https"):
            raise ModelConfigError(f"{self._record.url_variable} must be an http:// or https:// URL, got {self.url!r}")
        self.dropped: set[str] = set()  # request fields the server refused, no longer sent
        self.temperature = temperature_for(backend, self.url)
        self._window: int | None = None  # learned once, for Ollama (see window)
        retry.call_deadline()  # an invalid TINYREACT_CALL_DEADLINE is refused now, not at the first question
        self._session = None
        self.service_tier: str | None = None  # "flex" with --via flex (openai_request.request_body)

    @classmethod
    def for_backend(cls, backend: str, name: str) -> "OpenAICompatibleModel":
        """The model for `openai:`, `ollama:` or `llamacpp:` as the environment configures it."""
        url, key_variable = endpoints.endpoint(backend)
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
            self._window = endpoints.ollama_context(self._request_url, self.name)
        return self._window

    native_tools = True  # the native protocol: tools, tool_calls and tool messages

    def generate(self, messages: list[Message], stop: list[str], *, on_text=None, on_event=None,
                 tools: list[dict] | None = None) -> ModelReply:
        """One reply; streamed through `on_text` when it is given. Retries, waits and the deadline:
        models/services/retry.py.
        Two failures are asked again once, differently, so that the server's own answer reaches the user: a stream
        that ends early is asked for whole (a server that cannot take the context closes the stream, but answers a
        whole request with its error), and a reply that is empty but for its reasoning is asked for without the stop
        sequence (Ollama, vLLM and llama.cpp apply a stop string inside the reasoning too: vLLM issues #52393 and
        #53066; the loop's own cut at Observation still applies)."""
        chat = self._chat(messages, tools)
        streaming = [on_text is not None]  # [whether this call still streams]: a broken stream is asked whole once

        def attempt(channel: retry.Channel) -> ModelReply:
            while True:
                url, body = self._request(chat, stop, tools, streaming[0])
                response = self._post(body, url)
                with response:
                    if response.status_code == 200:
                        try:
                            reply, reasoned, problem = self._read(response, stop, channel, streaming[0], tools)
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
                        return replace(reply, temperature=self._temperature_sent())
                    refused = self._refused_field(response)
                    if refused is None:
                        raise self._explain(response)
                    self.dropped.add(refused)
                    variable = TEMPERATURE_VARIABLE if refused == "temperature" else None
                    channel.event("config_fallback", backend=self.backend, model=self.name, field=refused,
                                  variable=variable, message=_error_message(response, self._api_key))

        return retry.run(attempt, backend=self.backend, where=f"model {self.name} at {self.url}",
                         on_text=on_text, on_event=on_event)

    def _chat(self, messages: list[Message], tools: list[dict] | None) -> list[dict]:
        """The messages as the server takes them: in the native protocol's shape when tools are offered."""
        return native_chat(messages) if tools else plain_chat(messages)

    def _request(self, chat: list[dict], stop: list[str], tools: list[dict] | None,
                 streaming: bool) -> tuple[str | None, dict]:
        """Where the request goes (None: chat/completions) and its body: what the server refused before is left
        out."""
        stop = stop if "stop" not in self.dropped else []
        return None, request_body(self.name, chat, stop, tools, streaming, self._temperature_sent(), self.service_tier)

    def batch_body(self, messages: list[Message], stop: list[str], planned: bool = False) -> dict:
        """The body a call of `messages` sends, whole (not streamed): what one line of a batch carries; `planned`, the
        body before any setting the server refused was left out (what names the call in a batch's ledger)."""
        if planned:
            return request_body(self.name, self._chat(messages, None), stop, None, False, self.temperature,
                                self.service_tier)
        return self._request(self._chat(messages, None), stop, None, False)[1]

    def reply_of(self, answer: dict) -> ModelReply:
        """A chat completion that came back in a batch's output, read as a call's reply is read."""
        reply = self._whole(None, json.dumps(answer).encode())[0]
        return replace(reply, temperature=self._temperature_sent())

    def connection(self) -> tuple[str, dict]:
        """The base URL requests go to, and the headers that carry the key: for the Files and Batches APIs."""
        return self._request_url, {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _read(self, response, stop: list[str], channel: retry.Channel, streaming: bool,
              tools: list[dict] | None) -> tuple[ModelReply, bool, str | None]:
        """The reply of a 200 answer, whether it held reasoning, and what was wrong with its usage."""
        return self._stream(response, stop, channel) if streaming else self._whole(response)

    def _temperature_sent(self) -> float | None:
        """The temperature a request carries: none once the server has refused it."""
        return self.temperature if "temperature" not in self.dropped else None

    def _post(self, body: dict, url: str | None = None):
        """POST `body` to chat/completions, or to `url`."""
        import requests

        if self._session is None:
            self._session = requests.Session()
            self._session.trust_env = True  # proxies from the environment, as curl would
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        # The flex tier answers slowly ("request timeouts are more likely", its guide, which waits 15 minutes): its
        # answer is waited for until the call's deadline, not taken for lost and asked (and paid for) again.
        waited = retry.call_deadline() if self.service_tier == "flex" else retry.DEFAULT_DEADLINE
        try:
            return self._session.post(url or self._request_url + "/chat/completions", json=body, headers=headers,
                                      stream=True, allow_redirects=False,
                                      timeout=(retry.read_timeout(CONNECT_SECONDS), retry.read_timeout(waited)))
        except requests.ConnectionError as error:
            if _refused(error):
                raise ModelConfigError(f"no server at {self.url} — {self._record.hint}") from None
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

        reading = reading if reading is not None else {}

        def stopped() -> bool:
            finished = reading.get("finished")
            return retry.abandoned() or bool(finished and time.monotonic() - finished > FINISHED_GRACE)
        body = wire.body_chunks(response, MAX_REPLY_BYTES, stopped)
        while True:
            try:
                chunk = next(body, None)
            except wire.TooLarge:
                raise ModelError(f"{self._where()} sent more than {MAX_REPLY_BYTES:,} bytes: stopped reading") from None
            except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
                if reading.get("finished"):
                    return
                raise retry.Retryable(None, "connection failed", redact(str(error), self._api_key)) from None
            if chunk is None:
                return
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
        reply = replace(_reply(text, choice.finish, counts), calls=_calls(choice.calls))
        return replace(reply, model=wire.model_name(answer.get("model"))), bool(reasoning or choice.reasoning), problem

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
        state = {"finish": None, "usage": None, "model": None, "reading": {}, "response": response, "calls": []}
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
        reply = replace(_reply(text, cut.ending(state["finish"]), counts), calls=native_calls(
            (call["id"], call["name"], call["arguments"]) for call in state["calls"]))
        return replace(reply, model=wire.model_name(state["model"])), bool(reasoned), problem

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
            try:
                for delta in choice.calls:
                    _join_call(state["calls"], delta)
            except wire.Malformed as problem:
                raise self._malformed(f"a stream event with {problem}") from None
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
        return refused_field(_error_object(response).get("param"), _error_message(response, self._api_key),
                             self.dropped)

    def _explain(self, response) -> Exception:
        """A non-200 answer as the user should read it: ModelConfigError, ModelError, or Retryable."""
        code = response.status_code
        message = _error_message(response, self._api_key)
        if 300 <= code < 400:
            target = shortened(redact(response.headers.get("location", "an unnamed place"), self._api_key))
            return ModelConfigError(f"{self._where()} answered {code}, redirecting to {target}: not followed, so the "
                                    f"key stays with the configured host; set {self._record.url_variable} to the "
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
            return (f"{self._where()} answered 404 ({message}): no such model, or {self._record.url_variable} "
                    "is not an OpenAI-compatible /v1 URL")
        if self.name in names:
            return f"{self._where()} answered 404 for a model it lists ({message}): check {self._record.url_variable}"
        shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "") if names else "none"
        # Ollama answers "model 'x' not found, try pulling it first" (api/openai-compatibility): say how.
        pull = f" — to fetch it: ollama pull {self.name}" if self.backend == "ollama" else ""
        return f"{self._where()} has no model {self.name!r}; it has: {shown}{pull}"

    def _where(self) -> str:
        return f"{self._record.label} (model {self.name} at {self.url})"


def _calls(listed) -> tuple:
    """ToolCalls from the tool_calls of a whole message: {id, function: {name, arguments}}; whatever a call lacks
    is left for the loop to refuse, as a result the model reads (models.native_calls)."""
    functions = [call.get("function") if isinstance(call.get("function"), dict) else {} for call in listed]
    return native_calls((call.get("id"), function.get("name"),
                         "" if function.get("arguments") is None else function["arguments"])  # none: no arguments
                        for call, function in zip(listed, functions))


def _join_call(calls: list, delta: dict) -> None:
    """One streamed tool_calls delta joined into the calls so far. A delta continues the last call made at its index
    (the first piece brings the id and the name, the later ones pieces of the arguments), unless it brings another id
    or another name: then it is a new call (Ollama streams every call at index 0, each with its own id: ollama/ollama
    #15457). A delta with no index continues the last call. A name sent again whole is not appended. Arguments come
    as text pieces, or whole as an object (as Ollama sends them); a mix of the two is malformed."""
    index = delta.get("index")
    if index is not None and (type(index) is not int or index < 0):  # past MAX_CALLS_READ calls, dropped below
        raise wire.Malformed(f"a tool call delta with index {str(index)[:20]!r}")
    given = delta.get("id") if isinstance(delta.get("id"), str) and delta.get("id") else None
    function = delta.get("function") if isinstance(delta.get("function"), dict) else {}
    name = function.get("name") if isinstance(function.get("name"), str) and function.get("name") else None
    last = next((call for call in reversed(calls) if index is None or call["index"] == index), None)
    if last is None or (given and last["id"] not in (None, given)) or (name and last["name"] not in ("", name)):
        if len(calls) >= MAX_CALLS_READ:
            return  # past the calls read from one reply
        last = {"index": index if index is not None else len(calls), "id": None, "name": "", "arguments": ""}
        calls.append(last)
    last["id"] = given or last["id"]
    last["name"] = name or last["name"]
    piece = function.get("arguments")
    if isinstance(piece, str) and isinstance(last["arguments"], str):
        last["arguments"] += piece
    elif piece is not None and not isinstance(piece, str) and last["arguments"] == "":
        last["arguments"] = piece  # an object (or any JSON value) sent whole
    elif piece is not None:
        raise wire.Malformed("a tool call whose arguments came both as text and as an object")


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


def _error_body(response) -> bytes:
    """The start of an error's body (at most MAX_ERROR_BYTES, as decoded), read once: an error is a few lines."""
    if not hasattr(response, "error_body"):
        came = []
        try:  # no reading on once the caller gave up
            came.extend(wire.body_chunks(response, MAX_ERROR_BYTES, retry.abandoned))
        except Exception:  # the body could not be read, or not all of it, or it is longer: what came is the message
            pass
        response.error_body = b"".join(came)
        response.close()
    return response.error_body


def refused_field(param, message: str, dropped=()) -> str | None:
    """`stop` or `temperature` when a 400's error names it as what the model does not take (its `param`, or the
    field quoted in its message), and it is not left out already; None otherwise."""
    return next((field for field in refused_fields(param, message) if field not in dropped), None)


def refused_fields(param, message: str) -> tuple[str, ...]:
    """Each of `stop` and `temperature` a 400's error names, in that order."""
    return tuple(field for field in ("stop", "temperature")
                 if param == field or f"'{field}'" in message or f"`{field}`" in message)


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
