"""The README's Python snippet runs where a user runs it: saved as a script of their own in a folder of their own
(not the project's), its one path set to the project's folder as its comment asks, and run with the project's
Python. The model it loads is Gemini, the loopback stand-in, named through the environment as a user would."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEHOLDER = "/path/to/TinyReAct"  # the one thing in the snippet a user edits


def snippet() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        [block] = [b for b in re.findall(r"```python\n(.*?)```", file.read(), re.DOTALL) if "import TinyReAct" in b]
    return block


def test_the_readme_snippet_runs_from_a_folder_of_its_own(gemini, tmp_path):
    gemini(['Thought: one expression\nAction: calculate("7 * 6 + 5")', "Answer: 47"])
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "mine.py").write_text(snippet().replace(PLACEHOLDER, ROOT), encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "mine.py"], cwd=folder, env=environment, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("47 StopReason.ANSWER 1 2 Usage(input_tokens="), run.stdout
