"""A trace as OpenTelemetry spans, for the trace viewers people already run (Phoenix, Langfuse, any OTLP collector):
one trace a question, read from its events as the pages read them.

`question_spans(header, events, first, count)` makes the spans of the question whose event is `events[first]`: an
`invoke_agent` span from the question to its stop, and under it one span a model call (`generate_content` for
Gemini, `chat` for the others: from its `context` event to its `usage` event) and one `execute_tool` span a tool call
(from the event before its observation to the observation). Their attributes follow the OpenTelemetry GenAI semantic
conventions of v1.41.0 (docs/telemetry.md says which), with the OpenInference names Phoenix reads beside them where
they differ, and `tinyreact.*` for what the context policy did at each call: its name, the context's tokens by kind,
and the parts it added, dropped or elided since the call before. Message content (the question, what the model was
shown and wrote, a tool's arguments and result, the answer) goes in only when `content` is asked for.

Each span is a plain record, its times in seconds since the trace began: views/otlp.py hands them to the SDK. The
same events make the same spans; a field a hand-made trace holds in an odd shape is left out, never a crash.
"""
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Mapping, Sequence

from models import Message, ModelConfigError, backend_record
from policies.rendering import cap
from results import outcome, priced, summarise
from views.reading import Call, Contexts, changes, question_end

CONVENTIONS = "1.41.0"  # the release of the OpenTelemetry semantic conventions whose GenAI spans these follow
AGENT = "TinyReAct"
# Each backend's gen_ai.provider.name (the conventions' well-known value where there is one, else the backend's
# name), gen_ai.operation.name (Gemini's API is generateContent, every other takes chat messages), OpenInference's
# llm.provider (which Phoenix prices a call by, with llm.model_name) and whether its calls are CLIENT spans (a model
# in another process) are in its record, models.BACKENDS.
ROLES = {"model": "assistant"}  # the conventions' name for a role where ours differs
PART_LIMIT = 20_000  # characters of one message part, tool argument or tool result sent as content
FLAT_LIMIT = 400  # messages in OpenInference's one-attribute-a-field form: the instructions and the latest ones
NAME_LIMIT = 200  # characters of a model, policy or tool name sent
# What an observation that begins so says of the tool call: error.type on its span
TOOL_ERRORS = {"Error:": "tool_error", "Declined:": "declined", "Warning:": "refused"}
KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")  # a bucket of the context's tokens, as an attribute name takes it


@dataclass
class Span:
    """One span: a name, its start and end in seconds since the trace began, its parent's position in the question's
    list of spans (None for the question's own span), its attributes, and what a viewer needs besides."""
    name: str
    start: float
    end: float
    parent: int | None
    attributes: dict
    client: bool = False  # span kind CLIENT: a call to a model served by another process; else INTERNAL
    error: str | None = None  # error.type when the operation ended in error; the span's status says so too
    events: list = field(default_factory=list)  # (name, seconds since the trace began, attributes)


def question_spans(header: dict, events: Sequence[dict], first: int, count: Callable[[str], int],
                   content: bool = False, conversation: str = "",
                   sent: Mapping[str, list[Message]] | None = None) -> list[Span]:
    """The spans of the question at `events[first]`: its own span first, then its model calls and tool calls in the
    order they began. `count` counts the tokens of a part the policy dropped; `conversation` is the id a chat's
    questions share (gen_ai.conversation.id, OpenInference's session.id); `sent`, a live run's Trace.sent: what
    each call sent, used as it was (a saved trace's contexts are rebuilt, and a call whose rebuilt context is not
    what it sent says so, tinyreact.context.rebuilt_differs)."""
    return _Question(header, events, first, count, content, conversation, sent).spans


def started(header: dict) -> float | None:
    """When a saved trace began, in seconds since the epoch, from its header's `created`; None without one."""
    try:
        return datetime.strptime(header.get("created"), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except (TypeError, ValueError, OverflowError):
        return None


def _text(value, limit: int = NAME_LIMIT) -> str | None:
    """A name from a header or an event, if it is text: cut at `limit`."""
    return cap(value, limit) if isinstance(value, str) and value else None


def _seconds(event: dict, before: float) -> float:
    """When an event happened, or, for one that does not say, when the one before it did."""
    t = event.get("t")
    return float(t) if type(t) in (int, float) and math.isfinite(t) and t >= before else before


class _Question:
    """Reads one question's events, in order, into its spans."""

    def __init__(self, header: dict, events: Sequence[dict], first: int, count: Callable[[str], int], content: bool,
                 conversation: str, sent: Mapping[str, list[Message]] | None = None):
        self.events, self.first, self.count, self.content, self.sent = events, first, count, content, sent
        self.conversation = conversation
        self.backend = _text(header.get("backend")) or "unknown"
        self.model = _text(header.get("model")) or "unknown"
        self.last = self._last_event()
        self.now = _seconds(events[first], 0.0)
        self.call: int | None = None  # the model call under way: between its context event and its usage
        self.latest: int | None = None  # the latest model call that returned: the reply after it is its reply
        self.actions, self.approval, self.offered = [], None, {}  # the latest reply's tool calls, still to run
        self.contexts, self.shown = None, None  # what the model was shown, rebuilt; at the call before
        self.spans = [Span(f"invoke_agent {AGENT}", self.now, self.now, None, {})]
        readers = {"context": self._context, "usage": self._usage, "reply": self._reply, "action": self._action,
                   "approval": self._approve, "observation": self._observation, "error": self._failed,
                   "retry": self._notice, "config_fallback": self._notice, "summary": self._summary}
        for index in range(first + 1, self.last + 1):
            event = events[index]
            before, self.now = self.now, _seconds(event, self.now)
            if event["type"] in readers:
                readers[event["type"]](index, event, before)
        self._end()

    def _last_event(self) -> int:
        """The question's last event: its stop, else the last before the next question or reset (as a page reads
        a question's events, views/reading.py), else the trace's last."""
        end = question_end(self.events, self.first)
        return next((index for index in range(self.first + 1, end) if self.events[index]["type"] == "stop"), end - 1)

    # ---------------------------------------------------------------- model calls

    def _open_call(self, start: float, purpose: str) -> Span:
        record = backend_record(self.backend)
        operation = record.operation
        attributes = {"gen_ai.operation.name": operation, "gen_ai.provider.name": self._provider(),
                      "gen_ai.request.model": self.model, "openinference.span.kind": "LLM",
                      "llm.model_name": self.model, "tinyreact.purpose": purpose}
        if record.openinference:
            attributes["llm.provider"] = record.openinference
        span = Span(f"{operation} {self.model}", start, start, 0, attributes, client=record.network)
        self.spans.append(span)
        return span

    def _context(self, index: int, event: dict, before: float) -> None:
        self._close_call("model_error")  # a call that never returned (an old trace's), ended where the next begins
        span = self._open_call(self.now, "step")
        span.attributes |= self._policy(index, event)
        self.call = len(self.spans) - 1

    def _usage(self, index: int, event: dict, before: float) -> None:
        if event.get("purpose") == "summary":  # asked for by compact:T before the call's context is measured
            span = self._open_call(before, "summary")
            self.latest = len(self.spans) - 1
        else:
            if self.call is None:  # a trace without context events: the call began after the event before it
                self._open_call(before, "step")
                self.call = len(self.spans) - 1
            span, self.latest, self.call = self.spans[self.call], self.call, None
        span.end = self.now
        span.attributes |= _usage(event)
        answered_by = _text(event.get("answered_by"))
        if answered_by:  # the model the service says answered (gemini-flash-latest is answered by a named model)
            span.attributes |= {"gen_ai.response.model": answered_by, "llm.model_name": answered_by}
        cost = self._cost([event])
        if cost is not None:
            span.attributes["tinyreact.cost.usd"] = cost

    def _reply(self, index: int, event: dict, before: float) -> None:
        self.actions, self.approval = [], None
        calls = [call for call in event.get("calls") or [] if isinstance(call, dict)]
        self.offered = {call.get("id"): call for call in calls}
        if self.latest is None:
            return
        span = self.spans[self.latest]
        span.attributes["tinyreact.step"] = event.get("step")
        finish = _text(event.get("finish"))
        if finish:
            span.attributes["gen_ai.response.finish_reasons"] = (finish,)
            span.attributes["llm.finish_reason"] = finish
        if self.content:
            span.attributes |= _output(_text(event.get("raw"), PART_LIMIT) or _text(event.get("text"), PART_LIMIT)
                                       or "", calls, finish)

    def _summary(self, index: int, event: dict, before: float) -> None:
        if self.content and self.latest is not None:
            self.spans[self.latest].attributes |= _output(_text(event.get("text"), PART_LIMIT) or "", [], None)

    def _notice(self, index: int, event: dict, before: float) -> None:
        """A retry or a setting the service refused, during a call: an event on its span."""
        target = self.call if self.call is not None else self.latest
        if target is not None:
            message = _text(event.get("message"), 500) or event["type"]
            self.spans[target].events.append((event["type"], self.now, {"message": message}))

    def _failed(self, index: int, event: dict, before: float) -> None:
        """An error event: the model could not be reached (or Ctrl-C) during the call under way."""
        self._close_call("interrupted" if event.get("message") == "interrupted" else "model_error")

    def _close_call(self, error: str) -> None:
        if self.call is not None:
            span = self.spans[self.call]
            span.end, span.error, self.call = self.now, error, None

    def _policy(self, index: int, event: dict) -> dict:
        """What the policy did at this call: its name, the context's tokens by kind, and what changed since the
        call before (parts added, dropped, elided...; the tokens of those dropped)."""
        tokens = event.get("tokens") if isinstance(event.get("tokens"), dict) else {}
        attributes = {"tinyreact.policy": _text(event.get("policy")) or "unnamed",
                      "tinyreact.context.counter": _text(event.get("counter")) or "unnamed",
                      "tinyreact.context.tokens": sum(tokens.values())}
        attributes |= {f"tinyreact.context.tokens.{kind}": number for kind, number in tokens.items()
                       if KIND.fullmatch(kind)}
        shown = self._shown_at(index, event)
        if shown is None:
            return attributes
        if index in self.contexts.differs:
            attributes["tinyreact.context.rebuilt_differs"] = True
        found = changes(self.shown, shown, self.count)
        self.shown = shown
        tally = Counter(change.tag for change in found)
        attributes |= {f"tinyreact.context.{tag}": tally[tag] for tag in ("added", "dropped", "elided")}
        attributes |= {f"tinyreact.context.{tag}": number for tag, number in tally.items()
                       if tag not in ("added", "dropped", "elided")}
        attributes["tinyreact.context.dropped_tokens"] = sum(change.tokens for change in found
                                                             if change.tag == "dropped")
        if self.content:
            attributes |= _input(shown)
        return attributes

    def _shown_at(self, index: int, event: dict) -> list[Message] | None:
        """What the model was shown at the call whose context event is events[index], rebuilt with the policy it
        names; on the question's first call, what it was shown at the call before too (for the changes)."""
        if self.contexts is None:
            self.contexts = Contexts(self.events[:self.last + 1], self.sent)
            # the call before, unless a reset came between: a new session starts with nothing shown
            earlier = next((i for i in range(self.first - 1, -1, -1) if self.events[i]["type"] in ("context", "reset")),
                           None)
            earlier = earlier if earlier is not None and self.events[earlier]["type"] == "context" else None
            if earlier is not None:
                self.shown = self.contexts.at(Call(0, earlier, self.events[earlier]))
        return self.contexts.at(Call(0, index, event))

    # ---------------------------------------------------------------- tool calls

    def _action(self, index: int, event: dict, before: float) -> None:
        self.actions.append(event)

    def _approve(self, index: int, event: dict, before: float) -> None:
        self.approval = event

    def _observation(self, index: int, event: dict, before: float) -> None:
        if not self.actions:  # the answer to a reply with neither an action nor an answer: no tool ran
            if self.latest is not None:
                self.spans[self.latest].attributes["tinyreact.reply.unreadable"] = True
            return
        action, approval = self.actions.pop(0), self.approval
        self.approval = None
        offered = self.offered.get(action.get("id")) or {}
        name = _tool_name(event, action, offered)
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.type": "function",
                      "openinference.span.kind": "TOOL", "tool.name": name, "tinyreact.step": event.get("step")}
        if _text(action.get("id")):
            attributes["gen_ai.tool.call.id"] = _text(action.get("id"))
        if approval is not None:
            attributes |= {"tinyreact.approval.decision": _text(approval.get("decision")) or "unknown",
                           "tinyreact.approval.by": _text(approval.get("by")) or "unknown"}
        text = event.get("text") if isinstance(event.get("text"), str) else ""
        if self.content:
            arguments = _text(offered.get("arguments"), PART_LIMIT) or _text(action.get("text"), PART_LIMIT) or ""
            result = cap(text, PART_LIMIT)
            attributes |= {"gen_ai.tool.call.arguments": arguments, "gen_ai.tool.call.result": result,
                           "input.value": _text(action.get("text"), PART_LIMIT) or "", "output.value": result}
        error = next((kind for start, kind in TOOL_ERRORS.items() if text.startswith(start)), None)
        self.spans.append(Span(f"execute_tool {name}", before, self.now, 0, attributes, error=error))

    # ---------------------------------------------------------------- the question's own span

    def _end(self) -> None:
        """The question's span, from its events: how it ended, what it cost, its totals."""
        events = self.events[self.first:self.last + 1]
        answer, reason = outcome(events)
        self._close_call(reason if reason != "answer" else "model_error")
        counts = summarise(events)
        root = self.spans[0]
        root.end = max(self.now, root.start)
        root.error = None if reason == "answer" else reason
        root.attributes = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": self._provider(),
            "gen_ai.agent.name": AGENT, "openinference.span.kind": "AGENT", "tinyreact.model": self.model,
            "tinyreact.backend": self.backend, "tinyreact.stop_reason": reason,
            "tinyreact.question": sum(1 for event in self.events[:self.first + 1] if event["type"] == "question"),
            "tinyreact.steps": counts["steps"], "tinyreact.model_calls": counts["model_calls"],
            "tinyreact.usage.input_tokens": counts["usage"].input_tokens,
            "tinyreact.usage.output_tokens": counts["usage"].output_tokens,
            "tinyreact.usage.cached_tokens": counts["usage"].cached_input_tokens}
        if self.conversation:
            root.attributes |= {"gen_ai.conversation.id": self.conversation, "session.id": self.conversation}
        policy = next((event.get("policy") for event in events if event["type"] == "context"), None)
        if _text(policy):
            root.attributes["tinyreact.policy"] = _text(policy)
        cost = self._cost(events)
        if cost is not None:
            root.attributes["tinyreact.cost.usd"] = cost
        if self.content:
            question = cap(self.events[self.first].get("text") or "", PART_LIMIT)
            root.attributes |= {"input.value": question, "output.value": cap(answer or "", PART_LIMIT),
                                "gen_ai.input.messages": _json([_message("user", question)])}
            if answer is not None:
                root.attributes["gen_ai.output.messages"] = _json([_message("assistant", cap(answer, PART_LIMIT),
                                                                            finish_reason="stop")])

    def _provider(self) -> str:
        return backend_record(self.backend).provider or self.backend

    def _cost(self, events: Sequence[dict]) -> float | None:
        """What these calls cost at list price (models/prices.json), in dollars; None when it is not known."""
        try:
            cost = priced(events, self.model, self.backend)
        except (ModelConfigError, ValueError):  # a price file that cannot be read: no cost, as on the pages
            return None
        return round(cost.dollars, 10) if cost else None


def _tool_name(observation: dict, action: dict, offered: dict) -> str:
    """The tool a call named: as the loop bound it (`name(args)`), as the service sent it (native), or as the
    model wrote it (text); "unknown" when none says."""
    for written in (observation.get("call"), offered.get("name"), action.get("text")):
        if isinstance(written, str):
            name = written.partition("(")[0].strip()
            if name:
                return cap(name, NAME_LIMIT)
    return "unknown"


def _usage(event: dict) -> dict:
    """A call's token counts, in both conventions' names; cached and thinking tokens only when reported."""
    given, made = event.get("input_tokens", 0), event.get("output_tokens", 0)
    attributes = {"gen_ai.usage.input_tokens": given, "gen_ai.usage.output_tokens": made,
                  "llm.token_count.prompt": given, "llm.token_count.completion": made,
                  "llm.token_count.total": given + made}
    if event.get("cached_tokens"):
        attributes |= {"gen_ai.usage.cache_read.input_tokens": event["cached_tokens"],
                       "llm.token_count.prompt_details.cache_read": event["cached_tokens"]}
    if event.get("thoughts_tokens"):
        attributes |= {"gen_ai.usage.reasoning.output_tokens": event["thoughts_tokens"],
                       "llm.token_count.completion_details.reasoning": event["thoughts_tokens"]}
    if type(event.get("temperature")) in (int, float):
        attributes["gen_ai.request.temperature"] = float(event["temperature"])
    if event.get("counted_locally"):
        attributes["tinyreact.usage.counted_locally"] = True
    return attributes


def _message(role: str, text: str, **more) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}], **more}


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _input(shown: list[Message]) -> dict:
    """What the model was shown: gen_ai.input.messages, and OpenInference's messages one attribute a field."""
    messages = []
    for message in shown:
        parts = []
        for part in message.parts:
            text = cap(part.text, PART_LIMIT)
            parts.append({"type": "tool_call_response", "id": part.call.id, "response": text} if part.call
                         else {"type": "text", "content": text})
            parts += [{"type": "tool_call", "id": call.id, "name": call.name, "arguments": cap(call.arguments,
                                                                                                 PART_LIMIT)}
                      for call in part.calls]
        messages.append({"role": ROLES.get(message.role, message.role), "parts": parts})
    attributes = {"gen_ai.input.messages": _json(messages), "input.value": _json(messages),
                  "input.mime_type": "application/json"}
    flat = shown if len(shown) <= FLAT_LIMIT else shown[:1] + shown[1 - FLAT_LIMIT:]
    for number, message in enumerate(flat):
        attributes |= {f"llm.input_messages.{number}.message.role": ROLES.get(message.role, message.role),
                       f"llm.input_messages.{number}.message.content": cap(message.text, PART_LIMIT)}
    return attributes


def _output(text: str, calls: list[dict], finish: str | None) -> dict:
    """What the model wrote: gen_ai.output.messages, and OpenInference's output message."""
    parts = [{"type": "text", "content": text}] if text or not calls else []  # a reply of calls alone: no text
    parts += [
        {"type": "tool_call", "id": _text(call.get("id")) or "", "name": _text(call.get("name")) or "",
         "arguments": _text(call.get("arguments"), PART_LIMIT) or ""} for call in calls]
    finish_reason = finish or ("tool_call" if calls else "stop")
    return {"gen_ai.output.messages": _json([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}]),
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": text,
            "output.value": text}
