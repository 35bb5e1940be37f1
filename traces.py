"""The trace: the append-only record of everything that happened, and the single source of truth.

Each event is a small JSON-ready dict with a `type` (question, reply, thought, action, observation,
answer, usage, error, ...). Context policies render what the model sees from it; nothing edits it.
With a path, every event is also written to a JSON Lines file and flushed at once, so a crash or
Ctrl-C loses nothing already seen. The file's first line names the format and its version.

A failed write (a full disk, a file size limit) never stops the run: it is reported once, through
`on_error` and `Trace.write_error`, and the events go on being kept in memory. Reading a file back
(`load_trace`) checks every event it knows against EVENT_FIELDS, skips over event types it does not
know, accepts every older version, and drops a last line cut off mid-write, saying so.
"""
import json
import math
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from files import open_for_one_run, read_input
from redaction import blanked, redacted_fields, secrets

FORMAT = "tinyreact-trace"
VERSION = 2

# What changed in each version. Bump VERSION when an event's meaning changes (a field renamed,
# retyped or read differently), say what changed here, and add to UPGRADES the function that turns
# one line (header or event) of the version before into the new form, so every older file still
# loads. New event types and optional fields need no bump: readers skip what they do not know.
HISTORY = {
    1: "the first version: the events in EVENT_FIELDS",
    2: "an observation's text is the tool's whole result (up to 100 kB, with original_chars when "
       "that cap cut it); version 1 recorded it cut to 2,000 characters, with a "
       "'[... N characters cut ...]' marker, which replay reports. Also new, needing no bump: "
       "forget, retry, config_fallback and warning events; call on observations; counted_locally, "
       "temperature, cached_tokens and answered_by on usage; model, backend and temperature in the "
       "header; a stop event ending each query (reason, answer); the native protocol's fields: "
       "protocol and schemas on instructions, calls and native on replies, id on actions and "
       "observations; approval events (a person's decision on a tool call); finish on replies (why "
       "the service says the reply ended); sent on contexts (the SHA-256 of the messages and tool "
       "schemas the call sent, models/sent.py)",
}
# version -> a function (record) -> record bringing one line of a file of that version up to the
# next. It runs before the checks, so it must expect anything: use .get, leave the unknown alone.
UPGRADES: dict[int, Callable[[dict], dict]] = {
    1: lambda record: record,  # a version-1 observation is a shorter text of the same kind
}

MAX_WHOLE = 10 ** 15  # no count, step or position in a trace is larger: past it, a number is damage
MAX_SECONDS = 10 ** 9  # about 31 years: no session lasts longer
MAX_TRACE_BYTES = 1_000_000_000  # a trace of a million events is a few hundred megabytes
TEXT, OPTIONAL_TEXT, WHOLE = "text", "text or null", "a whole number"
NUMBER, COUNTS = "a number from 0 to 2", "a table of whole numbers"
FACTS, PROBES = "a list of {id, text}", "a list of {id, fact, answer, questions}"
CALLS, INDEXES = "a list of call numbers from 1", "a list of event positions from 0"
TOOL_CALLS = "a list of {id, name, arguments}"
SCHEMAS = "a list of tool schemas {name, description, parameters}"
# The header fields a reader uses, if present: replay's planted facts, probes, calls to probe at.
HEADER_FIELDS = {"title": TEXT, "created": TEXT, "recorded": TEXT, "facts": FACTS, "probes": PROBES,
                 "probe_points": CALLS}
# Every event type a reader knows: the fields it must have and their kinds, then those it may have.
EVENT_FIELDS: dict[str, tuple[dict, dict]] = {
    "instructions": ({"text": TEXT}, {"tools": TEXT, "protocol": TEXT, "schemas": SCHEMAS}),
    "question": ({"text": TEXT}, {}),
    "reply": ({"step": WHOLE, "text": TEXT}, {"raw": TEXT, "blocked": OPTIONAL_TEXT,
                                             "calls": TOOL_CALLS, "native": TEXT, "finish": TEXT}),
    "thought": ({"step": WHOLE, "text": TEXT}, {}),
    "action": ({"step": WHOLE, "text": TEXT}, {"id": TEXT}),
    "answer": ({"step": WHOLE, "text": TEXT}, {}),
    "observation": ({"step": WHOLE, "text": TEXT},
                    {"call": TEXT, "refused": TEXT, "original_chars": WHOLE, "id": TEXT}),
    "finish": ({"text": TEXT}, {}),
    "summary": ({"upto": WHOLE, "text": TEXT}, {"policy": TEXT}),
    "note": ({"op": TEXT}, {}),  # and, by op: pin needs text, unpin needs index (see _check_note)
    "usage": ({"input_tokens": WHOLE, "output_tokens": WHOLE},
              {"thoughts_tokens": WHOLE, "purpose": TEXT, "temperature": NUMBER,
               "cached_tokens": WHOLE, "answered_by": TEXT}),
    "forget": ({"what": TEXT, "replies": INDEXES}, {}),
    "warning": ({"message": TEXT}, {}),
    "retry": ({"backend": TEXT}, {"message": TEXT, "reason": TEXT}),
    "config_fallback": ({"backend": TEXT, "field": TEXT},
                        {"message": TEXT, "variable": OPTIONAL_TEXT}),
    "context": ({"tokens": COUNTS}, {"policy": TEXT, "counter": TEXT, "sent": TEXT}),
    "error": ({"message": TEXT}, {}),
    # a person's yes or no to a call (tools/approval.py): arguments asked about; edited: those run
    "approval": ({"tool": TEXT, "decision": TEXT},
                 {"by": TEXT, "why": TEXT, "arguments": TEXT, "edited": TEXT}),
    "stop": ({"reason": TEXT}, {"answer": OPTIONAL_TEXT}),
    "reset": ({}, {}),
    # a fork's change to what its parent recorded or would have done (cli/fork.py)
    "edit": ({"what": TEXT, "call": WHOLE, "text": TEXT}, {}),
}
# What an optional field a reader relies on holds when a file (hand-made, another's) leaves it out.
DEFAULTS: dict[str, dict] = {"context": {"policy": "unnamed", "counter": "an unnamed counter"},
                             "usage": {"purpose": "step"}}
# A JSON or Python escape like \ud800 (in a server's reply, a model's tool argument) makes a lone
# surrogate, which UTF-8 cannot encode: each is recorded as U+FFFD, and a file holding one refused.
SURROGATE = re.compile("[\ud800-\udfff]")


def as_text(text: str) -> str:
    """`text` with each lone surrogate made U+FFFD, text that UTF-8 encodes and a terminal shows."""
    if text.isascii():
        return text
    try:  # finds none in a seventh of the pattern's time (a prompt: 2 µs against 14 µs)
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return SURROGATE.sub("\ufffd", text)


class Trace:
    def __init__(self, path: str | None = None, on_event: Callable[[dict], None] | None = None,
                 meta: dict | None = None, on_error: Callable[[str], None] | None = None,
                 sent: dict | None = None):
        """With a path, write each event to it as JSON Lines (opening may raise OSError). If a write
        fails, now or later, `on_error` is called once with a one-line message, also kept in
        `write_error`. `sent` (never written) is where the loop puts what each call sent, by its
        context event's digest: this run's readers show that, not a rebuilt copy."""
        self._events: list[dict] = []
        self.sent: dict[str, list] = sent if sent is not None else {}
        self._on_event, self._on_error = on_event, on_error
        self._start = time.monotonic_ns()
        self.path = path
        self.write_error: str | None = None
        # backslashreplace: a lone surrogate nested below a header's or event's own fields (which
        # _texts makes U+FFFD) is written as its JSON escape instead of failing the write
        self._file = open_for_one_run(path) if path else None
        # A run's secrets are worked out once, as it starts (its .env files were read before):
        # redacting every event must not read the environment each time (redaction.secrets)
        self._secrets = secrets()
        if self._file:
            created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            self._write({"format": FORMAT, "version": VERSION, "created": created,
                         **_texts(redacted_fields(dict(meta or {}), self._secrets))})

    def add(self, type: str, **fields) -> dict:
        if self._secrets:
            redacted_fields(fields, self._secrets)
        _texts(fields)
        milliseconds = (time.monotonic_ns() - self._start) // 1_000_000
        event = {"type": type, **fields, "t": milliseconds / 1000}  # seconds since the trace began
        self._events.append(event)
        if self._file:
            self._write(event)
        if self._on_event:
            self._on_event(event)
        return event

    def copy(self, events: Sequence[dict]) -> None:
        """Add these events again as they were recorded, but for their times (a fork's)."""
        for event in events:
            self.add(event["type"], **{k: v for k, v in event.items() if k not in ("type", "t")})

    def watch(self, on_event: Callable[[dict], None] | None) -> None:
        """Call `on_event` with each event added from now on (not a fork's copied ones)."""
        self._on_event = on_event

    def blanked(self, text: str) -> str:
        """`text` with this run's secrets blanked, as `add` blanks every event: for a text cut
        before it is added, so that the cut cannot go through a secret and leave the rest of it."""
        return blanked(text, self._secrets)

    @property
    def events(self) -> tuple[dict, ...]:
        return tuple(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.events)

    def __reversed__(self) -> Iterator[dict]:
        """The events from the newest back, not copied (the loop looks back a few steps)."""
        return reversed(self._events)

    def close(self) -> None:
        if self._file:
            file, self._file = self._file, None
            try:
                file.close()
            except (OSError, ValueError) as error:
                self._failed(error)

    def _write(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        try:
            self._file.write(line)
            self._file.flush()
        except (OSError, OverflowError, ValueError) as error:  # disk full, `ulimit -f`, file closed
            file, self._file = self._file, None
            try:
                file.close()
            except (OSError, ValueError):
                pass  # the data it would flush is what just failed to write
            self._failed(error)

    def _failed(self, error: Exception) -> None:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        self.write_error = (f"could not write the trace file {self.path} ({reason}); "
                            "the file ends there, and the run goes on")
        if self._on_error:
            self._on_error(self.write_error)


@dataclass
class TraceFile:
    header: dict
    events: list[dict]
    warning: str | None = None  # "line N was cut off and skipped": the writer was killed mid-line


def read_trace(path: str) -> list[dict]:
    """Read a trace file's events back; raises ValueError when it is not one."""
    return load_trace(path).events


def read_trace_file(path: str) -> tuple[dict, list[dict]]:
    """A trace file's header and events; raises ValueError, naming the line, if it is not a trace.
    A last line cut off mid-write is skipped; `load_trace` also says so."""
    trace = load_trace(path)
    return trace.header, trace.events


def load_trace(path: str) -> TraceFile:
    """Read, upgrade and check a trace file. Raises ValueError, one line naming the line and field,
    for a file not a trace or with a known event of the wrong shape; OSError if unreadable."""
    data = read_input(path, MAX_TRACE_BYTES, "a trace")
    lines = data.split(b"\n")
    warning = None
    if lines[-1].strip() and _parse(lines[-1]) is None:  # no newline after it, not JSON: cut short
        warning = f"line {len(lines)} was cut off and skipped"
        lines[-1] = b""
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = _parse(line)
        if record is None:
            raise ValueError(f"{path}, line {number}: not JSON in UTF-8")
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {number}: not a trace event (a JSON object)")
        records.append((number, record))
    if not records:
        raise ValueError(f"{path} is empty" + (f" ({warning})" if warning else ""))
    header = records[0][1]
    if header.get("format") != FORMAT:
        first_line = f"its first line names no {FORMAT!r} format"
        raise ValueError(f"{path} is not a TinyReAct trace ({first_line})")
    version = header.get("version")
    if type(version) is not int or version < 1:
        raise ValueError(f"{path}, line {records[0][0]}: header: version must be a whole number "
                         f"from 1, got {_show(version)}")
    if version > VERSION:
        raise ValueError(f"{path} is trace version {version}, from a newer TinyReAct; "
                         f"this one reads versions 1 to {VERSION}")
    for older in range(version, VERSION):
        records = [(number, UPGRADES[older](record)) for number, record in records]
    _check_header(path, records[0][0], records[0][1])
    _check_events(path, records[1:])
    return TraceFile(records[0][1], [event for _, event in records[1:]], warning)


def _texts(fields: dict) -> dict:
    """`fields` with each text value made `as_text`, in place; returned too. A lone surrogate is no
    text a file holds."""
    for name, value in fields.items():
        if value.__class__ is str and not value.isascii():
            fields[name] = as_text(value)
        elif value.__class__ is list and name == "calls":  # a native reply's {id, name, arguments}
            fields[name] = [_texts(dict(call)) for call in value]
    return fields


def _parse(line: bytes):
    """The JSON value on one line, or None when it is not JSON in UTF-8."""
    try:
        return json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # bad UTF-8 or JSON, an integer too long, nesting too deep
        return None


def header_problem(header: dict) -> str | None:
    """What a reader refuses in a header's fields (HEADER_FIELDS), in a few words, or None."""
    for field, want in HEADER_FIELDS.items():
        if field in header and not _is(header[field], want):
            return f"{field} must be {want}, got {_show(header[field])}"
    return None


def _check_header(path: str, number: int, header: dict) -> None:
    problem = header_problem(header)
    if problem:
        raise ValueError(f"{path}, line {number}: header: {problem}")


def _check_events(path: str, records: list[tuple[int, dict]]) -> None:
    """Every known event against EVENT_FIELDS, and the order policies rely on: instructions and a
    question before a reply, pins before the unpins naming them; DEFAULTS fill in missing fields."""
    notes, instructed, asked = 0, False, False  # since the last reset
    for number, event in records:
        where = f"{path}, line {number}"
        kind = event.get("type")
        if not _is(kind, TEXT):
            raise ValueError(f"{where}: event: type must be text, got {_show(kind)}")
        seconds = event.get("t")  # every reader of times trusts it, on any event
        if "t" in event and not (type(seconds) in (int, float) and 0 <= seconds <= MAX_SECONDS):
            raise ValueError(f"{where}: {kind} event: t must be a number of seconds from 0 to "
                             f"{MAX_SECONDS:,}, got {_show(seconds)}")
        if kind not in EVENT_FIELDS:
            continue  # from a newer writer, or a tool of its own: not ours to judge
        required, optional = EVENT_FIELDS[kind]
        for field, want in [*required.items(), *optional.items()]:
            if field not in event and field not in required:
                continue
            if field not in event:
                raise ValueError(f"{where}: {kind} event: {field} ({want}) is missing")
            if not _is(event[field], want):
                got = _show(event[field])
                raise ValueError(f"{where}: {kind} event: {field} must be {want}, got {got}")
        for field, value in DEFAULTS.get(kind, {}).items():
            event.setdefault(field, value)
        if kind == "reset":
            notes, instructed, asked = 0, False, False
        elif kind == "instructions":
            instructed = True
        elif kind == "question":
            asked = True
        elif kind == "reply" and not (instructed and asked):
            missing = "instructions" if not instructed else "question"
            problem = f"no {missing} event comes before it (since the last reset)"
            raise ValueError(f"{where}: reply event: {problem}")
        elif kind == "note":
            notes = _check_note(where, event, notes)


def _check_note(where: str, event: dict, notes: int) -> int:
    """A pin needs its text, an unpin the index of a note in force; returns the count after it."""
    if event["op"] == "pin":
        text = event.get("text")
        if not _is(text, TEXT):
            raise ValueError(f"{where}: note event: a pin needs its text, got {_show(text)}")
        return notes + 1
    if event["op"] == "unpin":
        index = event.get("index")
        if not _is(index, WHOLE) or not 1 <= index <= notes:
            raise ValueError(f"{where}: note event: an unpin needs the index of a pinned note "
                             f"(1 to {notes}), got {_show(index)}")
        return notes - 1
    raise ValueError(f"{where}: note event: op must be pin or unpin, got {_show(event['op'])}")


def _is(value, kind: str) -> bool:
    if kind == TEXT:
        return isinstance(value, str) and not SURROGATE.search(value)
    if kind == OPTIONAL_TEXT:
        return value is None or _is(value, TEXT)
    if kind == WHOLE:
        return type(value) is int and 0 <= value <= MAX_WHOLE  # not bool, which JSON's true gives
    if kind == NUMBER:
        return type(value) in (int, float) and 0 <= value <= 2
    if kind == COUNTS:
        return isinstance(value, dict) and all(_is(count, WHOLE) for count in value.values())
    if kind == FACTS:
        return _is_list_of(value, lambda fact: _has_texts(fact, "id", "text"))
    if kind == PROBES:
        return _is_list_of(value, lambda probe: _has_texts(probe, "id", "fact", "answer")
                           and isinstance(probe.get("questions"), list)
                           and all(_is(q, TEXT) for q in probe["questions"]))
    if kind == CALLS:
        return isinstance(value, list) and all(_is(call, WHOLE) and call >= 1 for call in value)
    if kind == TOOL_CALLS:
        return _is_list_of(value, lambda call: _has_texts(call, "id", "name", "arguments"))
    if kind == SCHEMAS:
        return _is_list_of(value, lambda schema: _has_texts(schema, "name")
                           and isinstance(schema.get("parameters"), dict))
    if kind == INDEXES:
        return isinstance(value, list) and all(_is(index, WHOLE) and index >= 0 for index in value)
    raise AssertionError(f"unknown kind {kind}")


def _is_list_of(value, check: Callable[[dict], bool]) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) and check(item) for item in value)


def _has_texts(item: dict, *keys: str) -> bool:
    return all(_is(item.get(key), TEXT) for key in keys)


def _show(value) -> str:
    if type(value) is int and abs(value) > MAX_WHOLE:  # repr fails past 4,300 digits (sys.int_info)
        digits = math.floor(math.log10(abs(value))) + 1  # near: the float may round up
        digits -= abs(value) < 10 ** (digits - 1)  # exact
        return f"a number of {digits:,} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"

