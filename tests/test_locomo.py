"""bench/locomo.py on a small synthetic file of LoCoMo's shape (tests/fixtures/locomo_synthetic.json, written for this
project: the real data is not shipped): both of its released layouts read alike, a conversation becomes a trace with
the first speaker as the user, each question's evidence is found or not in each policy's context, the JSON has the
shape the docs give, a file that is not LoCoMo's is one line, and answers are scored with LoCoMo's token F1."""
import json
import os
import sys
import zipfile

import pytest

from models import ModelReply

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import locomo  # noqa: E402

SYNTHETIC = os.path.join(ROOT, "tests", "fixtures", "locomo_synthetic.json")


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The synthetic file replayed under full history and two policies that forget, as --json gives it."""
    folder = tmp_path_factory.mktemp("locomo")
    conversations = locomo.read(SYNTHETIC)
    rules = [(name, price) for name, price in locomo.rules()]
    results, unscored = locomo.measure(conversations, ["full", "window:1", "user-only:0", "window:1+facts"], rules,
                                       str(folder))
    return conversations, locomo.as_json(conversations, results, unscored, rules)


def test_both_released_layouts_read_alike(tmp_path):
    """data/locomo10.json (a list of samples, fields under `conversation`), and a zip of one file a conversation
    with the fields at the top (the locomo10_v2 layout) give the same conversations and questions."""
    samples = json.load(open(SYNTHETIC, encoding="utf-8"))
    archive = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("data/multimodal_dialog/locomo10_v2/", "")
        for number, sample in enumerate(samples, 1):
            zipped.writestr(f"data/multimodal_dialog/locomo10_v2/{number}.json",
                            json.dumps({**sample["conversation"], "qa": sample["qa"]}))
    listed, zipped = locomo.read(SYNTHETIC), locomo.read(str(archive))
    assert [len(c.questions) for c in listed] == [len(c.questions) for c in zipped] == [9, 3]
    assert [c.sessions for c in listed] == [c.sessions for c in zipped]
    # the data's slips in evidence ids are read as LoCoMo meant them: "D:2:2", "D2:04", "D3:3; D3:5"
    assert listed[0].questions[2].evidence == ["D2:2", "D2:4"]
    assert listed[0].questions[4].evidence == ["D3:3", "D3:5"]


def test_a_conversation_becomes_a_script_with_the_first_speaker_as_the_user():
    conversation = locomo.read(SYNTHETIC)[0]
    turns = locomo.script(conversation)["turns"]
    assert turns[0] == {"user": "[Session 1, 9:15 am on 3 March, 2025] Ines: Hi Tomas! I finally adopted a cat last "
                                "weekend, her name is Pimenta.",
                        "answer": "Tomas: That's lovely, Ines! I've been training for the Porto half marathon in May."}
    # a photo's caption follows its line; a line of two lines is one; a session the second speaker opens is asked
    # by its date alone; one the first speaker ends is answered by a marker
    assert conversation.lines["D1:3"].endswith("[shares a photo: a grey cat sleeping on a stack of books]")
    assert conversation.lines["D2:4"] == "Ines: No, I had to buy a new one. It was expensive."
    assert turns[3] == {"user": "[Session 2, 6:40 pm on 20 April, 2025]",
                        "answer": "Tomas: Ines, I ran 18 kilometres today, my longest run yet."}
    assert turns[6] == {"user": "Ines: Say hi to her from me.", "answer": locomo.ENDS}
    assert len(turns) == 10  # the empty session 4 adds nothing


def test_evidence_is_kept_under_full_history_and_lost_by_a_window(measured):
    conversations, summary = measured
    assert summary["conversations"] == 2 and summary["questions"] == 12
    full, window = summary["policies"]["full"], summary["policies"]["window:1"]
    # "D9:1" names no line: not scored; the adversarial question (category 5) is left out of the headline
    assert full["evidence_kept"] == 1.0 and full["evidence"]["n"] == 10 and full["by_category"]["adversarial"]["n"] == 1
    assert summary["unresolved_evidence"] == {"no evidence": [], "an entry naming no line": [],
                                              "a line the conversation lacks": ["locomo_synthetic.json#1 q9"]}
    # window:1 shows the last exchange only: of the first conversation, only the questions on its last session's
    # last exchange ("D3:5" is half of question 5's evidence) keep anything
    assert window["evidence"]["kept"] == 1 and window["evidence"]["partly"] == 1  # Wen's rye; the reading club
    assert window["by_category"]["single-hop"]["n"] == 6 and window["by_category"]["single-hop"]["kept"] == 1
    # user-only keeps the first speaker's lines: Ines's and Wen's evidence, never Tomas's or Ada's
    user = summary["policies"]["user-only:0"]
    assert user["by_category"]["adversarial"]["kept"] == 0  # its evidence, D1:2, is Tomas's
    assert user["evidence"]["kept"] == 7  # D1:1 twice, D1:3, D2:2+D2:4, D3:3+D3:5, D1:1 (Wen), D2:2 (Wen)
    assert user["evidence"]["partly"] == 1  # D1:3 (Wen's) and D2:1 (Ada's)
    assert full["input_tokens"] > user["input_tokens"] > window["input_tokens"] > 0
    # the key-facts block keeps the first speaker's statements sentence by sentence: a line counts as kept when each
    # of its sentences of four words or more is there ("Ines: Amazing!" is two words; the sentence after it is kept)
    facts = summary["policies"]["window:1+facts"]
    assert facts["evidence"]["kept"] == 7  # every question on the first speaker's lines alone: user-only's seven
    assert locomo.present("Ines: Amazing! Pimenta knocked my coffee onto the keyboard this morning.",
                          "- Pimenta knocked my coffee onto the keyboard this morning.")
    assert not locomo.present("Ines: Wow!", "Wow!") and not locomo.present("A b c d. E f g h.", "A b c d.")
    assert set(full["cost"]) == {"no_cache", "with_cache"} and set(full["cost"]["no_cache"]) == set(locomo.RULES)
    # every call is priced, the questions' too: more than the session calls alone
    assert all(full["cost"][key][rule] > full["sessions_cost"][key][rule]
               for key in full["cost"] for rule in locomo.RULES)


def test_a_temporal_question_counts_as_kept_only_with_its_sessions_date():
    conversation = locomo.read(SYNTHETIC)[0]
    locomo.script(conversation)  # fills the lines
    when = conversation.questions[1]  # "When did Ines adopt her cat?" (temporal), on D1:1
    needed = locomo.needed(conversation, when, when.evidence)
    assert needed == [conversation.lines["D1:1"], "[Session 1, 9:15 am on 3 March, 2025]"]
    assert locomo.evidence_state(conversation.lines["D1:1"], needed) == "partly"  # the line without its date
    name = conversation.questions[0]  # the same line, asked as single-hop: no date needed
    assert locomo.needed(conversation, name, name.evidence) == [conversation.lines["D1:1"]]


def test_the_calls_are_made_at_the_sessions_dates_and_a_cache_expires_between_them(tmp_path):
    """The synthetic sessions are weeks apart: under a 5-minute cache each session's first call reads nothing, so
    full history's session calls cost more than with the cache kept for ever, which gives them as counted before
    (the synthetic contexts are short: the rule here caches from 0 tokens, so that the cache is used at all)."""
    from experiments.replay import replay
    from models.prices import NEVER, Price

    conversations = locomo.read(SYNTHETIC)
    header, recorded = locomo.record(conversations[0], str(tmp_path))
    times = locomo.call_times(conversations[0], recorded)
    assert times[0] == 1740993300.0  # 9:15 am on 3 March, 2025, UTC
    assert times[1] - times[0] == locomo.TURN_SECONDS and times[3] - times[2] > 40 * 86400  # session 2, April 20
    five_minutes = Price(1.0, 0.1, 1.0, "", "", cache_write=1.25, min_cache_tokens=0, cache_ttl=300)
    as_before, in_time = (locomo.measure(conversations, ["full"], [("rule", price)], str(tmp_path))[0][0]
                          for price in (five_minutes.expiring(NEVER), five_minutes))
    undated = sum(replay(*locomo.record(conv, str(tmp_path)), ["full"], facts=[], points=[])[0]
                  .input_cost(five_minutes.expiring(NEVER), True) for conv in conversations)
    assert as_before.sessions_cost["with_cache"]["rule"] == pytest.approx(undated)  # as counted before
    assert in_time.sessions_cost["with_cache"]["rule"] > as_before.sessions_cost["with_cache"]["rule"]


def corrections(tmp_path, entries) -> str:
    path = tmp_path / "errors.json"
    path.write_text(json.dumps(entries))
    return str(path)


AUDITED = {"question_id": "locomo_0_qa5", "question": "Where is Tomas's sister from?", "category": 4,
           "cited_evidence": ["D2:5"], "correct_evidence": ["D1:1"], "golden_answer": "x", "correct_answer": "x"}


def test_the_audit_s_corrected_evidence_is_reported_beside_locomos(tmp_path, capsys):
    padded = {**AUDITED, "question_id": "locomo_1_qa0", "question": "What is Wen's sourdough starter called?",
              "cited_evidence": ["D1:1"], "correct_evidence": ["D01:01"]}  # the same line, zero-padded: no change
    path = corrections(tmp_path, [AUDITED, padded])
    assert locomo.main([SYNTHETIC, "--policies", "full,user-only:0", "--corrections", path, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    setup = printed["setup"]["corrections"]
    assert setup["entries"] == 2 and setup["questions_changed"] == 1 and len(setup["sha256"]) == 64
    user = printed["policies"]["user-only:0"]
    # Tomas's line (D2:5) is not the user's; the audit's D1:1 is Ines's, which user-only keeps
    assert user["corrected"]["evidence"]["kept"] == user["evidence"]["kept"] + 1


@pytest.mark.parametrize("entries, said", [
    ({"not": "a list"}, "is not the audit's errors.json"),
    ([{"question_id": "q5", "question": "x", "correct_evidence": []}], "is not the audit's errors.json"),
    ([{**AUDITED, "correct_evidence": "D1:1"}], "is not the audit's errors.json"),
    ([{**AUDITED, "question_id": "locomo_7_qa0"}], "names a question the data does not have"),
    ([{**AUDITED, "question_id": "locomo_0_qa40"}], "names a question the data does not have"),
    ([{**AUDITED, "question": "Where is Ines from?"}], "another version of LoCoMo")])
def test_a_corrections_file_that_is_not_the_audit_s_is_one_line(tmp_path, capsys, entries, said):
    assert locomo.main([SYNTHETIC, "--corrections", corrections(tmp_path, entries)]) == 2
    out, err = capsys.readouterr()
    assert said in err and len(err.strip().splitlines()) == 1 and not out


@pytest.mark.parametrize("value", ["-1", "soon", "1e9"])
def test_a_bad_cache_lifetime_is_refused(capsys, value):
    with pytest.raises(SystemExit) as stop:
        locomo.main([SYNTHETIC, "--cache-ttl", value])
    assert stop.value.code == 2 and "--cache-ttl" in capsys.readouterr().err


def test_the_command_line_prints_the_tables_the_json_and_the_chart(tmp_path, capsys):
    chart = tmp_path / "locomo.svg"
    assert locomo.main([SYNTHETIC, "--policies", "full,window:1", "--json", "--plot", str(chart)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed["policies"]) == ["full", "window:1"] and printed["questions"] == 12
    assert chart.read_text().count("input cost with caching, ") == 3  # a panel for each provider's rule
    assert locomo.main([SYNTHETIC, "--policies", "full,window:1"]) == 0
    table = capsys.readouterr().out
    assert "| full | 100.0% (72%–100%); 100%–100% |" in table and "with caching, gpt-5.6-sol" in table
    assert "1 questions name a line the conversation does not have (scored on the lines it has, if any): " \
           "locomo_synthetic.json#1 q9" in table
    # a policy named twice, or by two names, is replayed once: its numbers are not summed twice
    assert locomo.main([SYNTHETIC, "--policies", "full,window:1,window:1,stable,stable:10000", "--json"]) == 0
    once = json.loads(capsys.readouterr().out)["policies"]
    assert list(once) == ["full", "window:1", "stable"]
    assert once["window:1"]["input_tokens"] == printed["policies"]["window:1"]["input_tokens"]


def summarised_run(folder, summaries, specs=("full", "compact:300")):
    conversations = locomo.read(SYNTHETIC)
    rules = [(name, price) for name, price in locomo.rules()]
    results, unscored = locomo.measure(conversations, list(specs), rules, str(folder), summaries=summaries)
    return locomo.as_json(conversations, results, unscored, rules)["policies"]


@pytest.mark.parametrize("spec", ["compact:300", "anthropic-compact:trigger=300"])  # keeps steps; keeps none
def test_a_summarising_policy_is_measured_with_its_summaries_and_measured_again_from_the_cache(tmp_path, spec):
    from experiments.replay import Summaries, replay, timed
    from models.scripted import ScriptedModel

    writer, cache = ScriptedModel(["Summary: what was said."] * 100), str(tmp_path / "s.json")
    first = summarised_run(tmp_path, Summaries(writer, cache), ("full", spec))
    compacted, full = first[spec], first["full"]
    assert compacted["caveat"] is None and compacted["summary_calls"] == len(writer.calls) > 0
    assert compacted["evidence_kept"] < full["evidence_kept"] and compacted["peak_context"] < full["peak_context"]
    # the sessions' summaries, and the one asked for once they are over: one for the questions, not one a question
    sessions = 0
    for conv in locomo.read(SYNTHETIC):
        header, recorded = locomo.record(conv, str(tmp_path))
        events = timed(recorded, locomo.call_times(conv, recorded))
        sessions += replay(header, events, [spec], facts=[], points=[],
                           summaries=Summaries(None, cache))[0].summary_calls
    assert compacted["summary_calls"] == sessions + 2  # two conversations
    again = summarised_run(tmp_path, Summaries(None, cache), ("full", spec))  # the cache alone: no model to call
    assert again == first


def test_summaries_from_the_cache_alone_or_none_and_what_stops_a_summarizer_is_one_line(tmp_path, capsys,
                                                                                          monkeypatch):
    from experiments.replay import Summaries
    from models.scripted import ScriptedModel

    monkeypatch.chdir(tmp_path)
    assert locomo.main([SYNTHETIC, "--policies", "full,adk-compact", "--summarizer", "none"]) == 0
    assert "| adk-compact | not measured: it asks for summaries the recording does not hold" in capsys.readouterr().out
    summarised_run(tmp_path, Summaries(ScriptedModel(["Summary."] * 100), str(tmp_path / "cached.json")),
                   ("full", "adk-compact"))
    assert locomo.main([SYNTHETIC, "--policies", "full,adk-compact", "--summarizer", "none",
                        "--summaries", "cached.json"]) == 0
    assert "| adk-compact | 10.0% (2%–40%); 0%–33% |" in capsys.readouterr().out  # measured, from the cache
    for argv, said in [(["--summarizer", "nonsense:x"], "error: --summarizer: unknown backend 'nonsense'"),
                       (["--summarizer", "openai:m"], "error: --summarizer: no OPENAI_API_KEY"),
                       (["--summaries", str(tmp_path)], f"error: --summaries {tmp_path}: not a regular file in a"),
                       (["--summaries", "/dev/zero"], "error: --summaries /dev/zero: not a regular file in a"),
                       (["--summaries", "no/such/x.json"], "error: --summaries no/such/x.json: not a regular file")]:
        assert locomo.main([SYNTHETIC, "--policies", "full,compact:300", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(said) and len(err.splitlines()) == 1, err


def test_a_policy_not_measured_on_one_conversation_shows_no_numbers_anywhere(tmp_path, capsys, monkeypatch):
    from experiments.replay import Summaries
    from models.scripted import ScriptedModel

    monkeypatch.chdir(tmp_path)
    conversations, rules = locomo.read(SYNTHETIC), list(locomo.rules())
    locomo.measure(conversations[:1], ["full", "compact:300"], rules, str(tmp_path),
                   summaries=Summaries(ScriptedModel(["Summary."] * 100), "locomo.summaries.json"))
    assert locomo.main([SYNTHETIC, "--policies", "full,compact:300", "--summarizer", "none", "--json",
                        "--plot", "p.svg"]) == 0  # the first conversation's summaries cached, not the second's
    compacted = json.loads(capsys.readouterr().out)["policies"]["compact:300"]
    assert compacted["caveat"].startswith("not measured") and compacted["input_tokens"] == 0
    assert compacted["evidence_kept"] is None and "compact:300" not in (tmp_path / "p.svg").read_text()


def test_a_span_of_conversations_is_replayed_alone(capsys):
    assert locomo.main([SYNTHETIC, "--policies", "full", "--conversations", "2-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 3  # the second conversation's
    with pytest.raises(SystemExit):
        locomo.main([SYNTHETIC, "--conversations", "2-1"])
    assert "takes N or A-B" in capsys.readouterr().err


def test_a_damaged_zip_is_one_line(tmp_path, capsys):
    archive = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("a.json", open(SYNTHETIC, encoding="utf-8").read())
    data = bytearray(archive.read_bytes())
    start = data.index(b"a.json") + len(b"a.json")  # the member's compressed bytes, after its local header
    data[start + 10:start + 40] = bytes(30)
    archive.write_bytes(bytes(data))
    assert locomo.main([str(archive)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {archive}: a zip that cannot be read")


@pytest.mark.parametrize("content, says", [
    ("{not json", "not JSON"),
    ("[]", "no conversation in it"),
    (json.dumps([{"conversation": {"speaker_a": "A"}, "qa": []}]), "speaker_a and speaker_b must be names"),
    (json.dumps([{"conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": "x"}, "qa": []}]),
     "session_1 must be a list of turns"),
    (json.dumps([{"conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": [{"dia_id": "D1:1", "text": "x"}],
                                   "session_01": [{"dia_id": "D1:1", "text": "y"}]}, "qa": []}]),
     "two sessions numbered 1"),
    (json.dumps([{"conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": [{"dia_id": "D1:1", "text": "x"}]},
                  "qa": [{"question": "q", "category": 9}]}]), "question 1 needs a question and a category"),
    *[(json.dumps([{"conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": [{"dia_id": "D1:1", "text": "x"}],
                                     "session_1_date_time": date}, "qa": []}]),
       f"session_1_date_time {json.dumps(date)} is not written as LoCoMo writes them")
      for date in ("not a date", None, "1:56 pm on 31 February, 2023")],  # the calls are paced by them
])
def test_a_file_that_is_not_locomo_is_one_line(tmp_path, capsys, content, says):
    path = tmp_path / "data.json"
    path.write_text(content)
    assert locomo.main([str(path)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and says in line
    assert locomo.main([str(tmp_path / "missing.zip")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert locomo.main(["/dev/zero"]) == 2  # never ends: not read
    assert capsys.readouterr().err == "error: /dev/zero: it is a device, not a regular file\n"


def test_answers_are_scored_with_locomos_token_f1():
    stem = locomo.stemmer()
    question = locomo.Question(1, "What did Caroline research?", "Adoption agencies", 4, ["D2:8"])
    assert locomo.score("adoption agency", question, stem) == 1.0  # stems, case and articles aside
    assert locomo.score("the agencies for adoption", question, stem) == pytest.approx(0.8)  # "for" is one extra
    assert locomo.score(None, question, stem) == 0.0  # no Answer line scores nothing
    several = locomo.Question(2, "q", "Painting, kayaking, hiking", 1, [])
    assert locomo.score("hiking, painting", several, stem) == pytest.approx(2 / 3)  # two of three parts
    assert locomo.score("hiking and painting", several, stem) == pytest.approx(4 / 9)  # one part: half right twice
    tricky = locomo.Question(3, "q", "", 5, [])
    assert locomo.score("Not mentioned in the conversation.", tricky, stem) == 1.0
    assert locomo.score("Pimenta", tricky, stem) == 0.0
    reason = locomo.Question(4, "q", "Canada; since she loves the mountains", 3, [])
    assert locomo.score("Canada", reason, stem) == 1.0  # category 3's gold is cut at its ";"


def test_a_probe_asks_each_question_under_each_policy_and_scores_it(tmp_path):
    """A reader that answers from its context: under full history it finds the cat's name, under window:1 it cannot."""
    class Reader:
        name, backend = "reader", "test"

        def generate(self, messages, stop, **options):
            seen = "\n".join(m.text for m in messages[:-1])
            return ModelReply("Thought: looking\nAnswer: " + ("Pimenta" if "Pimenta" in seen
                                                                else "Not mentioned in the conversation"))

    conversation = locomo.read(SYNTHETIC)[0]
    pairs = [(conversation, conversation.questions[0]), (conversation, conversation.questions[7])]
    kept = []
    scores = locomo.probe(pairs, ["full", "window:1"], Reader(), locomo.stemmer(), str(tmp_path), kept.append)
    assert scores == {"full": [1.0, 0.0], "window:1": [0.0, 1.0]}  # the adversarial question is right when it refuses
    assert [(k["policy"], k["evidence"]) for k in kept] == [("full", "kept"), ("full", "kept"),
                                                            ("window:1", "gone"), ("window:1", "gone")]


def test_the_probe_asks_a_summarising_policy_after_the_summaries_it_asked_for(tmp_path, capsys, monkeypatch):
    """compact:T is asked each question after the summaries it asked for in the sessions and the one it asks for
    once they are over, as the replay measures it; from the cache alone the same; a summary neither cached nor to be
    written is one line before any question is asked."""
    from experiments.replay import Summaries
    from model_servers import OpenAIStandIn
    from models.scripted import ScriptedModel

    conversation, cache = locomo.read(SYNTHETIC)[0], str(tmp_path / "s.json")
    pairs = [(conversation, conversation.questions[0])]
    writer = ScriptedModel(["Summary: what was said."] * 100)
    (_, _, _, full), (_, _, _, compact) = locomo.asked(pairs, ["full", "compact:300"], str(tmp_path),
                                                      Summaries(writer, cache))
    shown = lambda messages: "\n".join(message.text for message in messages)  # noqa: E731
    assert "Summary: what was said." in shown(compact) and "Summary: what was said." not in shown(full)
    assert len(shown(compact)) < len(shown(full)) and len(writer.calls) > 0
    again = list(locomo.asked(pairs, ["compact:300"], str(tmp_path), Summaries(None, cache)))  # the cache alone
    assert again[0][3] == compact
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123")
    argv = [SYNTHETIC, "--probe", "--model", "openai:m", "--policies", "full,compact:300", "--sample", "2",
            "--conversations", "1", "--summarizer", "none"]
    with OpenAIStandIn(["Answer: Lisbon"] * 4, models=("m",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert locomo.main([*argv, "--summaries", cache]) == 0
        assert ["Summary: what was said." in json.dumps(body) for body in server.bodies] == [False] * 2 + [True] * 2
        assert locomo.main([*argv, "--summaries", str(tmp_path / "none.json")]) == 2
        assert len(server.bodies) == 4  # nothing asked
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == ("error: --probe under compact:300 needs summaries that are not cached: give a summarizer "
                       "(--summarizer SPEC) or the cache that holds them (--summaries FILE)")


def test_what_stops_a_probe_s_summaries_is_one_line_before_anything_is_asked_paid_or_written(tmp_path, capsys,
                                                                                             monkeypatch):
    """A summarizer without its key is the summarizer's (exit 2); a cache that cannot be written is one line (exit
    1); --answers is not opened, so an earlier file keeps its answers; and with --via a billed summarizer is not
    called for a summary the cache lacks: it would be paid before the price is shown."""
    from experiments import replay
    from model_servers import OpenAIStandIn

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"kept": "an earlier answer"}\n')
    argv = [SYNTHETIC, "--probe", "--model", "ollama:qwen3:8b", "--policies", "full,compact:300", "--sample", "2",
            "--summaries", str(tmp_path / "s.json"), "--answers", str(answers)]
    assert locomo.main([*argv, "--summarizer", "gemini:gemini-2.5-flash"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: --summarizer: no Gemini API key")
    assert locomo.main([*argv, "--summarizer", "openai:m", "--via", "flex", "--yes"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: --via: some summaries are not cached, and --summarizer openai:m would be paid for them before the "
        "price is shown: write them first by replaying without --probe (the same data, --policies, --summarizer and "
        "--summaries), or use a summarizer that does not bill")
    from experiments.replay import Summaries  # another summarizer's summaries are not this one's
    from models.scripted import ScriptedModel
    conversations = locomo.read(SYNTHETIC)
    list(locomo.asked([(conv, conv.questions[0]) for conv in conversations], ["compact:300"], str(tmp_path),
                      Summaries(ScriptedModel(["Summary."] * 100), str(tmp_path / "s.json"))))
    assert locomo.main([*argv, "--summarizer", "openai:m", "--via", "flex", "--yes"]) == 2
    assert "some summaries are not cached" in capsys.readouterr().err
    monkeypatch.setattr(Summaries, "text", lambda *arguments: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert locomo.main([*argv, "--summarizer", "ollama:x"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == f"interrupted: the summaries written so far are cached in " \
                                                       f"{tmp_path / 's.json'}"
    monkeypatch.undo()
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setattr(replay, "write_whole", lambda path, data: (_ for _ in ()).throw(OSError(28, "No space left",
                                                                                                 path)))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123")
    with OpenAIStandIn(["Summary: what was said."] * 50, models=("m",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert locomo.main([*argv, "--summarizer", "openai:m"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == f"error: No space left: {tmp_path / 's.json'}"
    assert answers.read_text() == '{"kept": "an earlier answer"}\n'


def test_a_reply_without_an_answer_line_is_scored_as_written(tmp_path, capsys):
    """LoCoMo scores what the model wrote: "Not mentioned in the conversation." with no Answer line is right for an
    adversarial question (its Thought line aside)."""
    class Plain:
        name, backend = "plain", "test"

        def generate(self, messages, stop, **options):
            return ModelReply("Thought: nothing about a dog\nNot mentioned in the conversation.")

    conversation = locomo.read(SYNTHETIC)[0]
    kept = []
    scores = locomo.probe([(conversation, conversation.questions[7]), (conversation, conversation.questions[0])],
                          ["full"], Plain(), locomo.stemmer(), str(tmp_path), kept.append)
    assert scores == {"full": [1.0, 0.0]} and [k["answered"] for k in kept] == [False, False]
    with pytest.raises(SystemExit):
        locomo.main([SYNTHETIC, "--probe", "--model", "local", "--sample", "0"])


@pytest.mark.parametrize("flag", ["--plot", "--answers"])
def test_an_output_that_is_the_data_a_folder_or_in_no_folder_is_one_line_before_any_work(tmp_path, capsys, flag):
    data = tmp_path / "locomo10.json"
    data.write_text(open(SYNTHETIC, encoding="utf-8").read())
    before = data.read_bytes()
    probing = ["--probe", "--model", "local"] if flag == "--answers" else []
    for path, says in [(data, "is the data file: it would be written over"), (tmp_path, "is a folder: name a file"),
                       (tmp_path / "nowhere" / "out", "its folder does not exist")]:
        with pytest.raises(SystemExit) as ended:
            locomo.main([str(data), flag, str(path), *probing])
        assert ended.value.code == 2 and says in capsys.readouterr().err.strip().splitlines()[-1]
    assert data.read_bytes() == before


def test_a_chart_to_a_full_disk_is_one_line_and_the_tables_are_still_printed(capsys):
    assert locomo.main([SYNTHETIC, "--policies", "full", "--plot", "/dev/full"]) == 1
    out, err = capsys.readouterr()
    assert "conversations" in out and err == "error: cannot write --plot /dev/full: No space left on device\n"


def test_a_folder_as_the_data_and_a_zip_member_with_a_huge_name_are_read_or_said(tmp_path, capsys):
    assert locomo.main([str(tmp_path), "--policies", "full"]) == 2
    assert "is a folder: name LoCoMo's data/locomo10.json, or a zip of it" in capsys.readouterr().err
    archive = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("x" * 60_000 + ".json", open(SYNTHETIC, encoding="utf-8").read())
    assert locomo.main([str(archive), "--policies", "full", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conversations"] == len(locomo.read(SYNTHETIC))


def test_a_rejected_key_under_probe_is_one_line(monkeypatch, capsys):
    from model_servers import OpenAIStandIn

    with OpenAIStandIn(["Answer: x"], key="the-right-key", models=("m",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-a-wrong-key-000")
        code = locomo.main([SYNTHETIC, "--probe", "--model", "openai:m", "--policies", "full", "--sample", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err[-1].startswith("error: ") and "401" in err[-1] and "Traceback" not in "".join(err)


class PresenceReader:
    """Scores an answer -1 when the context before the question holds it, -9 when not (tests/test_likelihood.py)."""
    name, backend = "presence-reader", "local"

    def log_likelihood(self, messages, answer):
        before = [part.text for message in messages for part in message.parts][:-1]
        return -1.0 if any(answer.lower() in text.lower() for text in before) else -9.0


def test_the_likelihood_reader_scores_locomo_answers_beside_the_evidence_kept(tmp_path):
    import locomo_likelihood

    conversations = locomo.read(SYNTHETIC)
    fixed = conversations[0].questions[0]  # "What is the name of Ines's cat?": Pimenta
    fixed.corrected_answer = "Pimentinha"  # a corrected answer the conversation does not hold
    chosen = [(conversations[0], question) for question in conversations[0].questions
              if question.evidence and question.answer.strip() and question.category != 5]
    rows = []
    locomo_likelihood.score_all(chosen, ["full", "window:1"], PresenceReader(), str(tmp_path), rows)
    summary = locomo_likelihood.summarise(rows, ["full", "window:1"])
    full, window = summary["full"], summary["window:1"]
    assert full["questions"] == window["questions"] == len(chosen)
    assert full["evidence_kept"] > window["evidence_kept"] and full["lift"] > window["lift"]
    assert full["corrected_questions"] == 1 and full["corrected_lift"] == 0  # not in the conversation: no lift
    assert full["gold_lift_on_corrected"] == 8  # Pimenta is
    cat = next(row for row in rows if row["policy"] == "full" and row["question"] == 1 and row["answer_kind"] == "gold")
    assert cat["evidence"] == "kept" and cat["lift"] == cat["log_p"] - cat["closed_book"] == 8


def test_the_audit_s_corrected_answer_is_read_where_it_differs(tmp_path):
    conversations = locomo.read(SYNTHETIC)
    entries = [{**AUDITED, "golden_answer": "Lisbon", "correct_answer": "Porto"},
               {**AUDITED, "question_id": "locomo_1_qa0", "question": "What is Wen's sourdough starter called?",
                "correct_answer": conversations[1].questions[0].answer.upper()}]  # the same answer: no change
    locomo.read_corrections(corrections(tmp_path, entries), conversations)
    assert conversations[0].questions[5].corrected_answer == "Porto"
    assert conversations[1].questions[0].corrected_answer is None


def test_the_likelihood_reader_refuses_a_model_that_cannot_score(capsys):
    assert locomo.main([SYNTHETIC, "--probe", "--reader", "likelihood", "--model", "ollama:qwen2.5"]) == 2
    err = capsys.readouterr().err
    assert "which qwen2.5 does not give here: use an embedded model (local:qwen2.5-coder-0.5b" in err
    assert err.count("\n") == 1


VIA_REPLIES = [f"Thought: x\nAnswer: {word}" for word in ("Pimenta", "hiking", "Not mentioned", "Lisbon") * 3]
VIA_ARGV = [SYNTHETIC, "--probe", "--model", "openai:m", "--policies", "full,window:1", "--sample", "6"]


def _asked_one_by_one(tmp_path, monkeypatch, capsys) -> str:
    """What the probe prints with VIA_REPLIES asked call by call, its answers in tmp_path/calls.jsonl."""
    from model_servers import OpenAIStandIn

    monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123")
    with OpenAIStandIn(list(VIA_REPLIES), models=("m",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert locomo.main([*VIA_ARGV, "--answers", str(tmp_path / "calls.jsonl")]) == 0
    return capsys.readouterr().out


def test_a_probe_through_a_batch_scores_as_the_calls_do(tmp_path, monkeypatch, capsys):
    """--via batch: the same questions, the same replies in the same places, the same scores and answers; asked
    again, the run reads its ledger and sends nothing."""
    from model_servers import BatchStandIn

    calls = _asked_one_by_one(tmp_path, monkeypatch, capsys)
    monkeypatch.setenv("TINYREACT_BATCH_POLL", "0")
    batch = [*VIA_ARGV, "--answers", str(tmp_path / "batch.jsonl"), "--via", "batch", "--yes"]
    with BatchStandIn(list(VIA_REPLIES), key="test-key-0123") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert locomo.main(batch) == 0
        assert capsys.readouterr().out == calls
        assert (tmp_path / "batch.jsonl").read_text() == (tmp_path / "calls.jsonl").read_text()
        assert len(server.uploaded) == 12 and list(tmp_path.glob("batch.batch-*.jsonl"))
        assert locomo.main(batch) == 0
        assert len(server.batches) == 1 and len(server.uploaded) == 12
    assert (tmp_path / "batch.jsonl").read_text() == (tmp_path / "calls.jsonl").read_text()
    assert "0 calls to send" in capsys.readouterr().err


def test_a_probe_through_flex_stopped_midway_asks_only_the_rest_when_run_again(tmp_path, monkeypatch, capsys):
    """--via flex: each reply kept in the ledger beside --answers as it comes; the run stopped by a failing server
    and started again asks only the calls not answered, and scores as the calls asked in one go."""
    from model_servers import OpenAIStandIn
    from models.services import retry

    calls = _asked_one_by_one(tmp_path, monkeypatch, capsys)
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    flex = [*VIA_ARGV, "--answers", str(tmp_path / "flex.jsonl"), "--via", "flex", "--yes"]
    with OpenAIStandIn(VIA_REPLIES[:5], models=("m",)) as server:  # the 6th call finds the server failing
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert locomo.main(flex) == 1
        assert "run the same command to ask only the rest: python bench/locomo.py" in capsys.readouterr().err
        server.replies = VIA_REPLIES[5:]
        assert locomo.main(flex) == 0
        assert len(server.bodies) == 5 + 4 + 7 and all(body["service_tier"] == "flex" for body in server.bodies)
    assert capsys.readouterr().out == calls
    assert (tmp_path / "flex.jsonl").read_text() == (tmp_path / "calls.jsonl").read_text()
    ledger = next(tmp_path.glob("flex.flex-*.jsonl"))
    assert sum('"type":"reply"' in line for line in ledger.read_text().splitlines()) == 12


@pytest.mark.parametrize("argv, said", [
    (["--via", "batch"], "--via, --ledger, --max-cost and --yes only work with --probe"),
    (["--probe", "--model", "openai:m", "--ledger", "l.jsonl"], "--ledger only works with --via"),
    (["--probe", "--reader", "likelihood", "--model", "local:qwen2.5-coder-0.5b", "--policies", "full,compact:300"],
     "--reader likelihood cannot score under compact:300: a summarising policy needs summaries"),
    (["--probe", "--model", "ollama:qwen3:8b", "--via", "batch", "--yes"],
     "--via batch: ollama:qwen3:8b has no batch engine; gemini: and openai: have one"),
])
def test_what_does_not_go_with_via_in_locomo_is_one_line(argv, said, capsys):
    try:
        code = locomo.main([SYNTHETIC, *argv])
    except SystemExit as ended:
        code = ended.code
    assert code == 2 and said in capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_max_cost_in_locomo_takes_dollars_alone(value, capsys):
    with pytest.raises(SystemExit) as ended:
        locomo.main([SYNTHETIC, "--probe", "--model", "openai:m", "--via", "batch", "--max-cost", value])
    assert ended.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        f"takes US dollars from 0 to 1,000,000, got {value!r}")


def test_a_note_of_a_batch_shows_no_escape_the_service_sent(tmp_path, monkeypatch, capsys):
    from model_servers import BatchStandIn

    monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123")
    monkeypatch.setenv("TINYREACT_BATCH_POLL", "0")
    argv = [SYNTHETIC, "--probe", "--model", "openai:m", "--policies", "full", "--sample", "2", "--via", "batch",
            "--yes", "--answers", str(tmp_path / "a.jsonl")]
    with BatchStandIn(["Answer: x"] * 4, key="test-key-0123", fail_first=1,
                      fail_message="busy\x1b]0;owned\x07\x1b[2J now") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert locomo.main(argv) == 0
    err = capsys.readouterr().err
    assert "note: 1 call(s) failed in their batch (500: busy" in err and "\x1b" not in err and "\x07" not in err


def test_summaries_that_cannot_be_written_stop_the_replay_in_one_line(tmp_path, capsys, monkeypatch):
    import cli.loading
    import experiments.replay
    from models.scripted import ScriptedModel

    def full_disk(path, data):
        raise OSError(28, "No space left on device", path)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli.loading, "load_model", lambda spec, notice=None: ScriptedModel(["Summary."] * 100))
    monkeypatch.setattr(experiments.replay, "write_whole", full_disk)
    assert locomo.main([SYNTHETIC, "--policies", "full,compact:300"]) == 1
    assert capsys.readouterr().err == "error: No space left on device: locomo.summaries.json\n"
