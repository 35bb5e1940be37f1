"""A reply streams to the terminal as the model writes it, but its Answer line waits for the reply's end: a service
may then say it withheld the reply (Gemini's SAFETY, RECITATION) or cut it at the output limit, and such an Answer is
not taken. It showed on the screen as an answer all the same, with the run's refusal only in a warning after it."""
import io

import pytest
from rich.console import Console

from views.display import LiveDisplay

SPLITS = [["Thought: known.\nAnswer: 42"], ["Thought: kno", "wn.\nAns", "wer: 4", "2"], ["Answer: 42"]]


def shown(pieces: list[str], finish: str | None) -> str:
    display = LiveDisplay(events=True, context=None, stderr=False)
    display.console = Console(file=io.StringIO(), force_terminal=False, width=80)
    for piece in pieces:
        display.stream(piece)
    display.show({"type": "reply", "step": 1, "text": "".join(pieces), "finish": finish})
    return display.console.file.getvalue()


@pytest.mark.parametrize("pieces", SPLITS)
def test_a_withheld_or_cut_reply_shows_no_answer_and_a_whole_one_shows_it_once(pieces):
    thought = "Thought: known.\n" if len(pieces) > 1 or "Thought" in pieces[0] else ""
    assert shown(pieces, None) == thought + "Answer: 42\n"
    assert shown(pieces, "stop") == thought + "Answer: 42\n"
    for finish in ("content_filter", "length"):
        assert shown(pieces, finish) == thought


def test_text_without_an_answer_streams_as_it_comes():
    assert shown(["Thought: add\nAct", "ion: add_numbers(1, 2)"], "content_filter") == \
        "Thought: add\nAction: add_numbers(1, 2)\n"
