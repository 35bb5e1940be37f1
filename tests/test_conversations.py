"""The second shipped conversation, conversations/support.jsonl: its script records it, its facts are what the facts
file says, and every policy of the README's replay renders it without breaking an invariant."""
import json
import os
import subprocess
import sys

import pytest

import cli as command_line
from experiments.facts import Fact, load_facts, probe_points
from experiments.replay import replay
from policies.rendering import OBSERVATION_LIMIT, Step, cap
from tokens import TokenCounter
from traces import read_trace_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONVERSATIONS = os.path.join(ROOT, "conversations")
SUPPORT = os.path.join(CONVERSATIONS, "support.jsonl")
FACTS = os.path.join(CONVERSATIONS, "support.facts.json")
POLICIES = ["full", "window:2", "user-only:4", "elide:2", "pinned", "compact:8000", "facts", "retrieve:3",
            "budget:3000", "budget:2000", "forget", "window:2+facts", "window:0+facts", "user-only:4+facts",
            "elide:2+pinned", "retrieve:3+facts", "anthropic-clear", "anthropic-clear:trigger=5000/keep=2",
            "strands-window", "strands-window:window_size=10", "openclaw-ttl",
            "openclaw-ttl:ttl=1ms/min_prunable_tool_chars=0/context_window=5000"]
# The vendors' managers that clear without summarising (issue 51): at their defaults, and with their triggers scaled
# to conversations of these sizes (the scripted recordings are milliseconds apart: a ttl of 1ms sees idle gaps)
VENDORS = ["anthropic-clear", "anthropic-clear:trigger=5000/keep=2/clear_tool_inputs=true", "strands-window",
           "strands-window:window_size=10/per_turn=1/context_window=3000", "openclaw-ttl",
           "openclaw-ttl:ttl=1ms/min_prunable_tool_chars=0/context_window=5000"]


def without_times(path):
    header, events = read_trace_file(path)
    return ({k: v for k, v in header.items() if k != "created"},
            [{k: v for k, v in e.items() if k != "t"} for e in events])


@pytest.mark.parametrize("name", ["support", "renovation"])
def test_the_script_records_the_shipped_trace(name, tmp_path, capsys):
    recorded = tmp_path / f"{name}.jsonl"
    assert command_line.main(["--record", os.path.join(CONVERSATIONS, f"{name}.script.json"),
                              "--trace", str(recorded)]) == 0
    assert without_times(str(recorded)) == without_times(os.path.join(CONVERSATIONS, f"{name}.jsonl"))


def test_the_support_facts_arrive_in_tool_output_and_one_is_superseded():
    header, events = read_trace_file(SUPPORT)
    facts, declared = load_facts(header, FACTS)

    def first(text):
        return next(i for i, e in enumerate(events) if text in str(e.get("text", "")))
    assert {events[first(fact.text)]["type"] for fact in facts} == {"observation"}
    log = events[first("E-5107")]["text"]  # the error is in the part of the log the observation cap cuts
    assert len(log) > OBSERVATION_LIMIT and "E-5107" not in cap(log, OBSERVATION_LIMIT)
    [fix] = [fact for fact in facts if fact.stale]
    assert first(fix.stale[0]) < first(fix.text)
    assert all(fact.distractors and len(fact.phrasings) >= 4 for fact in facts)
    assert sum(len(e["text"]) > OBSERVATION_LIMIT for e in events if e["type"] == "observation") >= 3
    [full] = replay(header, events, ["full"], counter=TokenCounter(), facts=facts,
                    points=probe_points(declared, events))
    for fact, marks in full.facts.items():
        assert set(marks.values()) <= {"kept", "unstated"} and "kept" in marks.values(), fact


def test_every_policy_replays_the_support_conversation_without_violations():
    header, events = read_trace_file(SUPPORT)
    reports = replay(header, events, POLICIES, counter=TokenCounter(), facts=[], points=[])
    assert [report.policy for report in reports] == POLICIES
    assert {report.policy: report.violations for report in reports} == dict.fromkeys(POLICIES, 0)
    # compact:8000 asks for summaries the recording does not hold: without a model it says so, it is not rendered
    assert [report.policy for report in reports if not report.measured] == ["compact:8000"]


@pytest.mark.parametrize("name", ["support", "long", "renovation", "short", "superbowl"])
def test_the_vendors_clearing_managers_replay_every_shipped_conversation_without_violations(name):
    """Each keeps every invariant on every shipped conversation; those whose triggers are scaled to these sizes act
    on the longer ones, and anthropic-clear and openclaw-ttl at their defaults never do (strands-window's 40
    messages are reached by the three long conversations)."""
    header, events = read_trace_file(os.path.join(CONVERSATIONS, f"{name}.jsonl"))
    full, *reports = replay(header, events, ["full"] + VENDORS, counter=TokenCounter(), facts=[], points=[])
    assert {report.policy: report.violations for report in reports} == dict.fromkeys(VENDORS, 0)
    acted = {report.policy for report in reports if report.sizes != full.sizes}
    scaled = set(VENDORS[1::2])
    if name in ("support", "long", "renovation"):
        assert acted == scaled | {"strands-window"}
    else:  # on a short one only a window of 10 messages, trimmed before every call, acts
        assert acted == {"strands-window:window_size=10/per_turn=1/context_window=3000"}
# The vendors' summarising managers (issue 51), with their documented defaults and with triggers scaled to act on it
SUMMARISING = ["anthropic-compact", "openai-compact", "claude-code", "codex", "langchain-summary", "adk-compact",
           "anthropic-compact:trigger=3000", "openai-compact:compact_threshold=3000/item_tokens=100",
           "claude-code:window=36000/buffer=13000", "codex:model_auto_compact_token_limit=3000",
           "langchain-summary:trigger_tokens=2500/keep_messages=6", "langchain-summary:trigger_messages=30",
           "adk-compact:compaction_interval=5/overlap_size=2"]


@pytest.mark.parametrize("name", ["support", "renovation", "long"])
def test_every_vendor_manager_replays_the_shipped_conversations_without_violations(name):
    """Summaries from a scripted summarizer; with their defaults the token-triggered ones never act on a conversation
    this size, and send exactly what full history sends."""
    from experiments.replay import Summaries
    from models.scripted import ScriptedModel

    header, events = read_trace_file(os.path.join(CONVERSATIONS, f"{name}.jsonl"))
    writer = ScriptedModel([f"Summary {n}: what the user asked, and what the tools returned." for n in range(400)])
    full, *reports = replay(header, events, ["full"] + SUMMARISING, counter=TokenCounter(), facts=[], points=[],
                            summaries=Summaries(writer))
    assert {report.policy: (report.measured, report.violations) for report in reports} == {
        report.policy: (True, 0) for report in reports}
    for report in reports:
        token_triggered = report.policy.split(":")[0] != "adk-compact"
        if ":" not in report.policy and token_triggered:
            assert report.sizes == full.sizes and report.summary_calls == 0, report.policy
        elif ":" in report.policy:
            assert report.summary_calls > 0 and report.peak < full.peak, report.policy


class Counted(dict):
    """An event that counts how often it is read."""
    reads = 0

    def __getitem__(self, key):
        Counted.reads += 1
        return super().__getitem__(key)

    def get(self, key, default=None):
        Counted.reads += 1
        return super().get(key, default)


def test_replay_reads_each_event_a_bounded_number_of_times_however_long_the_trace():
    """Replaying a trace four times as long reads its events about four times as often, not sixteen: nothing a
    replay does at each call goes back over the whole trace (window:2 shows a bounded context, so its rendering
    costs nothing that grows)."""
    header, events = read_trace_file(os.path.join(CONVERSATIONS, "long.jsonl"))

    def reads(rounds):
        grown = [Counted(events[0])] + [Counted(e, text=f"{e['text']} ({r})") if e["type"] == "question" and r
                                        else Counted(e) for r in range(rounds) for e in events[1:]]
        Counted.reads = 0
        [report] = replay(header, grown, ["window:2"], counter=TokenCounter(), facts=[], points=[])
        assert report.violations == 0 and len(report.sizes) == 84 * rounds
        return Counted.reads
    assert reads(4) < 4.5 * reads(1)


def test_a_window_looks_at_a_bounded_number_of_steps_per_call_however_long_the_session(monkeypatch):
    """window:2's rendering does not walk the steps it hides: a session four times as long has its steps looked at
    about four times as often in all (each call's work stays the same), not sixteen."""
    header, events = read_trace_file(os.path.join(CONVERSATIONS, "long.jsonl"))
    looked = [0]
    slot = Step.index  # the slot's descriptor: every read of a step's trace index is counted

    def index(step):
        looked[0] += 1
        return slot.__get__(step)
    monkeypatch.setattr(Step, "index", property(index, slot.__set__))

    def looks(rounds):
        grown = [events[0]] + [dict(e, text=f"{e['text']} ({r})") if e["type"] == "question" and r else e
                               for r in range(rounds) for e in events[1:]]
        looked[0] = 0
        [report] = replay(header, grown, ["window:2"], counter=TokenCounter(), facts=[], points=[])
        assert report.violations == 0
        return looked[0]
    assert looks(4) < 4.5 * looks(1)


def test_the_short_script_records_the_shipped_trace_and_fits_the_offline_reader(tmp_path, capsys):
    """conversations/short.jsonl is what bench/offline_probe.py probes: small enough for the embedded model."""
    recorded = tmp_path / "short.jsonl"
    assert command_line.main(["--record", os.path.join(CONVERSATIONS, "short.script.json"),
                              "--trace", str(recorded)]) == 0
    shipped = os.path.join(CONVERSATIONS, "short.jsonl")
    assert without_times(str(recorded)) == without_times(shipped)
    header, events = read_trace_file(shipped)
    facts, declared = load_facts(header, os.path.join(CONVERSATIONS, "short.facts.json"))
    points = probe_points(declared, events)
    [report] = replay(header, events, ["full"], facts=facts, points=points)
    assert len(report.sizes) <= 40 and report.peak <= 2_000 and report.violations == 0
    assert all(state in ("kept", "unstated") for marks in report.facts.values() for state in marks.values())


def test_budget_keeps_its_word_and_says_when_the_current_turn_alone_is_larger():
    # Counted with the counter the policy itself counts with: the local Gemma 3 tokenizer.
    header, events = read_trace_file(os.path.join(CONVERSATIONS, "long.jsonl"))
    [report] = replay(header, events, ["budget:2000"], facts=[], points=[])
    assert report.peak <= 2000 and report.note == ""  # it was 2,071: the markers it shows were not counted
    header, events = read_trace_file(SUPPORT)
    [report] = replay(header, events, ["budget:2000"], facts=[], points=[])
    over = sum(size > 2000 for size in report.sizes)
    assert over == 7 and report.note.startswith("at 7 of 57 calls the context was larger than 2,000 tokens")


@pytest.mark.slow
@pytest.mark.parametrize("script", ["replay_tables.py", "stable_sweep.py", "cold_sweep.py", "managers.py"])
def test_the_replay_tables_of_the_docs_are_the_replay_s_own(script, tmp_path):
    page = tmp_path / "managers.html"
    extra = ["--html", str(page)] if script == "managers.py" else []
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", script), "--check", *extra],
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (0, "")
    if extra:  # one page of them all: each table the docs show, with its chart
        import html
        text = html.unescape(page.read_text(encoding="utf-8"))
        assert text.count("<svg") == text.count("<h2>") == 7  # four conversations, three of them scaled too
        assert "<td>openclaw-ttl:min_prunable_tool_chars=0/context_window=6704</td><td>14 of 84 calls, from call 51" \
               "</td><td class=n>100%</td><td class=n>96%</td><td class=n>$0.466</td><td class=n>122%</td>" in text


def test_stable_keeps_its_prefix_between_rebuilds_and_every_planted_fact():
    """On support.jsonl, stable's context repeats the previous call's whole at every call but its one rebuild (full
    history's at every call, a window's at almost none); after a rebuild the key facts from what it dropped come right
    after the instructions, fixed until the next; it keeps every planted fact at every probe point."""
    from experiments.facts import load_facts, probe_points
    from policies import make_policy
    from policies.invariants import KEY_FACTS

    header, events = read_trace_file(SUPPORT)
    facts, declared = load_facts(header, SUPPORT[:-6] + ".facts.json")
    stable, window = replay(header, events, ["stable", "window:2"], facts=facts, points=probe_points(declared, events))
    breaks = [call for call in range(1, len(stable.sizes)) if stable.repeated[call] != stable.sizes[call - 1]]
    assert len(breaks) == 1 and stable.violations == 0 and stable.peak < 10500
    assert sum(window.repeated[call] != window.sizes[call - 1] for call in range(1, len(window.sizes))) > 50
    assert all(state in ("kept", "unstated") for states in stable.facts.values() for state in states.values())
    calls = [index for index, event in enumerate(events) if event["type"] == "context"]
    policy = make_policy("stable")
    after = policy.render(events[:calls[breaks[0]]])
    assert after[1].parts[0].text.startswith(KEY_FACTS) and after[1].parts[1].text.startswith("[")  # then the marker
    later = policy.render(events[:calls[-1]])
    assert later[:2] == after[:2]  # the block and the marker unchanged to the end


def test_stable_rebuilt_in_a_session_dense_with_facts_starts_far_from_its_next_rebuild(tmp_path):
    """150 turns, each a statement the key-facts rule keeps: the block of facts is bounded by a quarter of T and what
    a rebuild keeps, block included, fits in half of T, so the prefix breaks a few times, not every few calls (as it
    did when the block was sized apart from the steps: 15 rebuilds here)."""
    turns = [{"user": f"My locker number {n} is on floor {n % 7} and its code is {1000 + 37 * n}.", "steps": [],
              "answer": "Noted."} for n in range(150)]
    (tmp_path / "s.json").write_text(json.dumps({"tools": ["add_numbers"], "turns": turns}))
    trace = str(tmp_path / "t.jsonl")
    assert command_line.main(["--record", str(tmp_path / "s.json"), "--trace", trace]) == 0
    header, events = read_trace_file(trace)
    [stable] = replay(header, events, ["stable:3000"], facts=[], points=[])
    breaks = [call for call in range(1, len(stable.sizes)) if stable.repeated[call] != stable.sizes[call - 1]]
    assert stable.violations == 0 and 1 <= len(breaks) <= 5
    assert all(stable.sizes[call] <= 1500 + 100 for call in breaks)  # half of T, and the question of the call


def test_a_stable_threshold_too_small_to_hold_anything_still_appends_between_rebuilds():
    header, events = read_trace_file(SUPPORT)
    [tiny] = replay(header, events, ["stable:1"], facts=[], points=[])
    breaks = sum(tiny.repeated[call] != tiny.sizes[call - 1] for call in range(1, len(tiny.sizes)))
    assert tiny.violations == 0 and breaks <= len(tiny.sizes) // 2  # never a rebuild at every call


def test_the_observation_cut_is_a_setting_of_the_replay_and_what_it_loses_is_counted_apart(tmp_path, capsys):
    """A code stated only past 2,000 characters of a long result: under full history it is cut (✂), not gone, and the
    headline share leaves those cells out; with --observation-cut 8000 full history keeps it. The setting ends with
    the replay."""
    from policies.rendering import observation_cut
    from views.reports import kept_share

    page = "Filler about nothing. " * 120 + "The door code is 4471-QX. " + "More filler. " * 200  # in the middle
    script = {"tools": ["add_numbers"], "turns": [
        {"user": "Read the building notes.", "steps": [{"thought": "Read them.", "action": "notes()",
                                                       "result": page}], "answer": "Read."},
        {"user": "Thanks. What is 2 + 3?", "steps": [{"thought": "Add.", "action": "add_numbers(2, 3)"}],
         "answer": "5"}]}
    (tmp_path / "s.json").write_text(json.dumps(script))
    facts = tmp_path / "f.json"
    facts.write_text(json.dumps({"probe_turns": [2, 3], "facts": [
        {"id": "code", "text": "4471-QX", "gold": "4471-QX", "phrasings": ["What is the door code?"]}]}))
    trace = str(tmp_path / "t.jsonl")
    assert command_line.main(["--record", str(tmp_path / "s.json"), "--trace", trace]) == 0
    capsys.readouterr()
    for cut, state in ((None, "cut"), (8000, "kept")):
        argv = ["--replay", trace, "--facts", str(facts), "--policies", "full", "--json"]
        assert command_line.main(argv + (["--observation-cut", str(cut)] if cut else [])) == 0
        replayed = json.loads(capsys.readouterr().out)
        assert replayed["setup"]["observation_cut"] == (cut or 2000)
        assert set(replayed["policies"][0]["facts"]["code"].values()) == {state}
    assert observation_cut() == 2000  # the setting did not outlive the replay
    header, events = read_trace_file(trace)
    loaded, declared = load_facts(header, str(facts))
    [report] = replay(header, events, ["full"], facts=loaded, points=probe_points(declared, events))
    assert kept_share(report) is None  # every stated cell was cut: none is held against full history
    assert command_line.main(["--replay", trace, "--facts", str(facts), "--policies", "full"]) == 0
    assert "2 cells ✂: lost to the cap, a setting of the replay" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit) as refused:
        command_line.main(["--replay", trace, "--observation-cut", "50"])
    assert refused.value.code == 2 and "must be between 100 and 100000 characters" in capsys.readouterr().err


def test_a_fact_tracked_but_not_to_be_kept_is_counted_apart_never_as_recall(tmp_path, capsys):
    """long.jsonl's distractor, a colleague's booking KX-4417-B, tracked with keep false: full history keeps it, which
    is noise, not recall; it is not asked about; a keep that is not true or false is refused."""
    from experiments.probe import _tasks
    from views.reports import kept_share, noise_kept

    long = os.path.join(CONVERSATIONS, "long.jsonl")
    facts = json.loads(open(long[:-6] + ".facts.json", encoding="utf-8").read())
    facts["facts"].append({"id": "colleague", "text": "KX-4417-B", "gold": "KX-4417-B", "keep": False,
                           "phrasings": ["What is my colleague's booking?"]})
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    header, events = read_trace_file(long)
    loaded, declared = load_facts(header, str(path))
    points = probe_points(declared, events)
    full, window = replay(header, events, ["full", "window:2"], facts=loaded, points=points)
    assert kept_share(full) == 1.0 and noise_kept(full) == 1.0 and noise_kept(window) == 0.0
    instructions = next(event for event in events if event["type"] == "instructions")
    asked = _tasks(events, instructions, {}, loaded, points[-1], 1, 1, TokenCounter())
    assert asked and all(fact.id != "colleague" for _, _, fact in asked)
    assert command_line.main(["--replay", long, "--facts", str(path), "--policies", "full,window:2"]) == 0
    assert "colleague: KX-4417-B (tracked, not to be kept)" in capsys.readouterr().out
    facts["facts"][-1]["keep"] = "no"
    path.write_text(json.dumps(facts))
    assert command_line.main(["--replay", long, "--facts", str(path)]) == 2
    assert "\"keep\" must be true or false" in capsys.readouterr().err


def test_a_key_facts_block_that_cannot_hold_every_fact_says_so_in_the_replay(tmp_path, capsys, monkeypatch):
    """More statements than the block holds (its cap made 5 here, to keep the session short): the oldest that are not
    the standing instruction drop out of it, and the replay says so beside every policy with the block."""
    import policies.facts

    monkeypatch.setattr(policies.facts, "MAX_FACTS", 5)
    turns = [{"user": "Always answer in French from now on.", "steps": [], "answer": "D'accord."}]
    turns += [{"user": f"My locker number {n} is on floor {n % 7}.", "steps": [], "answer": "Noted."}
              for n in range(7)]
    (tmp_path / "s.json").write_text(json.dumps({"tools": ["add_numbers"], "turns": turns}))
    trace = str(tmp_path / "t.jsonl")
    assert command_line.main(["--record", str(tmp_path / "s.json"), "--trace", trace]) == 0
    header, events = read_trace_file(trace)
    facts, alone, window = replay(header, events, ["facts", "window:0+facts", "window:2"], facts=[], points=[])
    said = "its block holds the latest 5 of the 8 facts the rule finds in this session, so the oldest 3"
    assert said in facts.caveat and said in alone.caveat and window.caveat == ""
    capsys.readouterr()
    assert command_line.main(["--replay", trace, "--policies", "facts,window:2"]) == 0
    assert said in " ".join(capsys.readouterr().out.split())


def test_noise_and_recall_leave_out_the_same_cells_the_cut_decided():
    from experiments.replay import PolicyReplay
    from views.reports import kept_share, noise_kept
    report = PolicyReplay("p", facts={"real": {"a": "kept", "b": "cut"}, "stale": {"a": "kept", "b": "cut"}},
                          not_to_keep=["stale"])
    assert kept_share(report) == 1.0 and noise_kept(report) == 1.0


def test_stable_renders_the_same_whatever_the_observation_cut_was_before():
    """One stable object asked under one cut and then another gives what a fresh one gives under the second: the sizes
    it keeps between calls are sizes under a cut, and a new cut counts them again."""
    from policies import make_policy
    from policies.rendering import observations_cut_at

    header, events = read_trace_file(SUPPORT)
    calls = [index for index, event in enumerate(events) if event["type"] == "context"]
    policy = make_policy("stable:3000")
    for call in calls[:28]:
        policy.render(events[:call])
    with observations_cut_at(60):
        fresh = make_policy("stable:3000")
        assert [policy.render(events[:call]) for call in calls[28:]] == [fresh.render(events[:call])
                                                                          for call in calls[28:]]


@pytest.mark.parametrize("policy", ["window:2+facts", "stable:3000", "cold:3000"])
def test_a_standing_instruction_said_first_stays_in_the_key_facts_block_after_seventy_later_facts(tmp_path, policy):
    """The user's rule for the whole conversation is said once, first; seventy facts follow, more than the block
    holds (30, and stable's a quarter of T): the block keeps the rule, ahead of the latest facts (it kept the latest
    60 and lost the rule)."""
    rule = "From now on, whenever you give me a price, also give it with VAT."
    turns = [{"user": rule, "steps": [], "answer": "Understood."}] + [
        {"user": f"My locker number {n} is on floor {n % 7} and its code is {1000 + 37 * n}. What is {n} plus 1?",
         "steps": [{"thought": "Add.", "action": f"add_numbers({n}, 1)", "result": str(n + 1)}], "answer": "Noted."}
        for n in range(70)]
    (tmp_path / "s.json").write_text(json.dumps({"tools": ["add_numbers"], "turns": turns}))
    trace = str(tmp_path / "t.jsonl")
    assert command_line.main(["--record", str(tmp_path / "s.json"), "--trace", trace]) == 0
    header, events = read_trace_file(trace)
    fact = Fact("rule", "also give it with VAT", phrasings=["What did I ask you to do with prices?"])
    last = probe_points({}, events)  # after the last call
    [report] = replay(header, events, [policy], facts=[fact], points=last)
    assert report.facts["rule"][last[0].label] == "kept" and report.violations == 0


def test_a_summarizer_that_names_no_model_is_one_line_before_any_replay(monkeypatch, capsys):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))
    import managers

    monkeypatch.setattr(sys, "argv", ["managers.py", "--summarizer", "bogus"])
    assert managers.main() == 2
    said = capsys.readouterr()
    assert said.err.startswith("error: --summarizer: 'bogus' is not a Gemini model name") and said.out == ""
    assert said.err.count("\n") == 1
