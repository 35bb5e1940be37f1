"""Files a run writes: a trace file is one run's, whole (a second run given the same file is refused in one line),
and no output is ever written through a symbolic link onto what it points to."""
import json
import os

import pytest

import cli
from traces import Trace, load_trace


@pytest.fixture(autouse=True)
def no_server(monkeypatch):
    """A model that loads at once and is never reached: each refusal here comes before the first call."""
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://127.0.0.1:9/v1")


def test_a_second_run_on_the_same_trace_file_is_refused_and_the_first_trace_stays_whole(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    first = Trace(str(path), meta={"model": "first"})
    first.add("question", text="What is 2 + 2?")
    assert cli.main(["What is 3 + 3?", "--model", "llamacpp:m", "--trace", str(path), "-q"]) == 2
    assert capsys.readouterr().err.strip().endswith(f"cannot write the trace file: another run is writing it: {path}")
    first.add("stop", reason="answer", answer="4")
    first.close()
    trace = load_trace(str(path))
    assert trace.header["model"] == "first" and [e["type"] for e in trace.events] == ["question", "stop"]
    second = Trace(str(path), meta={"model": "second"})  # once the first run has ended, the file is free
    second.close()
    assert load_trace(str(path)).header["model"] == "second"


def test_a_trace_file_that_is_a_link_is_refused_and_what_it_points_to_is_untouched(tmp_path, capsys):
    kept = tmp_path / "notes.txt"
    kept.write_text("my notes")
    link = tmp_path / "run.jsonl"
    os.symlink(kept, link)
    assert cli.main(["What is 3 + 3?", "--model", "llamacpp:m", "--trace", str(link), "-q"]) == 2
    assert "it is a symbolic link" in capsys.readouterr().err
    assert kept.read_text() == "my notes" and os.path.islink(link)


def test_a_page_written_at_a_link_replaces_the_link_not_what_it_points_to(tmp_path, capsys):
    conversation = os.path.join(os.path.dirname(os.path.dirname(__file__)), "conversations", "short.jsonl")
    kept = tmp_path / "notes.txt"
    kept.write_text("my notes")
    link = tmp_path / "page.html"
    os.symlink(kept, link)
    assert cli.main(["--html", str(link), "--from", conversation]) == 0
    assert kept.read_text() == "my notes"
    assert not os.path.islink(link) and link.read_text().startswith("<!DOCTYPE html>")


def test_a_trace_can_still_go_to_a_device(capsys):
    trace = Trace("/dev/null", meta={})
    trace.add("question", text="x")
    trace.close()
    json.dumps(trace.events)
