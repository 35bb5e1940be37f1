"""This repository as the scripts in bench/ use it: its root on the import path, and an earlier commit of it checked
out to time against.

A script runs as `python bench/NAME.py` from any folder, so Python puts bench/ first on the import path and finds
this module there; importing it puts the repository's root on the path too, so that the script can import the
project's modules. A script that starts the tests' loopback servers also calls add_tests_to_path().
"""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")
sys.path.insert(0, ROOT)


def add_tests_to_path() -> None:
    """Put tests/ first on the import path, where the tests' loopback servers (servers.py, model_servers.py) are."""
    sys.path.insert(0, TESTS)


@contextlib.contextmanager
def earlier_checkout(rev: str) -> Iterator[str]:
    """Commit `rev` of this repository checked out in a temporary folder (a detached git worktree), to run beside this
    checkout: its path. The worktree and its folder are removed on leaving."""
    folder = tempfile.mkdtemp(prefix="tinyreact-earlier-")
    checkout = os.path.join(folder, "before")
    try:
        subprocess.run(["git", "worktree", "add", "--detach", checkout, rev], cwd=ROOT, check=True,
                       capture_output=True)
        yield checkout
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", checkout], cwd=ROOT, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
