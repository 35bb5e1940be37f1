"""The vendors' managers that clear or drop without summarising (issue 51): anthropic-clear, strands-window and
openclaw-ttl. Below its trigger each sends exactly what full history sends; past it, each documented parameter
changes what the model is shown the way its vendor's documentation says; bad settings are one line."""
import os

import pytest

from agent import TinyReAct
from experiments.replay import Pace, paced
from models.scripted import ScriptedModel
from policies import make_policy
from policies.invariants import violations
from policies.rendering import observations_cut_at
from tokens import local_counter
from tools.arithmetic import add_numbers
from traces import read_trace_file


def read_page(name: str) -> str:
    """Returns a long page of text.
    Example: read_page("a") returns a page that starts with "a begins." and ends with "a ends."."""
    return f"{name} begins. " + "Nothing of note here. " * 120 + f"{name} ends."


PAGE = len(read_page("a"))
SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conversations", "support.jsonl")
READS = [f'Action: read_page("{name}")' for name in "abcd"]


def recorded(replies: list[str], questions: list[str]) -> list[dict]:
    agent = TinyReAct(ScriptedModel(replies), tools=[add_numbers, read_page], policy=make_policy("full"))
    for question in questions:
        agent.query(question)
    return agent.trace.events


def at_calls(events: list[dict]) -> list[list[dict]]:
    """The trace as it stood at each model call."""
    return [events[:index] for index, event in enumerate(events) if event["type"] == "context"]


def rendered(spec: str, events: list[dict]) -> list[list]:
    """The context of every call under `spec`, each checked against the invariants."""
    policy, contexts = make_policy(spec), []
    for prefix in at_calls(events):
        contexts.append(policy.render(prefix))
        assert violations(contexts[-1], prefix) == []
    return contexts


def shown(messages) -> list[tuple[str, str]]:
    return [(part.kind, part.text) for message in messages[1:] for part in message.parts]


def tokens(messages) -> int:
    return sum(local_counter().count(part.text) for message in messages for part in message.parts)


def kinds(messages, kind: str) -> list[str]:
    return [text for shown_kind, text in shown(messages) if shown_kind == kind]


def refused(spec: str) -> str:
    with pytest.raises(ValueError) as raised:
        make_policy(spec)
    said = str(raised.value)
    assert "\n" not in said and f"{spec.partition(':')[0]} takes " in said
    return said


# anthropic-clear


def test_anthropic_clear_below_its_trigger_sends_what_full_sends_and_clears_only_past_it():
    header, events = read_trace_file(SUPPORT)
    full = rendered("full", events)
    assert rendered("anthropic-clear", events) == full  # 100,000 tokens: never reached here
    trigger = tokens(full[20])
    for size, cleared, whole in zip(map(tokens, full), rendered(f"anthropic-clear:{trigger}", events), full):
        assert (cleared == whole) == (size <= trigger)
        assert (size <= trigger) or "Observation1: [tool result cleared]" in kinds(cleared, "placeholder")


@pytest.mark.parametrize("keep", [0, 1, 3])
def test_anthropic_clear_keeps_the_results_of_the_latest_keep_tool_uses(keep):
    last = rendered(f"anthropic-clear:trigger=0/keep={keep}", recorded(READS + ["Answer: read"], ["read"]))[-1]
    assert kinds(last, "placeholder") == [f"Observation{n}: [tool result cleared]" for n in range(1, 5 - keep)]
    assert len(kinds(last, "observation")) == keep


def test_anthropic_clear_clears_nothing_when_it_cannot_clear_at_least_clear_at_least_tokens():
    events = recorded(READS + ["Answer: read"], ["read"])
    full, last = rendered("full", events)[-1], rendered("anthropic-clear:trigger=0/keep=3", events)[-1]
    saved = tokens(full) - tokens(last)  # one page's result
    assert rendered(f"anthropic-clear:trigger=0/keep=3/clear_at_least={saved + 1}", events)[-1] == full
    assert rendered(f"anthropic-clear:trigger=0/keep=3/clear_at_least={saved}", events)[-1] == last


def test_anthropic_clear_never_clears_the_results_of_excluded_tools():
    replies = [READS[0], "Action: add_numbers(2, 3)", READS[1], "Action: add_numbers(4, 5)", "Answer: done"]
    last = rendered("anthropic-clear:trigger=0/keep=0/exclude_tools=read_page", recorded(replies, ["go"]))[-1]
    assert kinds(last, "placeholder") == ["Observation2: [tool result cleared]", "Observation4: [tool result cleared]"]
    assert [text[:22] for text in kinds(last, "observation")] == ["Observation1: a begins", "Observation3: b begins"]


def test_anthropic_clear_clears_the_calls_inputs_only_when_told_and_only_of_cleared_results():
    events = recorded(READS + ["Answer: read"], ["read"])
    assert kinds(rendered("anthropic-clear:trigger=0/keep=1", events)[-1], "reply") == READS
    assert kinds(rendered("anthropic-clear:trigger=0/keep=1/clear_tool_inputs=true", events)[-1], "reply") == [
        "Action: read_page([input cleared])"] * 3 + ['Action: read_page("d")']


def test_anthropic_clear_triggered_by_tool_uses_acts_once_there_are_more_than_trigger():
    events = recorded(READS + ["Answer: read"], ["read"])
    contexts = rendered("anthropic-clear:trigger=2/trigger_type=tool_uses/keep=1", events)
    full = rendered("full", events)
    assert contexts[:3] == full[:3]  # before the calls made after 0, 1 and 2 tool uses
    assert [len(kinds(context, "placeholder")) for context in contexts[3:]] == [2, 3]


# strands-window

TURNS = [f'Action: read_page("{name}")' if n % 2 == 0 else f"Answer: read {name}" for n, name in enumerate("aabbcc")]


def test_strands_window_below_its_window_sends_what_full_sends():
    events = recorded(TURNS, ["read a", "read b", "read c"])  # 12 messages
    assert rendered("strands-window", events) == rendered("full", events)
    assert rendered("strands-window:window_size=12", events) == rendered("full", events)


def test_strands_window_drops_the_oldest_turns_after_an_answer_not_during_a_turn():
    events = recorded(TURNS, ["read a", "read b", "read c"])  # each turn: question, call, result, answer
    contexts = rendered("strands-window:window_size=5", events)
    # during the second turn, 6 and then 7 messages: Strands trims after the invocation, not before each call
    assert all(("question", "Question: read a") in shown(context) for context in contexts[2:4])
    # after it, 8 > 5: the oldest dropped up to the first question at least 5 messages from the end
    assert shown(contexts[4])[:2] == [("placeholder", "[1 earlier question and 2 earlier steps not shown]"),
                                      ("question", "Question: read b")]


def test_strands_window_per_turn_trims_before_model_calls_keeping_each_call_with_its_result():
    events = recorded(READS + ["Answer: read"], ["read"])  # one turn: 1 question, 4 calls and their results
    assert rendered("strands-window:window_size=4", events) == rendered("full", events)
    last = rendered("strands-window:window_size=4/per_turn=1", events)[-1]
    # no question to start from within the window: the first call whose result follows it
    assert shown(last)[:3] == [("question", "Question: read"), ("placeholder", "[2 earlier steps not shown]"),
                               ("reply", READS[2])]
    assert len(kinds(last, "observation")) == 2
    every_other, full = rendered("strands-window:window_size=4/per_turn=2", events), rendered("full", events)
    assert every_other[2] == full[2] and every_other[3] != full[3]  # 5 messages at the third call, trimmed at the 4th


def test_strands_window_cuts_the_oldest_result_to_its_ends_only_when_the_prompt_overflows_the_model():
    events = recorded(READS[:3] + ["Answer: read"], ["read"])
    full = rendered("full", events)
    page = read_page("a")
    overflowing = rendered(f"strands-window:context_window={tokens(full[-1]) - 1}", events)
    assert overflowing[:-1] == full[:-1]
    assert kinds(overflowing[-1], "observation")[0] == \
        f"Observation1: {page[:200]}\n[... {PAGE - 400:,} characters cut ...]\n  {page[-200:]}"
    assert kinds(overflowing[-1], "observation")[1:] == kinds(full[-1], "observation")[1:]
    # without truncation, Strands drops the oldest messages instead
    dropped = rendered(f"strands-window:context_window={tokens(full[-1]) - 1}/should_truncate_results=false",
                       events)[-1]
    assert shown(dropped)[1] == ("placeholder", "[1 earlier step not shown]")
    assert len(kinds(dropped, "observation")) == 2


# openclaw-ttl

PRUNES = "openclaw-ttl:context_window=1000/min_prunable_tool_chars=0"  # 4,000 characters: four pages fill it


def openclaw(**settings) -> str:
    """openclaw-ttl with a window that four pages fill and no minimum to hard-clear, but for `settings`."""
    settings = {"context_window": 1000, "min_prunable_tool_chars": 0} | settings
    return "openclaw-ttl:" + "/".join(f"{key}={value}" for key, value in settings.items())


def paced_reads(pace: Pace) -> list[dict]:
    """Two questions, four pages read for the first, a sum for the second; `pace`: seconds before each
    question's first call, and before each later call."""
    replies = READS + ["Answer: read", "Action: add_numbers(4, 0)", "Answer: 4"]
    return paced(recorded(replies, ["read", "how many?"]), pace)


def test_openclaw_ttl_without_an_idle_gap_as_long_as_its_ttl_sends_what_full_sends():
    events = paced_reads(Pace(299, 1))
    assert rendered(PRUNES, events) == rendered("full", events)
    assert rendered("openclaw-ttl", paced_reads(Pace(3600, 1))) == rendered("full", paced_reads(Pace(3600, 1)))


@pytest.mark.parametrize("ttl, gap, prunes", [("5m", 300, True), ("5m", 299, False), ("1h", 3000, False),
                                              ("1h", 3600, True), ("30s", 31, True), ("300s", 299, False)])
def test_openclaw_ttl_prunes_the_call_after_an_idle_gap_of_ttl_and_only_that_call(ttl, gap, prunes):
    events = paced_reads(Pace(gap, 1))
    contexts, full = rendered(f"{PRUNES}/ttl={ttl}", events), rendered("full", events)
    pruned = [number for number, (context, whole) in enumerate(zip(contexts, full)) if context != whole]
    # the second question's first call; the next, a second later, sends the whole history again
    assert pruned == ([5] if prunes else []) and len(contexts) == 7
    if prunes:
        assert kinds(contexts[5], "placeholder")[0] == "Observation1: [Old tool result content cleared]"


def at_the_gap(spec: str, cut: int | None = None):
    """The context of the call after the idle gap, with observations cut at `cut` characters."""
    with observations_cut_at(cut):
        return rendered(spec, paced_reads(Pace(600, 1)))[5]


@pytest.mark.parametrize("keep, pruned", [(0, 4), (2, 3), (3, 2), (5, 0), (6, 0)])
def test_openclaw_ttl_never_prunes_the_results_after_the_last_keep_last_assistants_replies(keep, pruned):
    # five replies so far: four calls and an answer
    placeholders = kinds(at_the_gap(openclaw(keep_last_assistants=keep, hard_clear_ratio=0)), "placeholder")
    assert placeholders == [f"Observation{n}: [Old tool result content cleared]" for n in range(1, pruned + 1)]


def test_openclaw_ttl_clears_the_oldest_results_until_the_estimate_is_below_hard_clear_ratio():
    # about 11,000 characters in 40,000: past 0.25 and 0.2, each page cleared takes 0.066 off the ratio
    cleared = [len(kinds(at_the_gap(openclaw(context_window=10000, hard_clear_ratio=ratio, soft_trim_ratio=0.1,
                                             keep_last_assistants=0)), "placeholder")) for ratio in (0.3, 0.25, 0.2)]
    assert cleared == [0, 1, 2]


def test_openclaw_ttl_hard_clear_needs_min_prunable_tool_chars_and_can_be_disabled():
    assert kinds(at_the_gap(openclaw(min_prunable_tool_chars=2 * PAGE)), "placeholder")
    assert not kinds(at_the_gap(openclaw(min_prunable_tool_chars=2 * PAGE + 1)), "placeholder")  # 2 prunable
    assert not kinds(at_the_gap(f"{PRUNES}/hard_clear_enabled=false"), "placeholder")
    assert kinds(at_the_gap(f"{PRUNES}/hard_clear_placeholder=gone"), "placeholder")[0] == "Observation1: [gone]"


def test_openclaw_ttl_soft_trims_long_results_to_their_head_and_tail_past_soft_trim_ratio():
    def first(**settings):
        trim = {"hard_clear_enabled": "false", "soft_trim_head_chars": 300, "soft_trim_tail_chars": 100}
        return kinds(at_the_gap(openclaw(**trim | settings), cut=100_000), "observation")[0]
    page = read_page("a")
    assert first(soft_trim_max_chars=2000) == \
        f"Observation1: {page[:300]}\n[... {PAGE - 400:,} characters cut ...]\n  {page[-100:]}"
    assert first(soft_trim_max_chars=PAGE) == f"Observation1: {page}"  # not longer than soft_trim_max_chars
    assert first(soft_trim_ratio=1) == f"Observation1: {page}"  # the estimate is below the ratio of the window
    # OpenClaw's default trim keeps 3,000 characters: under the replay's 2,000-character cut it changes nothing
    assert at_the_gap("openclaw-ttl:context_window=3000/hard_clear_enabled=false") == \
        at_the_gap("openclaw-ttl:context_window=3000/soft_trim_ratio=1")


def test_openclaw_ttl_prunes_only_the_tools_allowed_and_not_denied():
    assert not kinds(at_the_gap(f"{PRUNES}/tools_deny=READ_*"), "placeholder")  # case-insensitive globs
    assert not kinds(at_the_gap(f"{PRUNES}/tools_allow=add_numbers"), "placeholder")
    assert kinds(at_the_gap(f"{PRUNES}/tools_allow=read_page"), "placeholder")
    assert not kinds(at_the_gap(f"{PRUNES}/tools_allow=read_page/tools_deny=*"), "placeholder")  # deny wins


def test_openclaw_ttl_at_its_defaults_prunes_nothing_of_a_small_conversation_even_after_an_hour():
    assert at_the_gap("openclaw-ttl") == rendered("full", paced_reads(Pace(600, 1)))[5]
    assert at_the_gap(openclaw()) != at_the_gap("openclaw-ttl")


# bad settings


@pytest.mark.parametrize("spec, reason", [
    ("anthropic-clear:trigger=-1", "need >= 0"), ("anthropic-clear:keep=-1", "need >= 0"),
    ("anthropic-clear:trigger=2/trigger_type=tool_uses/keep=3", "keep=3 is more than trigger=2 tool uses allows"),
    ("anthropic-clear:trigger_type=messages", "trigger_type is one of input_tokens, tool_uses"),
    ("anthropic-clear:keeps=3", "unknown parameter 'keeps'"),
    ("strands-window:window_size=-1", "need >= 0"), ("strands-window:per_turn=-2", "need >= 0"),
    ("strands-window:window=40", "unknown parameter 'window'"),
    ("openclaw-ttl:ttl=-5m", "ttl takes a duration"), ("openclaw-ttl:ttl=soon", "ttl takes a duration"),
    ("openclaw-ttl:keep_last_assistants=-1", "need >= 0"), ("openclaw-ttl:soft_trim_ratio=1.5", "need 0 to 1"),
    ("openclaw-ttl:soft_trim_head_chars=3000", "is more than soft_trim_max_chars=4000 allows"),
    ("openclaw-ttl:hard_clear_placeholder=[]", "needs some text"),
    ("openclaw-ttl:keepLastAssistants=3", "unknown parameter 'keepLastAssistants'")])
def test_bad_settings_are_one_line_naming_the_policy_s_parameters(spec, reason):
    assert reason in refused(spec)


def test_each_setting_is_named_back_as_written_and_builds_the_same_policy():
    for spec in ["anthropic-clear:trigger=5000/keep=1/exclude_tools=a/exclude_tools=b/clear_tool_inputs=true",
                 "strands-window:window_size=10/per_turn=2", "openclaw-ttl:ttl=1h/tools_deny=read_*"]:
        assert make_policy(spec).name == spec and make_policy(make_policy(spec).name).name == spec
    assert make_policy("anthropic-clear:trigger=100000").name == "anthropic-clear"
    assert make_policy("anthropic-clear:5000").name == "anthropic-clear:trigger=5000"
