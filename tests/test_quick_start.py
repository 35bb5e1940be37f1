"""The questions a newcomer's first minutes hold, answered by the embedded Qwen2.5-Coder 0.5B through the real loop.

A file of its own: it is the longest test, and the test runner gives each file to one worker, so here it runs beside
the other tests of the embedded Qwen (tests/test_qwen.py), not after them.
"""
import pytest

from agent import TinyReAct
from models.embedded.qwen import QwenModel

QUESTION = "What is 7 * 6 + 5?"


@pytest.fixture(scope="module")
def qwen():
    return QwenModel()


@pytest.mark.slow
def test_the_loop_answers_the_quick_start_questions_with_the_default_tools_and_prompt(qwen):
    """The questions a newcomer's first minutes hold (the README's and the two beside it in the tuning set), each
    one calculate call through the real loop, the prompt and tools as a user gets them."""
    for question, expected, action in [(QUESTION, "47", 'calculate("7 * 6 + 5")'),
                                       ("What is 12 divided by 4, plus 10?", "13", 'calculate("12 / 4 + 10")'),
                                       ("What is 25 * 4 + 3?", "103", 'calculate("25 * 4 + 3")')]:
        result = TinyReAct(qwen).query(question)
        actions = [e["text"] for e in result.trace if e["type"] == "action"]
        assert (result.stop_reason.value, result.answer.strip(), actions) == ("answer", expected, [action])
    assert qwen.network.timings["reused_tokens"] > 1000  # later steps only run the new tokens
    assert result.usage.input_tokens > 2 * 1000 and result.usage.output_tokens > 10  # its own tokenizer's counts
