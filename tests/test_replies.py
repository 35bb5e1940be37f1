"""The reply parser and the action parser: what counts as a Thought, an Action and an Answer."""
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from replies import ActionError, cut_at_observation, parse_action, parse_reply

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_numbered_and_unnumbered_lines_are_read():
    assert parse_reply("Thought3: add them\nAction3: add_numbers(1, 2)").action == "add_numbers(1, 2)"
    reply = parse_reply("Thought: add them\nAction: add_numbers(1, 2)")
    assert (reply.thought, reply.action, reply.answer) == ("add them", "add_numbers(1, 2)", None)


def test_multiline_thought_and_answer():
    reply = parse_reply("Thought: first line\nsecond line\nAnswer: 47\nthat is all")
    assert reply.thought == "first line\nsecond line"
    assert reply.answer == "47\nthat is all"


def test_first_action_wins_and_a_later_answer_is_ignored():
    reply = parse_reply("Thought: t\nAction: add_numbers(1, 2)\nAction: add_numbers(3, 4)\nAnswer: 3")
    assert reply.action == "add_numbers(1, 2)" and reply.answer is None


def test_answer_before_any_action_counts():
    reply = parse_reply("Thought: I know it\nAnswer: Paris\nAction: search_wikipedia_page(\"Paris\")")
    assert reply.answer == "Paris" and reply.action is None


def test_keywords_must_start_a_line():
    reply = parse_reply("I think the Answer: 42 is right and my Action: add_numbers(1, 1)")
    assert reply == parse_reply("") and reply.answer is None and reply.action is None


def test_markdown_bold_keywords_and_backticks():
    reply = parse_reply("**Thought:** go\n**Action:** `multiply_numbers(7, 6)`")
    assert reply.action == "multiply_numbers(7, 6)"


def test_empty_answer_is_not_an_answer():
    assert parse_reply("Thought: hmm\nAnswer:").answer is None


def test_an_empty_answer_or_action_line_does_not_hide_the_line_after_it():
    assert parse_reply("Answer:\nAction: add_numbers(1, 2)") == (None, "add_numbers(1, 2)", None)
    assert parse_reply("Action:\nAnswer: 5") == (None, None, "5")


def test_cut_at_model_written_observation():
    text = "Thought1: x\nAction1: add_numbers(1, 2)\nObservation1: 3\nThought2: y\nAnswer: 3"
    assert cut_at_observation(text) == "Thought1: x\nAction1: add_numbers(1, 2)"
    assert cut_at_observation("Observation: made up\nAnswer: 1") == ""
    assert cut_at_observation("Thought: the observation above") == "Thought: the observation above"


def test_an_observation_after_other_text_on_its_line_is_cut_too():
    caught = "Thought2: Now add.\nAction2: add_numbers(42, 42) Observation2: 84\nThought3: done\nAnswer: 84"
    assert cut_at_observation(caught) == "Thought2: Now add.\nAction2: add_numbers(42, 42)"
    assert cut_at_observation("Action: f(1) **Observation 2:** 3") == "Action: f(1)"
    assert cut_at_observation("Thought: the Observation was odd") == "Thought: the Observation was odd"  # no colon
    assert cut_at_observation("Thought: NoObservation: here") == "Thought: NoObservation: here"  # not a word


MADE_UP = st.builds(lambda number, bold, value:
                        f"{'**' if bold else ''}Observation{number}:{'**' if bold else ''} {value}",
                    st.sampled_from(["", "1", "2", " 3", "12"]), st.booleans(), st.sampled_from(["84", "Paris", ""]))
BEFORE = st.sampled_from(["Action2: add_numbers(42, 42)", "Thought: so", "Action: f(1)", "", "Answer: 4", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(BEFORE, min_size=1, max_size=3), MADE_UP, st.sampled_from([" ", "\n", "\t", " \n", "  "]),
       st.text(max_size=30))
def test_a_made_up_observation_ends_the_reply_wherever_it_starts(lines, made_up, gap, after):
    text = "\n".join(lines) + gap + made_up + after
    cut = cut_at_observation(text)
    assert cut == ("\n".join(lines) + gap).rstrip()  # everything before it, nothing from it on
    assert parse_reply(cut) == parse_reply(("\n".join(lines) + gap).rstrip())


def test_parse_action_literals_positional_and_keyword():
    call = parse_action('wikipedia_summary("Caesars Superdome", sentences=2)')
    assert (call.name, call.args, call.kwargs) == ("wikipedia_summary", ("Caesars Superdome",), {"sentences": 2})
    assert parse_action("add_numbers(-1.5, 2e3)").args == (-1.5, 2000.0)


@pytest.mark.parametrize("hostile", [
    "add_numbers(__import__('os').system('touch pwned'), 1)",
    "add_numbers(x, 1)",
    "add_numbers(1 + 2, 3)",
    "add_numbers(*[1, 2])",
    "add_numbers(**{'x': 1, 'y': 2})",
    "os.system('touch pwned')",
    "(lambda: 1)()",
    "add_numbers(1, 2); import os",
    "add_numbers",
    "add_numbers(" * 500,
    "x" * 5000,
    # under the length limit, but nested deeper than Python's recursion limit lets a tree be walked back to text
    "add_numbers(" + "+".join(["1"] * 990) + ", 2)",
    "add_numbers(" + "-" * 900 + "1, 2)",
    "add_numbers(" + "not " * 400 + "1, 2)",
])
def test_hostile_or_malformed_actions_raise_action_error(hostile, tmp_path):
    with pytest.raises(ActionError):
        parse_action(hostile)
    assert not (tmp_path / "pwned").exists()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_parses_without_raising(text):
    reply = parse_reply(text)
    assert reply.action is None or reply.answer is None
    cut = cut_at_observation(text)
    assert "Observation" not in "".join(line.lstrip(" \t*")[:11] for line in cut.splitlines())
    if reply.action is not None:
        try:
            parse_action(reply.action)
        except ActionError:
            pass


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("add_numbers()'\"[]{},.:;=*-+_ 0123456789xos\\\n")), max_size=200))
def test_action_like_text_only_ever_raises_action_error(text):
    try:
        call = parse_action(text)
    except ActionError:
        return
    assert call.name.isidentifier()


def test_a_repeated_keyword_is_refused_as_python_refuses_it():
    with pytest.raises(ActionError, match="keyword argument repeated: y"):
        parse_action("add_numbers(x=1, y=2, y=100)")


def test_model_text_that_python_warns_about_is_read_without_a_warning_printed():
    """Python warns on stderr about some source it still parses (`1or 2`, an invalid escape in a string): from a
    model's reply that would be noise in the middle of a run. Run as the command line runs, with Python's default
    warning filters, in a process of its own; other source still gets its warnings."""
    texts = ["add_numbers(1or 2)", "add_numbers(0x1for 2)", 'search_wikipedia_page("\\d+")',
             "add_numbers(1if 1 else 2, 3)"]
    script = ("import ast, sys\nfrom replies import ActionError, parse_action\n"
              f"for text in {texts!r}:\n"
              "    try:\n        parse_action(text)\n    except ActionError:\n        pass\n"
              "sys.stderr.write('-- other source --\\n')\nast.parse('1or 2')\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONWARNINGS": ""})
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith("-- other source --\n") and "SyntaxWarning" in run.stderr
