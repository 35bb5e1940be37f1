"""Model backends. A model is one method: `generate(messages, stop) -> ModelReply`.

Messages are rendered by a context policy from the trace: an optional `system` message with the
instructions, then alternating `user` and `model` messages. `load_model` turns a name into a backend
and imports the heavy SDKs only then.
"""
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Part:
    """A labelled piece of a message, so the context can be shown and counted by kind."""
    kind: str  # instructions, question, reply, observation, notes, summary, placeholder, request
    text: str


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
    input_tokens: int = 0
    output_tokens: int = 0  # includes thinking tokens: they are billed as output
    thoughts_tokens: int = 0
    blocked: str | None = None  # why the backend returned no text (a safety block, say)


class Model(Protocol):
    name: str
    usage_source: str  # where ModelReply's token counts come from, said next to them

    def generate(self, messages: list[Message], stop: list[str]) -> ModelReply: ...


class ModelError(Exception):
    """The model could not answer: network failure, server error, retries used up."""


class ModelConfigError(ModelError):
    """The model cannot be used as configured: a missing or rejected key, an unknown model name."""


class ContextOverflow(ModelError):
    """The prompt is longer than the local model's context window, so it was not run."""


DEFAULT_MODEL = "gemini-flash-latest"
OFFLINE_MODEL = "local:qwen2.5-coder-0.5b"
OFFLINE_NOTICE = ("no GEMINI_API_KEY: using the offline Qwen2.5-Coder 0.5B model — small, expect mistakes; "
                  "see README to use Gemini")
LOCAL_MODELS = {"local:qwen2.5-coder-0.5b": ("models.qwen", "QwenModel"),
                "local:gemma-270m": ("models.gemma", "GemmaModel"), "gemma-3-270m": ("models.gemma", "GemmaModel")}


def load_model(name: str | None = None, progress=lambda text: None, notice=lambda text: None) -> Model:
    """The backend for a model name: the names in LOCAL_MODELS run locally; any other name is a Gemini model.
    With no name and no GEMINI_MODEL, Gemini when a key is set, else the offline model (said through `notice`)."""
    import os

    name = name or os.environ.get("GEMINI_MODEL")
    if name is None and not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or "").strip():
        notice(OFFLINE_NOTICE)
        name = OFFLINE_MODEL
    if name in LOCAL_MODELS:
        import importlib
        module, backend = LOCAL_MODELS[name]
        return getattr(importlib.import_module(module), backend)(progress)
    from models.gemini import GeminiModel
    return GeminiModel(name)
