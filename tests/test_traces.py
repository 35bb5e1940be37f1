"""Trace files: writes that fail do not stop a run, cut and malformed files load or fail in one line, versions evolve.

The fuzz test mutates the shipped traces and holds the promise `--replay` relies on: a file either loads and
replays, or is refused with a ValueError naming the line and the field; never another exception.
"""
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import traces
from agent import TinyReAct
from experiments.replay import replay
from models.scripted import ScriptedModel
from views.pages import replay_page, run_page
from traces import EVENT_FIELDS, HISTORY, UPGRADES, VERSION, Trace, load_trace, read_trace_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPER_BOWL = os.path.join(ROOT, "conversations", "superbowl.jsonl")
LONG = os.path.join(ROOT, "conversations", "long.jsonl")
SPECS = ["full", "window:2", "user-only:4", "elide:2", "pinned", "compact:300"]


def lines_of(path: str, limit: int | None = None) -> list[dict]:
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file][:limit]


def write_lines(path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------- writing

def test_a_full_disk_is_reported_once_and_the_run_still_answers():
    reports = []
    trace = Trace("/dev/full", on_error=reports.append)
    agent = TinyReAct(ScriptedModel(["Action: multiply_numbers(7, 6)", "Answer: 42"]), trace=trace)
    result = agent.query("What is 7 * 6?")
    trace.close()
    assert result.answer == "42"
    assert [e["type"] for e in result.trace].count("observation") == 1
    assert len(trace) == 1 + len(result.trace)  # every event is kept in memory: the instructions, then the query's
    assert reports == [trace.write_error]
    assert trace.write_error == ("could not write the trace file /dev/full (No space left on device); "
                                 "the file ends there, and the run goes on")


WRITER = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from traces import Trace
resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))  # as `ulimit -f` does, in bytes
trace = Trace(sys.argv[2], on_error=lambda message: print(message, file=sys.stderr))
trace.add("instructions", text="Answer the questions.")
trace.add("question", text="What is the sum (Σ), step by step?")  # Σ is two bytes: a cut can fall inside it
for step in range(1, 41):
    trace.add("reply", step=step, text=f"Thought: step {step} of a long run\\nAction: add_numbers({step}, 1)")
print(json.dumps(trace.events))  # every event the run kept, written to the file or not
"""


def lines_with_ends(data: bytes) -> list[tuple[int, int, dict]]:
    """Each line of a trace file (one JSON object a line) as (where it starts, just after its closing brace, its
    record)."""
    lines, start = [], 0
    for line in data.split(b"\n")[:-1]:
        lines.append((start, start + len(line), json.loads(line)))
        start += len(line) + 1
    return lines


def expected_at_cut(lines: list[tuple[int, int, dict]], cut: int) -> tuple[dict | None, list[dict], str | None]:
    """What the trace loader promises for a file of `lines` cut after `cut` bytes: the header and the events of the
    lines whose closing brace is in (None for the header when not even it is), and the warning naming the line cut
    in the middle, if one is."""
    records = [record for _, end, record in lines if end <= cut]
    cut_line = next((number for number, (start, end, _) in enumerate(lines, 1) if start < cut < end), None)
    warning = f"line {cut_line} was cut off and skipped" if cut_line else None
    return (records[0] if records else None), records[1:], warning


def test_a_file_size_limit_cuts_the_file_and_replay_loads_its_complete_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    done = subprocess.run([sys.executable, "-c", WRITER, ROOT, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stderr == (f"could not write the trace file {path} (File too large); the file ends there, and the run "
                           "goes on\n")
    kept = json.loads(done.stdout)
    assert [e["type"] for e in kept] == ["instructions", "question"] + ["reply"] * 40  # the run went on
    data = path.read_bytes()
    assert len(data) == 3000
    header = data[:data.index(b"\n") + 1]
    whole = header + b"".join(json.dumps(e, ensure_ascii=False).encode() + b"\n" for e in kept)
    assert whole.startswith(data)  # the file is what the run wrote, up to the limit, one event a line
    lines, replayed = lines_with_ends(whole), {}

    def loads_its_whole_lines(cut_file, cut: int) -> None:
        header_record, events, warning = expected_at_cut(lines, cut)
        if header_record is None:
            with pytest.raises(ValueError) as refused:
                load_trace(str(cut_file))
            assert str(refused.value) == f"{cut_file} is empty" + (f" ({warning})" if warning else ""), cut
            return
        loaded = load_trace(str(cut_file))
        assert (loaded.header, loaded.events, loaded.warning) == (header_record, events, warning), cut
        if len(events) not in replayed:  # the same events replay the same: once for each number of whole lines
            replayed[len(events)] = len(replay(loaded.header, loaded.events, ["full"])[0].sizes)
            assert replayed[len(events)] == max(0, len(events) - 2), cut  # one context per reply

    loads_its_whole_lines(path, len(data))
    # Where the limit falls depends on how long each line's time is, and the promise holds at any byte: so the whole
    # file is written a byte at a time, as a writer stopped anywhere leaves it, and loaded at every length: inside
    # the header, mid-line, inside the two-byte Σ, right after a closing brace, right after a newline.
    growing = tmp_path / "growing.jsonl"
    with open(growing, "wb") as writer:
        for cut in range(len(whole) + 1):
            writer.write(whole[cut - 1:cut] if cut else b"")
            writer.flush()
            loads_its_whole_lines(growing, cut)
    assert sorted(replayed) == list(range(len(kept) + 1))  # every number of whole lines was met, none to all


# ---------------------------------------------------------------- reading

def test_a_last_line_cut_mid_write_is_skipped_and_said(tmp_path):
    data = open(SUPER_BOWL, "rb").read()
    header, events = read_trace_file(SUPER_BOWL)
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    for cut in (last + 1, len(data) - 10):
        path = tmp_path / "cut.jsonl"
        path.write_bytes(data[:cut])
        loaded = load_trace(str(path))
        assert loaded.events == events[:-1] and loaded.header == header
        assert loaded.warning == f"line {len(events) + 1} was cut off and skipped"
        replies = [e["type"] for e in events].count("reply")
        assert len(replay(loaded.header, loaded.events, ["full"])[0].sizes) == replies
    assert load_trace(SUPER_BOWL).warning is None


def test_a_cut_inside_a_multibyte_character_is_a_cut_line(tmp_path):
    path = tmp_path / "cut.jsonl"
    records = lines_of(SUPER_BOWL, 3)
    path.write_bytes(open(write_lines(path, records), "rb").read() + '{"type": "question", "text": "Où'.encode()[:-1])
    assert load_trace(str(path)).warning == "line 4 was cut off and skipped"


def test_a_broken_line_that_is_not_the_last_is_an_error(tmp_path):
    data = open(SUPER_BOWL, "rb").read().split(b"\n")
    data[5] = data[5][:20]
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"\n".join(data))
    with pytest.raises(ValueError, match=r"broken.jsonl, line 6: not JSON in UTF-8$"):
        load_trace(str(path))
    whole = open(SUPER_BOWL, "rb").read()
    path.write_bytes(whole + b'{"type": "rep\n')  # cut, yet followed by a newline: not a kill
    with pytest.raises(ValueError, match=f"line {len(whole.splitlines()) + 1}: not JSON"):
        load_trace(str(path))


def mutated(line: int, change) -> list[dict]:
    records = lines_of(SUPER_BOWL)
    change(records[line - 1])
    return records


@pytest.mark.parametrize("records, message", [
    (mutated(6, lambda e: e.pop("step")), "line 6: reply event: step (a whole number) is missing"),
    (mutated(6, lambda e: e.update(step="1")), "line 6: reply event: step must be a whole number, got '1'"),
    (mutated(8, lambda e: e.update(text=None)), "line 8: action event: text must be text, got None"),
    (mutated(9, lambda e: e.update(step=True)), "line 9: observation event: step must be a whole number, got True"),
    (mutated(3, lambda e: e.update(text=["Who won?"])), "line 3: question event: text must be text, got ['Who won?']"),
    (mutated(2, lambda e: e.update(tools=3)), "line 2: instructions event: tools must be text, got 3"),
    (mutated(5, lambda e: e.update(input_tokens=1.5)), "line 5: usage event: input_tokens must be a whole number"),
    (mutated(4, lambda e: e.update(tokens={"user": "12"})), "line 4: context event: tokens must be a table of whole"),
    (mutated(6, lambda e: e.update(text="\ud800")), "line 6: reply event: text must be text, got '\\ud800'"),
    (mutated(6, lambda e: e.update(t="soon")), "line 6: reply event: t must be a number of seconds"),
    (mutated(7, lambda e: e.update(type=7)), "line 7: event: type must be text, got 7"),
    (mutated(1, lambda h: h.update(facts=[{"id": "x"}])), "line 1: header: facts must be a list of {id, text}"),
    (mutated(1, lambda h: h.update(probe_points=[0])), "line 1: header: probe_points must be a list of call numbers"),
    (mutated(1, lambda h: h.update(version="1")), "line 1: header: version must be a whole number from 1, got '1'"),
    (lines_of(SUPER_BOWL, 3) + [{"type": "note", "op": "unpin", "index": 1}],
     "line 4: note event: an unpin needs the index of a pinned note (1 to 0), got 1"),
    (lines_of(SUPER_BOWL, 3) + [{"type": "note", "op": "pin"}], "line 4: note event: a pin needs its text, got None"),
    (lines_of(SUPER_BOWL, 3) + [{"type": "note", "op": "move"}],
     "line 4: note event: op must be pin or unpin, got 'move'"),
    (mutated(2, lambda e: e.update(type="reset")), "line 6: reply event: no instructions event comes before it"),
    (lines_of(SUPER_BOWL, 3) + [{"type": "summary", "text": "so far"}], "line 4: summary event: upto ("),
    (lines_of(SUPER_BOWL, 3) + [{"type": "error", "message": {"code": 1}}],
     "line 4: error event: message must be text"),
])
def test_a_known_event_of_the_wrong_shape_is_refused_in_one_line(tmp_path, records, message):
    with pytest.raises(ValueError) as refused:
        load_trace(write_lines(tmp_path / "bad.jsonl", records))
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert str(refused.value).startswith(str(tmp_path / "bad.jsonl"))


def records_of(*events: dict) -> list[dict]:
    return [{"format": "tinyreact-trace", "version": 2}, {"type": "instructions", "text": "You answer", "t": 0},
            *events]


DAMAGED = [  # (the trace, what --from, --replay and --html say of it; None: it is read)
    (records_of({"type": "reply", "step": 1, "text": 'Action1: pin_note("x")', "t": 1},
                {"type": "note", "op": "pin", "text": "x", "t": 1}),
     "line 3: reply event: no question event comes before it"),
    (records_of(), None),  # no question at all: an empty session
    (mutated(4, lambda e: e.pop("policy")), None),
    (mutated(4, lambda e: e.pop("counter")), None),
    (mutated(5, lambda e: e.pop("purpose")), None),
    (mutated(6, lambda e: e.update(t=int("9" * 400))), "line 6: reply event: t must be a number of seconds from 0"),
    (mutated(5, lambda e: e.update(input_tokens=int("9" * 4300))),
     "line 5: usage event: input_tokens must be a whole number, got a number of 4,300 digits"),
    (mutated(4, lambda e: e.update(tokens={"user": 10 ** 16})),
     "line 4: context event: tokens must be a table of whole"),
    (mutated(6, lambda e: e.update(step=-1)), "line 6: reply event: step must be a whole number, got -1"),
]


@pytest.mark.parametrize("records, said", DAMAGED)
def test_a_damaged_or_hand_made_trace_is_read_or_refused_in_one_line_by_every_command(tmp_path, capsys, records, said):
    import cli

    path = write_lines(tmp_path / "made.jsonl", records)
    no_model = ["--summarizer", "none"]  # compact's summaries: the cache's alone, no model written
    for argv in (["--html", str(tmp_path / "page.html"), "--from", path],
                 ["--replay", path, "--policies", SPECS_TEXT, *no_model],
                 ["--replay", path, "--html", str(tmp_path / "replay.html"), "--json", *no_model]):
        code = cli.main(argv)
        err = capsys.readouterr().err
        if said is None:
            assert code in (0, 1) and "error" not in err, (argv, err)  # 1: a policy broke an invariant, reported
        else:
            assert code == 2 and err.startswith(f"error: {path}, {said}") and err.count("\n") == 1, err


SPECS_TEXT = ",".join(SPECS)


def test_unknown_event_types_are_passed_over_and_replay_is_unchanged(tmp_path):
    records = lines_of(SUPER_BOWL)
    strange = [{"type": "telemetry", "step": "three", "payload": [1, {"x": None}]}, {"type": "", "text": 5}]
    path = write_lines(tmp_path / "newer.jsonl", records[:8] + strange + records[8:])
    header, events = read_trace_file(path)
    assert [e for e in events if e not in strange] == records[1:]
    plain = replay(records[0], records[1:], SPECS)
    assert [(r.sizes, r.violations) for r in replay(header, events, SPECS)] == [(r.sizes, r.violations) for r in plain]


def test_a_trace_from_a_newer_version_is_refused_and_says_why(tmp_path):
    records = mutated(1, lambda h: h.update(version=VERSION + 1))
    with pytest.raises(ValueError, match=f"is trace version {VERSION + 1}, from a newer TinyReAct; "
                                         f"this one reads versions 1 to {VERSION}$"):
        load_trace(write_lines(tmp_path / "future.jsonl", records))


def test_every_version_is_described_and_every_older_one_has_an_upgrade():
    assert sorted(HISTORY) == list(range(1, traces.VERSION + 1))
    assert sorted(UPGRADES) == list(range(1, traces.VERSION))


def test_after_a_version_bump_older_files_still_load(monkeypatch):
    """A made-up next version in which `usage` events hold their counts in one `tokens` table."""
    def usage_in_one_table(record: dict) -> dict:
        if record.get("type") != "usage":
            return record
        counts = {key: record[key] for key in ("input_tokens", "output_tokens", "thoughts_tokens") if key in record}
        return {**{k: v for k, v in record.items() if k not in counts}, "tokens": counts}

    current = traces.VERSION
    monkeypatch.setattr(traces, "VERSION", current + 1)
    monkeypatch.setitem(HISTORY, current + 1,
                        "usage events hold input, output and thoughts tokens in one `tokens` table")
    monkeypatch.setitem(UPGRADES, current, usage_in_one_table)
    monkeypatch.setitem(EVENT_FIELDS, "usage", ({"tokens": "a table of whole numbers"}, {"purpose": "text"}))
    test_every_version_is_described_and_every_older_one_has_an_upgrade()
    header, events = read_trace_file(SUPER_BOWL)
    assert header["version"] == current
    usage = [e for e in events if e["type"] == "usage"]
    assert usage and all(set(e["tokens"]) == {"input_tokens", "output_tokens", "thoughts_tokens"} for e in usage)
    assert replay(header, events, ["full"])[0].violations == 0


# ---------------------------------------------------------------- fuzzing

BASES = {"superbowl": lines_of(SUPER_BOWL), "long": lines_of(LONG, 70)}
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=False), st.text(max_size=8),
                 st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
LINE, FIELD = st.integers(0, 10**4), st.integers(0, 50)  # taken modulo the lines, and the fields, there are
CHANGES = st.one_of(
    st.tuples(st.just("drop"), LINE, FIELD),
    st.tuples(st.just("retype"), LINE, FIELD, JUNK),
    st.tuples(st.just("insert"), LINE, st.one_of(st.sampled_from(sorted(EVENT_FIELDS)), st.text(max_size=6)),
              st.dictionaries(st.sampled_from(["step", "text", "op", "index", "upto", "tokens", "message"]), JUNK,
                              max_size=3)),
    st.tuples(st.just("truncate"), LINE),
)


def mutate(records: list[dict], changes: list[tuple], cut: float | None) -> bytes:
    """The trace with each change made in turn, as file bytes, cut at `cut` of its length if given."""
    records = [dict(record) for record in records]
    for what, line, *rest in changes:
        record = records[line % len(records)]
        fields = sorted(record)
        if what == "drop" and fields:
            record.pop(fields[rest[0] % len(fields)])
        elif what == "retype" and fields:
            record[fields[rest[0] % len(fields)]] = rest[1]
        elif what == "insert":
            records.insert(line % len(records), {"type": rest[0], **rest[1]})
        elif what == "truncate":
            del records[line % len(records) + 1:]
    data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()
    return data if cut is None else data[: int(len(data) * cut)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(list(BASES)), changes=st.lists(CHANGES, min_size=1, max_size=4),
       cut=st.none() | st.floats(0, 1))
def test_a_mutated_trace_loads_and_replays_or_is_refused_with_a_value_error(tmp_path, base, changes, cut):
    path = tmp_path / "fuzzed.jsonl"
    path.write_bytes(mutate(BASES[base], changes, cut))
    try:
        header, events = read_trace_file(str(path))
        reports = replay(header, events, SPECS)  # or a ValueError naming what does not fit (a probe call past the end)
    except ValueError:
        return
    # what is read and replays, the pages take
    run_page(header, events)
    replay_page(header, events, reports[:2])


def test_a_version_1_trace_still_loads_and_replays():
    # Recorded by the first release, which cut observations to 2,000 characters when recording them.
    header, events = read_trace_file(os.path.join(os.path.dirname(__file__), "fixtures", "superbowl-v1.jsonl"))
    assert header["version"] == 1 and len([e for e in events if e["type"] == "reply"]) == 7
    assert replay(header, events, ["full", "window:2"])[0].violations == 0
