"""Ollama's own chat API, `POST /api/chat`, for the native protocol; the text protocol goes through Ollama's
OpenAI-compatible /v1 as any such server's does (openai_compatible.py, whose HTTP, errors and deadline this shares).

The shape is Ollama's (https://docs.ollama.com/api/chat, docs.ollama.com/capabilities/tool-calling, and the
official client's types, ollama-python `_types.py`):
- tools go as `tools`, as OpenAI's; `stop` and `temperature` go in `options`;
- a reply's `message.tool_calls` are `{function: {name, arguments}}` with the arguments as an object and no id
  (the calls are given ids here, call_1, ...); a call sent back keeps its arguments as an object, and each result
  goes back as a `tool` message naming its tool (`tool_name`), in the calls' order;
- streamed, the body is one JSON object a line; each carries a piece of `message.content` (or `thinking`), a
  line may carry whole tool calls, and the last has `"done": true`, its `done_reason` and the counts;
- `prompt_eval_count` counts the whole prompt, cached tokens included, and `prompt_eval_cached_count` (when sent)
  the cached ones (ollama/ollama#5371, #16428; stdapi-ai/stdapi.ai#252 reads it from Ollama's api/types.go); an
  older Ollama leaves `prompt_eval_count` out when the prompt was cached (ollama/ollama#2068): the reply is then
  counted here;
- an error is `{"error": "..."}`, with its status, or as a line of the stream once it has begun.
"""
import json
import time
from dataclasses import replace

from models import MAX_CALLS_READ, ModelError, ModelReply, native_calls
from models.services import retry, wire
from models.services.endpoints import available
from models.services.keys import redact
from models.services.openai_compatible import (OpenAICompatibleModel, StreamEndedEarly, _hurry, _reply,
                                               native_chat)
from models.streaming import StreamCut, split_reasoning

__all__ = ["OllamaModel", "make", "available"]  # make and available: what models.BACKENDS asks for


def make(backend: str, name: str, progress=None) -> "OllamaModel":
    """The model of `ollama:NAME` (see models.BACKENDS), as OLLAMA_HOST configures it."""
    return OllamaModel.for_backend(backend, name)


def api_chat(messages) -> list[dict]:
    """The messages as /api/chat takes them: a call's arguments as an object (text that is not a JSON object is sent
    as {}: Ollama refuses anything else with a 400, and the call's result already told the model what was wrong),
    and each result as a `tool` message naming its tool."""
    def call(call):
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            arguments = {}
        return {"function": {"name": call.name, "arguments": arguments if isinstance(arguments, dict) else {}}}
    return native_chat(messages, call, lambda call, text: {"role": "tool", "tool_name": call.name, "content": text})


class OllamaModel(OpenAICompatibleModel):
    """`ollama:NAME`: the text protocol through /v1, as any OpenAI-compatible server; the native one through
    /api/chat, where Ollama documents tool calling."""

    def _chat(self, messages, tools):
        return api_chat(messages) if tools else super()._chat(messages, tools)

    def _request(self, chat, stop, tools, streaming):
        if not tools:
            return super()._request(chat, stop, tools, streaming)
        options = {"stop": stop} if stop else {}
        options |= {"temperature": self._temperature_sent()} if self._temperature_sent() is not None else {}
        body = {"model": self.name, "messages": chat, "stream": streaming,
                "tools": [{"type": "function", "function": schema} for schema in tools],
                **({"options": options} if options else {})}
        return self._request_url.removesuffix("/v1") + "/api/chat", body

    def _read(self, response, stop, channel, streaming, tools):
        """/api/chat's answer: its thinking is never reply text, so the reply is never empty but for it."""
        if not tools:
            return super()._read(response, stop, channel, streaming, tools)
        reply, problem = (self._lines(response, stop, channel) if streaming
                          else self._answer(b"".join(self._chunks(response))))
        return reply, False, problem

    def _answer(self, data: bytes) -> tuple[ModelReply, str | None]:
        """A whole answer (`"stream": false`): one object with the message, `done_reason` and the counts."""
        answer = self._object(data)
        message = self._message(answer)
        _, text = split_reasoning(self._content(message))
        return self._reply(text, answer, self._calls(message.get("tool_calls"), []))

    def _lines(self, response, stop: list[str], channel: retry.Channel) -> tuple[ModelReply, str | None]:
        """A streamed answer, a JSON object a line, read until the line that says `"done": true`."""
        cut = StreamCut(stop, channel.text,
                        lambda text: channel.event("reasoning", backend=self.backend, text=text))
        reading, calls, pending, final = {}, [], b"", None
        for chunk in self._chunks(response, reading):
            *lines, pending = (pending + chunk).split(b"\n")
            for line in filter(bytes.strip, lines):
                final = self._line(line, cut, channel, calls)
                if final is not None or cut.done:
                    reading["finished"] = time.monotonic()
                    _hurry(response)
                    break
            if final is not None or cut.done:
                break
        else:
            if pending.strip() and wire.is_json(pending.decode("utf-8", "replace")):
                final = self._line(pending, cut, channel, calls)
        if final is None and not cut.done:
            raise StreamEndedEarly("the stream ended before its last line (\"done\": true)")
        return self._reply(cut.finish(), final or {}, calls, cut)

    def _line(self, line: bytes, cut: StreamCut, channel: retry.Channel, calls: list) -> dict | None:
        """One line of the stream read into the reply so far; the line itself when it is the last."""
        event = self._object(line)
        message = self._message(event)
        if isinstance(message.get("thinking"), str) and message["thinking"]:
            channel.event("reasoning", backend=self.backend, text=message["thinking"])
        self._calls(message.get("tool_calls"), calls)
        content = self._content(message)
        if content:
            cut.feed(content)
        return event if event.get("done") is True else None

    def _unreadable(self, what: str) -> ModelError:
        return ModelError(f"{self._where()} sent {redact(what, self._api_key)}: not an answer of Ollama's /api/chat")

    def _object(self, data: bytes) -> dict:
        try:
            answer = wire.json_value(data)
        except wire.Malformed as problem:
            raise self._unreadable(f"{problem} ({data[:80].decode('utf-8', 'replace')!r})") from None
        if not isinstance(answer, dict):
            raise self._unreadable(f"{wire.kind(answer)} where an object was expected")
        if answer.get("error") is not None:  # an error once the answer has begun: said as a line of it
            raise ModelError(f"{self._where()} failed in the middle of the reply: "
                             f"{redact(str(answer['error'])[:500], self._api_key)}")
        return answer

    def _message(self, answer: dict) -> dict:
        message = answer.get("message", {})
        if not isinstance(message, dict):
            raise self._unreadable(f"a message that is {wire.kind(message)}, not an object")
        return message

    def _content(self, message: dict) -> str:
        """The message's text, read as every service's is (wire.text_of): a string, or a list of text parts."""
        try:
            return wire.text_of(message.get("content"), "content")
        except wire.Malformed as problem:
            raise self._unreadable(str(problem)) from None

    def _calls(self, listed, calls: list) -> list:
        """Tool calls read into `calls` (at most MAX_CALLS_READ); what a call lacks is refused by the loop, as a result
        the model reads (models.native_calls)."""
        if listed is None:
            return calls
        if not isinstance(listed, list):
            raise self._unreadable(f"tool_calls that are {wire.kind(listed)}, not a list")
        for call in listed[:MAX_CALLS_READ - len(calls)]:
            function = call.get("function") if isinstance(call, dict) else None
            function = function if isinstance(function, dict) else {}
            calls.append((call.get("id") if isinstance(call, dict) else None, function.get("name"),
                          function.get("arguments", {})))
        return calls

    def _reply(self, text: str, final: dict, calls: list, cut: StreamCut | None = None) -> tuple[ModelReply,
                                                                                                  str | None]:
        counts, problem = _counts(final)
        finish = final.get("done_reason") if isinstance(final.get("done_reason"), str) else None
        reply = replace(_reply(text, cut.ending(finish) if cut else finish, counts), calls=native_calls(calls))
        return replace(reply, model=wire.model_name(final.get("model"))), problem


def _counts(final: dict) -> tuple[dict | None, str | None]:
    """The last line's counts as the reply's usage, checked as OpenAI's are (wire.usage_counts): none when Ollama
    sent neither count."""
    prompt, output = final.get("prompt_eval_count"), final.get("eval_count")
    if prompt is None and output is None:
        return None, None
    usage = {"prompt_tokens": prompt, "completion_tokens": output,
             "prompt_tokens_details": {"cached_tokens": final.get("prompt_eval_cached_count")}}
    counts, problem = wire.usage_counts(usage)  # its words named as Ollama names the counts
    return counts, problem and problem.replace("prompt_tokens", "prompt_eval_count").replace("completion_tokens",
                                                                                             "eval_count")
