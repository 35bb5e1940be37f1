"""How the Gemini SDK's HTTP is held to the project's limits: httpx hooks that keep every socket wait within the
call's deadline, stop reading a body the caller gave up on, and decode gzip and deflate here, a chunk at a time, so
no body grows past MAX_RESPONSE_BYTES as decoded, and take keep-alive comments out of a stream of events, which the
SDK cannot read. models/services/gemini.py installs them on its client.
"""
import re
import zlib

from models import MAX_RESPONSE_BYTES
from models.services import retry


def bound_by_deadline(request) -> None:
    """httpx request hook: no socket wait (connect, read, write) may reach past the call's deadline."""
    timeouts = request.extensions.get("timeout") or {}
    request.extensions["timeout"] = {name: retry.read_timeout(value or retry.DEFAULT_DEADLINE)
                                     for name, value in timeouts.items()}


class _Decoder:
    """gzip or deflate, decoded a chunk at a time to at most `limit` bytes each; deflate as HTTP servers send it,
    with a zlib header or without one (raw), as httpx reads it too."""

    def __init__(self, encoding: str):
        self.encoding, self.inner, self.started = encoding, zlib.decompressobj(zlib.MAX_WBITS | 32), False

    def decompress(self, chunk: bytes, limit: int) -> bytes:
        try:
            out = self.inner.decompress(chunk, limit)
        except zlib.error:
            if self.started or self.encoding != "deflate":
                raise
            self.inner = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, no header
            out = self.inner.decompress(chunk, limit)
        self.started = True
        return out


# How lines of server-sent events end (https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-
# stream): CRLF, LF or CR. A line that begins with a colon is a comment, which servers and proxies send to keep a quiet
# connection open.
_LINE_END = re.compile(rb"\r\n|\r|\n")


class _Comments:
    """Takes the comment lines out of a stream of events, a chunk at a time. The SDK reads every line but `data:` as
    JSON: a keep-alive ended the call at once as "not JSON", where a stream kept open should be waited on as a
    silent one is (until its events come, or the deadline). Lines are passed on as they end, each ended with LF."""

    def __init__(self):
        self.line = bytearray()  # the line being read, not ended yet
        self.after_cr = False  # the last chunk ended with CR: an LF first in this one is the same line end

    def feed(self, chunk: bytes) -> bytes:
        if self.after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self.after_cr = chunk.endswith(b"\r")
        first, *rest = _LINE_END.split(chunk)
        self.line += first
        if not rest:
            return b""
        ended, self.line = [bytes(self.line), *rest[:-1]], bytearray(rest[-1])
        return b"".join(line + b"\n" for line in ended if not line.startswith(b":"))

    def end(self) -> bytes:
        """The last line, which no line end closed (a last event may have none)."""
        return b"" if self.line.startswith(b":") else bytes(self.line)


class Unread(Exception):
    """A response body the hook below stopped reading: said as a ModelError naming the model, never retried."""


def read_until_abandoned(response) -> None:
    """httpx response hook: the body is read chunk by chunk, decoded here (gzip, deflate), and stopped once the
    caller stopped waiting, so a server that sends one byte every few seconds does not keep an abandoned worker
    busy, or once it passes MAX_RESPONSE_BYTES as decoded, so a small gzip body cannot inflate to gigabytes. A
    stream of events (asked for with alt=sse) loses its comment lines."""
    import httpx2

    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = _Decoder(encoding)
        del response.headers["content-encoding"]  # decoded here: httpx must not decode it again
    elif encoding in ("", "identity"):
        decoder = None
    else:
        raise Unread(f"sent a body encoded as {encoding[:40]!r}, which is not read")

    comments = _Comments() if response.request.url.params.get("alt") == "sse" else None

    class Checked(httpx2.SyncByteStream):
        def __init__(self, stream):
            self.stream, self.size = stream, 0

        def __iter__(self):
            for chunk in self.stream:
                if retry.abandoned():
                    raise httpx2.ReadError("the caller stopped waiting for this reply")
                try:
                    chunk = decoder.decompress(chunk, MAX_RESPONSE_BYTES - self.size + 1) if decoder else chunk
                except zlib.error:
                    raise Unread(f"sent a {encoding} body that does not decode") from None
                self.size += len(chunk)
                if self.size > MAX_RESPONSE_BYTES:
                    raise Unread(f"sent a reply of more than {MAX_RESPONSE_BYTES:,} bytes"
                                 f"{' once decoded' if decoder else ''}: stopped reading")
                yield comments.feed(chunk) if comments else chunk
            if comments:
                yield comments.end()

        def close(self):
            self.stream.close()

    response.stream = Checked(response.stream)
