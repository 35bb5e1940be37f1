"""A model call abandoned at TINYREACT_CALL_DEADLINE goes on in its worker thread. Python's shutdown then races it for
stdout and stderr and can abort the process (SIGABRT, exit -6, no message), seen with a deadline of a microsecond:
the script ends at once instead, its output flushed, with the run's own exit code."""
import os
import subprocess
import sys
import threading

import pytest

import cli
from models.services import retry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_call_past_its_deadline_is_counted_while_its_worker_runs(monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(retry, "ABANDONED", [])
    with pytest.raises(retry.DeadlineExceeded):
        retry.within(retry.Deadline(0.01), lambda channel: release.wait(5), "a stand-in", None, None, retry.Channel())
    assert retry.abandoned_running()
    release.set()
    retry.ABANDONED[0].join(5)
    assert not retry.abandoned_running()


@pytest.mark.parametrize("running, ends", [(True, "os._exit"), (False, "sys.exit")])
def test_the_script_ends_at_once_while_an_abandoned_call_runs(monkeypatch, running, ends):
    ended = []
    monkeypatch.setattr(cli, "main", lambda: 1)
    monkeypatch.setattr(retry, "abandoned_running", lambda: running)
    monkeypatch.setattr(os, "_exit", lambda code: ended.append(("os._exit", code)))
    monkeypatch.setattr(sys, "exit", lambda code: ended.append(("sys.exit", code)))
    cli.script()
    assert ended[0] == (ends, 1)  # os._exit never returns; here it is a stand-in that does


def test_a_deadline_of_a_microsecond_is_one_line_and_exit_1(tmp_path):
    environment = {**os.environ, "TINYREACT_CALL_DEADLINE": "0.000001", "LLAMACPP_BASE_URL": "http://127.0.0.1:9/v1"}
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "hi", "--model", "llamacpp:m", "-q"],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "did not finish within TINYREACT_CALL_DEADLINE (1e-06 s)" in done.stderr
