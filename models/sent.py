"""What a model call sent, as a SHA-256: its tool schemas (JSON text, "" for none), then its messages,
each with its role and every field of each part, written after its length so that no two contexts
are written alike. The loop records it with each context event (agent.py); a reader that rebuilds an
older call's context checks the rebuilt one against it (views/reading.py). `Digests` makes the same
digest for each call of one run at a fraction of the cost: a context repeats the start of the one
before, and the hash of that start is kept."""
import hashlib
import json
from operator import is_

from models import Message


class Digests:
    """sent_digest, call after call: the hash state after the schemas and after each message is
    kept, and a context that begins with the same Message objects (a policy that reuses them, as
    full history does) goes on from there."""

    def __init__(self):
        self.schemas, self.base = None, None
        self.messages: list[Message] = []
        self.states: list = []

    def __call__(self, messages: list[Message], schemas: str = "") -> str:
        if schemas != self.schemas:
            self.schemas, self.base = schemas, _started(schemas)
            self.messages, self.states = [], []
        old = self.messages
        if messages[:len(old)] == old:  # all of them again (the very objects, or their equals)
            same = len(old)
        else:
            kept = list(map(is_, old, messages))  # which messages are the very ones before
            same = kept.index(False) if False in kept else len(kept)
            del self.states[same:]
        state = self.states[-1] if self.states else self.base
        for message in messages[same:]:
            state = state.copy()  # the one before is kept as it is, for a context that goes back
            state.update(_written(message))
            self.states.append(state)
        self.messages = list(messages)
        return state.hexdigest()


def sent_digest(messages: list[Message], schemas: str = "") -> str:
    """The digest of one call, made whole."""
    state = _started(schemas)
    for message in messages:
        state.update(_written(message))
    return state.hexdigest()


def _started(schemas: str):
    return hashlib.sha256(f"{len(schemas)}:{schemas}".encode("utf-8", "surrogatepass"))


def _written(message: Message) -> bytes:
    """A message as the digest reads it: its role and its parts, each field after its length (`-;`
    for none); a part's tool calls, when it has any, as JSON."""
    written = [f"{len(message.role)}:{message.role}{len(message.parts)};"]
    for part in message.parts:
        calls = json.dumps([part.calls, part.call]) if part.calls or part.call else None
        for field in (part.kind, part.text, part.said, part.native, calls):
            written.append("-;" if field is None else f"{len(field)}:{field}")
    return "".join(written).encode("utf-8", "surrogatepass")


