"""Comparing policies: static replay of the shipped conversations, probe mode, and the live --compare run."""
import json
import os
import subprocess
import sys

import pytest

import agent
import cli as command_line
from experiments.facts import Fact, call_points, cut_on_record, load_facts, matches, probe_points, stated
from experiments.live import ToolTape
from experiments.probe import probe, tally, wilson
from experiments.replay import replay
from models import Message, ModelReply
from models.prices import price_of
from models.scripted import ScriptedModel
from policies import make_policy
from views.reports import svg_plot
from servers import FakeOpenMeteo, FakeWikipedia
from tokens import count_tokens
from traces import Trace, read_trace_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LONG = os.path.join(ROOT, "conversations", "long.jsonl")
SUPER_BOWL = os.path.join(ROOT, "conversations", "superbowl.jsonl")


@pytest.fixture(scope="module")
def long_replay():
    header, events = read_trace_file(LONG)
    specs = ["full", "window:2", "user-only:4", "elide:2", "pinned", "compact:8000"]
    return header, events, {r.policy: r for r in replay(header, events, specs)}


def test_the_long_conversation_is_what_it_claims(long_replay):
    header, events, _ = long_replay
    assert sum(e["type"] == "question" for e in events) >= 30
    observations = [len(e["text"]) for e in events if e["type"] == "observation"]
    assert min(observations) < 30 and max(observations) > 1500
    assert {f["id"] for f in header["facts"]} == {"instruction", "sintra", "booking", "distractor"}
    assert all(len(p["questions"]) == 6 and p["answer"] for p in header["probes"])
    for fact in header["facts"]:  # each planted fact is stated exactly once in the session
        sources = [e for e in events if e["type"] in ("question", "observation") and fact["text"] in e["text"]]
        assert len(sources) == 1, fact


def test_static_replay_full_keeps_every_fact(long_replay):
    _, _, reports = long_replay
    for fact, marks in reports["full"].facts.items():
        assert all(state in ("kept", "unstated") for state in marks.values()) and "kept" in marks.values(), fact


def test_static_replay_window_loses_the_mid_session_facts(long_replay):
    _, _, reports = long_replay
    window = reports["window:2"].facts
    assert set(window["sintra"].values()) == set(window["booking"].values()) == {"unstated", "gone"}


def test_static_replay_user_only_keeps_what_the_user_said_and_loses_tool_facts(long_replay):
    _, _, reports = long_replay
    user_only = reports["user-only:4"].facts
    assert set(user_only["instruction"].values()) == {"kept"}
    assert set(user_only["booking"].values()) == {"unstated", "kept"}
    assert set(user_only["sintra"].values()) == {"unstated", "gone"}


def test_static_replay_totals_match_an_independent_sum(long_replay):
    _, events, reports = long_replay
    for spec in ["full", "window:2", "user-only:4", "elide:2", "pinned"]:
        policy = make_policy(spec)
        sizes = [sum(count_tokens(part.text) for message in policy.render(events[:i]) for part in message.parts)
                 for i in call_points(events)]
        report = reports[policy.name]
        assert report.sizes == sizes and report.total == sum(sizes) and report.peak == max(sizes)
        assert report.violations == 0
    assert reports["window:2"].total < reports["user-only:4"].total < reports["elide:2"].total < reports["full"].total


def test_compact_is_measured_when_it_never_asks_and_not_measured_when_it_asks_without_a_model(long_replay):
    header, events, reports = long_replay
    assert reports["compact:8000"].measured and reports["compact:8000"].sizes == reports["full"].sizes  # peak < 8,000
    small = replay(header, events, ["compact:2000"])[0]
    assert not small.measured and "give a summarizer (--summarizer)" in small.note


def test_compact_with_recorded_summaries_is_measured(tmp_path):
    path = str(tmp_path / "compact.jsonl")
    from tools.arithmetic import add_numbers

    def fetch(page: str) -> str:
        """Long text."""
        return page * 400
    replies = ['Action: fetch("a")', 'Action: fetch("b")', 'Action: fetch("c")', "Summary: fetched a and b.",
               "Answer: ok"]
    run = agent.TinyReAct(ScriptedModel(replies), tools=[add_numbers, fetch], policy=make_policy("compact:300"),
                          trace=Trace(path))
    run.query("fetch three")
    run.trace.close()
    header, events = read_trace_file(path)
    reports = {r.policy: r for r in replay(header, events, ["full", "compact:300", "compact:100000"])}
    assert reports["compact:300"].measured and reports["compact:300"].violations == 0
    assert reports["compact:300"].sizes[-1] < reports["full"].sizes[-1]
    assert reports["compact:300"].summary_calls == 1 and "recorded" in reports["compact:300"].note
    assert reports["compact:300"].total == sum(reports["compact:300"].sizes) + reports["compact:300"].summary_input > 0
    assert reports["compact:100000"].sizes == reports["full"].sizes  # a T never reached asks for nothing
    # Another T asks at other points: its summaries are written by the model given, and cached for next time.
    from experiments.replay import Summaries
    writer = ScriptedModel(["Summary: fetched a."])
    cache = str(tmp_path / "summaries.json")
    written = replay(header, events, ["compact:200"], summaries=Summaries(writer, cache))[0]
    assert written.measured and written.summary_calls == 1 and "written by scripted" in written.note
    again = replay(header, events, ["compact:200"], summaries=Summaries(None, cache))[0]
    assert again.sizes == written.sizes and "cached, by scripted" in again.note and len(writer.calls) == 1


class Reader:
    """A stand-in model that answers a probe only if the gold fact is in the context it was sent."""
    name, backend, usage_source, window = "reader", "test", "none", None

    def __init__(self, fact, answer):
        self.fact, self.answer, self.calls = fact, answer, 0

    def generate(self, messages, stop, **options):
        self.calls += 1
        context = "\n".join(m.text for m in messages)
        return ModelReply(f"Thought: looking\nAnswer: {self.answer if self.fact in context else 'I do not know'}")


def scores(answers):
    return {(a.condition, a.verdict): sum(1 for b in answers if (b.condition, b.verdict) == (a.condition, a.verdict))
            for a in answers}


def test_probe_mode_scores_each_policy_and_both_controls():
    header, events = read_trace_file(SUPER_BOWL)
    facts, declared = load_facts(header)
    model = Reader("15.5 °C", "It was 15.5 °C.")
    answers = probe(events, ["full", "window:1"], model, facts, probe_points(declared, events))
    assert scores(answers) == {("closed book", "refusal"): 6, ("facts only", "correct"): 6, ("full", "correct"): 6,
                               ("window:1", "refusal"): 6}
    assert model.calls == 24 and answers[0].question == facts[0].phrasings[0] and answers[0].point == "call 7 (turn 1)"


def test_probe_calls_that_share_a_context_are_asked_one_after_another():
    """Each condition's questions at a point are asked together, so that a model keeping the last prompt's keys and
    values (the embedded models) works through only the question: 4 runs of one context, not 24 changes."""
    header, events = read_trace_file(SUPER_BOWL)
    facts, declared = load_facts(header)
    seen = []

    class Recorder(Reader):
        def generate(self, messages, stop, **options):
            question = next(q for fact in facts for q in fact.phrasings if q in messages[-1].text)
            seen.append("\n".join(m.text for m in messages).replace(question, ""))
            return super().generate(messages, stop, **options)

    answers = probe(events, ["full", "window:1"], Recorder("15.5 °C", "It was 15.5 °C."), facts,
                    probe_points(declared, events))
    runs = 1 + sum(before != after for before, after in zip(seen, seen[1:]))
    assert len(seen) == 24 and runs == 4  # closed book, facts only, full, window:1: six questions each
    assert [a.condition for a in answers[:2]] == ["closed book"] * 2  # the answers still come back in table order


def test_a_probe_is_scored_on_its_answer_alone_and_a_reply_without_one_is_no_answer():
    header, events = read_trace_file(SUPER_BOWL)
    facts, declared = load_facts(header)
    # Tool calls that hold the gold value, and a reply with nothing readable: none of them answers.
    replies = ["Action1: add_numbers(15.5, 8)", "Thought: subtract_numbers(15.5, 15.5)", "15.5", "Answer: 15.5 °C"]
    model = ScriptedModel([reply for reply in replies for _ in range(6)])  # asked condition by condition
    answers = probe(events, ["full", "window:1"], model, facts, probe_points(declared, events))
    assert scores(answers) == {("closed book", "no answer"): 6, ("facts only", "no answer"): 6,
                               ("full", "no answer"): 6, ("window:1", "correct"): 6}
    shown = [a.answer for a in answers if a.condition == "closed book"][0]
    assert shown == "Action1: add_numbers(15.5, 8)"  # what came back is kept, to be seen
    table = tally(answers, "condition")
    assert table["full"]["full"]["k"] == 0 and table["full"]["full"]["no answer"] == 6


def test_a_probe_answer_the_service_cut_is_no_answer():
    header, events = read_trace_file(SUPER_BOWL)
    facts, declared = load_facts(header)
    model = ScriptedModel([ModelReply("Answer: 15.5 °C", finish="length"),
                           ModelReply("Answer: 15.5 °C", finish="stop")] * 12)
    answers = probe(events, ["full"], model, facts, probe_points(declared, events))
    verdicts = [a.verdict for a in answers]
    assert verdicts.count("no answer") == verdicts.count("correct") == len(answers) // 2
    assert all(a.answer.endswith("[cut at the model's output limit]") for a in answers if a.verdict == "no answer")


def test_probe_mode_asks_only_after_the_fact_was_stated():
    header, events = read_trace_file(LONG)
    header = {**header, "probe_points": [31, 84]}
    facts, declared = load_facts(header)
    booking = [fact for fact in facts if fact.id == "booking"]
    answers = probe(events, ["user-only:4", "window:2"], Reader("KX-4471-B", "KX-4471-B"), booking,
                    probe_points(declared, events), phrasings=2, repeat=2)
    assert {a.point for a in answers} == {"call 84 (turn 32)"}  # not stated yet at call 31
    assert scores(answers)[("user-only:4", "correct")] == 4 and scores(answers)[("window:2", "refusal")] == 4


def test_a_facts_file_classifies_every_answer_and_tallies_with_wilson_intervals(tmp_path):
    facts_file = tmp_path / "facts.json"
    facts_file.write_text(json.dumps({"probe_turns": [20, 33], "facts": [
        {"id": "booking", "text": "KX-4471-B", "gold": "KX-4471-B", "distractors": ["KX-4417-B"],
         "stale": ["KX-1111-A"], "phrasings": ["What is my booking reference?", "Which reference is mine?"]}]}))
    header, events = read_trace_file(LONG)
    facts, declared = load_facts(header, str(facts_file))
    points = probe_points(declared, events)
    assert [p.label for p in points] == ["turn 20 (call 55)", "turn 33 (call 85)"]

    class Confused:
        """Right with the whole history (which holds the Lisbon page); the colleague's reference when it is in a shorter
        context; the stale value given only the facts; else it does not know."""
        name = "confused"

        def generate(self, messages, stop):
            context = "\n".join(m.text for m in messages)
            if "545,000" in context and "KX-4471-B" in context:
                return ModelReply("Answer: KX-4471-B")
            if "KX-4417-B" in context:
                return ModelReply("Answer: It is KX-4417-B.")
            return ModelReply("Answer: KX-1111-A" if "Facts from" in context else "Answer: I don't know.")

    answers = probe(events, ["full", "user-only:4"], Confused(), facts, points, jobs=3)
    by_point = tally(answers, "point")
    assert by_point["full"]["turn 20 (call 55)"]["k"] == 2 and by_point["full"]["turn 33 (call 85)"]["n"] == 2
    assert by_point["user-only:4"]["turn 33 (call 85)"]["distractor"] == 2
    assert by_point["closed book"]["turn 20 (call 55)"]["refusal"] == 2
    assert by_point["facts only"]["turn 20 (call 55)"]["stale"] == 2
    low, high = wilson(2, 2)
    assert by_point["full"]["turn 20 (call 55)"]["low"] == round(low, 3) and high == 1.0 and 0.34 < low < 0.35


def test_wilson_interval_matches_the_textbook_values():
    low, high = wilson(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson(0, 0) == (0.0, 1.0) and wilson(0, 5)[0] == 0.0


def test_a_fact_past_the_observation_cap_is_reported_cut_not_unstated(tmp_path):
    def listing() -> str:
        """A long listing."""
        return "row " * 375 + "VAT GB-99123-45 " + "row " * 400  # past the 1,307 characters of head a 2,000 cut keeps
    path = str(tmp_path / "cut.jsonl")
    run = agent.TinyReAct(ScriptedModel(["Action: listing()", "Answer: ok", "Answer: ?"]), tools=[listing],
                          trace=Trace(path))
    run.query("list")
    run.query("what is the VAT number?")
    run.trace.close()
    header, events = read_trace_file(path)
    fact = Fact("vat", "GB-99123-45", "GB-99123-45")
    report = replay(header, events, ["full"], facts=[fact], points=probe_points({"turns": [2]}, events))[0]
    assert report.facts == {"vat": {"turn 2 (call 3)": "cut"}}
    assert stated(fact, events) and cut_on_record(events) == 0


def test_matching_is_on_whole_words():
    assert matches("Your reference is kx-4471-b.", "KX-4471-B")
    assert not matches("KX-4417-B", "KX-4471-B") and not matches("470", "47") and matches("It is 47.", "47")
    # a sign counts
    assert not matches("-34", "34") and not matches("It is -47.", "47") and matches("It is -47.", "-47")
    assert matches("50 - 8 is 42", "42") and matches("E-5107", "E-5107")


def test_tool_tape_replays_results_and_counts_misses():
    calls = []

    def lookup(name: str) -> str:
        """Looks up a name."""
        calls.append(name)
        return name.upper()
    tape = ToolTape()
    taped = tape.wrap(lookup)
    assert taped(name="a") == "A" and taped(name="a") == "A" and taped(name="b") == "B"
    assert calls == ["a", "b"] and tape.live_calls == 2
    assert taped.__doc__ == lookup.__doc__ and taped.__name__ == "lookup"


def test_svg_plot_draws_one_line_per_measured_policy(long_replay):
    _, _, reports = long_replay
    svg = svg_plot(list(reports.values()), "long", "Gemma 3 tokenizer, local")
    # compact:8000 never asks for a summary here
    assert svg.startswith("<svg") and svg.count('<polyline class="policy"') == 6


def test_svg_plot_is_well_formed_whatever_the_file_is_called(long_replay):
    """The title holds the replayed file's name as typed: markup characters escaped, control characters shown where
    they stand (as a page shows them), none left raw."""
    import xml.etree.ElementTree as ElementTree

    _, _, reports = long_replay
    svg = svg_plot(list(reports.values()), 'Context size per call: R&D <"v2">\x1b[1m\x07.jsonl',
                   "Gemma 3 tokenizer, local")
    title = next(ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"))  # the first, the chart's title
    assert (title.text == 'Context size per call: R&D <"v2">\u241b[1m\u2407.jsonl'
            and "\x1b" not in svg and "\x07" not in svg)


def test_replay_command_line_outputs(tmp_path, agent_py):
    done = agent_py("--replay", LONG, "--policies", "full,window:2,user-only:4", "--plot", str(tmp_path / "p.svg"),
               "--csv", str(tmp_path / "p.csv"))
    assert done.returncode == 0, done.stderr
    assert "Replay of" in done.stdout and "26%" in done.stdout and "KX-4471-B" in done.stdout
    svg = (tmp_path / "p.svg").read_text()
    # the header's four probe points
    assert svg.count('<polyline class="policy"') == 3 and svg.count('<line class="probe"') == 4
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and f"Context size per call: {LONG}" in svg
    import hashlib
    lines = (tmp_path / "p.csv").read_text().splitlines()
    setup = {line[2:].split(": ", 1)[0]: json.loads(line[2:].split(": ", 1)[1]) for line in lines if line[0] == "#"}
    rows = [line for line in lines if line[0] != "#"]
    assert rows[0].startswith("policy,call,context_tokens,instructions,tools,user,model,observations,notes,markers,")
    assert rows[1].startswith("full,1,945,") and rows[1].count(",") == 16
    # a paper's table from the outputs alone: what made the numbers, in the CSV, the JSON and the tables
    digest = hashlib.sha256(open(LONG, "rb").read()).hexdigest()
    assert setup["trace"] == {"path": LONG, "sha256": digest} and setup["observation_cut"] == 2000
    assert setup["caching_rule"]["min_cache_tokens"] == 4096 and setup["tinyreact"] and setup["probe"] is None
    assert f"trace sha256 {digest[:16]}" in " ".join(done.stdout.split())
    report = json.loads(agent_py("--replay", SUPER_BOWL, "--policies", "full", "--json").stdout)
    assert report["calls"] == 7 and report["policies"][0]["violations"] == 0
    assert report["setup"]["facts"] == {"path": None, "from": "the trace's header"}


@pytest.mark.parametrize("args, message", [
    (["--replay", "/no/such/file.jsonl"], "No such file"),
    (["--replay", __file__], "not JSON"),
    (["--replay", SUPER_BOWL, "--policies", "full,bogus"], "unknown policy 'bogus'"),
    (["--replay", SUPER_BOWL, "--probe", "--model", "gemini-flash-latest"], "no Gemini API key"),
    (["--compare", "full,window:2"], "--compare needs a question"),
])
def test_replay_and_compare_errors_are_one_line(args, message, agent_py):
    done = agent_py(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_live_compare_replays_tool_results_to_every_policy(gemini, monkeypatch, capsys):
    gemini([
        'Action: wikipedia_coordinates("Caesars Superdome")', "Action: get_temperature(29.9508, -90.0811)",
        "Answer: 15.5 °C",
        'Action: wikipedia_coordinates("Caesars Superdome")', "Action: get_temperature(29.9508, -90.0811)",
        "Answer: 15.5",
        'Action: wikipedia_coordinates("Superdome")', "Answer: I think 20 °C",
    ])
    wiki = FakeWikipedia({"Caesars Superdome": {"extract": "A stadium.", "coordinates": (29.950833, -90.081111)}},
                         redirects={"Superdome": "Caesars Superdome"})
    with wiki, FakeOpenMeteo({(29.95, -90.08): 15.5}) as meteo:
        monkeypatch.setenv("WIKIPEDIA_API_URL", wiki.url + "/w/api.php")
        monkeypatch.setenv("OPEN_METEO_URL", meteo.url + "/v1/forecast")
        code = command_line.main(["How warm is the Superdome?", "--compare", "full,window:1,elide:1",
                                  "--expect", "15.5", "--json"])
        assert len(meteo.requests) == 1  # the temperature was fetched once and replayed to the second policy
    report = json.loads(capsys.readouterr().out)
    rows = {row["policy"]: row for row in report["rows"]}
    assert code == 0 and list(rows) == ["full", "window:1", "elide:1"]
    assert [rows[p]["correct"] for p in rows] == [1, 1, 0]
    assert [rows[p]["live_tool_calls"]["median"] for p in rows] == [0, 0, 1]  # elide:1 asked something new: a miss
    assert rows["full"]["model_calls"]["median"] == 3 and rows["full"]["input_tokens"]["median"] == 300
    assert report["model"] == "gemini-flash-latest" and report["counter"] == "Gemma 3 tokenizer, local"
    # Priced as the model that answered the alias: 300 in × $0.75 + 30 out × $3.75 per million (models/prices.json)
    assert rows["full"]["cost"]["median"] == pytest.approx((300 * 0.75 + 30 * 3.75) / 1e6)


def test_live_compare_table_and_repeat(gemini, monkeypatch, capsys):
    gemini(["Answer: 47", "Answer: 47", "Answer: 46", "Answer: 47"])
    monkeypatch.setenv("COLUMNS", "160")
    code = command_line.main(["What is 7 * 6 + 5?", "--compare", "full,window:2", "--repeat", "2", "--expect", "47"])
    out = capsys.readouterr().out
    assert code == 0 and "Policies compared · model gemini-flash-latest" in out
    assert "2/2" in out and "1/2" in out and "46 | 47" in out
    assert "     cost ┃" in out and "│ $0.000112 │" in out  # 100 in × $0.75 + 10 out × $3.75 per million


@pytest.mark.parametrize("name", ["long.jsonl", "superbowl.jsonl"])
def test_shipped_conversations_are_what_the_builder_records(name, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "conversations"))
    import build
    build.main(str(tmp_path))

    def without_times(path):
        header, events = read_trace_file(path)
        return ({k: v for k, v in header.items() if k != "created"},
                [{k: v for k, v in e.items() if k != "t"} for e in events])
    assert without_times(str(tmp_path / name)) == without_times(os.path.join(ROOT, "conversations", name))


def test_a_replay_says_what_it_cannot_show_of_a_policy_whose_tools_the_recording_never_called(tmp_path, capsys):
    header, events = read_trace_file(SUPER_BOWL)
    reports = {r.policy: r for r in replay(header, events, ["full", "pinned", "forget", "elide:2+pinned"])}
    assert reports["full"].caveat == ""
    assert reports["pinned"].caveat.startswith("the recorded replies never pin a note, "
                                               "so here it keeps only the last 4")
    assert reports["forget"].caveat.startswith("the recorded replies never call forget")
    assert reports["elide:2+pinned"].caveat == reports["pinned"].caveat
    pinned = [*events, {"type": "note", "op": "pin", "text": "15.5 °C at the stadium"}]
    assert replay(header, pinned, ["pinned"])[0].caveat == ""
    assert command_line.main(["--replay", SUPER_BOWL, "--policies", "full,pinned"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "* pinned: the recorded replies never pin a note" in out and "full: the recorded" not in out
    assert "│ pinned * │" in out  # marked in the table itself
    from views.pages import replay_page
    page = replay_page(header, events, list(reports.values()))
    totals = page[page.index('class="totals"'):page.index("</table>", page.index('class="totals"'))]
    assert "what this replay cannot show" in totals and "the recorded replies never pin a note" in totals


def test_record_turns_a_script_into_a_trace_that_replays(tmp_path, capsys):
    out = tmp_path / "example.jsonl"
    script = os.path.join(ROOT, "conversations", "example.script.json")
    assert command_line.main(["--record", script, "--trace", str(out)]) == 0
    header, events = read_trace_file(str(out))
    observations = [e["text"] for e in events if e["type"] == "observation"]
    assert observations == ["Order ZQ-5521: 2 items, shipped 3 March from Leeds, carrier ParcelOne, tracking PO-88310.",
                            "8"]  # the scripted result, then subtract_numbers run for real
    assert "lookup_order(*args, **kwargs)" in events[0]["text"]  # a tool the project lacks, stood in for by name
    assert [e["text"] for e in events if e["type"] == "answer"][-1] == "8 days ago."
    reports = replay(header, events, ["full", "window:0+facts"],
                     facts=[Fact("tracking", "PO-88310", "PO-88310")], points=probe_points({"turns": [3]}, events))
    assert reports[0].violations == reports[1].violations == 0
    assert reports[1].facts == {"tracking": {"turn 3 (call 5)": "kept"}}  # a short tool result: the rule keeps it


def test_record_under_pinned_runs_the_policy_tool_and_a_bad_script_is_one_line(tmp_path, capsys):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"user": "Remember 4471.", "steps": [
        {"thought": "Pin it.", "action": 'pin_note("code 4471")', "result": "ignored"}], "answer": "Pinned."}]}))
    assert command_line.main(["--record", str(script), "--policy", "pinned"]) == 0
    _, events = read_trace_file(str(tmp_path / "s.jsonl"))
    assert [e["text"] for e in events if e["type"] == "note"] == ["code 4471"]
    script.write_text(json.dumps({"turns": [{"steps": []}]}))
    assert command_line.main(["--record", str(script)]) == 2
    assert "is not a conversation script: turn 1 needs \"user\" and \"answer\" as text" in capsys.readouterr().err


# ---------------------------------------------------------------- damaged and hostile inputs

@pytest.mark.parametrize("damage", ['[{"key": "x", "pol', '{"a": 1}', '[{"key": "x"}]', "\udcff", "a folder"])
def test_a_summaries_cache_that_cannot_be_read_is_set_aside_with_one_warning(tmp_path, capsys, damage):
    trace = tmp_path / "sb.jsonl"
    trace.write_bytes(open(SUPER_BOWL, "rb").read())
    cache = tmp_path / "sb.summaries.json"
    if damage == "a folder":
        cache.mkdir()
    else:
        cache.write_bytes(damage.encode("utf-8", "surrogateescape"))  # "\udcff": a byte that is not UTF-8
    assert command_line.main(["--replay", str(trace), "--policies", "full", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["calls"] == 7
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith(f"warning: the summaries cache {cache} cannot be read (")
    if damage != "a folder":  # only a cache, but what was there is kept, beside it
        assert not cache.exists() and f"set aside as {cache}.unreadable" in captured.err
        assert (tmp_path / "sb.summaries.json.unreadable").read_bytes() == damage.encode("utf-8", "surrogateescape")
        assert command_line.main(["--replay", str(trace), "--policies", "full", "--json"]) == 0
        assert capsys.readouterr().err == ""  # said once: the next replay starts from no cache


def test_a_pipe_as_the_summaries_cache_is_neither_waited_on_nor_written(tmp_path, capsys):
    """A FIFO where the cache would be: opening it to read would wait for a writer forever, and writing into it
    for a reader. The replay says once that it is not used, and finishes (an alarm ends the test if it waits)."""
    import signal

    def waited(*_):
        raise TimeoutError("the replay waited on the pipe")
    trace = tmp_path / "sb.jsonl"
    trace.write_bytes(open(SUPER_BOWL, "rb").read())
    os.mkfifo(tmp_path / "sb.summaries.json")
    before = signal.signal(signal.SIGALRM, waited)
    signal.alarm(20)
    try:
        assert command_line.main(["--replay", str(trace), "--policies", "compact:300", "--summarizer", "none"]) == 0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    err = capsys.readouterr().err
    assert f"the summaries cache {tmp_path / 'sb.summaries.json'} cannot be read (it is a pipe, not a regular file)" \
        in err and "it is not used" in err


def test_a_summaries_cache_set_aside_is_made_again(tmp_path, capsys):
    from experiments.replay import Summaries
    cache = tmp_path / "summaries.json"
    cache.write_text('{"a": 1}')
    request = [Message.of("user", "Summarise.", "question")]
    assert Summaries(ScriptedModel(["Summary: a."]), str(cache)).text("compact:1", (1, 2), request)[0] == "Summary: a."
    assert Summaries(None, str(cache)).text("compact:1", (1, 2), request) == ("Summary: a.", "cached, by scripted")
    assert capsys.readouterr().err.count("\n") == 1


SUMMARY_WRITER = """
import resource, sys
sys.path.insert(0, sys.argv[1])
from experiments.replay import Summaries
from models import Message
from models.prices import price_of
from models.scripted import ScriptedModel
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))  # as `ulimit -f` does, in bytes
summaries = Summaries(ScriptedModel(["a long summary " * 200]), sys.argv[2])
try:
    summaries.text("compact:1", (3, 4), [Message.of("user", "Summarise again.", "question")])
except OSError as problem:
    print(problem.strerror)
"""


def test_a_summaries_write_that_fails_leaves_the_cache_as_it_was(tmp_path):
    from experiments.replay import Summaries
    cache = tmp_path / "summaries.json"
    Summaries(ScriptedModel(["Summary: short."]), str(cache)).text(
        "compact:1", (1, 2), [Message.of("user", "Summarise.", "question")])
    before = cache.read_bytes()
    done = subprocess.run([sys.executable, "-c", SUMMARY_WRITER, ROOT, str(cache)], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "File too large\n", "")
    assert cache.read_bytes() == before and os.listdir(tmp_path) == ["summaries.json"]  # no half-written file left


def test_probing_a_trace_with_no_instructions_says_so_before_asking_anything(tmp_path):
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(open(SUPER_BOWL, "rb").read()[:3000])  # the header, and the instructions cut off mid-line
    header, events = read_trace_file(str(cut))
    facts, declared = load_facts(header)
    model = Reader("15.5 °C", "15.5 °C")
    for session, points in [(events, []), ([{"type": "question", "text": "It is 15.5 °C here."}],
                                           probe_points({"turns": [2]}, [{"type": "question", "text": "?"}]))]:
        with pytest.raises(ValueError, match="^the trace has no instructions to probe with"):
            probe(session, ["full"], model, facts, points)
    assert model.calls == 0


@pytest.mark.parametrize("name, content, message", [
    ("deep.json", "[" * 100_000, "its JSON is nested too deeply"),
    ("long.json", '{"facts": [' + "9" * 5000 + "]}", "it holds a number too long to read"),
    ("utf16.json", '{"facts": []}'.encode("utf-16"), "not JSON in UTF-8"),
])
def test_a_facts_file_json_cannot_read_is_one_line_naming_the_file(tmp_path, capsys, name, content, message):
    facts = tmp_path / name
    facts.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert command_line.main(["--replay", SUPER_BOWL, "--policies", "full", "--facts", str(facts)]) == 2
    assert capsys.readouterr().err == f"error: {facts} is not a facts file: {message}\n"


def test_compare_traces_that_cannot_be_written_are_one_warning_each(world, tmp_path, capsys):
    world(["Answer: 47", "Answer: 47"])
    names = [tmp_path / "t.full.jsonl", tmp_path / "t.window-1.jsonl"]
    for name in names:  # a full disk under each file, as `ulimit -f` or a full partition would be
        os.symlink("/dev/full", name)
    code = command_line.main(["7 * 6 + 5?", "--compare", "full,window:1", "--trace", str(tmp_path / "t.jsonl"),
                              "--json"])
    captured = capsys.readouterr()
    assert code == 0 and [run["answer"] for run in json.loads(captured.out)["runs"]] == ["47", "47"]
    assert captured.err == "".join(f"warning: could not write the trace file {name} (No space left on device); "
                                   "the file ends there, and the run goes on\n" for name in names)


def test_compare_with_its_traces_in_a_missing_folder_is_refused_before_any_call(world, tmp_path, capsys):
    """As a single run is: the runs' calls would be paid for and none recorded."""
    server = world(["Answer: 47", "Answer: 47"])
    trace = tmp_path / "no" / "t.jsonl"
    assert command_line.main(["7 * 6 + 5?", "--compare", "full,window:1", "--trace", str(trace)]) == 2
    said = capsys.readouterr().err
    assert said == f"error: cannot write the trace files: no folder {tmp_path / 'no'} (--trace {trace})\n"
    assert server.requests == []


def test_compare_traces_of_distinct_policies_get_distinct_files(world, tmp_path, capsys):
    world(["Answer: 47", "Answer: 48"])
    code = command_line.main(["7 * 6 + 5?", "--compare", "window:٢,window:٣", "--trace", str(tmp_path / "u.jsonl"),
                              "--json"])
    assert code == 0, capsys.readouterr().err
    written = {path.name: read_trace_file(str(path)) for path in tmp_path.glob("u.*.jsonl")}
    assert sorted(written) == ["u.window-2.jsonl", "u.window-3.jsonl"]
    assert written["u.window-2.jsonl"][0]["policy"] == "window:2"  # as the table names it
    assert [e["text"] for e in written["u.window-3.jsonl"][1] if e["type"] == "answer"] == ["48"]


def test_a_run_whose_trace_file_cannot_be_opened_is_said_and_the_other_runs_are_kept(world, tmp_path, capsys):
    world(["Answer: 47", "Answer: 47"])
    (tmp_path / "t.window-1.jsonl").mkdir()  # the second run's file cannot be made
    code = command_line.main(["7 * 6 + 5?", "--compare", "full,window:1", "--trace", str(tmp_path / "t.jsonl"),
                              "--json"])
    captured = capsys.readouterr()
    assert code == 0 and [run["answer"] for run in json.loads(captured.out)["runs"]] == ["47", "47"]
    assert captured.err == (f"warning: cannot write the trace file {tmp_path / 't.window-1.jsonl'}: Is a directory; "
                            "this run is not recorded\n")
    assert read_trace_file(str(tmp_path / "t.full.jsonl"))[1]


def test_a_facts_file_with_a_lone_surrogate_is_refused_in_one_line(tmp_path):
    path = tmp_path / "f.json"
    facts = json.loads(open(os.path.join(ROOT, "conversations", "short.facts.json"), encoding="utf-8").read())
    facts["facts"][0]["id"] = "code\ud800"
    path.write_text(json.dumps(facts))  # ASCII: the escape is what JSON decodes into a surrogate
    with pytest.raises(ValueError, match="lone surrogate"):
        load_facts({}, str(path))


def test_a_summary_with_a_lone_surrogate_is_kept_as_a_replacement_character(tmp_path):
    from experiments.replay import Summaries

    summaries = Summaries(ScriptedModel(["Summary: code \ud800 4471"]), str(tmp_path / "t.summaries.json"))
    text, _ = summaries.text("compact:300", (1, 4), [Message.of("user", "Summarise.")])
    assert text == "Summary: code \ufffd 4471"
    assert Summaries(None, str(tmp_path / "t.summaries.json")).cache  # written, and read back


def test_a_replay_measures_what_a_prefix_cache_would_serve_and_prices_it_by_the_models_rule(long_replay, capsys):
    from models.prices import Price
    _, events, reports = long_replay
    full, window = reports["full"], reports["window:2"]
    # Full history only grows: each call repeats the whole call before it, so all but the first call's is served.
    assert full.repeated[1:] == full.sizes[:-1] and full.repeated[0] == 0
    gemini = price_of("gemini-3.8-flash")  # a 4,096-token minimum, no write billed
    assert gemini.minimum == 4096 and window.cacheable(gemini) == 0  # the window moves: only the instructions repeat
    assert full.cacheable(gemini) == sum(tokens for tokens in full.repeated if tokens >= 4096) > 0
    assert full.input_cost(gemini, cached=False) == full.total * 0.75 / 1e6
    assert window.input_cost(gemini, cached=True) == window.input_cost(gemini, False)
    # Under this rule the ranking flips: full history's first calls are under 4,096 tokens, and the window's input
    # is so much smaller that it costs less than full history even with full history's cache; at 1,024 it does not.
    assert window.input_cost(gemini, True) < full.input_cost(gemini, True) < full.input_cost(gemini, False)
    older = Price(0.75, 0.075, 3.75, "", "", min_cache_tokens=1024)
    assert full.input_cost(older, True) < window.input_cost(older, True)
    never = Price(0.75, 0.075, 3.75, "", "", min_cache_tokens=full.peak + 1)  # a minimum above every context
    assert full.input_cost(never, True) == full.input_cost(never, False) and full.cacheable(never) == 0
    writes = Price(5.0, 0.5, 30.0, "", "", cache_write=6.25, min_cache_tokens=1024)  # writes billed at 1.25x
    assert window.input_cost(writes, True) >= window.input_cost(writes, False)  # rewriting its start: no saving
    assert full.input_cost(writes, True) < full.input_cost(writes, False)
    assert command_line.main(["--replay", LONG, "--policies", "full,window:2", "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    policies = {p["policy"]: p for p in replayed["policies"]}
    assert policies["full"]["cacheable"] == full.cacheable(gemini)
    assert policies["full"]["input_cost"] == {"priced_as": "gemini-3.8-flash",
                                              "no_cache": round(full.input_cost(gemini, False), 8),
                                              "with_cache": round(full.input_cost(gemini, True), 8)}
    from views.reports import replay_json
    [small] = replay(read_trace_file(LONG)[0], events, ["compact:300"])  # no summarizer: not measured
    unmeasured = replay_json([small], "c", [], [], priced=[("gemini-3.8-flash", gemini)])["policies"][0]
    assert not unmeasured["measured"] and "input_cost" not in unmeasured  # no cost, rather than $0
    rule = replayed["setup"]["caching_rule"]
    assert rule["min_cache_tokens"] == 4096 and rule["until"] == "2026-12-31"
    # several rules at once: the first is input_cost, as before; every one is under input_cost_under, and in the setup
    assert command_line.main(["--replay", LONG, "--policies", "full,window:2", "--prices-of",
                              "gemini-3.8-flash,gpt-5.6-sol", "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    window_costs = next(p for p in replayed["policies"] if p["policy"] == "window:2")
    assert window_costs["input_cost"]["with_cache"] == round(window.input_cost(gemini, True), 8)
    sol = price_of("gpt-5.6-sol")
    assert window_costs["input_cost_under"]["gpt-5.6-sol"] == {
        "priced_as": "gpt-5.6-sol", "cacheable": window.cacheable(sol),
        "no_cache": round(window.input_cost(sol, False), 8), "with_cache": round(window.input_cost(sol, True), 8)}
    assert [rule["priced_as"] for rule in replayed["setup"]["caching_rules"]] == ["gemini-3.8-flash", "gpt-5.6-sol"]


def test_prices_of_a_model_without_a_listed_price_is_one_line(capsys):
    assert command_line.main(["--replay", SUPER_BOWL, "--prices-of", "gpt-nothing"]) == 2
    assert capsys.readouterr().err.startswith("error: --prices-of: no listed price for gpt-nothing "
                                              "in models/prices.json")
    assert command_line.main(["--replay", SUPER_BOWL, "--prices-of", "gemini-3.8-flash,,gpt-nothing"]) == 2
    assert capsys.readouterr().err.startswith("error: --prices-of: no listed price for an empty name, gpt-nothing ")


def test_the_pareto_frontier_is_the_policies_nothing_beats_on_both_counts():
    from views.reports import frontier, frontier_sentence

    points = [("full", 100, 1.0), ("window", 20, 0.0), ("cheap-and-good", 40, 1.0), ("middle", 30, 0.5),
              ("worse", 50, 0.5)]
    assert [label for label, _, _ in frontier(points)] == ["window", "middle", "cheap-and-good"]
    sentence = frontier_sentence(frontier(points), "tokens", "kept", str)
    assert sentence.startswith("On the frontier, from the cheapest (tokens, kept): window (20, 0%); middle (30, 50%); "
                               "cheap-and-good (40, 100%).")
