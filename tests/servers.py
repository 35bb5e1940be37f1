"""Loopback HTTP servers that speak the shapes of the real APIs, so the real client code runs in tests.

- Loopback and Answer: the one server every fake and stand-in of the tests is built on (the model APIs' stand-ins
  are in tests/model_servers.py).
- FakeWikipedia: the MediaWiki `api.php` queries the `wikipedia` package makes.
- FakeOpenMeteo: `GET /v1/forecast?latitude=..&longitude=..&current=temperature_2m`.
Each records the requests it was sent.
"""
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


@dataclass
class Answer:
    """One HTTP answer: `chunks` are written one by one, `pause` seconds apart (a stream, or a slow drip)."""
    status: int = 200
    chunks: list[bytes] = field(default_factory=list)
    headers: dict = field(default_factory=dict)
    pause: float = 0.0

    @classmethod
    def json(cls, status: int, payload) -> "Answer":
        return cls(status, [json.dumps(payload).encode()], {"Content-Type": "application/json; charset=UTF-8"})


class Loopback:
    """An HTTP/1.0 server on 127.0.0.1 in a background thread, for every fake and stand-in of the tests. Subclasses
    implement `handle(request)`, returning an Answer, or (status, payload) for one JSON body (bytes are sent as they
    are). It records every request; a slow answer stops dripping when the server is closed."""

    def __init__(self):
        self.requests: list[dict] = []
        self.closing = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._serve(b"")

            def do_POST(self):
                self._serve(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _serve(self, body: bytes):
                url = urlparse(self.path)
                try:
                    parsed = json.loads(body) if body else None
                except ValueError:
                    parsed = body
                request = {"method": self.command, "path": url.path, "headers": dict(self.headers),
                           "query": {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()},
                           "body": parsed}
                owner.requests.append(request)
                answer = owner.handle(request)
                if isinstance(answer, tuple):
                    status, payload = answer
                    answer = Answer(status, [payload if isinstance(payload, bytes) else json.dumps(payload).encode()])
                try:
                    self.send_response(answer.status)
                    headers = {"Content-Type": "application/json; charset=UTF-8", **answer.headers}
                    headers.setdefault("Content-Length", str(sum(len(c) for c in answer.chunks)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    for number, chunk in enumerate(answer.chunks):
                        if number and answer.pause and owner.closing.wait(answer.pause):
                            return
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client closed the stream at its cut, or gave up: as a real server sees it

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True  # a handler still sleeping (a slow fake) must not hold up the test's end
        self._server.block_on_close = False
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # shutdown() waits for serve_forever to look at its flag, which it does once per poll: poll often, stop at once
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def handle(self, request: dict) -> "Answer | tuple[int, object]":
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()


# ------------------------------------------------------------------ Wikipedia (MediaWiki api.php)

class FakeWikipedia(Loopback):
    """pages: title -> {"extract": str, "coordinates": (lat, lon) | None, "options": [..] for a disambiguation page
    (and "html": the page's HTML as sent, in place of a list of the options)};
    an extract that is not text, and coordinates of any JSON value, are sent as they are.
    redirects: title -> target title. delay: seconds to wait before every answer. status: force an HTTP status."""

    def __init__(self, pages: dict, redirects: dict | None = None, delay: float = 0, status: int = 200):
        super().__init__()
        self.pages, self.redirects, self.delay, self.status = pages, redirects or {}, delay, status
        self.ids = {title: str(1000 + i) for i, title in enumerate(pages)}

    def handle(self, request):
        if self.delay and self.closing.wait(self.delay):
            return 503, b"closing"  # the test is over; nobody reads this
        if self.status != 200:
            return self.status, b"<html>Server error</html>"
        q = request["query"]
        if q.get("list") == "search":
            words = q["srsearch"].lower().split()
            text = {t: f"{t} {self.pages[t].get('extract', '')}".lower() for t in self.pages}
            hits = [t for t in self.pages if all(w in text[t] for w in words)]
            hits.sort(key=lambda t: q["srsearch"].lower() not in t.lower())
            return 200, {"batchcomplete": "",
                         "query": {"search": [{"ns": 0, "title": t} for t in hits[: int(q.get("srlimit", 10))]]}}
        title = q.get("titles", "")
        answer = {"batchcomplete": "", "query": {}}
        if title in self.redirects and "redirects" in q:
            answer["query"]["redirects"] = [{"from": title, "to": self.redirects[title]}]
            title = self.redirects[title]
        if title not in self.pages:
            answer["query"]["pages"] = {"-1": {"ns": 0, "title": title, "missing": ""}}
            return 200, answer
        data, pageid = self.pages[title], self.ids[title]
        page = {"pageid": int(pageid), "ns": 0, "title": title}
        prop = q.get("prop", "")
        if prop == "info|pageprops":
            page["fullurl"] = f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}"
            if "options" in data:
                page["pageprops"] = {"disambiguation": ""}
        elif prop == "extracts":
            extract = data.get("extract", "")
            if isinstance(extract, str):
                extract = " ".join(re.split(r"(?<=\.) ", extract)[: int(q.get("exsentences") or 10)])
            page["extract"] = extract
        elif prop == "coordinates" and data.get("coordinates"):
            lat, lon = data["coordinates"]
            page["coordinates"] = [{"lat": lat, "lon": lon, "primary": "", "globe": "earth"}]
        elif prop == "revisions":
            items = "".join(f'<li><a href="/wiki/{o}">{o}</a>, a meaning</li>' for o in data.get("options", []))
            page["revisions"] = [{"*": data.get("html") or f"<p>{title} may refer to:</p><ul>{items}</ul>"}]
        answer["query"]["pages"] = {pageid: page}
        return 200, answer


# ------------------------------------------------------------------ Open-Meteo

class FakeOpenMeteo(Loopback):
    """temperatures: (round(lat, 2), round(lon, 2)) -> °C; any other point reads `default`. `unit` and `when` are
    the reading's unit and time. Each is sent as it is given, whatever JSON value it is."""

    def __init__(self, temperatures: dict | None = None, default: float = 21.5, unit="°C", when="2026-11-29T23:45"):
        super().__init__()
        self.temperatures, self.default, self.unit, self.when = temperatures or {}, default, unit, when

    def handle(self, request):
        if request["path"] != "/v1/forecast":
            return 404, {"error": True, "reason": "Not Found"}
        q = request["query"]
        try:
            lat, lon = float(q["latitude"]), float(q["longitude"])
        except (KeyError, ValueError):
            return 400, {"error": True,
                         "reason": "Parameter 'latitude' and 'longitude' must have the same number of elements"}
        if not -90 <= lat <= 90:
            return 400, {"error": True, "reason": f"Latitude must be in range of -90 to 90°. Given: {lat}."}
        temperature = self.temperatures.get((round(lat, 2), round(lon, 2)), self.default)
        return 200, {
            "latitude": lat, "longitude": lon, "generationtime_ms": 0.02, "utc_offset_seconds": -21600,
            "timezone": "America/Chicago", "timezone_abbreviation": "GMT-6", "elevation": 3.0,
            "current_units": {"time": "iso8601", "interval": "seconds", "temperature_2m": self.unit},
            "current": {"time": self.when, "interval": 900, "temperature_2m": temperature},
        }


# ------------------------------------------------------------------ an OTLP/HTTP receiver

class FakeOtlp(Loopback):
    """Takes OTLP/HTTP trace exports (`POST /v1/traces`, an ExportTraceServiceRequest in protobuf), as a collector,
    Phoenix or Langfuse takes them: keeps each body as it came, and `spans` decodes them with opentelemetry-proto."""

    def __init__(self, status: int = 200):
        super().__init__()
        self.status, self.bodies = status, []

    def handle(self, request):
        if request["method"] != "POST" or request["path"] != "/v1/traces":
            return 404, b""
        body = request["body"]  # the bytes as sent: protobuf, which Loopback could not read as JSON
        self.bodies.append(body if isinstance(body, bytes) else json.dumps(body).encode())
        return self.status, b""

    @property
    def spans(self) -> list[dict]:
        """Every span received, in the order received: name, trace and span ids (hex), parent id (None for a root),
        kind, times (ns), status code, attributes, events, and its resource's attributes and its scope's schema."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        spans = []
        for body in self.bodies:
            for resource in ExportTraceServiceRequest.FromString(body).resource_spans:
                for scope in resource.scope_spans:
                    spans += [{"name": span.name, "trace": span.trace_id.hex(), "id": span.span_id.hex(),
                               "parent": span.parent_span_id.hex() or None, "kind": span.kind,
                               "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                               "status": span.status.code, "attributes": _otlp_values(span.attributes),
                               "events": [(event.name, _otlp_values(event.attributes)) for event in span.events],
                               "resource": _otlp_values(resource.resource.attributes), "schema": scope.schema_url}
                              for span in scope.spans]
        return spans


def _otlp_values(pairs) -> dict:
    return {pair.key: _otlp_value(pair.value) for pair in pairs}


def _otlp_value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_otlp_value(item) for item in value.array_value.values)
    return getattr(value, kind) if kind else None
