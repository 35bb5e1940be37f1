"""--otel: the spans views/telemetry.py reads from a trace, sent to an OTLP/HTTP endpoint through the OpenTelemetry
SDK, one trace a question: live, each question as it stops, or a whole saved trace at its recorded times.

The SDK and its OTLP exporter are an optional install (requirements-otel.txt), imported here only, and only when a
run asks for them. Where the spans go is the SDK's to read, from the standard variables: OTEL_EXPORTER_OTLP_ENDPOINT
(or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME. An endpoint that is down or
slow never holds up the run: spans leave in batches from the SDK's own thread, a request gives up after
REQUEST_SECONDS, and at the end the run waits at most CLOSE_SECONDS for what is left, not at all once the endpoint
has failed; what could not be sent is said in one line, while the SDK's own log lines are kept off the terminal.
Sending a saved trace is all `--from TRACE --otel` does: it waits longer (SENDING_SECONDS), and through retries, and
its ids are made from its content, so that sending it again is the same trace, not a copy.
Every text is blanked of secrets once more (redaction.py: the API keys, and the values of the headers the spans are
sent with) before it leaves.
"""
import hashlib
import json
import logging
import os
import threading
import time
import uuid
from typing import Callable, Mapping, Sequence

from redaction import blanked, redacted_fields, secrets, shown_url
from views.telemetry import CONVENTIONS, Span, question_spans

INSTALL = "pip install -r requirements-otel.txt"
REQUEST_SECONDS = 5.0  # one export, its retries included, in the background
CLOSE_SECONDS = 0.6  # what a run waits at its end for its last spans to leave (a round trip, or a few)
SENDING_SECONDS = 10.0  # what sending a saved trace waits for its spans to leave
BATCH_MILLIS = 500  # how long an ended span waits for others to go with it
CONTENT_BATCH = 32  # spans in one request when they carry message content (a whole context each)
QUEUE_SPANS = 1024  # spans of a saved trace handed over before waiting for them to leave (the SDK's queue holds 2,048)
# attributes a span keeps (the SDK's default is 128): a model call's content holds two a message, up to
# views.telemetry.FLAT_LIMIT messages
MAX_ATTRIBUTES = 1024


def missing() -> str | None:
    """What to install for --otel, in one line; None when the SDK and its OTLP/HTTP exporter are there."""
    try:
        import opentelemetry.sdk.trace  # noqa: F401
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
    except ImportError:
        return f"--otel needs the OpenTelemetry SDK and its OTLP/HTTP exporter: {INSTALL}"
    return None


def endpoint() -> str:
    """Where the spans go, as the SDK reads it, shown without a user and password."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    whole = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return shown_url(traces or (whole.rstrip("/") + "/v1/traces" if whole else "http://localhost:4318/v1/traces"))


class OtlpExport:
    """One run's exporter: `follow(header)` gives a trace's on_event that sends each question when it stops,
    `trace(header, events)` sends a finished trace, `close()` waits a little for the rest and says what was lost."""

    def __init__(self, count: Callable[[str], int], content: bool = False, patient: bool = False):
        """`count` counts the tokens of a part a policy dropped; `content` sends message content; `patient` waits
        SENDING_SECONDS at the end, through the endpoint's transient failures, where a run waits CLOSE_SECONDS."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.count, self.content, self.patient = count, content, patient
        self._log = _KeptLog()
        self._exporter = _Counted(OTLPSpanExporter(timeout=REQUEST_SECONDS, session=_redirects_refused()))
        # a batch of spans carrying whole contexts is large: fewer to a request with content, so that none passes the
        # exporter's request size
        self._processor = BatchSpanProcessor(self._exporter, schedule_delay_millis=BATCH_MILLIS,
                                             max_export_batch_size=CONTENT_BATCH if content else 512)
        resource = Resource.create()
        if resource.attributes.get("service.name", "").startswith("unknown_service"):  # no OTEL_SERVICE_NAME
            resource = resource.merge(Resource({"service.name": "tinyreact"}))
        self._ids = _Ids()
        self._provider = TracerProvider(resource=resource, shutdown_on_exit=False, id_generator=self._ids,
                                        span_limits=SpanLimits(max_span_attributes=MAX_ATTRIBUTES))
        self._provider.add_span_processor(self._processor)
        self._tracer = self._provider.get_tracer("tinyreact",
                                                 schema_url=f"https://opentelemetry.io/schemas/{CONVENTIONS}")
        self._followers: list[_Follower] = []
        self.ended, self.unsampled, self.questions, self.problem = 0, 0, 0, None

    def follow(self, header: dict, sent: Mapping | None = None) -> Callable[[dict], None]:
        """An on_event for a live Trace: each question's spans are sent when its stop event arrives. `sent` is the
        Trace's own `sent`: what each call sent, by digest."""
        follower = _Follower(self, header, sent)
        self._followers.append(follower)
        return follower.add

    def trace(self, header: dict, events: Sequence[dict], origin: float | None = None,
              sent: Mapping | None = None, repeatable: bool = False) -> int:
        """Send every question of a finished trace; `origin` is when it began (seconds since the epoch), else it is
        taken to have ended just now; `sent`, what its calls sent, if it was run here (Trace.sent). `repeatable`
        (a saved trace): its trace, span and conversation ids are made from its content, so that a viewer given it
        twice has it once (Phoenix keeps a span whose id it has: a second send adds only what the first lost).
        Returns the number of questions sent."""
        if origin is None:
            last = next((event["t"] for event in reversed(events) if type(event.get("t")) in (int, float)), 0)
            origin = time.time() - last
        found = secrets()  # blanked before any text is cut, so that a cut through a secret cannot keep its rest
        events = [redacted_fields(dict(event), found) for event in events]  # a copy: nested values are rebuilt
        content = _digest(header, events) if repeatable else None
        conversation, questions, waiting = content[:32] if content else uuid.uuid4().hex, 0, 0
        for first, event in enumerate(events):
            if event["type"] != "question":
                continue
            made = self.question(header, events, first, conversation, origin, sent,
                                 f"{content} {first}" if content else None)
            questions, waiting = questions + (made > 0), waiting + made
            if waiting >= QUEUE_SPANS and not self._exporter.failed:  # the SDK's queue would drop the rest
                self._processor.force_flush(int(SENDING_SECONDS * 1000))
                waiting = 0
        return questions

    def question(self, header: dict, events: Sequence[dict], first: int, conversation: str, origin: float,
                 sent: Mapping | None = None, seed: str | None = None) -> int:
        """The spans of the question at events[first], made and sent; the number sent. A fault in making them is
        said at the end, and the run, or the other questions, go on: the spans are an extra. `seed`: the ids are
        made from it (else random)."""
        try:
            spans = question_spans(header, events, first, self.count, self.content, conversation, sent)
            self.send(spans, origin, seed)
        except Exception as problem:
            self.problem = self.problem or f"the spans of a question could not be made ({problem!r})"
            return 0
        return len(spans)

    def send(self, spans: list[Span], origin: float, seed: str | None = None) -> None:
        """One question's spans, handed to the SDK, which sends them from its own thread; their ids made from `seed`
        and each span's place among them, or random without one."""
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        found, made = secrets(), []
        for index, record in enumerate(spans):
            self._ids.seed = f"{seed} {index}" if seed else None  # read by the SDK as it starts this span
            parent = trace.set_span_in_context(made[record.parent]) if record.parent is not None else context.Context()
            span = self._tracer.start_span(blanked(record.name, found), context=parent,
                                           kind=SpanKind.CLIENT if record.client else SpanKind.INTERNAL,
                                           attributes=_clean(record.attributes, found),
                                           start_time=_nanoseconds(origin, record.start))
            for name, seconds, attributes in record.events:
                span.add_event(name, _clean(attributes, found), timestamp=_nanoseconds(origin, seconds))
            if record.error:
                span.set_attribute("error.type", record.error)
                span.set_status(Status(StatusCode.ERROR, record.error))
            made.append(span)
        self._ids.seed = None
        # a span the sampler (OTEL_TRACES_SAMPLER) did not record is never sent: counted apart, not as lost
        recorded = sum(span.is_recording() for span in made)
        for span, record in reversed(list(zip(made, spans))):  # children first, their question last
            span.end(end_time=_nanoseconds(origin, max(record.end, record.start)))
        self.ended, self.unsampled = self.ended + recorded, self.unsampled + len(made) - recorded
        self.questions += 1

    def close(self) -> str | None:
        """Send what a live trace still holds (a question cut short), wait at most CLOSE_SECONDS for the spans to
        leave, or until the endpoint fails (a run does not wait for it to come back), and say in one line what was
        not sent and why; None when everything was."""
        for follower in self._followers:
            follower.flush()
        settled = threading.Event()  # the last spans left, or the endpoint failed them

        def shut_down():
            self._provider.shutdown()  # sends what is left; its own wait is 30 s, hence the thread
            settled.set()

        def failed(final: bool) -> None:
            if final or not self.patient:
                settled.set()

        self._log.on_failure = failed
        closing = threading.Thread(target=shut_down, daemon=True)
        closing.start()
        settled.wait(SENDING_SECONDS if self.patient else CLOSE_SECONDS)
        self._exporter.shutdown()  # a retry still waiting gives up now, and the SDK's thread with it
        closing.join(0.05)
        if not closing.is_alive():  # else a request still under way may yet log: its lines stay kept, to the end
            self._log.detach()
        lost = self.ended - self._exporter.sent
        if self.problem:
            return self.problem
        if not self.ended:
            return (f"none of the {self.unsampled} spans was recorded (OTEL_TRACES_SAMPLER or OTEL_SDK_DISABLED "
                    "says so): none was sent"
                    if self.unsampled else "no question was asked: no span was sent")
        if not lost:
            return None
        return (f"{lost} of {self.ended} spans were not sent to {endpoint()} ({self._log.reason()}); "
                "the run itself is not affected")

    def sent(self) -> str:
        """What was sent, in a few words, for the line a run ends with."""
        left_out = f" ({self.unsampled} more not recorded, as OTEL_TRACES_SAMPLER says)" if self.unsampled else ""
        return (f"sent {self.ended} spans of {self.questions} question{'s' * (self.questions != 1)} to {endpoint()}"
                + left_out)


class _Follower:
    """A live trace's events as they come, each question sent when it stops (or when the next one starts, or at
    the end, if it was cut short)."""

    def __init__(self, export: OtlpExport, header: dict, sent: Mapping | None = None):
        self.export, self.header, self.conversation, self.sent = export, dict(header), uuid.uuid4().hex, sent
        self.events: list[dict] = []
        self.first: int | None = None  # where the question under way is
        self.origin: float | None = None

    def add(self, event: dict) -> None:
        if self.origin is None:
            self.origin = time.time() - (event["t"] if type(event.get("t")) in (int, float) else 0)
        if event["type"] == "question":
            self.flush()
        self.events.append(event)
        if event["type"] == "question":
            self.first = len(self.events) - 1
        elif event["type"] == "stop":
            self.flush()

    def flush(self) -> None:
        if self.first is None:
            return
        first, self.first = self.first, None
        self.export.question(self.header, self.events, first, self.conversation, self.origin, self.sent)


class _Ids:
    """The SDK's IdGenerator, by the methods it calls (the SDK is imported only for --otel, so not subclassed here):
    the SDK's random ids, or, while `seed` is set, ids made from it: the same seed, the same ids."""

    def __init__(self):
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

        self.random, self.seed = RandomIdGenerator(), None

    def generate_trace_id(self) -> int:
        return self.random.generate_trace_id() if self.seed is None else _hashed("trace " + self.seed, 16)

    def generate_span_id(self) -> int:
        return self.random.generate_span_id() if self.seed is None else _hashed("span " + self.seed, 8)

    def is_trace_id_random(self) -> bool:
        return self.seed is None


def _hashed(text: str, size: int) -> int:
    """An id of `size` bytes made from `text`; never 0, which OpenTelemetry reads as no id."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big") or 1


def _digest(header: dict, events: Sequence[dict]) -> str:
    """A saved trace's content in 64 hex digits: the same file, the same digest; any change, another."""
    content = json.dumps([header, list(events)], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(content.encode(errors="backslashreplace")).hexdigest()


class _Counted:
    """The OTLP exporter, counting the spans it sent and those it could not."""

    def __init__(self, exporter):
        self.exporter, self.sent, self.failed, self.closed = exporter, 0, 0, False

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            result = self.exporter.export(spans)
        except Exception:  # the SDK logs it; here it counts
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self):
        """Once: the processor calls it again when it has finished, after `close` has."""
        if not self.closed:
            self.closed = True
            self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _KeptLog(logging.Handler):
    """The SDK's log lines (an export that failed, a retry), kept from the terminal: the run says them once, at the
    end, in its own words."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        # told of each line, and whether it is a final failure (not a retry): closing stops waiting at one
        self.on_failure: Callable[[bool], None] = lambda final: None
        self._logger = logging.getLogger("opentelemetry")
        self._propagated = self._logger.propagate
        self._logger.addHandler(self)
        self._logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(record.getMessage())
        except Exception:  # a message whose arguments do not format: its template says enough
            self.lines.append(str(record.msg))
        self.on_failure(record.levelno >= logging.ERROR)

    def detach(self) -> None:
        self._logger.removeHandler(self)
        self._logger.propagate = self._propagated

    def reason(self) -> str:
        """Why spans were not sent, in a few words, from what the SDK logged."""
        said = " ".join(self.lines)
        if "refused" in said.lower():
            return "connection refused"
        if "a redirect" in said:
            return "the endpoint answered with a redirect, which is not followed: name the endpoint it points to"
        for line in self.lines:
            code = line.partition("code: ")[2].partition(",")[0]
            if code.isdigit():
                return f"the endpoint answered HTTP {code}"
        if "timed out" in said.lower() or "timeout" in said.lower():
            return "no answer in time"
        return "no answer within the wait at the end" if not self.lines else "the export failed"


# The variables that name a credential provider's session for the exporter: with one, its session is the exporter's.
CREDENTIAL_PROVIDERS = ("OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
                        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER")


def _redirects_refused():
    """The exporter's HTTP session, which takes a redirect for what it is: nothing delivered. The exporter follows no
    redirect, yet counts any status below 400 as sent, so an endpoint answering 307 had every span counted sent.
    None (the exporter's own session) when a credential provider names one."""
    import requests

    if any(os.environ.get(name) for name in CREDENTIAL_PROVIDERS):
        return None

    def refuse(response, *args, **kwargs):
        if 300 <= response.status_code < 400:
            raise requests.exceptions.HTTPError(f"answered {response.status_code}, a redirect")
    session = requests.Session()
    session.hooks["response"].append(refuse)
    return session


def _nanoseconds(origin: float, seconds: float) -> int:
    """A time as OTLP carries it, nanoseconds since the epoch in 64 bits: a forged date is held to that range."""
    nanoseconds = (origin + seconds) * 1e9
    return int(min(max(nanoseconds, 0), 2 ** 64 - 1)) if nanoseconds == nanoseconds else 0  # NaN: the epoch


def _clean(attributes: dict, found: list[str]) -> dict:
    """Attributes as OpenTelemetry takes them, every text blanked of secrets; a value of no kind it takes left out."""
    clean = {}
    for name, value in attributes.items():
        if isinstance(value, str):
            clean[name] = blanked(value, found) if found else value
        elif isinstance(value, bool) or isinstance(value, float):
            clean[name] = value
        elif isinstance(value, int):  # OTLP carries 64-bit integers: a larger sum (a forged trace's) goes as a float
            clean[name] = value if -2 ** 63 <= value < 2 ** 63 else float(value)
        elif isinstance(value, (tuple, list)) and all(isinstance(item, str) for item in value):
            clean[name] = tuple(blanked(item, found) if found else item for item in value)
    return clean
