"""Comparing policies: static replay of the shipped conversations, probe mode, and the live --compare run."""
import json
import os
import subprocess
import sys

import pytest

import agent
import cli as command_line
from compare import ToolTape, call_points, matches, probe, replay
from models import ModelReply
from models.scripted import ScriptedModel
from policies import make_policy
from reports import svg_plot
from servers import FakeGemini, FakeOpenMeteo, FakeWikipedia
from tokens import count_tokens
from traces import Trace, read_trace_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LONG = os.path.join(ROOT, "conversations", "long.jsonl")
SUPER_BOWL = os.path.join(ROOT, "conversations", "superbowl.jsonl")
KEY = "test-key"


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
        assert all(kept in (True, None) for kept in marks.values()) and True in marks.values(), fact


def test_static_replay_window_loses_the_mid_session_facts(long_replay):
    _, _, reports = long_replay
    window = reports["window:2"].facts
    assert not any(window["sintra"].values()) and not any(window["booking"].values())


def test_static_replay_user_only_keeps_what_the_user_said_and_loses_tool_facts(long_replay):
    _, _, reports = long_replay
    user_only = reports["user-only:4"].facts
    assert all(v in (True, None) for v in user_only["instruction"].values())
    assert all(v in (True, None) for v in user_only["booking"].values())
    assert not any(user_only["sintra"].values())


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


def test_compact_without_recorded_summaries_is_reported_not_measured(long_replay):
    _, _, reports = long_replay
    assert not reports["compact:8000"].measured and "not measured" in reports["compact:8000"].note


def test_compact_with_recorded_summaries_is_measured(tmp_path):
    path = str(tmp_path / "compact.jsonl")
    from tools.arithmetic import add_numbers

    def fetch(page: str) -> str:
        """Long text."""
        return page * 400
    replies = ['Action: fetch("a")', 'Action: fetch("b")', 'Action: fetch("c")', "Summary: fetched a and b.", "Answer: ok"]
    run = agent.TinyReAct(ScriptedModel(replies), tools=[add_numbers, fetch], policy=make_policy("compact:300"),
                          trace=Trace(path))
    run.query("fetch three")
    run.trace.close()
    header, events = read_trace_file(path)
    reports = {r.policy: r for r in replay(header, events, ["full", "compact:300"])}
    assert reports["compact:300"].measured and reports["compact:300"].violations == 0
    assert reports["compact:300"].sizes[-1] < reports["full"].sizes[-1]


class Reader:
    """A stand-in model that answers a probe only if the gold fact is in the context it was sent."""
    name, backend, usage_source = "reader", "test", "none"

    def __init__(self, fact, answer):
        self.fact, self.answer, self.calls = fact, answer, 0

    def generate(self, messages, stop, **options):
        self.calls += 1
        context = "\n".join(m.text for m in messages)
        return ModelReply(f"Thought: looking\nAnswer: {self.answer if self.fact in context else 'I do not know'}")


def test_probe_mode_scores_each_policy_and_a_closed_book_control():
    header, events = read_trace_file(SUPER_BOWL)
    model = Reader("15.5 °C", "It was 15.5 °C.")
    scores = probe(header, events, ["full", "window:1"], model)
    assert scores == {"closed book": {"temperature": [0, 6]}, "full": {"temperature": [6, 6]},
                      "window:1": {"temperature": [0, 6]}}
    assert model.calls == 18


def test_probe_mode_asks_only_after_the_fact_was_stated():
    header, events = read_trace_file(LONG)
    header = {**header, "probes": [p for p in header["probes"] if p["id"] == "booking"], "probe_points": [31, 84]}
    scores = probe(header, events, ["user-only:4", "window:2"], Reader("KX-4471-B", "KX-4471-B"))
    assert scores["user-only:4"] == {"booking": [6, 6]} and scores["window:2"] == {"booking": [0, 6]}


def test_matching_is_on_whole_words():
    assert matches("Your reference is kx-4471-b.", "KX-4471-B")
    assert not matches("KX-4417-B", "KX-4471-B") and not matches("470", "47") and matches("It is 47.", "47")


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
    assert svg.startswith("<svg") and svg.count("<polyline") == 5 and "compact" not in svg


def cli(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    environment.update(env or {})
    return subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), *args], capture_output=True, text=True,
                          env=environment, timeout=120, stdin=subprocess.DEVNULL)


def test_replay_command_line_outputs(tmp_path):
    done = cli("--replay", LONG, "--policies", "full,window:2,user-only:4", "--plot", str(tmp_path / "p.svg"),
               "--csv", str(tmp_path / "p.csv"))
    assert done.returncode == 0, done.stderr
    assert "Replay of" in done.stdout and "-74%" in done.stdout and "KX-4471-B" in done.stdout
    assert (tmp_path / "p.svg").read_text().count("<polyline") == 3
    assert (tmp_path / "p.csv").read_text().splitlines()[:2] == ["policy,call,context_tokens", "full,1,945"]
    report = json.loads(cli("--replay", SUPER_BOWL, "--policies", "full", "--json").stdout)
    assert report["calls"] == 7 and report["policies"][0]["violations"] == 0


@pytest.mark.parametrize("args, message", [
    (["--replay", "/no/such/file.jsonl"], "No such file"),
    (["--replay", __file__], "not JSON"),
    (["--replay", SUPER_BOWL, "--policies", "full,bogus"], "unknown policy 'bogus'"),
    (["--replay", SUPER_BOWL, "--probe", "--model", "gemini-flash-latest"], "no Gemini API key"),
    (["--compare", "full,window:2"], "--compare needs a question"),
])
def test_replay_and_compare_errors_are_one_line(args, message, tmp_path):
    done = cli(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_live_compare_replays_tool_results_to_every_policy(monkeypatch, capsys):
    gemini = FakeGemini([
        'Action: wikipedia_coordinates("Caesars Superdome")', "Action: get_temperature(29.9508, -90.0811)", "Answer: 15.5 °C",
        'Action: wikipedia_coordinates("Caesars Superdome")', "Action: get_temperature(29.9508, -90.0811)", "Answer: 15.5",
        'Action: wikipedia_coordinates("Superdome")', "Answer: I think 20 °C",
    ], key=KEY)
    wiki = FakeWikipedia({"Caesars Superdome": {"extract": "A stadium.", "coordinates": (29.950833, -90.081111)}},
                         redirects={"Superdome": "Caesars Superdome"})
    with gemini, wiki, FakeOpenMeteo({(29.95, -90.08): 15.5}) as meteo:
        for name, value in [("GEMINI_API_KEY", KEY), ("GOOGLE_GEMINI_BASE_URL", gemini.url),
                            ("WIKIPEDIA_API_URL", wiki.url + "/w/api.php"), ("OPEN_METEO_URL", meteo.url + "/v1/forecast")]:
            monkeypatch.setenv(name, value)
        code = command_line.main(["How warm is the Superdome?", "--compare", "full,window:1,elide:1", "--expect", "15.5", "--json"])
        assert len(meteo.requests) == 1  # the temperature was fetched once and replayed to the second policy
    report = json.loads(capsys.readouterr().out)
    rows = {row["policy"]: row for row in report["rows"]}
    assert code == 0 and list(rows) == ["full", "window:1", "elide:1"]
    assert [rows[p]["correct"] for p in rows] == [1, 1, 0]
    assert [rows[p]["live_tool_calls"]["median"] for p in rows] == [0, 0, 1]  # elide:1 asked something new: a miss
    assert rows["full"]["model_calls"]["median"] == 3 and rows["full"]["input_tokens"]["median"] == 300
    assert report["model"] == "gemini-flash-latest" and report["counter"] == "Gemma 3 tokenizer, local"


def test_live_compare_table_and_repeat(monkeypatch, capsys):
    gemini = FakeGemini(["Answer: 47", "Answer: 47", "Answer: 46", "Answer: 47"], key=KEY)
    with gemini:
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("COLUMNS", "160")
        code = command_line.main(["What is 7 * 6 + 5?", "--compare", "full,window:2", "--repeat", "2", "--expect", "47"])
    out = capsys.readouterr().out
    assert code == 0 and "Policies compared · model gemini-flash-latest" in out
    assert "2/2" in out and "1/2" in out and "46 | 47" in out


@pytest.mark.parametrize("name", ["long.jsonl", "superbowl.jsonl"])
def test_shipped_conversations_are_what_the_builder_records(name, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "conversations"))
    import build
    build.main(str(tmp_path))

    def without_times(path):
        header, events = read_trace_file(path)
        return {k: v for k, v in header.items() if k != "created"}, [{k: v for k, v in e.items() if k != "t"} for e in events]
    assert without_times(str(tmp_path / name)) == without_times(os.path.join(ROOT, "conversations", name))
