"""A finished run, read from its events: how it ended, its counts, what it cost.

The trace is the truth: every number a `Result` holds is read back from the events the loop recorded
(`summarise`), and the same readers serve a saved trace, a replay and the pages. The loop (agent.py) makes a
`Result` at the end of each query; nothing here runs a model.
"""
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from enum import Enum
from typing import Sequence

from models import ModelConfigError, backend_record
from models.prices import Cost, cost_of, price_of

MAX_FORMAT_ERRORS = 3  # consecutive replies with neither Action nor Answer before the run gives up


class StopReason(str, Enum):
    ANSWER = "answer"
    TTL = "ttl"
    FORMAT_ERRORS = "format_errors"
    STUCK = "stuck"  # the same call was refused twice in a row (repeated past the guard, or declined)
    CONTEXT_OVERFLOW = "context_overflow"  # the context is longer than a local model's window: it was not run
    CUT = "cut"  # the service cut the reply at its output limit inside the Answer: a cut answer is not an answer
    FILTERED = "filtered"  # the service withheld the rest of the reply (a safety or recitation filter)
    ERROR = "error"


@dataclass
class Usage:
    input_tokens: int = 0  # the whole prompts, cached part included
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, what the service served from its prompt cache


@dataclass
class Context:
    """What the model was shown over one query, in local token counts (see tokens.py), by bucket."""
    totals: dict = field(default_factory=dict)  # summed over every reasoning call
    peak: int = 0  # the largest single context
    counter: str = ""  # which local counter made these figures


@dataclass
class Result:
    answer: str | None
    stop_reason: StopReason
    steps: int  # actions taken, each answered by an observation: a tool run (failed ones too) or why it did not run
    model_calls: int  # every call: reasoning, the --finish call, summaries
    summary_calls: int  # made for the compact policy; they do not count against the TTL
    usage: Usage  # summed from the model's own usage numbers, over every call
    context: Context
    trace: list[dict]  # this query's events, from its question on; the session's trace is the agent's
    seconds: float
    model: str = ""
    backend: str = ""  # gemini, openai, ollama, llamacpp, local, scripted
    usage_source: str = ""  # where the usage numbers come from: the API's billing, or a local count
    temperatures: list = field(default_factory=list)  # each temperature the calls were sent with, in order; None: none
    call_seconds: list = field(default_factory=list)  # how long each model call took, in order (None: not recorded)
    cost: Cost | None = None  # at list price (models/prices.json); None when the model has no listed price
    error: Exception | None = None

    def to_dict(self) -> dict:
        return {
            "answer": self.answer, "stop_reason": self.stop_reason.value, "steps": self.steps, "model": self.model,
            "backend": self.backend,
            "model_calls": self.model_calls, "summary_calls": self.summary_calls, "usage": vars(self.usage),
            "usage_source": self.usage_source, "temperatures": self.temperatures, "call_seconds": self.call_seconds,
            "cost": self.cost.to_dict() if self.cost else None, "context": vars(self.context),
            "seconds": round(self.seconds, 3),
            "error": str(self.error) if self.error else None, "trace": self.trace,
        }


def outcome(events: Sequence[dict]) -> tuple[str | None, str]:
    """A query's answer and why it stopped, from its stop event; traces older than the stop event are read as the
    loop would have ended them. A query cut short by Ctrl-C has no stop event: it is `interrupted`."""
    stops = [event for event in events if event["type"] == "stop"]
    if stops:
        return stops[-1].get("answer"), stops[-1]["reason"]
    answers = [event["text"] for event in events if event["type"] == "answer"]
    if answers:
        return answers[-1], StopReason.ANSWER.value
    errors = [event for event in events if event["type"] == "error"]
    if errors:
        if errors[-1].get("message") == "interrupted":
            return None, "interrupted"
        return None, StopReason.ERROR.value
    readable = {event["step"] for event in events if event["type"] in ("action", "answer")}
    replies = [event["step"] for event in events if event["type"] == "reply"]
    if len(replies) >= MAX_FORMAT_ERRORS and not readable.intersection(replies[-MAX_FORMAT_ERRORS:]):
        return None, StopReason.FORMAT_ERRORS.value
    return None, StopReason.TTL.value


def priced(events: Sequence[dict], model: str, backend: str) -> Cost | None:
    """What the calls in `events` cost at list price (models/prices.py); None when one of them has no listed price,
    or, on a billed service, its tokens were counted here. A call is priced as the model asked for; as the model
    the reply names only when the one asked for is an alias with no price of its own (gemini-flash-latest): a
    server's word never makes a listed model cheaper or dearer."""
    counted_here = any(event.get("counted_locally") for event in events if event["type"] == "usage")
    if counted_here and not backend_record(backend).free:
        return None
    calls = [(priced_as(model, e.get("answered_by")), e["input_tokens"], e.get("cached_tokens", 0), e["output_tokens"])
             for e in events if e["type"] == "usage"]
    return cost_of(calls, backend)


def priced_as(asked: str, answered_by: str | None) -> str:
    """The model a call is priced as: the one asked for, or for an alias (a name ending in `latest`, which has no
    price of its own) the one the reply says answered."""
    if not answered_by or not asked.removeprefix("models/").endswith("latest"):
        return asked
    try:
        return asked if price_of(asked) is not None else answered_by
    except ModelConfigError:  # a price file that cannot be read: nothing is priced (cost_of), and the line says why
        return asked


def call_seconds(before: dict | None, usage: dict) -> float | None:
    """How long a model call took: from the event recorded just before it (its context) to its usage, which is
    recorded as the call returns; None when the trace holds no times for them."""
    if before is None:
        return None
    start, end = before.get("t"), usage.get("t")
    if start.__class__ not in (int, float) or end.__class__ not in (int, float):
        return None
    return round(max(0.0, end - start), 3)


def summarise(events: Sequence[dict]) -> dict:
    """The counts of a query, read from its events: the one place they are computed."""
    usage, context, steps, calls, summaries, acted, local = Usage(), Context(), 0, 0, 0, set(), False
    temperatures, seconds, before = [], [], None
    for event in events:
        kind = event["type"]
        if kind == "usage":
            calls += 1
            seconds.append(call_seconds(before, event))
            local = local or event.get("counted_locally", False)
            if event.get("temperature") not in temperatures:
                temperatures.append(event.get("temperature"))
            summaries += event["purpose"] == "summary"
            usage.input_tokens += event["input_tokens"]
            usage.output_tokens += event["output_tokens"]
            usage.cached_input_tokens += event.get("cached_tokens", 0)
        elif kind == "context":
            tokens, totals = event["tokens"], context.totals
            for bucket, count in tokens.items():
                totals[bucket] = totals.get(bucket, 0) + count
            context.peak = max(context.peak, sum(tokens.values()))
            context.counter = event["counter"]
        elif kind == "action":
            acted.add(event["step"])
        elif kind == "observation" and event["step"] in acted:  # not the answer to an unreadable reply
            steps += 1
        before = event
    return dict(steps=steps, model_calls=calls, summary_calls=summaries, usage=usage, context=context,
                counted_locally=local, temperatures=temperatures, call_seconds=seconds)


def unreadable_replies(events: Sequence[dict]) -> int:
    """How many of a query's replies held neither an action nor an answer (each was answered with an error)."""
    read = {event["step"] for event in events if event["type"] in ("action", "answer")}
    return sum(1 for event in events if event["type"] == "reply" and event["step"] not in read)


ECHOED = 40  # characters of a tool's error an answer repeats word for word that make it only a repetition
ECHO_SCAN = 1_000  # characters of an answer and of an error compared (the comparison's time grows with both)


def echoed_error(events: Sequence[dict]) -> str | None:
    """The tool's error a query's answer only repeats, or None: such an answer says the question was not answered.
    Repeated whole (`Answer: Error: there is no tool named 'sqrt'`), or, when that error was the last observation
    before the answer, in a stretch of ECHOED characters or more word for word behind words of its own (`Answer: It
    is undefined: a word, not a number: write the calculation with numbers and operators only, ...`, the calculator's
    refusal of `calculate("hot")`); what the error quotes of the model's own call does not count."""
    answer, _ = outcome(events)
    said = " ".join((answer or "").split())[:ECHO_SCAN]
    observations = [" ".join(e.get("text", "").split())[:ECHO_SCAN] for e in events if e["type"] == "observation"]
    errors = [seen for seen in observations if seen.lower().startswith("error")]
    if not said or not errors:
        return None
    if said.lower().startswith("error"):
        whole = next((seen for seen in errors if said in seen or seen in said), None)
        if whole:
            return whole
    last = observations[-1]
    body = re.sub(r"'[^']*'", "", last.partition(":")[2])  # the model's own words, quoted back to it, set aside
    if last in errors and SequenceMatcher(None, said, body, autojunk=False).find_longest_match().size >= ECHOED:
        return last
    return None
