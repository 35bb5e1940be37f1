"""The command line as one table: every combination of options it refused before the table, it refuses with the
same line; every one it let through, it lets through. And no function of cli/ is hard to read (radon cc <= 10)."""
import itertools
import json
import os

import pytest
from radon.complexity import cc_visit

import cli
from cli.arguments import parse_args
from cli.modes import MODES, OPTIONS, _flag, _named, _takes, conflict, mode_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "tests", "fixtures", "cli_refusals.json"), encoding="utf-8") as file:
    RECORDED = json.load(file)  # what conflict() said before the table: every option and pair, and the triples allowed

# One value for each option, as a user would type it; two options stand for a second value of --model and --policies.
ARGUMENTS = {
    "question": ["q?"], "model": ["--model", "gemini-flash-latest"],
    "model_local": ["--model", "local:qwen2.5-coder-0.5b"],
    "models": ["--models"], "verify_cache": ["--verify-cache"], "no_stream": ["--no-stream"], "ttl": ["--ttl", "3"],
    "policy": ["--policy", "window:2"], "chat": ["--chat"], "trace": ["--trace", "t.jsonl"], "json": ["--json"],
    "show_prompt": ["--show-prompt"], "show_context": ["--show-context"], "quiet": ["-q"], "finish": ["--finish"],
    "compare": ["--compare", "full,window:2"], "expect": ["--expect", "47"], "repeat": ["--repeat", "2"],
    "replay": ["--replay", "r.jsonl"], "policies": ["--policies", "full,window:2"],
    "policies_compact": ["--policies", "full,compact:8000"], "probe": ["--probe"], "plot": ["--plot", "p.svg"],
    "csv": ["--csv", "c.csv"], "facts": ["--facts", "f.json"], "probe_facts": ["--probe-facts", "a"],
    "probe_points": ["--probe-points", "1"], "phrasings": ["--phrasings", "2"], "jobs": ["--jobs", "2"],
    "answers": ["--answers", "a.csv"], "record": ["--record", "s.json"], "html": ["--html", "h.html"],
    "source": ["--from", "s.jsonl"],
}
VARIANTS = [{"model", "model_local"}, {"policies", "policies_compact"}]


def said(names) -> str | None:
    argv = [word for name in names if name != "question" for word in ARGUMENTS[name]]
    if "question" in names:  # first, so that --show-context's optional value never takes it
        argv = ARGUMENTS["question"] + argv
    return conflict(parse_args(argv))


def test_every_option_and_pair_is_refused_or_allowed_as_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the files named are compared by their real paths
    different = {names: (line, said(names.split())) for names, line in RECORDED["pairs"].items()
                 if said(names.split()) != line}
    assert different == {}
    assert len(RECORDED["pairs"]) == 559


def test_every_triple_is_refused_or_allowed_as_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    allowed, checked = set(RECORDED["accepted_triples"]), 0
    for names in itertools.combinations(ARGUMENTS, 3):
        if any(len(variant & set(names)) > 1 for variant in VARIANTS):
            continue
        checked += 1
        line = said(names)
        assert (line is None) == (" ".join(names) in allowed), (names, line)
    assert checked == 5394  # every triple of options, but the two values of one


@pytest.mark.parametrize("argv, mode", [
    (["q?"], "run"), (["--chat"], "chat"), (["q?", "--compare", "full"], "compare"), (["--replay", "r"], "replay"),
    (["--replay", "r", "--probe"], "probe"), (["--record", "s.json"], "record"),
    (["--html", "p", "--from", "t"], "saved"), (["--otel", "--from", "t"], "saved"), (["--models"], "models"),
    (["--show-prompt", "--policy", "pinned"], "show_prompt"), (["--verify-cache"], "verify_cache"),
    (["--tools"], "tools"), (["--from", "t", "--fork", "2"], "fork"),
])
def test_each_mode_has_its_handler(argv, mode):
    args = parse_args(argv)
    assert conflict(args) is None and mode_of(args) == mode and mode in cli.HANDLERS


def test_no_function_of_the_command_line_is_above_complexity_10():
    folder = os.path.join(ROOT, "cli")
    modules = sorted(name for name in os.listdir(folder) if name.endswith(".py"))
    assert {"__init__.py", "arguments.py", "modes.py", "ask.py", "replay.py"} <= set(modules)  # it reads them all
    hard = {}
    for name in modules:
        with open(os.path.join(folder, name), encoding="utf-8") as file:
            blocks = cc_visit(file.read())
        hard |= {f"{name}:{block.name}": block.complexity for block in blocks if block.complexity > 10}
    assert hard == {}


def modes_table() -> str:
    """The table of docs/command-line.md, read from cli.modes.MODES."""
    order = ["run", "chat", "compare", "replay", "probe", "record", "saved", "fork", "models", "show_prompt", "tools",
             "verify_cache"]
    assert sorted(order) == sorted(MODES)
    rows = ["| mode | chosen by | takes |", "| --- | --- | --- |"]
    for name in order:
        mode = MODES[name]
        chosen = "a question" if mode.option is None else _flag(mode.option)
        needs = (mode.needs or "").split()
        chosen += f" with {' or '.join(map(_flag, needs))}" if needs else ""
        takes = sorted(_takes(mode) - {mode.option, *needs, "question" if mode.option is None else None},
                       key=OPTIONS.index)
        rows.append(f"| {name.replace('_', '-')} | {chosen} | {', '.join(_named(o, name) for o in takes) or '–'} |")
    return "\n".join(rows) + "\n"


def test_the_documented_table_of_modes_is_the_one_the_command_line_reads():
    with open(os.path.join(ROOT, "docs", "command-line.md"), encoding="utf-8") as file:
        assert modes_table() in file.read()
