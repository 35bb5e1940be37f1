"""--record: a conversation script becomes a trace that replays as scripted, or is refused in one line."""
import json

import cli
import pytest
from traces import read_trace_file


def record(tmp_path, script) -> tuple[int, str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script) if not isinstance(script, str) else script, encoding="utf-8")
    return cli.main(["--record", str(path), "--trace", str(tmp_path / "t.jsonl")]), str(path)


def test_a_step_written_as_a_whole_reply_gets_its_scripted_result(tmp_path, capsys):
    code, _ = record(tmp_path, {"turns": [{"user": "sum?", "answer": "3", "steps": [
        {"reply": "Thought1: add\nAction1: add_numbers(1, 2)", "result": "three, as scripted"}]}]})
    assert code == 0, capsys.readouterr().err
    _, events = read_trace_file(str(tmp_path / "t.jsonl"))
    assert [e["text"] for e in events if e["type"] == "observation"] == ["three, as scripted"]


def test_a_script_that_names_its_tools_is_offered_those_in_order_then_a_stand_in_for_any_other(tmp_path, capsys):
    steps = [{"reply": 'Action1: lookup_order("ZQ-1")', "result": "shipped"},
             {"reply": 'Action2: track("ZQ-1")', "result": "in transit"}]
    script = {"tools": ["multiply_numbers", "lookup_order"], "turns": [{"user": "where?", "answer": "on its way",
                                                                         "steps": steps}]}
    code, _ = record(tmp_path, script)
    assert code == 0, capsys.readouterr().err
    _, events = read_trace_file(str(tmp_path / "t.jsonl"))
    [docs] = [e["tools"] for e in events if e["type"] == "instructions"]
    assert [line.split("(")[0] for line in docs.splitlines() if not line.startswith(" ")] == [
        "multiply_numbers", "lookup_order", "track"]  # not today's DEFAULT_TOOLS
    assert [e["text"] for e in events if e["type"] == "observation"] == ["shipped", "in transit"]


def test_a_script_naming_a_shipped_tool_outside_the_defaults_gets_the_real_tool(tmp_path, capsys, monkeypatch):
    """A tool that has left the defaults (calculate, here) is still shipped: a script that names it is recorded with
    its docstring, and a step with no scripted result runs it."""
    import experiments.recording

    monkeypatch.setattr(experiments.recording, "DEFAULT_TOOLS",
                        [tool for tool in experiments.recording.DEFAULT_TOOLS if tool.__name__ != "calculate"])
    steps = [{"reply": 'Action1: calculate("(2 + 3) * 4")'}]
    code, _ = record(tmp_path, {"tools": ["calculate"], "turns": [{"user": "(2 + 3) * 4?", "answer": "20",
                                                                     "steps": steps}]})
    assert code == 0, capsys.readouterr().err
    _, events = read_trace_file(str(tmp_path / "t.jsonl"))
    [docs] = [e["tools"] for e in events if e["type"] == "instructions"]
    assert docs.startswith("calculate(expression: str) -> str\n    Evaluate an arithmetic expression")
    assert [e["text"] for e in events if e["type"] == "observation"] == ["20"]


@pytest.mark.parametrize("tools", ["add_numbers", [1], ["add numbers"]])
def test_a_script_whose_tools_are_not_a_list_of_names_is_refused(tmp_path, capsys, tools):
    code, path = record(tmp_path, {"tools": tools, "turns": [{"user": "hi", "answer": "ok"}]})
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f'{path} is not a conversation script: "tools" must be a list of tool names' in err


def test_an_empty_reply_is_recorded_as_the_empty_reply_it_is(tmp_path, capsys):
    code, _ = record(tmp_path, {"turns": [{"user": "hi", "answer": "ok", "steps": [{"reply": ""}]}]})
    assert code == 0, capsys.readouterr().err
    _, events = read_trace_file(str(tmp_path / "t.jsonl"))
    assert [e["text"] for e in events if e["type"] == "reply"][0] == ""
    assert [e["text"] for e in events if e["type"] == "answer"] == ["ok"]


def test_a_run_that_goes_differently_from_the_script_is_refused_saying_where(tmp_path, capsys):
    code, _ = record(tmp_path, {"turns": [{"user": "first?", "answer": "A1", "steps": [{"reply": "Answer: early"}]},
                                          {"user": "second?", "answer": "A2"}]})
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "turn 1 went differently from the script" in err and "'early'" in err and "model call 1 of its 2" in err


@pytest.mark.parametrize("title, message", [(5, "title must be text, got 5"),
                                            ("\ud800", "title must be text")])
def test_a_header_field_replay_would_refuse_is_refused_before_recording(tmp_path, capsys, title, message):
    code, path = record(tmp_path, {"title": title, "turns": [{"user": "hi", "answer": "ok"}]})
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"{path} is not a conversation script: " in err and message in err
    assert not (tmp_path / "t.jsonl").exists()


def test_a_script_whose_file_name_is_not_utf8_still_records_a_trace_that_replays(tmp_path, capsys):
    name = b"caf\xe9.json".decode("utf-8", "surrogateescape")  # as Python hands over such a name from the shell
    script = tmp_path / name
    script.write_text(json.dumps({"turns": [{"user": "hi", "answer": "ok"}]}), encoding="utf-8")
    trace = tmp_path / "t.jsonl"
    assert cli.main(["--record", str(script), "--trace", str(trace)]) == 0
    assert cli.main(["--replay", str(trace), "--policies", "full", "--json"]) == 0
    assert "error" not in capsys.readouterr().err


@pytest.mark.parametrize("data, message", [
    ("[" * 100_000, "its JSON is nested too deeply"),
    ('{"turns": [' + "9" * 5000 + "]}", "it holds a number too long to read"),
    ('{"turns": []}'.encode("utf-16"), "not JSON in UTF-8"),
])
def test_a_script_json_cannot_read_is_one_line_naming_the_file(tmp_path, capsys, data, message):
    path = tmp_path / "script.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    assert cli.main(["--record", str(path), "--trace", str(tmp_path / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path} is not a conversation script: {message}\n"


GOOD = {"turns": [{"user": "sum?", "answer": "3", "steps": [{"reply": "Action1: add_numbers(1, 2)", "result": "3"}]}]}


@pytest.mark.parametrize("script, said", [
    ({"turns": [{"user": "first?", "answer": "A1", "steps": [{"reply": "Answer: early"}]},
                {"user": "second?", "answer": "A2"}]}, "went differently from the script"),
    ({"turns": [{"user": "sum?", "answer": "3", "steps": [{"reply": "Action1: add_numbers(1)", "result": "3"}]}]},
     "were never used"),  # the action is refused (an argument missing), so its scripted result never is
])
def test_a_recording_that_fails_leaves_the_trace_already_there_whole(tmp_path, capsys, script, said):
    assert record(tmp_path, GOOD)[0] == 0
    good = (tmp_path / "t.jsonl").read_bytes()
    code, _ = record(tmp_path, script)
    err = capsys.readouterr().err
    assert code == 2 and said in err and err.count("\n") == 1
    assert (tmp_path / "t.jsonl").read_bytes() == good  # the good one, as it was
    assert sorted(path.name for path in tmp_path.iterdir()) == ["script.json", "t.jsonl"]  # nothing left beside it


def test_a_recording_that_cannot_be_written_names_the_file_asked_for(tmp_path, capsys):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(GOOD), encoding="utf-8")
    code = cli.main(["--record", str(script), "--trace", str(tmp_path / "missing" / "t.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and err == f"error: No such file or directory: {tmp_path / 'missing' / 't.jsonl'}\n"
