"""The trace: the append-only record of everything that happened, and the single source of truth.

Each event is a small JSON-ready dict with a `type` (question, reply, thought, action, observation,
answer, usage, error, ...). Context policies render what the model sees from it; nothing edits it.
With a path, every event is also written to a JSON Lines file and flushed at once, so a crash or
Ctrl-C loses nothing already seen. The file's first line names the format and its version.
"""
import json
import time
from typing import Callable, Iterator

FORMAT = "tinyreact-trace"
VERSION = 1


class Trace:
    def __init__(self, path: str | None = None, on_event: Callable[[dict], None] | None = None, meta: dict | None = None):
        self._events: list[dict] = []
        self._on_event = on_event
        self._start = time.monotonic()
        self._file = open(path, "w", encoding="utf-8") if path else None
        if self._file:
            created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            self._write({"format": FORMAT, "version": VERSION, "created": created, **(meta or {})})

    def add(self, type: str, **fields) -> dict:
        event = {"type": type, **fields, "t": round(time.monotonic() - self._start, 3)}
        self._events.append(event)
        if self._file:
            self._write(event)
        if self._on_event:
            self._on_event(event)
        return event

    @property
    def events(self) -> tuple[dict, ...]:
        return tuple(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.events)

    def close(self) -> None:
        if self._file:
            self._file.close()
            self._file = None

    def _write(self, record: dict) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()


def read_trace(path: str) -> list[dict]:
    """Read a trace file's events back; raises ValueError when it is not one."""
    return read_trace_file(path)[1]


def read_trace_file(path: str) -> tuple[dict, list[dict]]:
    """A trace file's header and events; raises ValueError (with the line number) when it is not a trace."""
    with open(path, encoding="utf-8") as file:
        lines = [(number, line) for number, line in enumerate(file, 1) if line.strip()]
    if not lines:
        raise ValueError(f"{path} is empty")
    records = []
    for number, line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as problem:
            raise ValueError(f"{path}, line {number}: not JSON ({problem.msg})") from None
        if not isinstance(record, dict) or (records and not isinstance(record.get("type"), str)):
            raise ValueError(f"{path}, line {number}: not a trace event")
        records.append(record)
    header = records[0]
    if header.get("format") != FORMAT:
        raise ValueError(f"{path} is not a TinyReAct trace (its first line names no {FORMAT!r} format)")
    if header.get("version") != VERSION:
        raise ValueError(f"{path} is trace version {header.get('version')}; this TinyReAct reads version {VERSION}")
    return header, records[1:]
