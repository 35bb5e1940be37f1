"""The README's run is quoted from the program: the command under "What a run looks like" is run here with the
embedded model and the tools the README says it was made with, and its output must be the README's, line by line,
the seconds aside. When this fails, the README is out of date: paste the output it prints."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = 'python agent.py "What is 7 * 6 + 5?"'
# agent.py as the command runs it, with DEFAULT_TOOLS set to the tools named in its first argument
WITH_TOOLS = ("import runpy, sys, tools; tools.DEFAULT_TOOLS[:] = tools.tools_named(sys.argv[1].split(',')); "
              "sys.argv[:2] = ['agent.py']; runpy.run_path('agent.py', run_name='__main__')")


def readme() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        return file.read()


def readme_block() -> list[str]:
    text = readme()
    start = text.index(f"```text\n$ {COMMAND}\n") + len(f"```text\n$ {COMMAND}\n")
    return text[start:text.index("```", start)].rstrip("\n").split("\n")


def readme_tools() -> list[str]:
    """The tools the README says its run was made with."""
    named = re.search(r"own output, made with these tools: (.*?);", readme(), re.DOTALL)
    return re.findall(r"`(\w+)`", named[1])


def timeless(lines: list[str]) -> list[str]:
    return [re.sub(r"· \d+(\.\d+)? s$", "· N s", line.rstrip()) for line in lines]


@pytest.mark.slow
def test_the_readme_shows_what_its_command_prints():
    environment = {**os.environ, "GEMINI_API_KEY": "", "GOOGLE_API_KEY": "", "TINYREACT_MODEL": "", "GEMINI_MODEL": "",
                   "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"}  # no key: the embedded model, as a new user sees it
    run = subprocess.run([sys.executable, "-c", WITH_TOOLS, ",".join(readme_tools()), "What is 7 * 6 + 5?"], cwd=ROOT,
                         env=environment, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    printed = (run.stderr + run.stdout).rstrip("\n").split("\n")
    assert timeless(printed) == timeless(readme_block()), "\n".join(printed)
