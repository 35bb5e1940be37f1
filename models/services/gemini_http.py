"""How the Gemini SDK's HTTP is held to the project's limits: httpx hooks that keep every socket wait within the
call's deadline, stop reading a body the caller gave up on, and decode gzip and deflate here, a chunk at a time, so
no body grows past MAX_RESPONSE_BYTES as decoded. models/services/gemini.py installs them on its client.
"""
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


class Unread(Exception):
    """A response body the hook below stopped reading: said as a ModelError naming the model, never retried."""


def read_until_abandoned(response) -> None:
    """httpx response hook: the body is read chunk by chunk, decoded here (gzip, deflate), and stopped once the
    caller stopped waiting, so a server that sends one byte every few seconds does not keep an abandoned worker
    busy, or once it passes MAX_RESPONSE_BYTES as decoded, so a small gzip body cannot inflate to gigabytes."""
    import httpx2

    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = _Decoder(encoding)
        del response.headers["content-encoding"]  # decoded here: httpx must not decode it again
    elif encoding in ("", "identity"):
        decoder = None
    else:
        raise Unread(f"sent a body encoded as {encoding[:40]!r}, which is not read")

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
                yield chunk

        def close(self):
            self.stream.close()

    response.stream = Checked(response.stream)
