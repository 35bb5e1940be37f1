"""The ledger of calls sent through a provider's own engine (`--via batch|flex`): what each call sent, the batches it
went in and the files that carried it, and what came back, so that a run killed at any moment and started again picks
up its batches, or the flex calls it had not yet asked, and pays for no call twice.

Each call is named by its `custom_id`, the SHA-256 of its request body as planned (JSON with sorted keys, no
spaces), before any setting the server refused is left out of what is sent: the same question asked of the same
context is the same call. The run itself is named by the digest of its calls'
ids, written in the ledger's first line, so that a ledger is never read by another run.

The ledger is JSON Lines, appended one record a line, each flushed and synced before the step it records goes on,
by one run at a time (it is locked while a run holds it):
- {"format": "tinyreact-ledger", "version": 1, "run": digest, "service": "openai:gpt-5.6-luna"}: the header;
- {"type": "call", "id", "body"}: a call, written before it is sent;
- {"type": "submitting", "name", "ids"}: a batch about to be sent, under a name the service keeps (a file's name,
  a batch's display name), written before anything is uploaded: a run killed after the service took it finds it
  again by that name instead of sending it twice;
- {"type": "submitted", "name", "batch", "files"}: the batch's id and the ids of the files that carry it;
- {"type": "ended", "batch", "status", "files"}: the batch's last state and the files of its output and errors;
- {"type": "answer", "id", "batch", "response"}: a call's response body, as the service sent it;
- {"type": "failed", "id", "batch", "error"}: a call the batch could not answer, in the service's words;
- {"type": "reply", "id", "reply"}: a call asked on its own (`--via flex`), its reply as read (REPLY_FIELDS).
A last line cut off mid-write (the run killed while writing it) is skipped, as traces.py skips one, and taken off
the file before anything is appended; anything else that is not a ledger record is an error of one line.
"""
import errno
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Iterable

from files import read_input
from models import ModelReply

FORMAT = "tinyreact-ledger"
VERSION = 1
MAX_LEDGER_BYTES = 2_000_000_000  # tens of thousands of calls with their contexts and answers
TYPES = {"call": ("id", "body"), "submitting": ("name", "ids"), "submitted": ("name", "batch", "files"),
         "ended": ("batch", "status", "files"), "answer": ("id", "batch", "response"),
         "failed": ("id", "batch", "error"), "reply": ("id", "reply")}
# A flex call's reply as the ledger keeps it, each field with its type(s): a probe's call offers no tools, so there are
# no calls and no native parts to keep
REPLY_FIELDS = {"text": str, "input_tokens": int, "output_tokens": int, "thoughts_tokens": int, "cached_tokens": int,
                "model": (str, type(None)), "blocked": (str, type(None)), "finish": (str, type(None)),
                "usage_source": (str, type(None)), "temperature": (int, float, type(None))}


class LedgerError(ValueError):
    """The ledger cannot be used: damaged, of another run, of a newer TinyReAct, or no longer writable. Its message
    is one line."""


def custom_id(body: dict) -> str:
    """The call's name: the SHA-256 of its request body as JSON with sorted keys and no spaces."""
    return hashlib.sha256(canonical(body)).hexdigest()


def canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def run_digest(ids: Iterable[str]) -> str:
    """The run's name: the SHA-256 of its calls' ids, sorted, one a line."""
    return hashlib.sha256("\n".join(sorted(set(ids))).encode()).hexdigest()


@dataclass
class Batch:
    """One batch as the ledger knows it."""
    name: str
    ids: list[str]
    id: str | None = None  # None until the service said it took it
    files: dict = field(default_factory=dict)  # {"input": id} when submitted; "output", "error" when ended
    status: str | None = None  # the last state, once ended


class Ledger:
    """The ledger of one run, read back from `path` when it is there, and appended to as the run goes."""

    def __init__(self, path: str, run: str, service: str):
        self.path, self.run, self.service = path, run, service
        self.calls: dict[str, dict] = {}  # id -> request body
        self.batches: dict[str, Batch] = {}  # name -> batch, in the order submitted
        self.answers: dict[str, dict] = {}  # id -> response body
        self.failures: dict[str, list[str]] = {}  # id -> the error of each batch that failed it
        self.rewritten: dict[str, int] = {}  # id -> how many batches were begun before its body was last rewritten
        self.replies: dict[str, ModelReply] = {}  # id -> the reply of a call asked on its own (flex)
        self.warning: str | None = None  # "line N was cut off and skipped"
        if os.path.exists(path) and not os.path.isfile(path):  # a folder; a pipe would block the open
            raise LedgerError(f"{path} is not a ledger: not a regular file")
        self._file = _locked(path)
        try:
            if os.fstat(self._file.fileno()).st_size:
                self._read()
            else:
                self._append({"format": FORMAT, "version": VERSION, "run": run, "service": service})
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Let go of the ledger (and of its lock): another run may take it."""
        self._file.close()

    def record(self, type: str, **fields) -> None:
        """Append one record, flushed and synced, and take it into what the ledger knows; LedgerError, one line, when
        it cannot be written (a full disk)."""
        record = {"type": type, **fields}
        try:
            self._append(record)
        except OSError as problem:
            raise LedgerError(f"cannot write the ledger {self.path}: {problem.strerror or problem}") from None
        self._apply(record)

    def sent(self, batch_id: str) -> Batch | None:
        return next((batch for batch in self.batches.values() if batch.id == batch_id), None)

    def open_batches(self) -> list[Batch]:
        """The batches sent (or being sent) whose end the ledger has not recorded."""
        return [batch for batch in self.batches.values() if batch.status is None]

    def tries(self, call: str) -> int:
        """How many batches the call went in with its body as it is now: one rewritten without a setting the model
        refused (experiments/batch.py) starts its tries again."""
        since = self.rewritten.get(call, 0)
        return sum(call in batch.ids for batch in list(self.batches.values())[since:])

    def ever_sent(self, call: str) -> bool:
        """Whether the call went in a batch, whatever its body was."""
        return any(call in batch.ids for batch in self.batches.values())

    def _append(self, record: dict) -> None:
        try:
            line = canonical(record)
        except UnicodeEncodeError:  # a lone surrogate a reply held: written escaped, read back as it was
            line = json.dumps(record, sort_keys=True, separators=(",", ":")).encode("ascii")
        self._file.write(line + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def _read(self) -> None:
        data = read_input(self.path, MAX_LEDGER_BYTES, "a ledger")
        lines = data.split(b"\n")
        cut = len(lines[-1])  # the bytes after the last newline: a line cut off mid-write, or nothing
        if lines[-1].strip():
            self.warning = f"line {len(lines)} was cut off and skipped"
        lines[-1] = b""
        records = [(number, _parsed(self.path, number, line)) for number, line in enumerate(lines, 1) if line.strip()]
        if not records:
            raise LedgerError(f"{self.path} is not a ledger: it is empty")
        self._check_header(records[0][1])
        for number, record in records[1:]:
            if record.get("type") not in TYPES or any(key not in record for key in TYPES[record["type"]]):
                raise LedgerError(f"{self.path}, line {number}: not a ledger record: {_shown(record)}")
            try:
                self._apply(record)
            except (KeyError, AttributeError, TypeError):  # a batch it never began, ids that are no list
                raise LedgerError(f"{self.path}, line {number}: damaged: {_shown(record)} follows nothing it "
                                  "could belong to") from None
            except ValueError as problem:  # a reply that is none
                raise LedgerError(f"{self.path}, line {number}: damaged: {problem}: {_shown(record)}") from None
        if cut:  # taken off, so that the next record starts a line of its own
            self._file.truncate(len(data) - cut)

    def _check_header(self, header: dict) -> None:
        if header.get("format") != FORMAT:
            raise LedgerError(f"{self.path} is not a TinyReAct ledger (its first line names no {FORMAT!r} format)")
        if type(header.get("version")) is not int or header["version"] > VERSION:
            raise LedgerError(f"{self.path} is ledger version {_shown(header.get('version'))}; this TinyReAct reads "
                              f"version {VERSION}")
        if header.get("run") != self.run or header.get("service") != self.service:
            raise LedgerError(f"{self.path} belongs to another run ({header.get('service')}, run "
                              f"{str(header.get('run'))[:12]}; this one is {self.service}, run {self.run[:12]}): "
                              "name another --ledger, or remove it to start again")

    def _apply(self, record: dict) -> None:
        type = record["type"]
        if type == "call":
            if record["id"] in self.calls:  # its body rewritten: the batches before this one held another
                self.rewritten[record["id"]] = len(self.batches)
            self.calls[record["id"]] = record["body"]
        elif type == "submitting":
            self.batches[record["name"]] = Batch(record["name"], list(record["ids"]))
        elif type == "submitted":
            batch = self.batches[record["name"]]
            batch.id, batch.files = record["batch"], dict(record["files"])
        elif type == "ended":
            batch = self.sent(record["batch"])
            batch.status = record["status"]
            batch.files.update(record["files"])
        elif type == "answer":
            self.answers[record["id"]] = record["response"]
        elif type == "failed":
            self.failures.setdefault(record["id"], []).append(record["error"])
        elif type == "reply":
            self.replies[record["id"]] = read_reply(record["reply"])


def kept_reply(reply: ModelReply) -> dict:
    """A flex call's reply as a ledger record keeps it."""
    return {name: getattr(reply, name) for name in REPLY_FIELDS}


def read_reply(kept) -> ModelReply:
    """A reply kept by kept_reply, read back; ValueError when it is not one (a damaged ledger)."""
    if not isinstance(kept, dict) or set(kept) != set(REPLY_FIELDS) or any(
            not isinstance(kept[name], want) or isinstance(kept[name], bool) for name, want in REPLY_FIELDS.items()):
        raise ValueError("the reply it holds is not one")
    return ModelReply(**kept)


def _locked(path: str):
    """The ledger opened to append, locked (flock) by this run until it ends: two runs at once would send the same
    calls twice. OSError (EBUSY) when another run holds it."""
    import fcntl

    file = open(path, "ab")
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        raise OSError(errno.EBUSY, "another run is using it", path) from None
    return file


def _parsed(path: str, number: int, line: bytes) -> dict:
    try:
        record = json.loads(line)
    except ValueError:
        raise LedgerError(f"{path}, line {number}: damaged: not JSON in UTF-8") from None
    if not isinstance(record, dict):
        raise LedgerError(f"{path}, line {number}: damaged: not a JSON object")
    return record


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
