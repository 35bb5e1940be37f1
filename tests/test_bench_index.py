"""bench/README.md lists every script in bench/: a row for each script, a script for each row, each row of a kind the
page names and saying how long the script takes and what it needs. Every script still starts from a folder other than
the repository's root (its --help, or its import for the six with no --help, which would start their work), and none
sets up the import path itself: bench/repository.py does it for all."""
import ast
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
SHARED = "repository.py"  # what the scripts share: a module, not a script
KINDS = {"accuracy", "speed", "constant chosen", "docs generator", "demo against real software"}


def scripts() -> list[str]:
    return sorted(name for name in os.listdir(BENCH) if name.endswith(".py") and name != SHARED)


def rows() -> list[list[str]]:
    """The cells of every row of the index's table whose first cell names a script (the header and rule aside)."""
    with open(os.path.join(BENCH, "README.md"), encoding="utf-8") as file:
        lines = [line.strip() for line in file if line.startswith("| `")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]  # `\|` is a cell's text


def test_every_script_has_a_row_and_every_row_a_script():
    named = [cells[0].strip("`") for cells in rows()]
    assert [name for name in scripts() if name not in named] == []  # scripts with no row
    assert [name for name in named if name not in scripts()] == []  # rows that name no script
    assert len(named) == len(set(named))  # one row a script


def test_every_row_gives_a_kind_the_page_names_a_command_a_time_and_what_it_needs():
    for script, question, kind, command, time, needs in rows():
        assert kind in KINDS, script
        assert question and time and needs, script
        assert script.strip("`") in command or script == "`peers.py`", script  # run.py runs peers.py


def test_no_script_sets_up_the_import_path_itself():
    """sys.path changed in a script's own code (code it hands another process as text is that process's)."""
    changed = []
    for name in scripts():
        with open(os.path.join(BENCH, name), encoding="utf-8") as file:
            tree = ast.parse(file.read())
        changed += [f"{name}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and ast.unparse(node.func) in ("sys.path.insert", "sys.path.append")]
    assert changed == []


def test_every_script_starts_from_another_folder(tmp_path):
    """`python bench/NAME.py --help` from another folder; a script without argparse is imported the way it runs, with
    bench/ first on the import path. All at once, so the check takes about as long as the slowest."""
    started = {}
    for name in scripts():
        with open(os.path.join(BENCH, name), encoding="utf-8") as file:
            has_options = "argparse.ArgumentParser" in file.read()
        command = [os.path.join(BENCH, name), "--help"] if has_options else \
            ["-c", f"import sys; sys.path.insert(0, {BENCH!r}); import {name[:-3]}"]
        started[name] = (has_options, subprocess.Popen([sys.executable, *command], cwd=tmp_path, text=True,
                                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    failed = []
    for name, (has_options, process) in started.items():
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        if process.returncode != 0 or has_options and not out.startswith("usage:"):
            failed.append(f"{name}: exit {process.returncode}, {err.strip()[-300:]}")
    assert failed == []
