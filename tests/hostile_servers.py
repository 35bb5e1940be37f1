"""Loopback servers that misbehave on purpose, for the tools' deadline and size cap.

- Dripping(fake): answers exactly what `fake` (a FakeWikipedia or FakeOpenMeteo) would, one byte every
  `interval` seconds: the body only, or the status line and headers too.
- Flooding(size): answers every request with a MediaWiki-shaped JSON body of `size` bytes (one enormous
  extract), with or without a Content-Length, or gzip-compressed; it counts the bytes it managed to send.
"""
import threading
import time
import zlib

from servers import Loopback


class Dripping(Loopback):
    def __init__(self, fake: Loopback, interval: float = 0.1, headers_too: bool = False):
        super().__init__()
        self.fake, self.interval, self.headers_too = fake, interval, headers_too
        self.stopped = threading.Event()
        owner, handler = self, self._server.RequestHandlerClass

        class DrippingHandler(handler):
            def _serve(self, body: bytes):
                self.wfile = _DripWriter(self.wfile, owner)
                super()._serve(body)

        self._server.RequestHandlerClass = DrippingHandler

    def handle(self, request):
        return self.fake.handle(request)

    def __exit__(self, *exc):
        self.stopped.set()  # ends the handlers still dripping
        super().__exit__(*exc)


class _DripWriter:
    """Writes through to the socket one byte at a time; the first write (the status line and headers) at once,
    unless the server drips those too."""

    def __init__(self, wfile, server: Dripping):
        self.wfile, self.server, self.writes = wfile, server, 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        if self.writes == 1 and not self.server.headers_too:
            self.wfile.write(data)
            return
        for i in range(len(data)):
            if self.server.stopped.wait(self.server.interval):
                return
            try:
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
            except OSError:  # the client hung up: the point of the test
                return

    def flush(self) -> None:
        self.wfile.flush()


class Flooding(Loopback):
    """mode: "declared" (a Content-Length of `size`), "undeclared" (the body ends when the connection closes),
    or "gzip" (a small compressed body that decompresses to `size` bytes)."""

    def __init__(self, size: int, mode: str = "declared"):
        super().__init__()
        self.size, self.mode, self.sent = size, mode, 0
        owner, handler = self, self._server.RequestHandlerClass

        class FloodingHandler(handler):
            def _serve(self, body: bytes):
                owner.requests.append({"method": self.command, "path": self.path})
                owner.flood(self)

        self._server.RequestHandlerClass = FloodingHandler

    def flood(self, handler) -> None:
        pieces = self._body()
        if self.mode == "gzip":
            packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: with a gzip header, as Content-Encoding: gzip needs
            pieces = [packer.compress(piece) for piece in pieces] + [packer.flush()]
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        if self.mode == "gzip":
            handler.send_header("Content-Encoding", "gzip")
        if self.mode != "undeclared":
            handler.send_header("Content-Length", str(sum(map(len, pieces))))
        handler.end_headers()
        try:
            for piece in pieces:
                handler.wfile.write(piece)
                self.sent += len(piece)
        except OSError:  # the client stopped reading and hung up
            pass

    def _body(self) -> list[bytes]:
        """`{"batchcomplete": "", "query": {"pages": {"1": {... "extract": "aaaa…"}}}}`, `size` bytes in 1 MB pieces."""
        head = b'{"batchcomplete": "", "query": {"pages": {"1": {"pageid": 1, "ns": 0, "title": "Flood", "extract": "'
        tail = b'"}}}}'
        filler = self.size - len(head) - len(tail)
        piece = b"a" * 1_000_000
        return [head] + [piece] * (filler // len(piece)) + [b"a" * (filler % len(piece)), tail]


def elapsed(function, *args) -> tuple[object, float]:
    """function(*args) and the seconds it took."""
    started = time.monotonic()
    result = function(*args)
    return result, time.monotonic() - started


def seconds_beyond(reference, function) -> tuple[object, float]:
    """function()'s result and the seconds it took beyond reference(), the same code path against a server that
    answers at once: what a busy machine adds to both (a first import, a tokenizer read once, a slow scheduler) is
    not counted against the deadline under test. reference() runs once to warm up, then just before and just after
    function(); the quicker of those two is taken, so that a pause in one of them loosens nothing."""
    reference()
    _, before = elapsed(reference)
    result, seconds = elapsed(function)
    _, after = elapsed(reference)
    return result, seconds - min(before, after)
