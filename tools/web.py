"""One GET for every tool that calls a web API: a deadline for the whole call and a cap on the answer's size.

`requests` times out each connect and each read, not the call: a server that sends one byte a second
never trips a read timeout, and a 300 MB answer is read whole. So the request runs in a worker thread
that reads the body as it arrives and stops at MAX_BYTES, while the caller waits at most DEADLINE_SECONDS
for it, whatever the server does (a slow name lookup, slow headers, a slow body). Both limits are module
constants, read at each call, so tests can lower them.
"""
import json
import queue
import threading
import time
from dataclasses import dataclass

DEADLINE_SECONDS = 10  # for the whole call: connecting, waiting, reading
MAX_BYTES = 4_000_000  # of the answer's body, after decompression
CHUNK_BYTES = 65_536


class TooLarge(Exception):
    """The answer passed MAX_BYTES; reading stopped there."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def json(self):
        """The body parsed as JSON; ValueError when it is not JSON."""
        return json.loads(self.body)


def get(url: str, params: dict | None = None, headers: dict | None = None) -> Answer:
    """GET `url` and read its whole answer, within DEADLINE_SECONDS and MAX_BYTES.

    Raises requests.Timeout when the deadline passes, TooLarge when the body passes MAX_BYTES, and another
    requests.RequestException when the server cannot be reached or the answer breaks off.
    """
    import requests  # imported here so that `agent.py --help` stays fast

    seconds, limit = DEADLINE_SECONDS, MAX_BYTES
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
        raise requests.Timeout(f"no complete answer within {seconds:g} seconds") from None
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
