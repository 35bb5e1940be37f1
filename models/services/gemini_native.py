"""Gemini's function calling, the native protocol's wire shape for it: a reply's calls read from its parts, and the
conversation sent back as contents.

The model's parts are kept as they came, as JSON in the trace, and sent back unchanged: Gemini 3 refuses a history
whose function calls lack the `thoughtSignature` they came with (https://ai.google.dev/gemini-api/docs/thought-
signatures). A reply recorded with another service has no such parts: its calls are rebuilt from the trace.
"""
import json

from models import Message, native_calls


def calls_of(parts) -> tuple[tuple, str | None]:
    """A reply's functionCall parts as ToolCalls, and, when it made any, all its parts as they came (as JSON), to
    be sent back unchanged with their thought signatures."""
    called = [part.function_call for part in parts if part.function_call]
    calls = native_calls((call.id, call.name, call.args or {}) for call in called)
    if not calls:
        return (), None
    if len(called) > len(calls):  # past the calls read from one reply: the reply is not sent back as it came
        return calls, None
    kept = [part for part in parts if part.text != "" or part.thought_signature]  # not a stream's empty pieces
    return calls, json.dumps([part.model_dump(mode="json", exclude_none=True) for part in kept])


def native_contents(messages: list[Message]) -> list:
    """The conversation as Gemini contents in the native protocol: a reply that made calls is its own parts as they
    came (thought signatures included), or, from a trace made with another service, its text and functionCall
    parts; each result a functionResponse part answering its call (with the call's id when the service gave
    one); everything else text."""
    from google.genai import types

    contents, service_ids = [], set()
    for message in messages:
        if message.role == "system":
            continue
        parts = []
        for part in message.parts:
            if part.native:
                came = [types.Part.model_validate(each) for each in json.loads(part.native)]
                service_ids |= {each.function_call.id for each in came if each.function_call and each.function_call.id}
                parts += came
            elif part.calls:
                parts += [types.Part(text=part.sent)] if part.sent else []
                parts += [types.Part(function_call=types.FunctionCall(name=call.name, args=_object(call.arguments)))
                          for call in part.calls]
            elif part.call is not None:
                parts.append(types.Part(function_response=types.FunctionResponse(
                    name=part.call.name, response={"result": part.sent},
                    id=part.call.id if part.call.id in service_ids else None)))
            elif part.sent:  # an empty text part is refused ("Unable to submit request because it has an empty text
                # parameter", google-gemini/deprecated-generative-ai-python#727)
                parts.append(types.Part(text=part.sent))
        contents.append(types.Content(role=message.role, parts=parts or [types.Part(text="(empty reply)")]))
    return contents


def _object(arguments: str) -> dict:
    """A call's JSON arguments as the object Gemini's functionCall holds; arguments that are not one, under a key."""
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"arguments": arguments}
