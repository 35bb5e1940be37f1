"""The embedded Gemma 3 270M: tokenizer and forward pass checked against llama.cpp's results on the same file.

The expected values were measured with llama.cpp on gemma-3-270m-q4_k_m.gguf (sha256 a5fd3b62…6818).
The tokenizer tests always run; the forward-pass tests are marked slow (seconds each) and run in CI too.
"""
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from models import Message, Part
from models.embedded.gemma import GemmaModel, load_tokenizer
from models.embedded.gemma_tokenizer import BOS, EOS
from models.embedded.local import StopRule, transcript

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "gemma_react_prompt.txt")
THOUGHT_ACTION = "Thought1: First, I need to multiply 7 by 6.\nAction1: multiply_numbers(7, 6)"
THOUGHT_ACTION_IDS = [63254, 236770, 236787, 5315, 236764, 564, 1202, 531, 24261, 236743, 236832, 684, 236743, 236825,
                      236761, 107, 4396, 236770, 236787, 24261, 236779, 34488, 236769, 236832, 236764, 236743, 236825,
                      236768]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture(scope="module")
def gemma():
    return GemmaModel()


def test_tokenizer_matches_llama_cpp(tokenizer):
    assert tokenizer.encode(THOUGHT_ACTION) == THOUGHT_ACTION_IDS
    assert [BOS] + tokenizer.encode("The capital of France is") == [2, 818, 5279, 529, 7001, 563]
    with open(FIXTURE, encoding="utf-8") as file:
        assert len([BOS] + tokenizer.encode(file.read())) == 302


def test_tokenizer_special_cases(tokenizer):
    assert tokenizer.encode("\n\n") == [108] and tokenizer.encode("a  b")[1] == 138  # user-defined runs
    assert 106 not in tokenizer.encode("<end_of_turn>")  # control tokens are never read from text
    assert tokenizer.decode(tokenizer.encode("naïve café 🤖 ☃")) == "naïve café 🤖 ☃"  # byte fallback round trip
    assert tokenizer.decode([BOS, *THOUGHT_ACTION_IDS, EOS]) == THOUGHT_ACTION  # BOS and EOS print nothing


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\u2581", blacklist_categories=("Cs",)), max_size=60))
def test_tokenizer_round_trips_any_text(text):
    tokenizer = load_tokenizer()
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_transcript_lays_out_a_react_trace_to_continue():
    messages = [Message.of("system", "INSTRUCTIONS", "instructions"),
                Message.of("user", "Question: 2 + 2?", "question"),
                Message.of("model", "Thought1: add\nAction1: add_numbers(2, 2)", "reply"),
                Message("user", (Part("observation", "Observation1: 4"),))]
    prompt, opening = transcript(messages)
    assert prompt == ("INSTRUCTIONS\nQuestion: 2 + 2?\nThought1: add\nAction1: add_numbers(2, 2)\n"
                      "Observation1: 4\nThought2:")
    assert opening == "Thought2:"
    assert transcript(messages[:2])[1] == "Thought1:"


def test_stop_rule_cuts_at_stop_texts_and_after_an_answer_line():
    rule = StopRule(["\nObservation"], "Thought1:")
    assert rule.cut(" add\nAction1: add_numbers(2, 2)\nObservation1: 4") == len(" add\nAction1: add_numbers(2, 2)")
    text = " done\nAnswer: 4\n\nQuestion: what next?"
    assert text[:rule.cut(text)] == " done\nAnswer: 4"
    assert rule.cut(" still thinking") == -1
    assert rule.undecided(" add\nObs") == 4 and rule.undecided(" add\n") == 1 and rule.undecided(" add") == 0


@pytest.mark.slow
def test_greedy_continuation_matches_llama_cpp(gemma):
    text, count, _ = gemma.complete([BOS] + gemma.tokenizer.encode("The capital of France is"), StopRule([]),
                                    max_new_tokens=12)
    assert (text, count) == (" the capital of the country of France. It is the largest", 12)


@pytest.mark.slow
def test_fixture_prompt_continuation_matches_llama_cpp(gemma):
    with open(FIXTURE, encoding="utf-8") as file:
        prompt = file.read()
    ids = [BOS] + gemma.tokenizer.encode(prompt)
    text, _, _ = gemma.complete(ids, StopRule(["Observation"], ""))
    assert text == " First, I need to multiply 7 by 6.\nAction1: multiply_numbers(7, 6)\n"
    # The next call extends the same prompt: only the new tokens are run, and the result is the same as from scratch.
    longer = [BOS] + gemma.tokenizer.encode(prompt + text + "Observation1: 42\n")
    reused, _, _ = gemma.complete(longer, StopRule(["Observation"], ""))
    assert gemma.network.timings["reused_tokens"] >= len(ids) and gemma.network.timings["prefill_tokens"] < 10
    gemma.network.cached = []
    fresh, _, _ = gemma.complete(longer, StopRule(["Observation"], ""))
    assert gemma.network.timings["reused_tokens"] == 0 and fresh == reused


@pytest.mark.slow
def test_gemma_runs_the_loop_from_the_command_line(tmp_path):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    environment.update(WIKIPEDIA_API_URL="http://127.0.0.1:9/w/api.php", OPEN_METEO_URL="http://127.0.0.1:9/v1/forecast")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "What is 7 * 6 + 5?", "--json",
                           "--model", "local:gemma-270m"],
                          capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=600)
    result = json.loads(done.stdout)
    assert result["model"] == "gemma-3-270m" and result["usage_source"] == "counted by its tokenizer, nothing billed"
    assert result["stop_reason"] == "answer" and result["answer"] and done.returncode == 0
    actions = [e["text"] for e in result["trace"] if e["type"] == "action"]
    assert actions and actions[0] == "multiply_numbers(7, 6)"  # it runs real tools through the real loop
    prompts = [e["input_tokens"] for e in result["trace"] if e["type"] == "usage"]
    assert result["usage"]["input_tokens"] == sum(prompts) > 900  # its own tokenizer's counts
