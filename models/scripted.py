"""A model that replies from a script: for tests, and for showing the loop without a network.

It records every message list it is sent, so a test can assert on exactly what the model saw, and it
fails loudly when it is called more often than the script allows. Given `on_text`, it streams a reply
a few characters at a time through the same cut as the network backends (models/streaming.py).
"""
import dataclasses

from models import Message, ModelReply
from models.streaming import StreamCut

STREAM_PIECE = 4  # characters per streamed piece


class ScriptExhausted(AssertionError):
    """The loop called the scripted model more times than it has replies."""


class ScriptedModel:
    name = "scripted"
    backend = "scripted"
    usage_source = "scripted: about 4 characters a token"
    temperature = None  # it samples nothing: it replies from its list
    window = None
    native_tools = True  # a reply may be a ModelReply with calls: the native protocol

    def __init__(self, replies: list[str | ModelReply]):
        self.replies = list(replies)
        self.calls: list[list[Message]] = []
        self.stops: list[list[str]] = []
        self.offered: list[list[dict] | None] = []  # the tool schemas each call was given (native), else None

    def generate(self, messages: list[Message], stop: list[str], *, on_text=None, on_event=None,
                 tools: list[dict] | None = None) -> ModelReply:
        self.calls.append(list(messages))
        self.stops.append(list(stop))
        self.offered.append(tools)
        if len(self.calls) > len(self.replies):
            raise ScriptExhausted(f"scripted model called {len(self.calls)} times, but it has "
                                  f"{len(self.replies)} replies")
        reply = self.replies[len(self.calls) - 1]
        if on_text is not None:
            reply = self._stream(reply, stop, on_text)
        if isinstance(reply, ModelReply):
            return reply
        # Without real usage numbers, count about four characters a token.
        sent = sum(len(message.text) for message in messages)
        return ModelReply(reply, input_tokens=(sent + 3) // 4, output_tokens=(len(reply) + 3) // 4)

    @staticmethod
    def _stream(reply: str | ModelReply, stop: list[str], on_text) -> str | ModelReply:
        """Show the reply piece by piece as a server would stream it; the stream ends at the cut."""
        text = reply.text if isinstance(reply, ModelReply) else reply
        cut = StreamCut(stop, on_text)
        for start in range(0, len(text), STREAM_PIECE):
            if cut.feed(text[start:start + STREAM_PIECE]):
                break
        streamed = cut.finish()
        return dataclasses.replace(reply, text=streamed) if isinstance(reply, ModelReply) else streamed

    @property
    def unused(self) -> list[str | ModelReply]:
        return self.replies[len(self.calls):]
