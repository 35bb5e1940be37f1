"""Gemini through the official google-genai SDK, configured by model family.

Configuration, each a constructor argument or else an environment variable (also read from `.env`):
GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_MODEL, GEMINI_THINKING (none, minimal, low, medium, high, or a
token budget), GEMINI_TEMPERATURE, GEMINI_MAX_OUTPUT_TOKENS (default 8192), TINYREACT_CALL_DEADLINE, and
the SDK's own GOOGLE_GEMINI_BASE_URL for a proxy or a test server.

What a model accepts depends on its family (FAMILIES below): Gemini 3 and later take a thinking level,
2.5 models a thinking budget. If the API still rejects the thinking setting or the temperature (400 naming
it), the call is repeated once without that field, and a `config_fallback` event says so.

In the native protocol the tools go as function declarations (their JSON Schema as `parametersJsonSchema`); how
calls are read and the conversation is sent back is models/services/gemini_native.py.

The SDK's own retries are off: models/services/retry.py retries, waits what the server asks, and bounds the call by
the deadline. Redirects are not followed, so the key is never sent to a host other than the configured one.
"""
import json
import os
import re
import warnings
from dataclasses import replace

import settings
from models import (COUNTED_LOCALLY, DEFAULT_MODEL, Message, ModelConfigError, ModelError, ModelReply, gemini_key,
                    parse_spec, shortened, within_limit)
from models.services import checked_url, retry, wire
from models.services.gemini_http import Unread, bound_by_deadline, read_until_abandoned
from models.services.gemini_native import calls_of, native_contents
from models.services.keys import check_key, redact
from models.streaming import StreamCut
from redaction import shown_url

API_VERSION = "v1beta"  # the -latest aliases are served on v1beta
PUBLIC_URL = "https://generativelanguage.googleapis.com"
MAX_OUTPUT_TOKENS = 8192  # thinking tokens count against it too: 2048 left thinking models with no text
# the most GEMINI_MAX_OUTPUT_TOKENS takes: the request's field is an int32 (googleapis,
# google/ai/generativelanguage/v1beta, GenerationConfig.max_output_tokens); a model refuses more than its own limit
OUTPUT_TOKENS_FIELD = 2**31 - 1
THINKING_LEVELS = ("minimal", "low", "medium", "high")

# What each family accepts, first match wins: (name pattern, thinking setting, send temperature 0 by default).
# - Gemini 3 and later take `thinkingLevel`; LOW is the lowest level every 3.x Flash, Flash-Lite and Pro takes
#   (MINIMAL is Flash-only and refused by newer Flash), and Google advises leaving temperature at its default
#   for them: https://ai.google.dev/gemini-api/docs/gemini-3 and https://ai.google.dev/gemini-api/docs/thinking
# - Gemini 2.5 takes `thinkingBudget` instead and rejects thinkingLevel. 0 turns thinking off on 2.5 Flash and
#   Flash-Lite; 2.5 Pro cannot turn it off and takes 128 to 32768, so 128: https://ai.google.dev/gemini-api/docs/thinking
# - The -latest aliases point at the newest Flash / Pro, Gemini 3 or later today.
FAMILIES = [
    (re.compile(r"(models/)?gemini-([3-9]|\d\d)|.*-latest$"), ("level", "LOW"), False),
    (re.compile(r"(models/)?gemini-2\.5-flash"), ("budget", 0), True),
    (re.compile(r"(models/)?gemini-2\.5-pro"), ("budget", 128), True),
]
UNKNOWN_FAMILY = (None, True)  # no thinking field, temperature 0 as before families existed

# Names Google has retired, each with the day it did and the model that answers it since: requests to them keep
# answering, from that model, at its prices and under its request rules. As of 2026-12-02, from the Gemini API
# deprecations page (https://ai.google.dev/gemini-api/docs/deprecations, read 2026-11-10 as quoted in "What to Do
# Before Gemini 2.5 Pro and 2.5 Flash Are Retired on December 1, 2026", dev.to/aideprecations): "requests to
# gemini-2.5-pro are automatically routed to gemini-3.8-flash and requests to gemini-2.5-flash to
# gemini-3.5-flash-lite, billed at the new model's rates"; gemini-2.5-flash-lite "is not deprecated and remains
# available through the API until further notice". A new retirement is one line here.
RETIRED = {
    "gemini-2.5-pro": ("2026-12-01", "gemini-3.8-flash"),
    "gemini-2.5-flash": ("2026-12-01", "gemini-3.5-flash-lite"),
}

# A 400 naming one of these fields is answered by sending the request again without it, once.
FALLBACK_FIELDS = {"thinking": (re.compile(r"thinking", re.I), "GEMINI_THINKING"),
                   "temperature": (re.compile(r"temperature", re.I), "GEMINI_TEMPERATURE")}

# finishReason values, https://ai.google.dev/api/generate-content#FinishReason, in the backend-neutral words
# of ModelReply.finish.
FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "RECITATION": "content_filter",
          "LANGUAGE": "content_filter",  # "flagged for using an unsupported language"
          "BLOCKLIST": "content_filter", "PROHIBITED_CONTENT": "content_filter", "SPII": "content_filter",
          "IMAGE_SAFETY": "content_filter"}


def answered_by(name: str) -> str:
    """The model that answers a name: itself, or for a retired name the one Google routes it to (RETIRED)."""
    retired = RETIRED.get(name.removeprefix("models/"))
    return retired[1] if retired else name


def retirement_notice(name: str) -> str | None:
    """One line saying a name is retired, since when and what answers it; None for a current name."""
    retired = RETIRED.get(name.removeprefix("models/"))
    if retired is None:
        return None
    day, successor = retired
    return (f"{name} was retired on {day}: Google answers it with {successor}, at that model's prices and request "
            f"rules, which are sent; name a current model (--model gemini:{successor}, say) to choose one yourself")


def family(name: str) -> tuple[tuple[str, object] | None, bool]:
    """(thinking setting, whether to send temperature 0) for a model name."""
    for pattern, thinking, temperature in FAMILIES:
        if pattern.match(name):
            return thinking, temperature
    return UNKNOWN_FAMILY


def parse_thinking(value: str) -> tuple[str, object] | None:
    """GEMINI_THINKING: none, minimal, low, medium, high, or a token budget (an integer, -1 for dynamic)."""
    text = value.strip().lower()
    if text == "none":
        return None
    if text in THINKING_LEVELS:
        return ("level", text.upper())
    if re.fullmatch(r"-1|\d{1,9}", text):  # the API's budgets are far below a billion
        return ("budget", int(text))
    raise ModelConfigError(f"GEMINI_THINKING must be none, {', '.join(THINKING_LEVELS)} or a token budget "
                           f"(an integer, -1 for dynamic), got {settings.quoted(value)}")


def parse_temperature(value: str) -> float:
    """GEMINI_TEMPERATURE: a number from 0 to 2, the range the API takes."""
    try:
        return settings.number("GEMINI_TEMPERATURE", value, 0, 2)
    except ValueError as problem:
        raise ModelConfigError(str(problem)) from None


def parse_max_output_tokens(value: str) -> int:
    """GEMINI_MAX_OUTPUT_TOKENS: a whole number from 1 to what the request's field holds (OUTPUT_TOKENS_FIELD)."""
    try:
        return settings.number("GEMINI_MAX_OUTPUT_TOKENS", value, 1, OUTPUT_TOKENS_FIELD, whole=True)
    except ValueError as problem:
        raise ModelConfigError(str(problem)) from None


def make(backend: str, name: str, progress=None) -> "GeminiModel":
    """The `gemini:` backend's model (see models.BACKENDS)."""
    return GeminiModel(name)


class GeminiModel:
    backend = "gemini"
    usage_source = "billed, from the API"
    # Every Gemini 2.5 and 3 model takes 1,048,576 input tokens: https://ai.google.dev/gemini-api/docs/models
    window = 1_048_576

    def __init__(self, name: str | None = None, api_key: str | None = None, temperature: float | None = None,
                 thinking: str | None = None, max_output_tokens: int | None = None):
        self.name = name or os.environ.get("GEMINI_MODEL") or DEFAULT_MODEL
        raw_key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or ""
        if not raw_key.strip():
            raise ModelConfigError("no Gemini API key: set GEMINI_API_KEY in the environment or in .env "
                                   "(see .env.example)")
        from_google = not api_key and not os.environ.get("GEMINI_API_KEY")
        self._api_key = check_key(raw_key, "GOOGLE_API_KEY" if from_google else "GEMINI_API_KEY")
        base = (os.environ.get("GOOGLE_GEMINI_BASE_URL") or "").strip() or PUBLIC_URL
        self._request_url = checked_url("GOOGLE_GEMINI_BASE_URL", base).rstrip("/")
        self.url = shown_url(self._request_url)  # as shown: without a user and password (redaction.py)
        default_thinking, sends_temperature = family(answered_by(self.name))
        self._notice = retirement_notice(self.name)  # said once, on the first call, so that the trace holds it too
        thinking = thinking if thinking is not None else os.environ.get("GEMINI_THINKING")
        self.thinking = parse_thinking(thinking) if thinking else default_thinking
        if temperature is None and os.environ.get("GEMINI_TEMPERATURE", "").strip():
            temperature = parse_temperature(os.environ["GEMINI_TEMPERATURE"])
        elif temperature is not None:
            temperature = parse_temperature(str(temperature))
        self.temperature = temperature if temperature is not None else (0.0 if sends_temperature else None)
        if max_output_tokens is None and os.environ.get("GEMINI_MAX_OUTPUT_TOKENS", "").strip():
            max_output_tokens = parse_max_output_tokens(os.environ["GEMINI_MAX_OUTPUT_TOKENS"])
        self.max_output_tokens = max_output_tokens or MAX_OUTPUT_TOKENS
        retry.call_deadline()  # an invalid TINYREACT_CALL_DEADLINE is refused now, not at the first question
        self.dropped: set[str] = set()  # fields the API refused for this model and that are no longer sent
        self._client = None
        self._connect()  # the SDK takes most of a second to import: now, while a first run's vocabulary is read

    def __repr__(self) -> str:  # never show the key
        return f"GeminiModel({self.name!r})"

    native_tools = True  # the native protocol: function declarations, functionCall and functionResponse parts

    def generate(self, messages: list[Message], stop: list[str], *, on_text=None, on_event=None,
                 tools: list[dict] | None = None) -> ModelReply:
        """One reply; streamed through `on_text` when it is given. Retries, waits and the deadline:
        models/services/retry.py."""
        if self._notice and on_event is not None:
            on_event("warning", message=self._notice)
            self._notice = None
        system, contents = _system(messages), _contents(messages, tools)

        def attempt(channel: retry.Channel) -> ModelReply:
            while True:
                config = self._config(system, stop, tools)
                try:
                    if on_text is None:
                        response = self._connect().models.generate_content(model=self.name, contents=contents,
                                                                           config=config)
                        reply = self._reply(response)
                    else:
                        reply = self._stream(contents, config, stop, channel)
                    return replace(reply, temperature=config.temperature, model=reply.model or answered_by(self.name))
                except Exception as error:
                    field = self._refused_field(error)
                    if field is None:
                        raise self._explain(error) from None
                    self.dropped.add(field)
                    channel.event("config_fallback", backend=self.backend, model=self.name, field=field,
                                  variable=FALLBACK_FIELDS[field][1], message=self._message(error))

        return retry.run(attempt, backend=self.backend, where=f"model {self.name} at {self.url}",
                         on_text=on_text, on_event=on_event)

    def batch_body(self, messages: list[Message], stop: list[str], planned: bool = False) -> dict:
        """What a call of `messages` sends, as JSON: its contents and its config, as `generate` builds them; what
        one request of a batch carries (models/services/gemini_batch.py). `planned`: with the settings the server
        refused too (what names the call in a batch's ledger)."""
        dump = lambda value: value.model_dump(mode="json", exclude_none=True)  # noqa: E731
        config = self._config(_system(messages), stop, dropped=set() if planned else self.dropped)
        return {"contents": [dump(content) for content in _contents(messages, None)], "config": dump(config)}

    def reply_of(self, answer: dict) -> ModelReply:
        """A GenerateContentResponse that came back in a batch (as JSON), read as a call's reply is read."""
        from google.genai import types

        reply = self._reply(types.GenerateContentResponse.model_validate(answer))
        return replace(reply, temperature=self.temperature if "temperature" not in self.dropped else None,
                       model=reply.model or answered_by(self.name))

    def client(self):
        """The google-genai client every call goes through: for its batches."""
        return self._connect()

    def explained(self, error: Exception) -> Exception:
        """A failure of the client as the user should read it, as a call's is (for its batches' requests)."""
        return self._explain(error)

    def _config(self, system: str | None, stop: list[str], tools: list[dict] | None = None, dropped=None):
        """The call's config, without the settings in `dropped` (by default, those the server refused)."""
        from google.genai import types

        dropped = self.dropped if dropped is None else dropped
        thinking = None
        if self.thinking and "thinking" not in dropped:
            kind, value = self.thinking
            thinking = (types.ThinkingConfig(thinking_level=value) if kind == "level"
                        else types.ThinkingConfig(thinking_budget=value))
        return types.GenerateContentConfig(
            system_instruction=system,
            temperature=None if "temperature" in dropped else self.temperature,
            stop_sequences=stop[:5] or None,  # the API takes at most five
            max_output_tokens=self.max_output_tokens,
            thinking_config=thinking,
            tools=[types.Tool(function_declarations=[
                types.FunctionDeclaration(name=schema["name"], description=schema["description"],
                                          parameters_json_schema=schema["parameters"]) for schema in tools])]
            if tools else None,
        )

    def _stream(self, contents, config, stop: list[str], channel: retry.Channel) -> ModelReply:
        """generateContent as server-sent events, cut as models/streaming.py says; usage from the last chunk."""
        cut = StreamCut(stop, channel.text, lambda text: channel.event("reasoning", backend=self.backend, text=text))
        last = finish = None
        kept = []  # every part as it came, for a reply that makes calls
        chunks = self._connect().models.generate_content_stream(model=self.name, contents=contents, config=config)
        try:
            for chunk in chunks:
                last = chunk if chunk.usage_metadata else last
                candidate = chunk.candidates[0] if chunk.candidates else None
                if candidate is None:
                    if chunk.prompt_feedback and chunk.prompt_feedback.block_reason:
                        return _reply(chunk)  # the prompt was blocked: no text will come
                    continue
                finish = candidate.finish_reason or finish
                for part in (candidate.content.parts if candidate.content and candidate.content.parts else []):
                    kept.append(part)
                    if part.text and part.thought:
                        channel.event("reasoning", backend=self.backend, text=part.text)
                    elif part.text and cut.feed(part.text):
                        break
                # A finish reason ends the reply (its chunk carries the usage): a server that then keeps the stream
                # open is not waited on until the deadline
                if cut.done or retry.abandoned() or candidate.finish_reason:
                    break
        finally:
            chunks.close()  # at the cut or the finish: the rest of the stream is not read
        text = cut.finish()
        counts = _counts(last.usage_metadata if last else None)
        finish_word = FINISH.get(getattr(finish, "value", finish)) if finish else None
        blocked = (None if text or finish_word in (None, "stop", "length")
                   else f"finish reason {getattr(finish, 'value', finish)}")
        calls, native = calls_of(kept)
        blocked = None if calls else blocked
        return ModelReply(text, finish=cut.ending(finish_word), blocked=blocked, calls=calls, native=native,
                          model=last.model_version if last else None, **counts)

    def _connect(self):
        if self._client is None:
            from google import genai
            from google.genai import types

            # A finishReason newer than the SDK warns, naming a file in site-packages; the reply is read as finished.
            warnings.filterwarnings("ignore", message=r".* is not a valid ", category=UserWarning,
                                    module=r"google\.genai")
            options = types.HttpOptions(
                base_url=self._request_url, api_version=API_VERSION,
                headers={"Accept-Encoding": "gzip, deflate"},  # the encodings read_until_abandoned decodes
                timeout=int(retry.DEFAULT_DEADLINE * 1000),  # per read; the call deadline is enforced around it
                retry_options=None,  # no SDK retries: models/services/retry.py owns them
                client_args={"follow_redirects": False,
                             "event_hooks": {"request": [bound_by_deadline], "response": [read_until_abandoned]}},
            )
            self._client = genai.Client(api_key=self._api_key, vertexai=False, http_options=options)
        return self._client

    def _reply(self, response) -> ModelReply:
        if not response.candidates and not (response.prompt_feedback and response.prompt_feedback.block_reason):
            raise ModelError(f"Gemini (model {self.name} at {self.url}) answered 200 with no candidates and no block "
                             "reason: an empty response, not a refusal")
        return _reply(response)

    def _refused_field(self, error: Exception) -> str | None:
        """The field a 400 names, if it is one that can be left out and has not been left out yet."""
        from google.genai import errors

        if not isinstance(error, errors.ClientError) or error.code != 400:
            return None
        return next((field for field in self.refused_settings(self._message(error)) if field not in self.dropped),
                    None)

    def refused_settings(self, message: str) -> tuple[str, ...]:
        """Each of `thinking` and `temperature` an invalid-argument error's message names and this model sets; a
        batch's failed request is read so too (models/services/gemini_batch.py)."""
        return tuple(field for field, (pattern, _) in FALLBACK_FIELDS.items()
                     if (self.thinking if field == "thinking" else self.temperature) is not None
                     and pattern.search(message))

    def _message(self, error: Exception) -> str:
        return shortened(redact(str(getattr(error, "message", None) or error), self._api_key))

    def _explain(self, error: Exception) -> Exception:
        """The failure as the user should read it: ModelConfigError, ModelError, or Retryable for
        models/services/retry.py."""
        import httpx2
        import pydantic
        from google.genai import errors

        where = f"model {self.name} at {self.url}"
        if isinstance(error, (ModelError, retry.Retryable)):
            return error
        if isinstance(error, Unread):
            return ModelError(f"Gemini ({where}) {error}")
        if isinstance(error, pydantic.ValidationError):  # the SDK checks each field's type: one of them was wrong
            first = error.errors()[0] if error.errors() else {}
            field = ".".join(str(part) for part in first.get("loc", ())) or "a field"
            return ModelError(f"Gemini ({where}) sent a malformed reply: {shortened(field)[:80]}: "
                              f"{shortened(first.get('msg', 'of the wrong type'))[:120]}")
        if isinstance(error, errors.APIError):
            message, code, status = self._message(error), error.code, error.status or ""
            headers = error.response.headers if error.response is not None else {}
            if 300 <= code < 400:
                return ModelConfigError(
                    f"Gemini at {self.url} answered {code}, redirecting to "
                    f"{shortened(redact(headers.get('location', 'an unnamed place'), self._api_key))}: not followed, "
                    "so the key stays with the configured host; check GOOGLE_GEMINI_BASE_URL")
            if code in (401, 403) or (code == 400 and "api key" in message.lower()):
                return ModelConfigError(f"Gemini rejected the API key ({code} at {self.url}): check GEMINI_API_KEY. "
                                        f"{message}")
            if code == 404:
                return ModelConfigError(f"Gemini has no model {self.name!r} at {self.url} ({message}): "
                                        "check --model, TINYREACT_MODEL or GEMINI_MODEL")
            if code == 429 and _daily_quota(error.details):
                return ModelError(f"Gemini ({where}): the daily quota is used up ({_daily_quota(error.details)}); "
                                  f"it is not retried — try again tomorrow or use another model. {message}")
            if code in retry.RETRY_STATUSES:
                return retry.Retryable(code, status, message, _server_wait(error.details, headers))
            if code == 400 and self.dropped:
                variables = " or ".join(FALLBACK_FIELDS[field][1] for field in sorted(self.dropped))
                return ModelConfigError(f"Gemini ({where}) still refuses the request after leaving out "
                                        f"{', '.join(sorted(self.dropped))}: {message} — set {variables}, or choose "
                                        "another model with --model")
            return ModelError(f"Gemini ({where}) answered {code} {status}: {message}")
        if isinstance(error, json.JSONDecodeError):  # the SDK parses a 200 body with json.loads
            return ModelError(f"Gemini ({where}) answered 200 with a body that is not JSON: "
                              f"{redact(error.doc[:80], self._api_key)!r} — is GOOGLE_GEMINI_BASE_URL a Gemini API?")
        if isinstance(error, errors.UnknownApiResponseError):  # the same, in a stream
            return ModelError(f"Gemini ({where}) sent a stream event that is not JSON: {self._message(error)[:120]}")
        if isinstance(error, httpx2.TransportError):
            reason = "connection refused" if isinstance(error, httpx2.ConnectError) else "connection failed"
            return retry.Retryable(None, reason, self._message(error) or type(error).__name__)
        return ModelError(f"Gemini ({where}) failed: {type(error).__name__}: {self._message(error)}")


def _daily_quota(details) -> str | None:
    """The quota id of a per-day quota in a 429's QuotaFailure detail,
    e.g. GenerateRequestsPerDayPerProjectPerModel-FreeTier.
    Such a quota comes back the next day, not in seconds: https://ai.google.dev/gemini-api/docs/rate-limits"""
    for detail in _details(details):
        if detail.get("@type", "").endswith("google.rpc.QuotaFailure"):
            for violation in detail.get("violations") or []:
                quota = str(violation.get("quotaId", ""))
                if "PerDay" in quota:
                    return quota
    return None


def _server_wait(details, headers) -> float | None:
    """Seconds the server asks to wait: google.rpc.RetryInfo's retryDelay (a protobuf Duration such as "37s",
    https://cloud.google.com/apis/design/errors#retryinfo), else an HTTP Retry-After header."""
    for detail in _details(details):
        if detail.get("@type", "").endswith("google.rpc.RetryInfo"):
            delay = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", str(detail.get("retryDelay", "")))
            if delay:
                return float(delay.group(1))
    return retry.retry_after(headers.get("retry-after"))


def _details(details) -> list[dict]:
    error = details.get("error", details) if isinstance(details, dict) else {}
    found = error.get("details") if isinstance(error, dict) else None
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def _system(messages: list[Message]) -> str | None:
    """The system messages, as the system instruction."""
    return "\n\n".join(m.text for m in messages if m.role == "system") or None


def _contents(messages: list[Message], tools: list[dict] | None) -> list:
    """The other messages as Contents: in the native protocol's shape when tools are offered."""
    from google.genai import types

    return native_contents(messages) if tools else \
        [types.Content(role=m.role, parts=[types.Part(text=m.text)]) for m in messages if m.role != "system"]


def _counts(usage) -> dict:
    """The usage of a reply. promptTokenCount includes cachedContentTokenCount, the part of the prompt served from
    the implicit prefix cache (on by default from Gemini 2.5: https://ai.google.dev/gemini-api/docs/caching);
    thoughtsTokenCount is apart from candidatesTokenCount. With no usage, or no prompt count, or counts that are
    not counts or cannot be true, the loop counts the reply itself, and says so."""
    if usage is None or usage.prompt_token_count is None:
        return dict(usage_source=COUNTED_LOCALLY)
    counts = {"input": usage.prompt_token_count, "output": usage.candidates_token_count or 0,
              "thoughts": usage.thoughts_token_count or 0, "cached": usage.cached_content_token_count or 0}
    if min(counts.values()) < 0 or wire.impossible_usage(counts | {"output": counts["output"] + counts["thoughts"]}):
        return dict(usage_source=COUNTED_LOCALLY)
    return dict(input_tokens=counts["input"], output_tokens=counts["output"] + counts["thoughts"],
                thoughts_tokens=counts["thoughts"], cached_tokens=counts["cached"])


def _reply(response) -> ModelReply:
    """Text, usage and how the reply ended, from a GenerateContentResponse; no text and a reason when blocked."""
    counts = _counts(response.usage_metadata)
    if not response.candidates:
        reason = response.prompt_feedback.block_reason  # GeminiModel._reply makes sure there is one
        return ModelReply("", blocked=f"prompt blocked: {getattr(reason, 'value', reason)}", finish="blocked", **counts)
    candidate = response.candidates[0]
    parts = candidate.content.parts if candidate.content and candidate.content.parts else []
    text = "".join(part.text for part in parts if part.text and not part.thought)
    finish = getattr(candidate.finish_reason, "value", candidate.finish_reason)
    calls, native = calls_of(parts)
    blocked = None if text or calls or finish in (None, "STOP", "MAX_TOKENS") else f"finish reason {finish}"
    text, word = within_limit(text, FINISH.get(finish))
    return ModelReply(text, blocked=blocked, finish=word, model=response.model_version, calls=calls, native=native,
                      **counts)


def available(backend: str, probe_seconds: float) -> list[dict]:
    """The row `--models` shows for Gemini: ready when a key is set. The API is not asked: listing costs nothing,
    but a key is all it needs."""
    key = gemini_key()
    return [dict(spec=f"gemini:{_named_by_environment() or DEFAULT_MODEL}", backend=backend, ready=bool(key),
                 why="" if key else "no GEMINI_API_KEY (or GOOGLE_API_KEY) set")]


def _named_by_environment() -> str | None:
    """The Gemini model GEMINI_MODEL names, or None when it names another backend's (or no) model."""
    spec = os.environ.get("GEMINI_MODEL")
    try:
        backend, name = parse_spec(spec) if spec and spec.strip() else (None, None)
    except ModelConfigError:
        return None
    return name if backend == "gemini" else None
