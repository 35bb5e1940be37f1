"""TinyReAct: a ReAct agent you can read in one sitting.

The model writes `Thought:` and `Action: tool(args)` as plain text; the program runs the tool and
feeds the result back as `Observation:`, until the model writes `Answer:` or the TTL (a budget of
model calls) runs out. That is the text protocol; in the native one the service's function calling
carries the same calls and results (protocols.py) through the same loop. Everything that happens is
appended to a trace; a context policy decides what of it the model is shown on each call, and every
count in a Result is read back from it.

This module is the loop and nothing else; the command line is the package cli/.

    python agent.py "What is 7 * 6 + 5?"
"""
import json
import time
from typing import Callable, Sequence

from models import (COUNTED_LOCALLY, MAX_NEW_TOKENS, MAX_REPLY_CHARS, ContextOverflow, Message,
                    Model, ModelError, ModelReply)
from models.sent import Digests
from policies import Meter, Policy
from policies.full import FullHistory
from policies.rendering import cap
from prompts import tool_docs
from protocols import Action, Protocol, TextProtocol
from results import MAX_FORMAT_ERRORS, Result, StopReason, priced, summarise
from replies import STOP_SEQUENCES, ActionError  # noqa: F401 (STOP_SEQUENCES re-exported)
from tokens import TokenCounter, local_counter
from tools import DEFAULT_TOOLS, REPEAT, Refused, call_text
from tools.approval import Approval, guarded
from traces import Trace

__version__ = "0.4.0"  # the project's; a replay's outputs carry it (experiments/provenance.py)
DEFAULT_TTL = 8  # model calls a question may make, unless told otherwise
MAX_REPEATS = 3  # identical actions in a row before a fourth is refused with a warning
# the same call refused this often in a row (a repeat, a decline): the run stops, stuck (it
# stops at once: asking for a last answer first was measured no better, docs/embedded-models.md)
MAX_REFUSALS = 2
RECORD_LIMIT = 100_000  # tool result characters the trace keeps; the model sees the policy's cut
# characters of a reply kept: a runaway reply must not fill every later context and the trace
REPLY_LIMIT = MAX_REPLY_CHARS
# characters of a service's own parts of a reply kept to send back (Gemini's, with its thought
# signatures); past it they are left out, and the reply goes back as its text and calls
NATIVE_LIMIT = 4 * MAX_REPLY_CHARS


# A reply's finish (ModelReply.finish, alike for every backend) saying its text ended early.
CUT_SHORT = {
    "length": (StopReason.CUT, "cut at the model's output limit", "the limit is the service's "
               f"(for Gemini, GEMINI_MAX_OUTPUT_TOKENS), {MAX_NEW_TOKENS} new tokens for an "
               f"embedded model, and {MAX_REPLY_CHARS:,} characters for any reply here"),
    "content_filter": (StopReason.FILTERED, "withheld by the service's content filter",
                       "rephrasing the question may help")}


class Stop(Exception):
    """Ends a query: why, and the answer if there is one. Raised in the loop, caught by query()."""

    def __init__(self, reason: StopReason, answer: str | None = None):
        super().__init__(reason.value)
        self.reason, self.answer = reason, answer


class TinyReAct:
    def __init__(self, model: Model, tools: list[Callable] = DEFAULT_TOOLS, ttl: int = DEFAULT_TTL,
                 policy: Policy | None = None, trace: Trace | None = None,
                 counter: TokenCounter | None = None, on_text: Callable[[str], None] | None = None,
                 protocol: Protocol | None = None, approval: Approval | None = None):
        """`on_text`, if given, receives each reply's text as the model writes it (streaming);
        `protocol` is TextProtocol() (the default) or NativeProtocol() (protocols.py); `approval`
        says which calls need a person's yes and asks at the tool's boundary (tools/approval.py; by
        default, an MCP tool that may be destructive is declined)."""
        if ttl < 1:
            raise ValueError("ttl must be at least 1 model call")
        self.protocol = protocol or TextProtocol()
        self.protocol.check(model)  # ModelConfigError for a model that cannot speak it
        self.model, self.ttl, self.base_tools, self.on_text = model, ttl, list(tools), on_text
        self.approval = approval or Approval()
        self.trace = trace if trace is not None else Trace()
        self.counter = counter or local_counter()
        self._measure, self._digest = Meter(self.counter.count), Digests()
        self._offer = None
        self.use_policy(policy or FullHistory())

    def use_policy(self, policy: Policy) -> None:
        """Choose what the model is shown; a policy's tools (pinned notes) come and go with it."""
        self.policy = policy
        self.tools = {tool.__name__: guarded(tool, self.approval, self.trace)
                      for tool in self.base_tools + policy.tools(self.trace)}
        self._instruct()

    def reset(self) -> None:
        """Start anew: the trace keeps the old conversation; policies look only past the reset."""
        self.trace.add("reset")
        self._offer = None
        self._instruct()

    def query(self, question: str, finish: bool = False) -> Result:
        """Reason, act, observe until an answer, the TTL, or a stop: three unreadable replies in a
        row, or one call refused twice in a row (stuck)."""
        self.trace.add("question", text=question)
        return self.resume(finish)

    def resume(self, finish: bool = False) -> Result:
        """Go on with the trace's last question from its next step (a fork's came from another)."""
        events = self.trace.events
        first = max(i for i, event in enumerate(events) if event["type"] == "question")
        done = max((e["step"] for e in events[first:] if e["type"] == "reply"), default=0)
        started, error, self._over_window = time.monotonic(), None, False
        try:
            for step in range(done + 1, self.ttl + 1):
                messages = self._context()  # the policy renders what the model sees from the trace
                reply = self._generate(messages)  # <- the model is called here
                parsed = self._read(step, reply, messages)  # recorded, then read by the protocol
                if parsed.answer is not None:  # taken unless the service cut it short
                    raise Stop(StopReason.ANSWER, self._taken(parsed.answer, reply))
                for action in parsed.actions or (None,):  # one if text; native calls run in order
                    try:  # the tool named, its arguments checked
                        tool, args, kwargs, call = self._prepare(action, reply)
                    except Refused as refusal:  # no action, bad tool or arguments, a repeat: said
                        self._observe(step, refusal, action=action)
                        continue
                    try:
                        observation = str(tool(*args, **kwargs))  # <- the tool runs here
                    except Refused as refusal:  # its guard asked a person, who said no
                        observation = refusal
                    except Exception as failure:  # news for the model, not a crash
                        why = f"{type(failure).__name__}: {failure}"
                        observation = f"Error: {tool.__name__} failed: {why}".replace("\n", " ")
                    self._observe(step, observation, call, action)
            raise Stop(StopReason.TTL, self._finish() if finish else None)
        except Stop as stop:
            answer, reason = stop.answer, stop.reason
        except ModelError as failure:  # the model failed, or (a local one) the context is too long
            self.trace.add("error", message=str(failure))
            overflow = isinstance(failure, ContextOverflow)
            reason = StopReason.CONTEXT_OVERFLOW if overflow else StopReason.ERROR
            answer, error = None, failure
        self.trace.add("stop", reason=reason.value, answer=answer)
        seconds = time.monotonic() - started
        return self._result(self.trace.events[first:], answer, reason, seconds, error)

    def _result(self, events: Sequence[dict], answer: str | None, reason: StopReason,
                seconds: float, error: Exception | None) -> Result:
        """The outcome of a query, every count read from its events."""
        model, counts = self.model, summarise(events)
        source = COUNTED_LOCALLY if counts.pop("counted_locally") else model.usage_source
        cost = priced(events, model.name, model.backend)
        return Result(answer, reason, **counts, trace=list(events), seconds=seconds, error=error,
                      model=model.name, backend=model.backend, usage_source=source, cost=cost)

    def _context(self):
        """Fold old steps into a summary if the policy asks, render and measure what the model will
        see, and keep it with the trace (in memory, by digest): what was sent is recorded once."""
        self._summarise_if_asked()
        messages = self.policy.render(self.trace.events)
        tokens = self._measure(messages, self._tool_docs, self._offered)
        sent = self._digest(messages, self._offered)
        self.trace.sent[sent] = messages
        self.trace.add("context", policy=self.policy.name, tokens=tokens, counter=self.counter.name,
                       sent=sent)
        # said once a query; a local model refuses a context too long on its own
        window = self.model.window if self.model.backend != "local" else None
        total = sum(tokens.values())
        if window and total > window and not self._over_window:
            self._over_window = True
            message = (f"the context is about {total:,} tokens ({self.counter.name}), more than "
                       f"{self.model.name}'s window of {window:,}: the model may refuse it or lose "
                       "its start; a policy that keeps less would fit")
            self.trace.add("warning", message=message)
        return messages

    def _generate(self, messages: list[Message]) -> ModelReply:
        """One model call, with the protocol's stop sequences and any tool schemas it offers."""
        offered = {"tools": self._offer.schemas} if self._offer.schemas is not None else {}
        return self.model.generate(messages, self._offer.stop, on_text=self.on_text,
                                   on_event=self._model_event, **offered)

    def _read(self, step: int, reply: ModelReply, messages: list[Message]):
        """Record the reply (cut at any Observation the model wrote) and what the protocol reads."""
        self._count(reply, "step", messages)
        extra = self.protocol.recorded(reply)  # its text and calls
        text = cap(extra.pop("text"), REPLY_LIMIT)
        if reply.native and len(reply.native) <= NATIVE_LIMIT:
            extra["native"] = reply.native
        if reply.finish:  # why the service says it ended: stop, length, content_filter, blocked
            extra["finish"] = reply.finish
        recorded = self.trace.add("reply", step=step, text=text, raw=cap(reply.text, REPLY_LIMIT),
                                  blocked=reply.blocked, **extra)
        parsed = self.protocol.read(recorded)  # as recorded, lone surrogates made U+FFFD
        if parsed.thought is not None:
            self.trace.add("thought", step=step, text=parsed.thought)
        for action in parsed.actions:
            self.trace.add("action", step=step, text=action.text, **action.recorded())
        if parsed.answer is not None and reply.finish not in CUT_SHORT:  # if cut, it is no answer
            self.trace.add("answer", step=step, text=parsed.answer)
        return parsed

    def _prepare(self, action: Action | None,
                 reply: ModelReply) -> tuple[Callable, tuple, dict, str]:
        """The tool an action names, its checked arguments (positional, named), and the call as the
        trace records it (to see repeats); raises Refused with a message for the model."""
        if action is None or action.refused:
            raise Refused(action.refused if action else self.protocol.unreadable(reply))
        try:
            tool, args, kwargs = self.protocol.call(action, self.tools)
        except ActionError as problem:
            raise Refused(f"Error: {problem}.") from None
        call = call_text(tool, args, kwargs)
        if len(self._same_calls(call)) >= MAX_REPEATS:
            raise Refused(f"Warning: you have already run {action.text} {MAX_REPEATS} times in a "
                          "row; it was not run again. Use the earlier Observation, try something "
                          "different, or give your Answer.", call, REPEAT)
        return tool, args, kwargs, call

    def _observe(self, step: int, observation: str | Refused, call: str | None = None,
                 action: Action | None = None) -> None:
        """Record an observation whole: a tool's result with the call that made it, or a refusal
        with the call it refused and why; and a native call's id (past the safety cap: cut, marked
        with its length). Three unreadable replies in a row end the run, and so does the same call
        refused twice in a row (stuck)."""
        refused = None
        if isinstance(observation, Refused):  # not run: recorded with the call it refused, and why
            call, refused = observation.call, observation.refused
        text = str(observation)
        cut = {"original_chars": len(text)} if len(text) > RECORD_LIMIT else {}
        extra = ({"call": call} if call else {}) | ({"refused": refused} if refused else {}) | cut \
            | (action.recorded() if action else {})
        # blanked of secrets before it is cut, so that a cut through a key cannot leave the rest
        kept = cap(self.trace.blanked(text), RECORD_LIMIT)
        self.trace.add("observation", step=step, text=kept, **extra)
        if self._unreadable_replies() >= MAX_FORMAT_ERRORS:
            raise Stop(StopReason.FORMAT_ERRORS)
        if refused and sum("refused" in event for event in self._same_calls(call)) >= MAX_REFUSALS:
            raise Stop(StopReason.STUCK)

    def _finish(self) -> str | None:
        """One more call, past the TTL, asking for the best answer from what was observed."""
        self.trace.add("finish", text=self.protocol.finish_request)
        messages = self._context()
        reply = self._generate(messages)
        answer = self._read(self.ttl + 1, reply, messages).answer
        return None if answer is None else self._taken(answer, reply)

    def _taken(self, answer: str, reply: ModelReply) -> str:
        """The answer, unless the service says the reply ended early (cut at the output limit, or
        filtered): then the query stops, typed, and the partial answer is said once, never taken."""
        if reply.finish not in CUT_SHORT:
            return answer
        reason, how, hint = CUT_SHORT[reply.finish]
        shown = answer if len(answer) <= 60 else answer[:57] + "..."
        self.trace.add("warning", message=f"the reply was {how} (finish reason {reply.finish}) "
                                          f"inside its Answer, so {shown!r} is not taken as the "
                                          f"answer; {hint}")
        raise Stop(reason)

    def _summarise_if_asked(self) -> None:
        """When a summary is due, a summarising policy (compact, a vendor's compaction) asks the
        model for one."""
        request = self.policy.summary_request(self.trace.events, self.counter.count)
        if request is None:
            return
        upto, messages = request
        summary = self.model.generate(messages, [], on_event=self._model_event)
        self._count(summary, "summary", messages)
        self.trace.add("summary", upto=upto, text=summary.text.strip(), policy=self.policy.name)

    def _count(self, reply: ModelReply, purpose: str, messages: list[Message]) -> None:
        """Record a call's usage: the model's own numbers, or, if none, the local counter's."""
        extra = {}
        if reply.temperature is not None:
            extra["temperature"] = reply.temperature
        if reply.cached_tokens:
            extra["cached_tokens"] = reply.cached_tokens
        if reply.model and reply.model != self.model.name:  # another model answered
            extra["answered_by"] = reply.model
        if reply.usage_source == COUNTED_LOCALLY:
            count = self.counter.count
            sent = sum(count(part.text) for message in messages for part in message.parts)
            tokens = dict(input_tokens=sent, output_tokens=count(reply.text), thoughts_tokens=0,
                          counted_locally=True)
        else:
            tokens = dict(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                          thoughts_tokens=reply.thoughts_tokens)
        self.trace.add("usage", purpose=purpose, **tokens, **extra)

    def _model_event(self, type: str, **fields) -> None:
        """What a backend reports during a call: retries and dropped settings are recorded (so shown
        as they happen); reasoning text some servers stream apart from the reply is not kept."""
        if type != "reasoning":
            self.trace.add(type, **fields)

    def _instruct(self) -> None:
        """Record the instructions (and, native, the tool schemas offered) when they change."""
        offer = self.protocol.offer(self.tools.values(), self.model.name)
        if offer != self._offer:
            schemas = offer.schemas is not None  # sent beside the messages: the native protocol's
            offered = {"protocol": self.protocol.name, "schemas": offer.schemas} if schemas else {}
            docs = tool_docs(self.tools.values())
            self._tool_docs = "" if schemas else docs  # in the instructions: the text protocol's
            self._offered = json.dumps(offer.schemas, ensure_ascii=False) if schemas else ""
            fields = {"text": offer.instructions, "tools": docs, **offered}
            if self._offer is not None or self._in_force() != fields:  # a fork's are in force
                self.trace.add("instructions", **fields)
        self._offer = offer

    def _in_force(self) -> dict | None:
        """The fields of the instructions the trace holds in force (none after a reset)."""
        for event in reversed(self.trace):
            if event["type"] in ("instructions", "reset"):
                return {k: v for k, v in event.items() if k not in ("type", "t")} \
                    if event["type"] == "instructions" else None
        return None

    def _same_calls(self, call: str) -> list[dict]:
        """This query's latest observations, back to back, that came from this very call (a reply
        with no call it could read, in between, does not break the run)."""
        same = []
        for event in reversed(self.trace):
            if event["type"] == "question":
                break
            if event["type"] == "observation" and "call" in event:
                if event["call"] != call:
                    break
                same.append(event)
        return same

    def _unreadable_replies(self) -> int:
        """How many of this query's latest replies, back to back, had no Action and no Answer."""
        count, acted = 0, False
        for event in reversed(self.trace):
            if event["type"] == "question":
                break
            if event["type"] == "action":
                acted = True
            elif event["type"] == "reply":
                if acted:
                    break
                count += 1
        return count


if __name__ == "__main__":
    from cli import script  # the command line sits above the loop: imported only as a script

    script()
