"""What an OpenAI-compatible server sends, read as the standards say and checked before it is used.

- `json_value`: JSON as RFC 8259 defines it, which has no NaN or Infinity (Python's json reads both).
- `EventStream`: server-sent events as the HTML standard parses them
  (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation): a line ends
  in CRLF, LF or CR; the `data:` lines of one event are joined with a newline; a blank line ends the event;
  lines starting with a colon are comments.
- `choices`: the choices of a chat.completion or a chat.completion.chunk
  (https://platform.openai.com/docs/api-reference/chat), each field checked for its type. `content` may be a
  list of parts, as some servers send it ([{"type": "text", "text": "…"}]); the parts that are not text are
  left out.
- `usage_counts`: the usage numbers, when they are counts.
- `body_chunks`: the one reader of a response body: decoded as its Content-Encoding says, bounded in size, and
  read no further once its reader stops waiting (completions, model lists, Ollama's side doors, error bodies).

Anything else raises Malformed, whose message says what was wrong in a few words; the caller names the server.
"""
import codecs
import json
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator

from models import shortened

LINE_BREAK = re.compile(r"\r\n|\r|\n")
MAX_COUNT = 10 ** 12  # more tokens than any call has: a usage number past it is no count


class Malformed(ValueError):
    """What the server sent is not of the shape the API defines."""


class TooLarge(Exception):
    """A body past its limit; what came up to the limit was yielded before it."""


def body_chunks(response, limit: int, stopped: Callable[[], bool]) -> Iterator[bytes]:
    """A `requests` response's body as it arrives, decoded as its Content-Encoding says (gzip, deflate), chunk by
    chunk: once `limit` bytes have come, what reached the limit is yielded and TooLarge raised, with no read more;
    and no read once `stopped()` is true, so a body that drips, or a server that never closes, holds its reader no
    longer than the reader waits. `stopped` may raise instead."""
    size = 0
    while not stopped():
        chunk = response.raw.read1(65536, decode_content=True)
        if not chunk:
            return
        if size + len(chunk) >= limit:  # at the limit: no read more, so a body that never ends holds nobody
            yield chunk[:limit - size]
            raise TooLarge(limit)
        size += len(chunk)
        yield chunk


@dataclass
class Choice:
    """One choice, of a whole completion (its message) or of a streamed chunk (its delta)."""
    content: str = ""
    reasoning: str = ""
    finish: str | None = None
    calls: list = field(default_factory=list)  # its tool_calls (native protocol): objects, or deltas when streamed


def kind(value) -> str:
    """What a JSON value is, in words: for messages that say what came instead of what was expected."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return {dict: "an object", list: "a list", str: "text", int: "a number",
            float: "a number"}.get(type(value), "a value")


def json_value(data: bytes | str):
    """The JSON value of `data`; Malformed when it is not JSON, or uses NaN or Infinity, or nests past Python's
    limit."""
    def refuse(constant: str):
        raise Malformed(f"{constant} where JSON allows only numbers")
    try:
        return json.loads(data, parse_constant=refuse)
    except Malformed:
        raise
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise Malformed("something that is not JSON") from None


def is_json(data: bytes | str) -> bool:
    """Whether `data` is whole JSON (json_value would read it)."""
    try:
        json_value(data)
    except Malformed:
        return False
    return True


def text_of(value, name: str) -> str:
    """A text field: a string, null (no text), or a list of parts whose text parts are joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("type", "text") == "text":
                texts.append(part["text"])
            elif not (isinstance(part, dict) and isinstance(part.get("type"), str)):  # an image, a refusal: not text
                raise Malformed(f"{name} as a list holding {kind(part)}, not text parts")
        return "".join(texts)
    raise Malformed(f"{name} that is {kind(value)}, not text")


def choices(answer, field: str) -> list[Choice]:
    """The choices of a completion (`field` "message") or a chunk (`field` "delta")."""
    if not isinstance(answer, dict):
        raise Malformed(f"{kind(answer)} where a JSON object was expected")
    listed = answer.get("choices")
    if listed is None:
        return []
    if not isinstance(listed, list):
        raise Malformed(f"choices that are {kind(listed)}, not a list")
    return [_choice(choice, field) for choice in listed]


def _choice(choice, field: str) -> Choice:
    if not isinstance(choice, dict):
        raise Malformed(f"a choice that is {kind(choice)}, not an object")
    part = choice.get(field)
    if part is None:
        part = {}
    if not isinstance(part, dict):
        raise Malformed(f"a choice whose {field} is {kind(part)}, not an object")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise Malformed(f"a finish_reason that is {kind(finish)}, not text")
    # llama.cpp and vLLM send reasoning as reasoning_content, Ollama and OpenRouter as reasoning
    reasoning = (text_of(part.get("reasoning_content"), "reasoning_content")
                 or text_of(part.get("reasoning"), "reasoning"))
    calls = part.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls):
        raise Malformed(f"tool_calls that are {kind(calls)}, not a list of objects")
    return Choice(text_of(part.get("content"), "content"), reasoning, finish, calls)


def error_in(answer) -> str | None:
    """The message of an error object sent in place of a completion or in the middle of a stream, if any."""
    if not isinstance(answer, dict) or answer.get("error") in (None, False, ""):
        return None
    error = answer["error"]
    message = error.get("message") if isinstance(error, dict) else error
    return shortened(str(message or "no message"))  # one line, as every server's message is shown


def usage_counts(usage) -> tuple[dict | None, str | None]:
    """({input, output, thoughts, cached} token counts, None); (None, None) when the server sent no usage; (None,
    what was wrong) when its token numbers are not counts: the reply is then counted locally, and the caller says
    so. A detail that is not a count (reasoning or cached tokens) counts as none. prompt_tokens includes the
    prompt_tokens_details.cached_tokens served from the prompt cache
    (https://platform.openai.com/docs/guides/prompt-caching)."""
    if usage is None:
        return None, None
    if not isinstance(usage, dict):
        return None, f"usage that is {kind(usage)}, not an object"
    wrong = [f"{key} {str(usage.get(key))[:20]!r}" for key in ("prompt_tokens", "completion_tokens")
             if usage.get(key) is not None and not _count(usage.get(key))]
    if wrong:
        return None, "usage numbers that are not counts: " + ", ".join(wrong)
    missing = [key for key in ("prompt_tokens", "completion_tokens") if usage.get(key) is None]
    if missing:  # not reported is not 0
        return None, f"usage without {' or '.join(missing)}"

    def detail(details: str, key: str) -> int:
        holder = usage.get(details)
        value = holder.get(key) if isinstance(holder, dict) else None
        return value if _count(value) else 0
    counts = {"input": usage["prompt_tokens"], "output": usage["completion_tokens"],
              "thoughts": detail("completion_tokens_details", "reasoning_tokens"),
              "cached": detail("prompt_tokens_details", "cached_tokens")}
    return (None, impossible) if (impossible := impossible_usage(counts)) else (counts, None)


def impossible_usage(counts: dict) -> str | None:
    """What cannot be true of a reply's token counts: a part larger than the whole it belongs to (cached tokens are
    part of the prompt's, reasoning tokens of the output's); None when nothing."""
    if counts["cached"] > counts["input"]:
        return f"usage with more cached tokens ({counts['cached']:,}) than prompt tokens ({counts['input']:,})"
    if counts["thoughts"] > counts["output"]:
        return f"usage with more reasoning tokens ({counts['thoughts']:,}) than output tokens ({counts['output']:,})"
    return None


def _count(value) -> bool:
    return type(value) is int and 0 <= value < MAX_COUNT


class EventStream:
    """Server-sent events from the bytes of a stream as they arrive: `feed` returns the data of each event
    completed so far, `end` the data of one the stream left unfinished (the standard drops it; a server that ends
    on `data: [DONE]` with no blank line after it is common enough to be read)."""

    def __init__(self):
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""  # the last line, until a line break ends it
        self._data: list[str] = []
        self.started = False  # whether any text came yet

    def feed(self, chunk: bytes) -> list[str]:
        text = self._pending + self._decoder.decode(chunk)
        if not self.started and text.strip():
            text, self.started = text.removeprefix("\ufeff"), True
        held = text.endswith("\r")  # perhaps the first half of a CRLF
        *lines, rest = LINE_BREAK.split(text[:-1] if held else text)
        self._pending = rest + ("\r" if held else "")
        return [data for data in map(self._line, lines) if data is not None]

    def end(self) -> list[str]:
        tail, self._pending = self._pending + self._decoder.decode(b"", final=True), ""
        lines = LINE_BREAK.split(tail) if tail else []
        if lines and not lines[-1]:
            lines.pop()  # the break that ended the last line
        events = [data for data in map(self._line, lines) if data is not None]
        return events + ([self._line("")] if self._data else [])

    def _line(self, line: str) -> str | None:
        if not line:  # a blank line ends the event
            data, self._data = self._data, []
            return "\n".join(data) if data else None
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if colon and value.startswith(" ") else value)
        return None  # event, id and retry change nothing here


def model_name(model) -> str | None:
    """The model a server says answered, when it says so in a short plain name."""
    return model if isinstance(model, str) and 0 < len(model) <= 200 and model.isprintable() else None
