"""In Jupyter a Result, an agent's session and a replay show as their page, inline, in a frame of their own, once
`%load_ext views.notebook` has registered the display (the loop and the experiments know nothing of pages)."""
import ast
import html
import os
import re

import pytest

from agent import TinyReAct
from experiments.replay import replay_file
from models.scripted import ScriptedModel
from tools.arithmetic import add_numbers
from views.pages import replay_page, run_page

IPython = pytest.importorskip("IPython")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOSTILE = '"></iframe><script>document.title = "pwned"</script>'


def framed(shown: str) -> str:
    """The page inside the one frame `shown` is, unescaped; fails when anything stands beside the frame."""
    match = re.fullmatch(r'<iframe srcdoc="([^"]*)" title="TinyReAct page" style="[^"]*"></iframe>', shown)
    assert match, shown[:200]
    return html.unescape(match.group(1))


@pytest.fixture(scope="module")
def shown():
    """What a notebook shows for an object, as HTML, in a real IPython shell with the extension loaded."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "views.notebook")
    return lambda value: shell.display_formatter.format(value)[0]["text/html"]


def test_a_result_and_the_agent_show_their_page_and_hostile_text_stays_inside_the_frame(shown):
    agent = TinyReAct(ScriptedModel(["Action1: add_numbers(2, 2)", f"Answer: {HOSTILE}", "Answer: 5"]),
                      tools=[add_numbers])
    first = agent.query("What is 2 + 2?")
    agent.query("And 2 + 3?")
    page = framed(shown(first))
    header = {"model": "scripted", "backend": "scripted"}
    assert page == run_page(header, first.trace) and "<title>Run: What is 2 + 2?</title>" in page
    session = framed(shown(agent))
    assert "What is 2 + 2?" in session and "And 2 + 3?" in session and HOSTILE not in session


def test_a_replay_shows_its_page_and_names_itself_in_one_line(shown):
    replayed = replay_file(os.path.join(ROOT, "conversations", "short.jsonl"), ["full", "window:2"])
    assert framed(shown(replayed)) == replay_page(replayed.header, replayed.events, replayed.reports,
                                                         replayed.counter)
    assert "\n" not in repr(replayed) and repr(replayed).endswith("policies full, window:2)")


@pytest.mark.slow
def test_the_teaching_notebook_runs_and_each_object_shows_its_page():
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    notebook = nbformat.read(os.path.join(ROOT, "docs", "teaching.ipynb"), as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": os.path.join(ROOT, "docs")}}).execute()
    pages = [framed(output["data"]["text/html"]) for cell in notebook.cells if cell.cell_type == "code"
             for output in cell.outputs if "text/html" in output.get("data", {})]
    assert len(pages) == 4  # the result, the agent, the fork, the replay
    assert "<title>Run: What is 7 * 6 + 5?</title>" in pages[0] and "Answer: 47" in pages[0]
    assert "And 2 + 2?" in pages[1] and "What is 7 * 6 + 5?" in pages[1]
    assert "window:0" in pages[2] and "I do not see 7 * 6 any more" in pages[2]
    assert "<title>Replay: " in pages[3] and "window:2" in pages[3]
    compared = next(cell for cell in notebook.cells if "before, after = " in cell.source).outputs[0]["data"]
    before, after = ast.literal_eval(compared["text/plain"])
    assert any("Observation1: 42" in text for text in before) and not any("Observation1" in text for text in after)
    errors = [output for cell in notebook.cells for output in cell.get("outputs", []) if output.output_type == "error"]
    assert errors == []
