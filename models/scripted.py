"""A model that replies from a script: for tests, and for showing the loop without a network.

It records every message list it is sent, so a test can assert on exactly what the model saw, and it
fails loudly when it is called more often than the script allows.
"""
from models import Message, ModelReply


class ScriptExhausted(AssertionError):
    """The loop called the scripted model more times than it has replies."""


class ScriptedModel:
    name = "scripted"
    usage_source = "scripted: about 4 characters a token"

    def __init__(self, replies: list[str | ModelReply]):
        self.replies = list(replies)
        self.calls: list[list[Message]] = []
        self.stops: list[list[str]] = []

    def generate(self, messages: list[Message], stop: list[str]) -> ModelReply:
        self.calls.append(list(messages))
        self.stops.append(list(stop))
        if len(self.calls) > len(self.replies):
            raise ScriptExhausted(f"scripted model called {len(self.calls)} times, but it has {len(self.replies)} replies")
        reply = self.replies[len(self.calls) - 1]
        if isinstance(reply, ModelReply):
            return reply
        # Without real usage numbers, count about four characters a token.
        sent = sum(len(message.text) for message in messages)
        return ModelReply(reply, input_tokens=(sent + 3) // 4, output_tokens=(len(reply) + 3) // 4)

    @property
    def unused(self) -> list[str | ModelReply]:
        return self.replies[len(self.calls):]
