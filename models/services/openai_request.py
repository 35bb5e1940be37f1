"""The request an OpenAI-compatible client sends to `{base}/chat/completions`: the messages as the server takes them
(plain, or in the native protocol's shape when tools are offered) and the body around them, as
https://platform.openai.com/docs/api-reference/chat/create defines it. The client (openai_compatible.py) sends it;
a batch of calls (openai_batch.py) carries the very same body in each line, so that a call sent either way is the
same call.
"""
from models import Message

MAX_STOPS = 4  # "Up to 4 sequences": https://platform.openai.com/docs/api-reference/chat/create#chat-create-stop
ROLES = {"system": "system", "user": "user", "model": "assistant"}


def plain_chat(messages: list[Message]) -> list[dict]:
    """The messages as plain {role, content} pairs: the text protocol's."""
    return [{"role": ROLES[m.role], "content": m.text} for m in messages]


def request_body(model: str, chat: list[dict], stop: list[str], tools: list[dict] | None, streaming: bool,
                 temperature: float | None, service_tier: str | None = None) -> dict:
    """The body of one chat completion request: the model, the messages, whether to stream, the tools (as
    `{"type": "function", "function": schema}`), the first MAX_STOPS stop sequences, the temperature when one is set,
    the service tier when one is asked for (flex: https://platform.openai.com/docs/guides/flex-processing), and when
    streaming a last chunk with the usage."""
    body = {"model": model, "messages": chat, "stream": streaming}
    if tools:
        body["tools"] = [{"type": "function", "function": schema} for schema in tools]
    if stop:
        body["stop"] = stop[:MAX_STOPS]
    if temperature is not None:
        body["temperature"] = temperature
    if service_tier:
        body["service_tier"] = service_tier
    if streaming:
        body["stream_options"] = {"include_usage": True}  # one last chunk carries the usage
    return body


def native_chat(messages: list[Message], write_call=None, write_result=None) -> list[dict]:
    """The messages in the native protocol's shape: a reply that made calls is an assistant message with its
    `tool_calls` (its text, possibly empty, as content), and each result a `tool` message answering its call, right
    after it; what else a user message holds (a marker, the next question) follows as a user message. A call and a
    result are written as OpenAI's API takes them unless `write_call(call)` and `write_result(call, text)` say
    otherwise (Ollama's /api/chat: models/services/ollama_chat.py)."""
    write_call = write_call or (lambda call: {"id": call.id, "type": "function",
                                              "function": {"name": call.name, "arguments": call.arguments}})
    write_result = write_result or (lambda call, text: {"role": "tool", "tool_call_id": call.id, "content": text})
    chat = []
    for message in messages:
        calls = [call for part in message.parts for call in part.calls]
        if calls:
            said = "\n\n".join(part.sent for part in message.parts if part.sent)
            chat.append({"role": "assistant", "content": said, "tool_calls": [write_call(call) for call in calls]})
            continue
        rest = []
        for part in message.parts:
            if part.call is not None:
                chat.append(write_result(part.call, part.sent))
            else:
                rest.append(part.sent)
        if rest:
            chat.append({"role": ROLES[message.role], "content": "\n\n".join(rest)})
    return chat
