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

    def generate(self, messages: list[Message], stop: list[str]) -> ModelReply: ...


class ModelError(Exception):
    """The model could not answer: network failure, server error, retries used up."""


class ModelConfigError(ModelError):
    """The model cannot be used as configured: a missing or rejected key, an unknown model name."""


DEFAULT_MODEL = "gemini-flash-latest"


def load_model(name: str | None = None) -> Model:
    """The backend for a model name (default: GEMINI_MODEL, then gemini-flash-latest)."""
    from models.gemini import GeminiModel

    return GeminiModel(name)
