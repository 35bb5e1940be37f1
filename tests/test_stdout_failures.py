"""stdout that cannot be written, a full disk or a closed descriptor, ends the run with one line on stderr and exit
74, never a traceback; the trace file keeps what the run did. (A closed pipe only stops output: test_hostile_cli.)"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT = os.path.join(ROOT, "agent.py")


def run(shell_redirect: str, *arguments: str, cwd: str = ROOT) -> subprocess.CompletedProcess:
    quoted = " ".join(f"'{argument}'" for argument in arguments)
    environment = {**os.environ, "LLAMACPP_BASE_URL": "http://127.0.0.1:9/v1"}
    return subprocess.run(["bash", "-c", f"'{sys.executable}' '{AGENT}' {quoted} {shell_redirect}"], cwd=cwd,
                          capture_output=True, text=True, timeout=60, env=environment)


def test_a_full_disk_on_stdout_is_one_line_and_exit_74():
    done = run("> /dev/full", "--models")
    assert done.returncode == 74 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: cannot write to stdout: No space left on device")


def test_a_closed_stdout_is_one_line_and_exit_74():
    done = run(">&-", "--models")
    assert done.returncode == 74 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: cannot write to stdout: it is closed")


def test_the_trace_keeps_what_the_run_did(tmp_path):
    trace = tmp_path / "run.jsonl"
    done = run("> /dev/full", "What is 2 + 2?", "--model", "llamacpp:m", "--trace", str(trace), cwd=str(tmp_path))
    assert done.returncode == 74 and "Traceback" not in done.stderr
    assert '"type": "question"' in trace.read_text()


def test_a_question_with_stdout_closed_is_one_line_and_exit_74(tmp_path):
    trace = tmp_path / "run.jsonl"
    done = run(">&-", "What is 2 + 2?", "--model", "llamacpp:m", "--trace", str(trace), cwd=str(tmp_path))
    assert done.returncode == 74 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: cannot write to stdout: it is closed")
    assert '"type": "question"' in trace.read_text()
