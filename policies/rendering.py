"""How trace events read as conversation messages; shared by every policy."""
from models import Message


def message_for(event: dict) -> Message | None:
    """How one trace event reads in the conversation, or None for events the model never sees."""
    kind = event["type"]
    if kind == "instructions":
        return Message("system", event["text"])
    if kind == "question":
        return Message("user", f"Question: {event['text']}")
    if kind == "reply":
        return Message("model", event["text"] or "(empty reply)")
    if kind == "observation":
        return Message("user", f"Observation{event['step']}: {event['text']}")
    if kind == "finish":
        return Message("user", event["text"])
    return None


def join_turns(messages: list[Message]) -> list[Message]:
    """Merge neighbouring messages of the same role, since the APIs want user and model turns to alternate."""
    joined: list[Message] = []
    for message in messages:
        if joined and joined[-1].role == message.role:
            joined[-1] = Message(message.role, joined[-1].text + "\n\n" + message.text)
        else:
            joined.append(message)
    return joined
