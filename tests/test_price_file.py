"""A price file (TINYREACT_PRICES) that cannot be a price table is refused in one line naming the file, before any
call: nested past Python's limit, a price that would overflow a cost, cached input dearer than input, a FIFO or a
device, a file too large to be a table."""
import json
import os

import pytest

import cli


def refused(monkeypatch, capsys, path) -> str:
    monkeypatch.setenv("TINYREACT_PRICES", str(path))
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    assert cli.main(["What is 2 + 2?", "--model", "gemini-3.8-flash"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.parametrize("content, says", [
    ('{"models": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    (json.dumps({"models": {"m": {"input": 1e308, "cached_input": 0, "output": 1}}}), "up to 100,000"),
    (json.dumps({"models": {"m": {"input": 1, "cached_input": 2, "output": 1}}}), "cached_input above input"),
    ('{"models": {"m": ' + " " * 1_000_001 + "}}", "1,000,020 bytes, more than 1,000,000"),
])
def test_a_price_file_that_is_no_table_is_one_line(monkeypatch, capsys, tmp_path, content, says):
    path = tmp_path / "prices.json"
    path.write_text(content)
    line = refused(monkeypatch, capsys, path)
    assert says in line and str(path) in line


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_price_file_that_would_block_or_never_end_is_refused(monkeypatch, capsys, tmp_path, kind):
    path = tmp_path / "prices.fifo"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = "/dev/zero"
    assert "not a regular file (a pipe or a device)" in refused(monkeypatch, capsys, path)
