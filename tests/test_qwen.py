"""The embedded Qwen2.5-Coder-0.5B-Instruct: tokenizer and forward pass checked against llama.cpp, and the loop.

The expected values (tests/fixtures/qwen_goldens.json) were measured with llama.cpp through llama-cpp-python
0.3.36 on the same GGUF file, greedy, no BOS. The tokenizer tests always run; the ones that load the weights
(which unpacks them, about a minute, on a fresh cache) or run the network are marked slow. The loop test's first
prompt is the golden's, so it reuses that test's key/value cache.
"""
import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from agent import STOP_SEQUENCES, StopReason, TinyReAct
from models import ContextOverflow, Message
from models.embedded.local import LocalModel, StopRule, transcript
from models.embedded.qwen import QwenModel, load_tokenizer
from models.embedded.qwen_tokenizer import END_OF_TEXT, IM_END, IM_START
from models.embedded.transformer import Architecture, silu
from tools import tools_named

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "tests", "fixtures", "qwen_goldens.json"), encoding="utf-8") as file:
    GOLDENS = json.load(file)
QUESTION = "What is 7 * 6 + 5?"


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture(scope="module")
def qwen():
    return QwenModel()


@pytest.mark.parametrize("case", GOLDENS["tokenize"], ids=lambda case: case["text"][:20])
def test_tokenizer_matches_llama_cpp(tokenizer, case):
    assert tokenizer.encode(case["text"]) == case["ids"]


def test_tokenizer_prompt_lengths_match_llama_cpp(tokenizer):
    greedy = GOLDENS["greedy"]
    assert [len(tokenizer.encode(g["prompt"])) for g in greedy] == [g["prompt_ids"] for g in greedy]


def test_special_tokens_are_read_only_when_asked_for(tokenizer):
    chat = "<|im_start|>user\nhi<|im_end|>"
    assert tokenizer.encode(chat, special=True) == [IM_START, 872, 198, 6023, IM_END]
    as_text = tokenizer.encode(chat)
    assert IM_START not in as_text and IM_END not in as_text and tokenizer.decode(as_text) == chat
    assert END_OF_TEXT not in tokenizer.encode("<|endoftext|>")  # text is data, not instructions
    assert tokenizer.decode([IM_START, *tokenizer.encode("hi"), IM_END]) == "hi"  # control tokens print nothing


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_tokenizer_round_trips_any_text(text):
    tokenizer = load_tokenizer()
    assert tokenizer.decode(tokenizer.encode(text)) == text


class Sent(Exception):
    """Carries the first prompt out of the loop."""


def test_the_loops_first_prompt_is_the_golden_one():
    """The golden ReAct continuation was measured on exactly the prompt this project's loop sends first, with the
    tools the golden names."""
    class FirstPrompt:
        name, usage_source, backend, window = "first-prompt", "none", "test", None

        def generate(self, messages, stop, **ignored):
            raise Sent(transcript(messages)[0])

    golden = GOLDENS["greedy"][1]
    with pytest.raises(Sent) as sent:
        TinyReAct(FirstPrompt(), tools=tools_named(golden["tools"])).query(QUESTION)
    assert sent.value.args[0] == golden["prompt"]


class ScriptedNetwork:
    """Stands in for the Transformer: yields the given tokens, whatever the prompt."""

    def __init__(self, tokens: list[int], context: int = 32_768):
        self.tokens, self.arch = tokens, Architecture(1, 8, 1, 1, 8, 1e-6, context, 1e4, silu)

    def greedy(self, prompt, end_tokens, limit):
        yield from self.tokens[:limit]


def test_streamed_text_is_exactly_the_reply_and_never_what_is_cut(tokenizer):
    continuation = " I add them.\nAction2: add_numbers(42, 5)\nObservation2: 47\nThought3: done"
    model = LocalModel("scripted", tokenizer, ScriptedNetwork(tokenizer.encode(continuation)), [], frozenset())
    messages = [Message.of("user", "Question: 6 * 7 + 5?", "question")]
    pieces = []
    reply = model.generate(messages, STOP_SEQUENCES, on_text=pieces.append, on_event=None)
    assert reply.text == "Thought1: I add them.\nAction2: add_numbers(42, 5)"
    assert "".join(pieces) == reply.text and len(pieces) > 5  # token by token, and "\nObservation" never shown


def test_an_answer_cut_by_the_new_token_limit_is_no_answer(tokenizer):
    endless = " I know it.\nAnswer: The dose is 1" + " and more" * 400  # the Answer line never ends
    model = LocalModel("scripted", tokenizer, ScriptedNetwork(tokenizer.encode(endless)), [], frozenset())
    assert model.generate([Message.of("user", "Question: dose?", "question")], STOP_SEQUENCES).finish == "length"
    result = TinyReAct(model).query("Dose?")
    assert result.stop_reason == StopReason.CUT and result.answer is None
    finished = LocalModel("scripted", tokenizer, ScriptedNetwork(tokenizer.encode(" I know it.\nAnswer: 1\n")), [],
                          frozenset())
    assert TinyReAct(finished).query("Dose?").answer == "1"


def test_a_prompt_longer_than_the_window_is_refused(tokenizer):
    model = LocalModel("tiny-window", tokenizer, ScriptedNetwork([], context=10), [], frozenset())
    messages = [Message.of("user", "Question: " + "seven times six " * 3, "question")]
    length = len(tokenizer.encode(transcript(messages)[0]))
    with pytest.raises(ContextOverflow) as refused:
        model.generate(messages, STOP_SEQUENCES)
    assert str(refused.value).startswith(f"the context is {length} tokens, more than tiny-window's window of 10:")
    assert length > 10


def test_a_context_past_the_window_stops_the_run_and_a_chat_goes_on(tokenizer):
    model = LocalModel("tiny-window", tokenizer, ScriptedNetwork([], context=600), [], frozenset())
    agent = TinyReAct(model)
    result = agent.query("What is 7 * 6 + 5?")  # the instructions alone are about 900 tokens
    assert result.stop_reason is StopReason.CONTEXT_OVERFLOW and result.answer is None
    assert result.trace[-2]["type"] == "error" and "window of 600" in result.trace[-2]["message"]
    assert result.trace[-1]["type"] == "stop" and result.trace[-1]["reason"] == "context_overflow"
    assert agent.query("And 2 + 2?").stop_reason is StopReason.CONTEXT_OVERFLOW  # the session itself goes on


@pytest.mark.slow
def test_greedy_continuation_matches_llama_cpp(qwen):
    golden = GOLDENS["greedy"][0]
    text, count, _ = qwen.complete(qwen.tokenizer.encode(golden["prompt"]), StopRule([]),
                                   max_new_tokens=golden["tokens"])
    assert (text, count) == (golden["continuation"], golden["tokens"])


@pytest.mark.slow
def test_react_prompt_continuation_matches_llama_cpp(qwen):
    golden = GOLDENS["greedy"][1]
    text, count, _ = qwen.complete(qwen.tokenizer.encode(golden["prompt"]), StopRule([]),
                                   max_new_tokens=golden["tokens"])
    assert (text, count) == (golden["continuation"], golden["tokens"])


@pytest.mark.slow  # loads the 0.5B and 270M weights; the choice alone is tested fast in test_model_selection.py
def test_with_no_key_the_default_is_qwen_and_the_notice_names_it():
    from models import load_model

    notices = []
    model = load_model(None, notice=notices.append)  # conftest removes every key from the environment
    assert isinstance(model, QwenModel) and model.name == "qwen2.5-coder-0.5b"
    assert notices and "offline Qwen2.5-Coder 0.5B model" in notices[0]
    assert type(load_model("local:gemma-270m")).__name__ == type(load_model("gemma-3-270m")).__name__ == "GemmaModel"


@pytest.mark.slow
def test_a_new_run_loads_the_saved_instructions_and_writes_the_same_reply(tmp_path):
    from agent import TinyReAct
    from models.embedded.prefixes import PrefixStore

    replies, prefilled = [], []
    for run in range(2):  # two runs, each a new model: the second loads what the first saved
        model = QwenModel()
        model.prefixes = PrefixStore(tmp_path)
        result = TinyReAct(model, ttl=1).query("What is 7 * 6?")
        replies.append([e["text"] for e in result.trace if e["type"] == "reply"])
        prefilled.append(model.network.timings["prefill_tokens"])
    assert replies[0] == replies[1]
    assert prefilled[1] < 60 < 800 < prefilled[0]  # the second worked through the question only
    assert len(list(tmp_path.glob("*.npz"))) == 1


@pytest.mark.parametrize("line", ["Answer1: 67", "**Answer**: 67", "  Answer: 67", "**Answer:** 67"])
def test_an_answer_line_in_any_form_the_parser_reads_ends_the_continuation(tokenizer, line):
    rambling = f" I know it.\n{line}\nQuestion: what next?" + " and more" * 400
    model = LocalModel("scripted", tokenizer, ScriptedNetwork(tokenizer.encode(rambling)), [], frozenset())
    result = TinyReAct(model).query("Sum?")
    assert result.stop_reason == StopReason.ANSWER and result.answer == "67"
