"""The stream cut: however a reply is split into pieces, the user sees exactly the reply a whole call gives."""
from hypothesis import given, settings, strategies as st

from models.streaming import StreamCut, cut_position, split_reasoning
from replies import cut_at_observation, observation_at

STOP = ["\nObservation"]
# Replies built from the pieces that matter: keywords, line breaks, stars, spaces, think tags.
fragments = st.sampled_from(["Thought: ", "Action: f(1)", "Answer: 4", "\n", "Observation", "Obs", "**", " ", "x",
                             "<think>", "</think>", "Observation: 5", " Observation2: 84", "2", ":"])
replies = st.lists(fragments, max_size=14).map("".join)


def stream(text: str, sizes: list[int], stop: list[str]) -> tuple[str, str, str]:
    shown, reasoning = [], []
    cut = StreamCut(stop, shown.append, reasoning.append)
    start = 0
    for size in sizes * (len(text) + 1):
        if start >= len(text) or cut.feed(text[start:start + size]):
            break
        start += size
    return cut.finish(), "".join(shown), "".join(reasoning)


@settings(max_examples=200, deadline=None)
@given(replies, st.lists(st.integers(1, 6), min_size=1, max_size=5), st.sampled_from([STOP, []]))
def test_any_split_gives_the_whole_reply_cut_once(text, sizes, stop):
    whole_reasoning, whole = split_reasoning(text)
    streamed, shown, reasoning = stream(text, sizes, stop)
    assert shown == streamed  # what the user saw is the reply, nothing held back at the end, nothing extra
    end = cut_position(whole, stop)
    assert streamed == (whole[:end] if end >= 0 else whole)  # piece by piece cuts where the whole text is cut
    assert cut_at_observation(streamed) == cut_at_observation(whole.split("\nObservation")[0] if stop else whole)
    assert observation_at(streamed) == -1 and (not stop or "\nObservation" not in streamed)
    assert reasoning.strip() == whole_reasoning or not text.lstrip().startswith("<think>")


def test_an_observation_after_an_action_on_the_same_line_is_held_then_cut():
    shown = []
    cut = StreamCut(STOP, shown.append)
    assert not cut.feed("Action2: add_numbers(42, 42) Observ")
    assert "".join(shown) == "Action2: add_numbers(42, 42) "  # "Observ" waits: it could become "Observation2:"
    assert not cut.feed("ation2")
    assert cut.feed(": 84\nThought3: 84 it is") and cut.finish() == "Action2: add_numbers(42, 42) "
    assert "".join(shown) == "Action2: add_numbers(42, 42) "  # the loop's cut then drops the trailing space


def test_blanks_after_the_reasoning_are_not_reply_text():
    assert stream("<think>hmm</think>", [18], STOP) == ("", "", "hmm")
    assert stream("<think>hmm</think> \n Answer: 4", [18, 1, 1, 3], STOP) == ("Answer: 4", "Answer: 4", "hmm")


def test_a_partial_observation_line_is_held_until_it_is_decided():
    shown = []
    cut = StreamCut(STOP, shown.append)
    assert not cut.feed("Action: f(1)\n**Obs")
    assert "".join(shown) == "Action: f(1)\n"  # "**Obs" waits: it could still become "**Observation"
    assert not cut.feed("cure")  # "**Obscure" cannot become Observation: released
    assert "".join(shown) == "Action: f(1)\n**Obscure"
    assert cut.feed("\nObservation: 3") and cut.finish() == "Action: f(1)\n**Obscure"
