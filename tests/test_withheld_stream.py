"""A reply streams to the terminal as the model writes it, but its Answer line waits: it shows only as the answer the
run takes. A service may say it withheld the reply (Gemini's SAFETY, RECITATION) or cut it at the output limit, an
Answer may follow an Action (the Action runs), an attempt may break and start over: such an Answer is not taken, and
it showed on the screen all the same, with the run's refusal only in a warning after it."""
import io

import pytest
from rich.console import Console

from agent import TinyReAct
from models import ModelReply
from models.scripted import ScriptedModel
from replies import parse_reply
from traces import Trace
from views.display import LiveDisplay


def display() -> LiveDisplay:
    shown = LiveDisplay(events=True, context=None, stderr=False)
    shown.console = Console(file=io.StringIO(), force_terminal=False, width=80)
    return shown


def on_screen(replies: list, tools: list = ()) -> str:
    """What a person sees of a run whose replies stream (4 characters a piece, so keywords arrive split)."""
    screen = display()
    TinyReAct(ScriptedModel(replies), tools=list(tools), trace=Trace(on_event=screen.show),
              on_text=screen.stream).query("Q?")
    return screen.console.file.getvalue().removeprefix("Question: Q?\n")


# Every form of Answer line the reply's parser takes, and so every form the terminal must hold back.
ANSWERS = ["Answer: 42", "**Answer:** 42", "Answer1: 42", "  Answer: 42", "Answer : 42", "** Answer 2 **: 42"]


@pytest.mark.parametrize("line", ANSWERS)
def test_a_withheld_or_cut_reply_shows_no_answer_and_a_whole_one_shows_it_once(line):
    text = "Thought: known.\n" + line
    assert parse_reply(text).answer == "42"
    for finish in ("content_filter", "length"):
        assert on_screen([ModelReply(text, finish=finish)]) == "Thought: known.\n"
    assert on_screen([ModelReply(line, finish="content_filter")]) == ""
    for finish in (None, "stop"):  # taken: shown once, as it came
        assert on_screen([ModelReply(text, finish=finish)]) == f"Thought: known.\n{line}\n"


def add_numbers(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_an_answer_after_an_action_is_not_shown_the_action_runs():
    replies = ["Thought: add\nAction: add_numbers(1, 2)\nAnswer: 4", "Answer: 3"]
    assert on_screen(replies, [add_numbers]) == ("Thought: add\nAction: add_numbers(1, 2)\nObservation1: 3\n"
                                                 "Answer: 3\n")


def test_an_attempt_that_starts_over_shows_no_answer_of_its_own():
    screen = display()
    for piece in ("Thought: half\nAns", "wer: 4"):
        screen.stream(piece)
    screen.show({"type": "retry", "backend": "openai", "status": None, "reason": "connection broken", "attempt": 2,
                 "attempts": 4, "wait": 1.0, "restart_stream": True})
    screen.close()
    assert screen.console.file.getvalue() == "Thought: half\n"


def test_text_without_an_answer_streams_as_it_comes():
    screen = display()
    for piece in ("Thought: add\nAct", "ion: add_numbers(1, 2)\n**", "Note"):
        screen.stream(piece)
    assert screen.console.file.getvalue() == "Thought: add\nAction: add_numbers(1, 2)\n**Note"  # "**" waited
