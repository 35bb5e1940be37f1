"""One retry and deadline policy for every network backend, and the one-line description of its events.

- Up to 4 attempts. Retried: HTTP 408, 429, 500, 502, 503, 504 and connection failures. A wait the server asks
  for (Gemini's RetryInfo.retryDelay, HTTP Retry-After) is honoured when it is at most 60 s; a longer one
  fails at once, saying how long. A quota that is spent for the day is not retried at all.
- TINYREACT_CALL_DEADLINE (seconds, default 120) bounds the whole call: every attempt, every wait. Each
  attempt runs in a worker thread and the caller waits for it at most until the deadline, so a server that
  sends one byte every few seconds cannot hold the run; a call the deadline ends is not retried.
- Every retry is reported through `on_event("retry", …)` before its wait, so the user sees it and the
  trace records it; `describe` turns such an event into the line the user reads.

`sleep` and `clock` are module attributes so that tests can swap them and check a requested wait
without waiting it.
"""
import email.utils
import queue
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

import settings
from models import ModelConfigError, ModelError, backend_record

ATTEMPTS = 4
# 408 too: "Your request timed out" (https://openrouter.ai/docs/api/reference/errors-and-debugging)
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_SERVER_WAIT = 60.0  # seconds: a longer wait asked by the server fails at once instead
DEFAULT_DEADLINE = 120.0
MAX_DEADLINE = 86_400  # seconds; far longer would overflow the waits (threading.TIMEOUT_MAX, time_t)

sleep = time.sleep
clock = time.monotonic
T = TypeVar("T")


class Deadline:
    """The moment a model call must have ended by, from TINYREACT_CALL_DEADLINE."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = clock() + seconds

    def remaining(self) -> float:
        return self.ends - clock()


def call_deadline() -> float:
    """TINYREACT_CALL_DEADLINE in seconds (default 120); ModelConfigError unless a number above 0, at most a day."""
    try:
        return float(settings.from_environment("TINYREACT_CALL_DEADLINE", DEFAULT_DEADLINE, 0, MAX_DEADLINE,
                                               above=True, seconds=True))
    except ValueError as problem:
        raise ModelConfigError(str(problem)) from None


class DeadlineExceeded(ModelError):
    """The call was still running when TINYREACT_CALL_DEADLINE passed; it is not retried."""


@dataclass(eq=False)
class Retryable(Exception):
    """One failed attempt that another attempt may fix, as a backend reports it to `run`."""
    status: int | None  # the HTTP status; None for a connection failure
    reason: str  # "UNAVAILABLE", "Service Unavailable", "connection refused"…
    message: str  # the server's or the library's words, redacted
    wait: float | None = None  # seconds the server asked for, if it did

    def __str__(self) -> str:
        head = f"{self.status} {self.reason}" if self.status else self.reason
        return f"{head}: {self.message}" if self.message else head


class Channel:
    """How an attempt, running in a worker thread, hands text and events to the caller's thread."""

    def __init__(self):
        self.items: queue.SimpleQueue = queue.SimpleQueue()
        self.shown = False  # some text reached the user: a retry must say the reply starts over

    def text(self, piece: str) -> None:
        if piece:
            self.items.put(("text", piece, {}))

    def event(self, type: str, **fields) -> None:
        self.items.put(("event", type, fields))


class _Worker(threading.local):
    deadline: Deadline | None = None
    stop: threading.Event | None = None


_worker = _Worker()


def abandoned() -> bool:
    """True in a worker whose caller stopped waiting (the deadline passed, or Ctrl-C): readers check it
    between chunks and stop, so an abandoned worker does not keep reading a slow server."""
    return _worker.stop is not None and _worker.stop.is_set()


def read_timeout(default: float) -> float:
    """A socket timeout for the current worker: never past its deadline."""
    if _worker.deadline is None:
        return default
    return max(0.001, min(default, _worker.deadline.remaining()))


ABANDONED: list[threading.Thread] = []  # workers left running at their deadline


def abandoned_running() -> bool:
    """Whether a model call abandoned at its deadline is still running in its worker thread."""
    return any(worker.is_alive() for worker in ABANDONED)


def within(deadline: Deadline, work: Callable[[Channel], T], where: str,
           on_text: Callable[[str], None] | None, on_event: Callable[..., None] | None, channel: Channel) -> T:
    """Run `work(channel)` in a worker thread; return its result, or raise DeadlineExceeded when the deadline
    passes first. Text and events the worker sends arrive here, in the caller's thread, as they happen."""
    outcome: dict = {}
    stop = threading.Event()

    def run_work() -> None:
        _worker.deadline, _worker.stop = deadline, stop
        try:
            outcome["value"] = work(channel)
        except BaseException as error:  # handed to the caller's thread, which raises it
            outcome["error"] = error
        finally:
            channel.items.put(("done", "", {}))

    worker = threading.Thread(target=run_work, name="model call", daemon=True)
    worker.start()
    try:
        while True:
            try:
                kind, value, fields = channel.items.get(timeout=max(deadline.remaining(), 0.0))
            except queue.Empty:
                ABANDONED.append(worker)
                raise DeadlineExceeded(f"{where} did not finish within TINYREACT_CALL_DEADLINE "
                                       f"({deadline.seconds:g} s); the call was abandoned") from None
            if kind == "done":
                break
            if kind == "text":
                channel.shown = True
                if on_text:
                    on_text(value)
            elif on_event:
                on_event(value, **fields)
    finally:
        stop.set()  # whatever happened here, the worker stops at its next chunk
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run(attempt: Callable[[Channel], T], *, backend: str, where: str,
        on_text: Callable[[str], None] | None = None, on_event: Callable[..., None] | None = None) -> T:
    """Call `attempt(channel)` until it returns, retrying what it raises as Retryable, within the call deadline.

    `where` names the model and URL in error messages. A Retryable raised after some text was shown is
    retried as a whole call, and its retry event says `restart_stream=True`."""
    deadline = Deadline(call_deadline())
    name = backend_record(backend).label
    for number in range(1, ATTEMPTS + 1):
        channel = Channel()
        try:
            return within(deadline, attempt, f"{name} ({where})", on_text, on_event, channel)
        except Retryable as failure:
            if failure.wait is not None and failure.wait > MAX_SERVER_WAIT:
                raise ModelError(f"{name} ({where}) failed: {failure}, and asks to wait {failure.wait:.0f} s "
                                 f"(more than {MAX_SERVER_WAIT:.0f} s): try again later") from None
            if number == ATTEMPTS:
                raise ModelError(f"{name} ({where}) failed: {failure} — gave up after {ATTEMPTS} attempts") from None
            wait = failure.wait if failure.wait is not None else backoff(number)
            if wait >= deadline.remaining():
                raise DeadlineExceeded(f"{name} ({where}) failed: {failure}; waiting {wait:.1f} s to try again would "
                                       f"pass TINYREACT_CALL_DEADLINE ({deadline.seconds:g} s)") from None
            if on_event:
                on_event("retry", backend=backend, status=failure.status, reason=failure.reason,
                         message=failure.message, attempt=number + 1, attempts=ATTEMPTS, wait=round(wait, 2),
                         restart_stream=channel.shown)
            sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def retry_after(value: str | None) -> float | None:
    """Seconds from an HTTP Retry-After header: a number of seconds or an HTTP date,
    https://www.rfc-editor.org/rfc/rfc9110#field.retry-after"""
    if not value:
        return None
    value = value.strip()
    if re.fullmatch(r"\d{1,12}(\.\d{1,6})?", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError, IndexError):  # no date, or one past what a datetime holds
        return None


def backoff(number: int) -> float:
    """About 1, 2, 4 s before attempts 2, 3, 4, with jitter so that many clients do not retry in step."""
    base = 2.0 ** (number - 1)
    return base + random.uniform(0, base / 4)


def describe(event: dict) -> str:
    """The one line the user reads for an event (a dict with "type" and the event's fields, as the trace
    stores it), e.g. `Gemini 503 UNAVAILABLE — attempt 2/4 in 2.3 s`."""
    type, fields = event["type"], event
    name = backend_record(fields["backend"]).label if "backend" in fields else "model"
    if type == "retry":
        what = f"{fields['status']} {fields['reason']}" if fields.get("status") else fields.get("reason", "failed")
        line = f"{name} {what} — attempt {fields['attempt']}/{fields['attempts']} in {fields['wait']:.1f} s"
        return line + (" (the reply starts over)" if fields.get("restart_stream") else "")
    if type == "config_fallback":
        choose = f" (set {fields['variable']} to choose)" if fields.get("variable") else ""
        return (f"{name} did not accept {fields['field']} for {fields.get('model', 'this model')}: trying again "
                f"without it{choose} — {fields['message']}")
    if type == "reasoning":
        return fields.get("text", "")
    return f"{name}: {type} {fields}"
