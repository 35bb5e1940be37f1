"""docs/mcp.md's filesystem walkthrough works as written: its commands, taken from the page, run with the reference
filesystem server (Node's npx, its package as the page names it) in a fresh folder, and do what the page says: the
tools it lists and which of them ask, the question shown on a terminal, and the file as the page's edit leaves it.
The model is the one part replaced: a loopback stand-in for a service replies with the calls the page says the 1.5B
model made, so the test is fast and the same each time. The page's code is this project's own documentation, run
here as a test, as tests/test_extending.py runs docs/extending.md."""
import json
import os
import re
import shlex
import shutil
import subprocess

import pytest

import cli
from terminals import Terminal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "docs", "mcp.md"), encoding="utf-8") as file:
    PAGE = file.read()
SECTION = PAGE[PAGE.index("## A filesystem server, with approval"):PAGE.index("## Not yet")]
SETUP, TOOLS_COMMAND, ASK_COMMAND = [
    line.strip() for block in re.findall(r"```sh\n(.*?)```", SECTION, re.DOTALL)
    for line in block.replace("\\\n", " ").splitlines()]
[QUESTION] = re.findall(r"```\n(Run write_file .*?)\n```", PAGE, re.DOTALL)
[EDITED] = re.findall(r"`(\{\"path\": \"todo.md\", \"content\": .*?\})`", SECTION)

OFFLINE = {"npm_config_offline": "true"}  # the package as npm keeps it: no network is asked


@pytest.fixture(scope="module")
def server_kept():
    """Skips unless npx has the page's server without the network (npx keeps it once a run has fetched it)."""
    [package] = re.findall(r"npx -y (\S+)", TOOLS_COMMAND)
    if shutil.which("npx") is None:
        pytest.skip("the page's server needs Node's npx")
    done = subprocess.run(["npx", "-y", package, "."], stdin=subprocess.DEVNULL, capture_output=True,
                          env={**os.environ, **OFFLINE}, timeout=60)
    if done.returncode != 0:
        pytest.skip(f"npx does not have {package} without the network: run the page's --tools command once")


def agent_arguments(command: str) -> list[str]:
    """A `python agent.py ...` line of the page as agent.py's arguments."""
    words = shlex.split(command)
    assert words[:2] == ["python", "agent.py"], command
    return words[2:]


@pytest.fixture
def folder(server_kept, tmp_path, monkeypatch):
    """A fresh folder, made by the page's first command as a shell runs it, and worked in."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("cli.loading.ENV_BESIDE_AGENT", tmp_path / ".env")  # no developer's .env
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    subprocess.run(SETUP, shell=True, check=True, cwd=tmp_path)
    assert (tmp_path / "project" / "todo.md").read_text() == "# Shopping\n- eggs\n"
    return tmp_path


def test_the_tools_the_page_lists_and_which_ask(folder, capsys):
    assert cli.main(agent_arguments(TOOLS_COMMAND)) == 0
    listed = capsys.readouterr().out.splitlines()
    served = [line for line in listed if "@modelcontextprotocol/server-filesystem" in line]
    asking = sorted(line.split()[0] for line in served if "asks first" in line)
    assert len(served) == 14 and asking == ["edit_file", "move_file", "write_file"]
    assert not any("asks first" in line for line in served if line.startswith(("read_", "create_directory")))


def test_the_question_the_page_shows_and_its_edit_leave_the_file_as_the_page_says(folder, openai):
    """The file named as the page names it is the file the first command made (not project/project/todo.md); the
    question on the terminal is the page's, word for word; `e` with the page's arguments writes the file."""
    asked_as = QUESTION.splitlines()[1].removeprefix("  arguments: ")
    asked = json.loads(asked_as)
    server = openai([f"Thought: I need to read todo.md first.\nAction: read_text_file({asked['path']!r})",
                     f"Thought: I need to write the new line.\nAction: write_file({asked['path']!r}, "
                     f"{asked['content']!r})",
                     "Thought: The Observation is the answer.\nAnswer: Successfully wrote to todo.md"])
    arguments = agent_arguments(ASK_COMMAND)
    at = arguments.index("--model")
    arguments[at:at + 2] = ["--model", "openai:m"]  # the stand-in, in place of the 1.5B model
    terminal = Terminal(arguments, {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "k" * 8})
    try:
        shown = terminal.wait_for("for the session? ")
        assert "Observation1: # Shopping" in shown  # read from project/todo.md
        assert QUESTION.strip() in "\n".join(line.rstrip() for line in shown.replace("\r\n", "\n").splitlines())
        terminal.type("e\r")
        terminal.wait_for(f"(Enter keeps them): {asked_as}")  # the model's, on the line to edit
        terminal.type("\x15" + EDITED + "\r")  # Ctrl-U clears the line
        terminal.wait_for("Answer: Successfully wrote to todo.md")
        assert terminal.process.wait(timeout=30) == 0
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()
    assert (folder / "project" / "todo.md").read_text() == json.loads(EDITED)["content"]
    assert (folder / "project" / "todo.md").read_text().endswith("- milk\n")
    assert not (folder / "project" / "project").exists()
