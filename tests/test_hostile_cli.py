"""The command line against hostile text, terminals, signals and pipes: nothing executes, nothing leaks to the
terminal, nothing is lost, and every ending is one line with a meaningful exit code."""
import json
import os
import stat
import signal
import subprocess
import sys
import time

import cli
import pytest
from cli.output import fail
from model_servers import GeminiStandIn
from test_cli import ROOT
from traces import read_trace

ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m"


def environment(gemini, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    env.update(GEMINI_API_KEY=gemini.key, GOOGLE_GEMINI_BASE_URL=gemini.url, **extra)
    return env


def test_escape_sequences_from_the_model_never_reach_the_terminal(world, capsys, tmp_path):
    world([f"Thought: {ESCAPES}hi\nAction: add_numbers(1, 1)", f"Answer: 2{ESCAPES} done"])
    trace = tmp_path / "t.jsonl"
    assert cli.main(["1 + 1?", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "\x1b]" not in out and "\x07" not in out and "\x9b" not in out and "\x1b[2J" not in out
    assert "Answer: 2 done" in out
    answer = next(e for e in read_trace(str(trace)) if e["type"] == "answer")
    assert answer["text"] == f"2{ESCAPES} done"  # the trace keeps what the model wrote


def test_rich_markup_in_answers_is_shown_as_text_and_loses_no_table(world, capsys, monkeypatch):
    world(["Answer: [link=https://evil.example]click[/link]", "Answer: [/bold] x"])
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main(["q?", "--compare", "full,window:1"]) == 0
    out = capsys.readouterr().out
    assert "[link=https://evil.example]click[/link]" in out and "[/bold] x" in out
    assert "\x1b]8;" not in out  # no hyperlink escape


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_csv_to_a_full_disk_names_the_file_and_the_replay_is_still_reported(tmp_path, capsys, output):
    """A file that cannot be written must not throw away what the run found (a probe's paid answers, say)."""
    code = cli.main(["--replay", os.path.join(ROOT, "conversations", "superbowl.jsonl"), "--policies", "full",
                     "--csv", "/dev/full", *output])
    captured = capsys.readouterr()
    assert code == 2 and captured.err == "warning: cannot write /dev/full: No space left on device\n"
    assert ('"policies"' in captured.out) if output else ("full" in captured.out and "calls" in captured.out)


def test_a_closed_pipe_ends_output_quietly_and_keeps_the_exit_code(world, tmp_path):
    gemini = world(["Thought: add\nAction: add_numbers(40, 2)", "Answer: 42"])
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "40 + 2?", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(gemini), cwd=tmp_path)
    process.stdout.close()  # the reader is gone before anything is written, as with `| head -c 0`
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0 and err == ""


def test_bytes_that_are_not_utf8_in_the_question_and_on_stdin(world, tmp_path):
    gemini = world(["Answer: 5", "Answer: 6"])
    trace = tmp_path / "t.jsonl"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), b"what is \xff\xfe 2+3?", "-q",
                           "--trace", str(trace)],
                          capture_output=True, env=environment(gemini), cwd=tmp_path, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"5\n", b"")
    assert read_trace(str(trace))[1]["text"] == "what is \ufffd\ufffd 2+3?"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "--chat"], input=b"what is \xff 3+3?\n",
                          capture_output=True, env=environment(gemini), cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and b"Answer: 6" in done.stdout and b"Traceback" not in done.stderr


def wait_for(condition, seconds=30):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert condition()


class FirstCallThinks(GeminiStandIn):
    """A Gemini whose first call "thinks" until the test ends; the later ones answer at once. (Setting `delay` back
    to 0 once the first request is seen would race its handler, which may not have read it yet.)"""

    def handle(self, request):
        if len(self.requests) == 1:
            self.closing.wait(30)
        return super().handle(request)


def test_ctrl_c_in_chat_cancels_the_question_and_the_session_goes_on(tmp_path, sigint_reaches_children):
    with FirstCallThinks(["Answer: 4", "Answer: 4"]) as gemini:
        trace = tmp_path / "chat.jsonl"
        process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "--chat", "--trace", str(trace)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=environment(gemini), cwd=tmp_path)
        process.stdin.write("a slow question\n")
        process.stdin.flush()
        wait_for(lambda: gemini.requests)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate("2 + 2?\n", timeout=60)
    assert process.returncode == 0 and "Traceback" not in err
    assert "Answer: 4" in out and "cancelled" in out and err.startswith("interrupted")
    types = [e["type"] for e in read_trace(str(trace))]
    assert types.count("question") == 2 and "error" in types


def test_ctrl_c_in_compare_reports_the_runs_that_ended(world, tmp_path, sigint_reaches_children):
    gemini = world(["Answer: 47"])
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "q?", "--compare", "full,window:2",
                                "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=environment(gemini), cwd=tmp_path)
    wait_for(lambda: len(gemini.requests) >= 2)  # the second run is waiting on a fake with no reply left
    gemini.delay = 30
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err
    report = json.loads(out)
    assert report["interrupted"] is True and [run["answer"] for run in report["runs"]] == ["47"]


def test_a_dotenv_in_a_parent_folder_is_never_read(tmp_path, world):
    gemini = world(["Answer: 47"])
    (tmp_path / ".env").write_text(f"GEMINI_API_KEY={gemini.key}\nGOOGLE_GEMINI_BASE_URL={gemini.url}\n")
    below = tmp_path / "project" / "sub"
    below.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "q?", "--model", "gemini-flash-latest"],
                          capture_output=True, text=True, env=env, cwd=below, timeout=60)
    assert done.returncode == 2 and "no Gemini API key" in done.stderr
    assert gemini.requests == []  # the key in the folder above went nowhere


def test_a_trace_cut_by_kill_replays_its_complete_lines_and_says_one_was_dropped(tmp_path, capsys):
    source = open(os.path.join(ROOT, "conversations", "superbowl.jsonl"), encoding="utf-8").read()
    cut = tmp_path / "cut.jsonl"
    # mid-way into the last line
    cut.write_text(source[: source.rindex("\n", 0, len(source) - 1) + 40], encoding="utf-8")
    assert cli.main(["--replay", str(cut), "--policies", "full", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["calls"] == 7
    assert captured.err == f"warning: {cut}: line {source.count(chr(10))} was cut off and skipped\n"


def test_a_trace_that_cannot_be_written_is_reported_once_and_the_answer_still_printed(world, capsys):
    world(["Thought: add\nAction: add_numbers(40, 2)", "Answer: 42"])
    assert cli.main(["40 + 2?", "-q", "--trace", "/dev/full"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "42\n"
    assert captured.err == ("warning: could not write the trace file /dev/full (No space left on device); "
                            "the file ends there, and the run goes on\n")


@pytest.mark.slow
def test_ctrl_c_while_the_embedded_model_loads_is_one_line(tmp_path, sigint_reaches_children):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "What is 7 * 6 + 5?", "-q"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    notice = process.stderr.readline()  # the offline notice comes just before the model loads
    assert "offline" in notice
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and out == "" and err.strip().splitlines()[-1].startswith("interrupted")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_quiet_output_and_error_lines_carry_no_escape_sequences(world, capsys):
    world([f"Answer: 47{ESCAPES}"])
    assert cli.main(["q?", "-q"]) == 0
    assert capsys.readouterr().out == "47\n"
    assert fail(f"the server said {ESCAPES}no") == 2
    assert capsys.readouterr().err == "error: the server said no\n"


def test_a_probe_whose_model_fails_is_one_line_and_keeps_the_tables(capsys):
    code = cli.main(["--replay", os.path.join(ROOT, "conversations", "superbowl.jsonl"), "--probe",
                     "--policies", "full", "--model", "llamacpp:x", "--phrasings", "1", "--json"])
    captured = capsys.readouterr()
    assert code == 2 and json.loads(captured.out)["calls"] == 7
    assert captured.err.startswith("error: probing stopped") and captured.err.count("\n") == 1


@pytest.mark.parametrize("content, message", [
    ('{"facts": [5]}', "fact 1 is not an object"),
    ('{"facts": [{"id": "a", "text": "x", "phrasings": 5}]}', '"phrasings" must be a list of texts'),
    ('{"facts": [], "probe_turns": ["a"]}', '"probe_turns" must be a list of whole numbers'),
    ('{"facts": [{"id": ["a"], "text": "x"}]}', 'needs "id" as text'),
])
def test_a_facts_file_of_the_wrong_shape_is_one_line(tmp_path, capsys, content, message):
    facts = tmp_path / "facts.json"
    facts.write_text(content)
    assert cli.main(["--replay", os.path.join(ROOT, "conversations", "superbowl.jsonl"), "--facts", str(facts)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("script, extra, message", [
    ('{"turns": [5]}', [], 'turn 1 needs "user" and "answer" as text'),
    ('{"turns": [{"user": "hi", "answer": "x", "steps": "abc"}]}', [], '"steps" a list'),
    (None, ["--policy", "compact:50"], "would ask the model for summaries the script does not hold"),
    (None, ["--trace", "/dev/full"], "could not write the trace file /dev/full"),
])
def test_record_refuses_what_it_cannot_record_in_one_line(tmp_path, capsys, script, extra, message):
    path = os.path.join(ROOT, "conversations", "example.script.json")
    if script is not None:
        path = tmp_path / "script.json"
        path.write_text(script)
    args = ["--record", str(path), *(extra if "--trace" in extra else ["--trace", str(tmp_path / "t.jsonl"), *extra])]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # written into, never renamed over


def test_a_trace_cut_before_its_probe_points_still_replays_the_rest(tmp_path, capsys):
    source = open(os.path.join(ROOT, "conversations", "long.jsonl"), encoding="utf-8").read()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(source[:60_000], encoding="utf-8")  # its header names probe points past the cut
    assert cli.main(["--replay", str(cut), "--policies", "full", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["calls"] > 10
    assert "probe call 55 is outside the session's calls" in captured.err and "left out" in captured.err


def test_an_html_page_holds_no_terminal_command(world, tmp_path):
    world([f"Thought: {ESCAPES}hi\nAction: add_numbers(1, 1)", f"Answer: 2{ESCAPES}"])
    page = tmp_path / "run.html"
    assert cli.main(["1 + 1?", "-q", "--html", str(page)]) == 0
    data = page.read_bytes()
    assert b"\x1b" not in data and b"\x07" not in data and "\x9b".encode() not in data


@pytest.mark.parametrize("content", [b"GEMINI_MODEL=gemini-caf\xe9\n", b"\xff\xfeG\x00=\x00x\x00"])  # Latin-1; UTF-16
def test_a_dotenv_that_is_not_utf8_is_one_line_naming_it(tmp_path, capsys, content):
    import cli

    (tmp_path / ".env").write_bytes(content)  # the tests run in tmp_path
    assert cli.main(["--models"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / ".env") in err and "UTF-8" in err


def test_probing_a_trace_cut_before_its_first_call_is_one_line(tmp_path, capsys):
    path = tmp_path / "cut.jsonl"
    with open(os.path.join(ROOT, "conversations", "superbowl.jsonl"), encoding="utf-8") as file:
        path.write_text(file.readline(), encoding="utf-8")  # the header only
    assert cli.main(["--replay", str(path), "--policies", "full", "--probe"]) == 2
    err = capsys.readouterr().err  # after a warning that the header's probe points are past its end
    assert err.splitlines()[-1] == (f"error: {path} has no instructions to probe with: "
                                    "it was cut short before its first model call")


def test_a_file_name_that_is_not_utf8_is_shown_with_a_replacement_character(tmp_path, agent_py):
    """Python keeps such a name's bytes as surrogates: a strict terminal, an HTML page or an SVG cannot hold them.
    (agent_py's stdout and stderr are strict UTF-8, as on an en_US.UTF-8 desktop: a surrogate written there raises.)"""
    name = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9.jsonl")
    with open(os.path.join(ROOT, "conversations", "superbowl.jsonl"), "rb") as source, open(name, "wb") as copy:
        copy.write(source.read())
    page = tmp_path / "page.html"
    page.write_text("an older page")
    for args in (["--html", str(page), "--from", name],
                 ["--replay", name, "--policies", "full", "--plot", str(tmp_path / "p.svg")]):
        done = agent_py(*args)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-300:]
    assert "caf\ufffd.jsonl" in page.read_text(encoding="utf-8")
    assert "caf\ufffd.jsonl" in (tmp_path / "p.svg").read_text(encoding="utf-8")


def test_a_dotenv_that_cannot_be_read_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    import dotenv

    (tmp_path / ".env").write_text("A=1\n")

    def unreadable(path, **options):  # as for a file without read permission, which root cannot be shown
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(dotenv, "load_dotenv", unreadable)
    assert cli.main(["--models"]) == 2
    assert capsys.readouterr().err == f"error: cannot read {tmp_path / '.env'}: Permission denied\n"


def test_a_page_written_to_standard_output_goes_down_the_pipe_and_devices_stay_devices():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "--html", "/dev/stdout", "--from",
                           os.path.join(ROOT, "conversations", "short.jsonl")], capture_output=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith(b"<!DOCTYPE html>") and done.stdout.endswith(b"</html>\n")
    assert cli.main(["--html", "/dev/null", "--from", os.path.join(ROOT, "conversations", "short.jsonl")]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
