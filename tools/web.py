"""One GET for every tool that calls a web API: a deadline for each request, one for the whole tool call, and a cap
on the answer's size; and the checks a tool makes on the values an answer holds before it relays them.

`requests` times out each connect and each read, not the request: a server that sends one byte a second
never trips a read timeout, and a 300 MB answer is read whole. So the request runs in a worker thread
that reads the body as it arrives and stops at MAX_BYTES, while the caller waits at most DEADLINE_SECONDS
for it, whatever the server does (a slow name lookup, slow headers, a slow body).

A tool may make several requests in one call (the `wikipedia` package makes two to five for a summary), so a
tool marked with `call_deadline` also has CALL_DEADLINE_SECONDS for all of them together: each request gets
what is left of it, and when it runs out the tool's result is an `Error:` saying so, whatever the tool made of
the timeout. The limits are module constants, read at each call, so tests can lower them.
"""
import contextvars
import functools
import json
import math
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

DEADLINE_SECONDS = 10  # for one request: connecting, waiting, reading
# For one tool call, all its requests together: twice a request's deadline, so one slow answer and a few normal
# ones (a summary's page, redirect and extract requests, each well under a second from Wikipedia) still fit,
# while four slow ones, or a server that keeps a tool busy request after request, cannot hold a step longer.
CALL_DEADLINE_SECONDS = 20
MAX_BYTES = 4_000_000  # of the answer's body, after decompression
CHUNK_BYTES = 65_536
SHOWN_CHARS = 40  # of a bad value in an error: enough to recognise it, never a flood


class TooLarge(Exception):
    """The answer passed MAX_BYTES; reading stopped there."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def json(self):
        """The body parsed as JSON; ValueError when it is not JSON."""
        return json.loads(self.body)


@dataclass
class Call:
    """One call of a tool marked with `call_deadline`: when its requests must have ended, whether a request was
    stopped for that, and what the tool's reader keeps from one answer to the next (`kept`)."""
    tool: str
    seconds: float
    ends: float  # time.monotonic()
    ran_out: bool = False
    kept: dict = field(default_factory=dict)


_CALL: contextvars.ContextVar[Call | None] = contextvars.ContextVar("tool call", default=None)


def call_deadline(tool: Callable) -> Callable:
    """`tool` with one deadline, CALL_DEADLINE_SECONDS, for all the requests of each call; when a request is
    stopped by it, the call's result is an `Error:` naming the tool and the deadline. Name, signature and
    docstring stay the tool's, so the prompt does not change. A tool called by another keeps the caller's deadline."""

    @functools.wraps(tool)
    def within_deadline(*args, **kwargs):
        if _CALL.get() is not None:
            return tool(*args, **kwargs)
        seconds = CALL_DEADLINE_SECONDS
        call = Call(tool.__name__, seconds, time.monotonic() + seconds)
        token = _CALL.set(call)
        try:
            result = tool(*args, **kwargs)
        except Exception:
            if call.ran_out:  # whatever the tool made of the stopped request, the deadline is the news
                return deadline_passed(call)
            raise
        finally:
            _CALL.reset(token)
        return deadline_passed(call) if call.ran_out else result

    return within_deadline


def current_call() -> Call | None:
    """The tool call whose requests are being made now, or None outside one."""
    return _CALL.get()


def deadline_passed(call: Call) -> str:
    return (f"Error: {call.tool} ran out of time: its web requests took more than {call.seconds:g} seconds "
            "together, the deadline for one call. The service is slow now; try once more, or go on without it.")


def get(url: str, params: dict | None = None, headers: dict | None = None) -> Answer:
    """GET `url` and read its whole answer, within DEADLINE_SECONDS (or what is left of the call's deadline, when
    that is less) and MAX_BYTES.

    Raises requests.Timeout when the deadline passes, TooLarge when the body passes MAX_BYTES, and another
    requests.RequestException when the server cannot be reached or the answer breaks off.
    """
    import requests  # imported here so that `agent.py --help` stays fast

    call, seconds, limit = _CALL.get(), DEADLINE_SECONDS, MAX_BYTES
    left = call.ends - time.monotonic() if call else math.inf
    call_binds = left < seconds
    if call_binds:
        seconds = left
        if seconds <= 0:  # a tool that goes on asking after its deadline: nothing more is sent
            call.ran_out = True
            raise requests.Timeout(f"the call's {call.seconds:g}-second deadline has passed")
    deadline = time.monotonic() + seconds
    outcome = queue.Queue()

    def work():
        try:
            outcome.put(_download(url, params, headers, deadline, limit))
        except Exception as error:  # handed over to the caller, which raises it
            outcome.put(error)

    threading.Thread(target=work, daemon=True).start()  # daemon: a worker stuck on a dead server must not delay exit
    try:
        result = outcome.get(timeout=seconds)
    except queue.Empty:
        result = requests.Timeout(f"no complete answer within {seconds:g} seconds")
    if isinstance(result, requests.Timeout) and call_binds:
        call.ran_out = True
    if isinstance(result, Exception):
        raise result
    return result


def _download(url: str, params: dict | None, headers: dict | None, deadline: float, limit: int) -> Answer:
    """The request itself, in the worker: it stops reading at the deadline too, so a dripping server cannot keep it."""
    import requests
    import urllib3

    timeout = max(deadline - time.monotonic(), 0.001)
    with requests.get(url, params=params, headers=headers, timeout=(timeout, timeout), stream=True) as response:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise TooLarge(f"answer was larger than {limit:,} bytes; reading stopped there")
        body = bytearray()
        while time.monotonic() < deadline:
            try:
                # read1 returns whatever has arrived (up to a chunk), decompressed; read() would wait for a full chunk
                chunk = response.raw.read1(CHUNK_BYTES, decode_content=True)
            except urllib3.exceptions.HTTPError as error:
                raise requests.ConnectionError(f"the answer broke off: {error}") from None
            if not chunk:
                return Answer(response.status_code, bytes(body))
            body += chunk
            if len(body) > limit:
                raise TooLarge(f"answer was larger than {limit:,} bytes; reading stopped there")
        raise requests.Timeout("the deadline passed while reading")  # the caller has stopped waiting by now


# ------------------------------------------------------------------ the values an answer holds

def number_problem(value, low: float, high: float) -> str | None:
    """What keeps `value`, read from JSON, from being a number from `low` to `high`, worded to follow "that"
    ("is not a number"); None when it is one. A bool is not a number, nor is a number written as text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "is not a number"
    if isinstance(value, float) and not math.isfinite(value):  # NaN and Infinity, which Python's JSON reads
        return "is not a finite number"
    if not low <= value <= high:  # exact for integers of any length: none is converted
        return f"is outside {low:g} to {high:g}"
    return None


def text_problem(value, longest: int) -> str | None:
    """What keeps `value` from being a text of 1 to `longest` characters, worded like number_problem's; None when
    nothing does."""
    if not isinstance(value, str):
        return "is not text"
    if not value.strip():
        return "is empty"
    if len(value) > longest:
        return f"is {len(value):,} characters long"
    return None


def shown(value) -> str:
    """`value` as JSON writes it (`true`, `NaN`, `"nan"`, `{"x": 1}`), cut to SHOWN_CHARS characters."""
    if isinstance(value, str):
        value = value[:SHOWN_CHARS]  # cut before it is quoted, so a text of millions of characters is not copied whole
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return cut(text)


def cut(text: str) -> str:
    """`text` as it is when it has at most SHOWN_CHARS characters, else its start and an ellipsis."""
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"
