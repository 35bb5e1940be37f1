"""Files given to read (--replay, --from, --record, --facts) are checked before they are read: a FIFO would block
the run forever, /dev/zero never end, a huge file fill the memory. Each is one line and exit 2."""
import os

import pytest

import cli
import files
import traces

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHORT = os.path.join(ROOT, "conversations", "short.jsonl")


def arguments(flag: str, path: str, tmp_path) -> list[str]:
    return {"--replay": ["--replay", path], "--from": ["--html", str(tmp_path / "page.html"), "--from", path],
            "--record": ["--record", path, "--trace", str(tmp_path / "recorded.jsonl")],
            "--facts": ["--replay", SHORT, "--facts", path]}[flag]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize("flag", ["--replay", "--from", "--record", "--facts"])
def test_a_fifo_or_a_device_is_refused_before_it_is_read(tmp_path, capsys, fifo, flag):
    for path, kind in ((fifo, "a pipe"), ("/dev/zero", "a device")):
        assert cli.main(arguments(flag, path, tmp_path)) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert line.endswith(f"it is {kind}, not a regular file") and path in line


@pytest.mark.parametrize("flag", ["--replay", "--from", "--record", "--facts"])
def test_a_file_past_the_limit_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch, flag):
    if flag != "--facts":  # --facts is read beside a trace, which must fit
        monkeypatch.setattr(traces, "MAX_TRACE_BYTES", 1000)
    monkeypatch.setattr(files, "MAX_JSON_BYTES", 1000)
    path = tmp_path / "big"
    path.write_bytes(b" " * 1001)
    assert cli.main(arguments(flag, str(path), tmp_path)) == 2
    assert "1,001 bytes, more than 1,000" in capsys.readouterr().err
