"""The vendors' summarising context managers (issue 51): each sends exactly what full history sends until its trigger,
acts once past it as its documentation says, and each documented parameter changes what is sent."""
import os

import pytest

from agent import TinyReAct
from experiments.facts import call_points
from experiments.replay import Summaries, replay, timed
from models.scripted import ScriptedModel
from policies import make_policy
from policies.invariants import violations
from tokens import local_counter
from tools.arithmetic import add_numbers
from traces import read_trace_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORT = os.path.join(ROOT, "conversations", "support.jsonl")
LONG = os.path.join(ROOT, "conversations", "long.jsonl")
COUNT = local_counter().count
VENDORS = ["anthropic-compact", "openai-compact", "claude-code", "codex", "langchain-summary", "adk-compact"]
# the token-triggered ones, each with its trigger set to T tokens; a T of 3,000 acts a few times on support.jsonl
AT = {"anthropic-compact": "anthropic-compact:trigger={}", "codex": "codex:model_auto_compact_token_limit={}",
      "openai-compact": "openai-compact:compact_threshold={}/item_tokens=100",
      "claude-code": "claude-code:window={}/buffer=0"}


def support():
    return read_trace_file(SUPPORT)


def sizes_under_full(events) -> list[int]:
    full = make_policy("full")
    return [sum(COUNT(message.text) for message in full.render(events[:call])) for call in call_points(events)]


def first_request(spec: str, events) -> int | None:
    """The number (from 0) of the first call before which `spec` asks for a summary; None if it never does."""
    policy = make_policy(spec)
    return next((number for number, call in enumerate(call_points(events))
                 if policy.summary_request(events[:call], COUNT) is not None), None)


def shown(messages) -> list[tuple[str, str]]:
    return [(part.kind, part.text) for message in messages[1:] for part in message.parts]


def summarised(spec: str, events, upto_call: int, text: str = "Summary: the thermostat, the charge, the fix."):
    """The trace as a loop under `spec` would have it at call `upto_call`: its summary request answered."""
    calls = call_points(events)
    prefix = list(events[:calls[upto_call]])
    upto, request = make_policy(spec).summary_request(prefix, COUNT)
    return prefix + [{"type": "summary", "upto": upto, "text": text, "policy": make_policy(spec).name}], request


@pytest.mark.parametrize("spec", VENDORS)
def test_with_its_documented_defaults_each_sends_what_full_history_sends_on_a_conversation_this_size(spec):
    """support.jsonl peaks under 10,000 tokens: no token trigger a vendor documents is reached (ADK counts invocations,
    not tokens: it is the one that acts)."""
    header, events = support()
    full = make_policy("full")
    policy = make_policy(spec)
    same = [policy.render(events[:call]) == full.render(events[:call]) for call in call_points(events)]
    if spec == "adk-compact":
        assert first_request(spec, events) is not None
    else:
        assert all(same) and first_request(spec, events) is None


@pytest.mark.parametrize("vendor", sorted(AT))
def test_each_asks_for_its_summary_at_the_first_call_past_its_trigger_and_sends_full_history_before(vendor):
    header, events = support()
    sizes = sizes_under_full(events)
    trigger = sizes[20]  # the context at call 20, under full history
    spec = AT[vendor].format(trigger + (20_000 if vendor == "claude-code" else 0))  # its window less the summary room
    at_or_past = vendor in ("codex", "claude-code")  # ">=": the trigger "reached"
    expected = next(number for number, size in enumerate(sizes) if size > trigger or (at_or_past and size == trigger))
    assert first_request(spec, events) == expected <= 21
    policy, full = make_policy(spec), make_policy("full")
    for call in call_points(events)[:expected]:
        assert policy.render(events[:call]) == full.render(events[:call])


def test_anthropic_compact_replaces_everything_before_with_the_summary():
    header, events = support()
    with_summary, request = summarised("anthropic-compact:trigger=3000", events, first_request(
        "anthropic-compact:trigger=3000", events))
    assert "Keep verbatim" in request[0].text  # the project's summary prompt, without instructions
    parts = shown(make_policy("anthropic-compact:trigger=3000").render(with_summary))
    summary = "Summary of the earlier conversation:\nSummary: the thermostat, the charge, the fix."
    assert parts[0] == ("summary", summary)
    assert [kind for kind, _ in parts[1:]] == ["question"]  # the current question, and nothing of what came before
    assert violations(make_policy("anthropic-compact:trigger=3000").render(with_summary), with_summary) == []


def test_anthropic_compact_instructions_replace_the_summary_prompt():
    header, events = support()
    spec = "anthropic-compact:trigger=3000/instructions=List every error code."
    _, request = summarised(spec, events, first_request(spec, events))
    assert request[0].text.startswith("List every error code.") and "Keep verbatim" not in request[0].text


def test_openai_compact_asks_for_a_stand_in_of_the_item_size_and_says_the_item_is_opaque():
    header, events = support()
    sizes = []
    for item in (100, 400):
        spec = f"openai-compact:compact_threshold=3000/item_tokens={item}"
        with_summary, request = summarised(spec, events, first_request(spec, events))
        assert request[0].text.endswith(f"At most about {item} tokens.")
        assert [kind for kind, _ in shown(make_policy(spec).render(with_summary))] == ["summary", "question"]
        [report] = replay(header, events, [spec], facts=[], points=[],
                          summaries=Summaries(ScriptedModel(["Summary."] * 20)))
        assert "opaque (encrypted)" in report.caveat and f"about {item:,} tokens" in report.caveat
        sizes.append(len(request[0].text))
    assert sizes[0] == sizes[1]  # only the length asked for differs


def test_codex_keeps_the_users_questions_beside_the_summary_and_drops_every_reply():
    header, events = support()
    spec = "codex:model_auto_compact_token_limit=3000"
    number = first_request(spec, events)
    with_summary, _ = summarised(spec, events, number)
    parts = shown(make_policy(spec).render(with_summary))
    questions = [f"Question: {e['text']}" for e in with_summary if e["type"] == "question"]
    assert parts[0][0] == "summary" and [text for kind, text in parts[1:]] == questions  # all fit in 20,000 tokens
    assert {kind for kind, _ in parts[1:]} == {"question"}
    assert violations(make_policy(spec).render(with_summary), with_summary) == []


def test_codex_keeps_the_newest_questions_that_fit_in_its_budget(monkeypatch):
    import policies.codex

    header, events = support()
    spec = "codex:model_auto_compact_token_limit=3000"
    with_summary, _ = summarised(spec, events, first_request(spec, events))
    questions = [e["text"] for e in with_summary if e["type"] == "question"]
    room = sum(COUNT(text) for text in questions[-3:-1])  # the two questions before the current one
    monkeypatch.setattr(policies.codex, "USER_MESSAGES", room)
    parts = shown(make_policy(spec).render(with_summary))
    assert [text for _, text in parts[1:]] == [f"Question: {text}" for text in questions[-3:]]


def test_langchain_summary_never_summarises_without_a_trigger_however_long_the_conversation():
    header, events = read_trace_file(LONG)
    assert first_request("langchain-summary", events) is None and max(sizes_under_full(events)) > 4000


def test_langchain_summary_triggers_on_the_tokens_of_the_messages_not_counting_the_instructions():
    header, events = support()
    full = make_policy("full")
    tokens = [sum(COUNT(text) for _, text in shown(full.render(events[:call]))) for call in call_points(events)]
    spec = f"langchain-summary:trigger_tokens={tokens[20]}"
    assert first_request(spec, events) == next(n for n, size in enumerate(tokens) if size >= tokens[20])
    for call in call_points(events)[:first_request(spec, events)]:
        assert make_policy(spec).render(events[:call]) == full.render(events[:call])


def test_langchain_summary_triggers_on_messages_and_keeps_the_last_messages():
    header, events = support()
    full = make_policy("full")
    counts = [len(shown(full.render(events[:call]))) for call in call_points(events)]
    spec = f"langchain-summary:trigger_messages={counts[10]}/keep_messages=5"
    assert first_request(spec, events) == counts.index(counts[10])  # reached at the first call with that many
    with_summary, _ = summarised(spec, events, first_request(spec, events))
    parts = shown(make_policy(spec).render(with_summary))
    assert parts[0][0] == "summary" and len(parts) - 1 <= 5
    assert parts[1:] == shown(full.render(with_summary))[-(len(parts) - 1):]  # the latest messages, as they were
    fewer = f"langchain-summary:trigger_messages={counts[10]}/keep_messages=2"
    assert len(shown(make_policy(fewer).render(summarised(fewer, events, first_request(fewer, events))[0]))) <= 3


def test_langchain_summary_asks_from_the_last_tokens_it_is_told_to_trim_to():
    header, events = support()
    requests = {}
    for trim in (0, 300):
        spec = f"langchain-summary:trigger_tokens=3000/trim_tokens_to_summarize={trim}"
        _, request = summarised(spec, events, first_request(spec, events))
        requests[trim] = request[0].text
    assert len(requests[300]) < len(requests[0])
    tail = requests[300].split("# CONVERSATION\n", 1)[1]
    assert COUNT(tail) <= 300 + 10 and requests[0].endswith(tail)  # the latest messages, whole


def test_adk_compact_summarises_every_interval_of_invocations_with_the_overlap_and_shows_every_summary():
    header, events = support()
    questions = [index for index, event in enumerate(events) if event["type"] == "question"]
    calls = call_points(events)
    spec = "adk-compact:compaction_interval=3/overlap_size=1"
    first = first_request(spec, events)
    assert calls[first] > questions[3] and not any(questions[3] < call < calls[first] for call in calls)  # 4th's first
    once, _ = summarised(spec, events, first, "Summary one.")
    later = [number for number, call in enumerate(calls) if call > questions[6]][0]  # the 7th invocation's first call
    policy = make_policy(spec)
    between = once + list(events[calls[first]:calls[later]])
    assert all(policy.summary_request(between[:len(once) + call - calls[first]], COUNT) is None
               for call in calls[first:later])
    upto, request = policy.summary_request(between, COUNT)
    assert f"Question: {events[questions[2]]['text']}" in request[0].text  # the overlap: the 3rd invocation
    assert f"Question: {events[questions[1]]['text']}" not in request[0].text
    twice = between + [{"type": "summary", "upto": upto, "text": "Summary two.", "policy": policy.name}]
    parts = shown(make_policy(spec).render(twice))
    assert [text for kind, text in parts if kind == "summary"] == ["Summary of the earlier conversation:\nSummary one.",
                                                                  "Summary of the earlier conversation:\nSummary two."]
    assert violations(make_policy(spec).render(twice), twice) == []
    _, no_overlap = make_policy("adk-compact:compaction_interval=3/overlap_size=0").summary_request(between, COUNT)
    assert f"Question: {events[questions[2]]['text']}" not in no_overlap[0].text


def test_adk_compact_interval_is_counted_in_invocations():
    header, events = support()
    questions = [index for index, event in enumerate(events) if event["type"] == "question"]
    calls = call_points(events)
    for interval in (2, 5):
        first = first_request(f"adk-compact:compaction_interval={interval}/overlap_size=0", events)
        assert calls[first] > questions[interval] and not any(questions[interval] < call < calls[first]
                                                              for call in calls)


def idle_session(gap: float):
    """Eight questions of one tool step each, their calls a second apart but the eighth question's first call, made
    `gap` seconds after the call before it."""
    model = ScriptedModel([r for n in range(8) for r in (f"Action: add_numbers({n}, 1)", f"Answer: {n + 1}")])
    agent = TinyReAct(model, tools=[add_numbers])
    for n in range(8):
        agent.query(f"What is {n} + 1?")
    events = agent.trace.events
    calls = call_points(events)
    last_question = max(index for index, event in enumerate(events) if event["type"] == "question")
    times, at = [], 0.0
    for call in calls:
        at += gap if call == min(c for c in calls if c > last_question) else 1.0
        times.append(at)
    return timed(events, times), last_question


@pytest.mark.parametrize("idle_minutes, keep, cleared", [(60, 5, 2), (60, 2, 5), (120, 5, 0), (60, 0, 7)])
def test_claude_code_clears_old_tool_results_after_an_idle_gap_and_only_then(idle_minutes, keep, cleared):
    events, last_question = idle_session(gap=61 * 60)  # the eighth question, an hour and a minute after the seventh
    policy = make_policy(f"claude-code:idle_minutes={idle_minutes}/keep_tool_results={keep}")
    full = make_policy("full")
    calls = call_points(events)
    for call in calls:
        if call < last_question:  # no idle gap yet: exactly what full history sends
            assert policy.render(events[:call]) == full.render(events[:call])
    last = policy.render(events[:calls[-1]])
    markers = [text for kind, text in shown(last) if kind == "placeholder"]
    assert markers == ["Observation1: [Old tool result content cleared]"] * cleared
    assert violations(last, events[:calls[-1]]) == []


def test_claude_code_clears_in_a_replay_paced_an_hour_a_question_and_not_ten_minutes():
    from experiments.replay import parse_pace

    header, events = support()
    for pace, acts in (("3700,5", True), ("600,5", False)):
        full, claude = replay(header, events, ["full", "claude-code"], facts=[], points=[], pace=parse_pace(pace))
        assert claude.violations == 0 and (claude.total < full.total) is acts and claude.summary_calls == 0
        assert (claude.buckets["markers"] > 0) is acts


def test_claude_code_auto_compacts_at_its_window_less_the_summary_room_and_the_buffer():
    header, events = support()
    sizes = sizes_under_full(events)
    for window, buffer in ((sizes[20] + 20_000, 0), (sizes[20] + 20_000 + 500, 500)):
        number = first_request(f"claude-code:window={window}/buffer={buffer}", events)
        assert number == next(n for n, size in enumerate(sizes) if size >= sizes[20])
    assert first_request(f"claude-code:window={sizes[20] + 20_000}/buffer=1", events) == next(
        n for n, size in enumerate(sizes) if size >= sizes[20] - 1)


@pytest.mark.parametrize("spec, said", [
    ("anthropic-compact:trigger=-1", "trigger needs at least 1 token; anthropic-compact takes trigger=, instructions="),
    ("anthropic-compact:pause_after_compaction=true", "unknown parameter 'pause_after_compaction'"),
    ("codex:model_auto_compact_token_limit=-5", "takes model_auto_compact_token_limit="),
    ("openai-compact:compact_threshold=500/item_tokens=600", "item_tokens=600 is more than compact_threshold=500"),
    ("langchain-summary:trigger_messages=10/keep_messages=20", "keep_messages=20 is more than trigger_messages=10"),
    ("langchain-summary:trigger_tokens=-1", "0 or more"),
    ("adk-compact:compaction_interval=3/overlap_size=3", "overlap_size=3 is more than compaction_interval=3"),
    ("adk-compact:compaction_interval=0", "compaction_interval needs at least 1"),
    ("claude-code:window=30000/buffer=10000", "buffer=10000 is more than window=30000 allows"),
    ("claude-code:keep_tool_results=-1", "0 or more"),
    ("claude-code:window=lots", "window takes a whole number"),
])
def test_bad_parameters_are_one_line_naming_the_parameters(spec, said):
    with pytest.raises(ValueError) as refused:
        make_policy(spec)
    line = str(refused.value)
    assert said in line and "\n" not in line and " takes " in line


# ---------------------------------------------------------------- --summarizer: who writes the summaries of a replay

def replayed(capsys, argv, model=None):
    import json

    import cli as command_line

    assert command_line.main(argv + ["--json"], model=model) == 0
    return {policy["policy"]: policy for policy in json.loads(capsys.readouterr().out)["policies"]}


@pytest.fixture
def trace(tmp_path):
    copy = tmp_path / "support.jsonl"
    copy.write_bytes(open(SUPPORT, "rb").read())
    return str(copy)


SUMMARISING = "full,anthropic-compact:trigger=3000,codex:model_auto_compact_token_limit=3000"


def test_a_replay_writes_each_summary_once_and_a_second_replay_calls_no_model(capsys, trace):
    writer = ScriptedModel([f"Summary {n}: a thermostat, a charge, a fix." for n in range(40)])
    first = replayed(capsys, ["--replay", trace, "--policies", SUMMARISING], writer)
    written = len(writer.calls)
    assert written == sum(first[name]["summary_calls"] for name in first) > 0
    assert os.path.exists(trace[:-6] + ".summaries.json")
    silent = ScriptedModel([])  # any call would fail: it has no reply
    second = replayed(capsys, ["--replay", trace, "--policies", SUMMARISING], silent)
    assert silent.calls == []
    for name in first:
        assert second[name]["sizes"] == first[name]["sizes"] and second[name]["measured"]
        assert second[name]["input_cost"] == first[name]["input_cost"]  # measured, so priced
    assert "written by scripted" in first["codex:model_auto_compact_token_limit=3000"]["note"]
    assert "cached, by scripted" in second["codex:model_auto_compact_token_limit=3000"]["note"]


def test_the_embedded_summarizer_is_the_default_and_is_loaded_only_for_a_missing_summary(capsys, trace, monkeypatch):
    import cli.loading

    loaded = []
    monkeypatch.setattr(cli.loading, "load_model", lambda spec, **_: loaded.append(spec) or ScriptedModel(
        [f"Summary {n}." for n in range(40)]))
    first = replayed(capsys, ["--replay", trace, "--policies", SUMMARISING])  # neither --summarizer nor --model
    assert loaded == ["local:qwen2.5-coder-0.5b"] and "written by qwen2.5-coder-0.5b" in first[
        "anthropic-compact:trigger=3000"]["note"]
    again = replayed(capsys, ["--replay", trace, "--policies", SUMMARISING, "--summarizer",
                              "local:qwen2.5-coder-0.5b"])
    assert loaded == ["local:qwen2.5-coder-0.5b"]  # every summary cached: nothing loaded the second time
    assert again["anthropic-compact:trigger=3000"]["sizes"] == first["anthropic-compact:trigger=3000"]["sizes"]
    other = replayed(capsys, ["--replay", trace, "--policies", SUMMARISING, "--summarizer", "local:gemma-3-270m"])
    assert loaded == ["local:qwen2.5-coder-0.5b", "local:gemma-3-270m"]  # another writer: its own summaries
    assert "written by gemma-3-270m" in other["anthropic-compact:trigger=3000"]["note"]


@pytest.mark.parametrize("argv, said", [
    (["--summarizer", "local:qwen2.5-coder-0.5b", "q?"], "--summarizer only works with --replay"),
    (["--replay", SUPPORT, "--policies", "full,window:2", "--summarizer", "local:qwen2.5-coder-0.5b"],
     "--summarizer writes the summaries a summarising policy asks for, and none of these policies asks"),
    (["--replay", SUPPORT, "--policies", "full,codex", "--summarizer", "nosuch:model"], "--summarizer: "),
])
def test_a_summarizer_that_cannot_be_used_is_one_line(capsys, argv, said):
    import cli as command_line

    assert command_line.main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
