"""The likelihood reader (`--probe --reader likelihood`, experiments/likelihood.py): an embedded model scores the gold
answer after each policy's context, against closed book's score, and nothing is generated.

The command line is driven here by a stand-in reader that scores an answer by whether the context holds it, so that
the lifts are known exactly and the plumbing (which context is scored for which fact at which point, the JSON, the
tables, the page, the CSV) can be checked against the replay's own record of what each policy kept. The embedded
model's own scoring is checked on the shared transformer with tiny weights, and once (slow) with the 0.5B."""
import csv
import io
import json
import os

import numpy as np
import pytest

import cli
from experiments.likelihood import RESAMPLES, Scored, lifts
from models import ContextOverflow, Message
from models.embedded.local import LocalModel
from models.embedded.transformer import Transformer
from models.scripted import ScriptedModel
from test_transformer import QWEN_LIKE, random_weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHORT = os.path.join(ROOT, "conversations", "short.jsonl")
SHORT_FACTS = os.path.join(ROOT, "conversations", "short.facts.json")
FOUND, MISSING = -1.0, -9.0


class PresenceReader:
    """Scores an answer FOUND when the conversation before the question holds it, MISSING when not."""
    name, backend, usage_source, window = "presence-reader", "local", "none", None

    def __init__(self):
        self.asked = []

    def generate(self, messages, stop, **options):
        raise AssertionError("the likelihood reader generates nothing")

    def log_likelihood(self, messages, answer):
        texts = [part.text for message in messages for part in message.parts]
        before = texts[:-1]  # all but the question
        self.asked.append((tuple(texts), answer))
        return FOUND if any(answer in text for text in before) else MISSING


def run(capsys, *extra, model=None):
    code = cli.main(["--replay", SHORT, "--facts", SHORT_FACTS, "--policies", "full,window:2", "--probe",
                     "--reader", "likelihood", *extra], model=model or PresenceReader())
    out, err = capsys.readouterr()
    return code, out, err


def test_each_policy_lifts_a_fact_it_kept_and_not_one_it_lost(capsys):
    code, out, err = run(capsys, "--json")
    assert code == 0, err
    data = json.loads(out)
    facts = {fact["id"]: fact for fact in data["facts"]}
    assert data["probe"]["reader"] == "likelihood" and data["probe"]["unit"] == "nats"
    seen = set()
    for policy in data["policies"]:
        for fact, by_point in policy["likelihood"].items():
            for point, cell in by_point.items():
                state = policy["facts"][fact][point]
                gold_in_text = facts[fact]["gold"] in facts[fact]["text"]
                if state == "kept" and gold_in_text:
                    assert cell["lift"] == FOUND - MISSING, (policy["policy"], fact, point)
                elif state == "gone":
                    assert cell["lift"] == 0, (policy["policy"], fact, point)
                seen.add((policy["policy"], state))
                assert cell["low"] <= cell["lift"] <= cell["high"] and "distractor_lift" in cell
        for point, cell in policy["likelihood_by_point"].items():
            assert set(cell) == {"lift", "low", "high"} and cell["low"] <= cell["lift"] <= cell["high"]
    assert ("full", "kept") in seen and ("window:2", "gone") in seen  # both cases were met
    assert data["probe"]["controls"]["facts only"]["likelihood_by_point"]
    assert all(score["lift"] == score["log_p"] - score["closed_book"] for score in data["probe"]["scores"])
    assert {score["gold"] for score in data["probe"]["scores"]} == {True, False}  # distractors scored too


def test_closed_book_is_scored_once_for_each_question_and_answer():
    reader = PresenceReader()
    assert cli.main(["--replay", SHORT, "--facts", SHORT_FACTS, "--policies", "full", "--probe", "--reader",
                     "likelihood", "--json"], model=reader) == 0
    closed = [asked for asked in reader.asked if len(asked[0]) == 2 and asked[0][1].startswith("Question:")]
    questions = {(texts[-1], answer) for texts, answer in reader.asked if texts[-1].startswith("Question:")}
    assert closed and len(closed) == len(set(closed)) == len(questions)  # once each, though asked at every point


def test_the_tables_the_page_and_the_csv_show_the_lift(capsys, tmp_path):
    page, answers = tmp_path / "replay.html", tmp_path / "scores.csv"
    code, out, err = run(capsys, "--html", str(page), "--answers", str(answers))
    assert code == 0, err
    assert "Lift of the gold answer" in out and "✓+8.0" in out and "✗+0.0" in out
    html = page.read_text(encoding="utf-8")
    assert "Does the context lift the right answer?" in html and "lift +8.0" in html and "lift +0.0" in html
    rows = list(csv.DictReader(io.StringIO(answers.read_text(encoding="utf-8"))))
    assert rows and {"condition", "answer", "gold", "log_p", "closed_book", "lift"} <= set(rows[0])


def test_a_page_without_the_reader_is_as_before(capsys, tmp_path):
    """Without --reader likelihood nothing about lifts reaches the page."""
    page = tmp_path / "replay.html"
    assert cli.main(["--replay", SHORT, "--facts", SHORT_FACTS, "--policies", "full,window:2", "--html",
                     str(page)]) == 0
    capsys.readouterr()
    assert "lift" not in page.read_text(encoding="utf-8").lower().replace("uplift", "")


@pytest.mark.parametrize("extra, model, message", [
    ([], ScriptedModel(["Answer: x"]), "use an embedded model (local:qwen2.5-coder-0.5b"),
    (["--repeat", "2"], None, "--repeat has nothing to repeat with --reader likelihood"),
])
def test_what_cannot_be_scored_is_one_line(capsys, extra, model, message):
    code, out, err = run(capsys, *extra, model=model)
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_empty_gold_answer_is_one_line(capsys, tmp_path):
    facts = json.loads(open(SHORT_FACTS, encoding="utf-8").read())
    facts["facts"][0]["gold"] = "  "
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts), encoding="utf-8")
    code = cli.main(["--replay", SHORT, "--facts", str(path), "--probe", "--reader", "likelihood"],
                    model=PresenceReader())
    err = capsys.readouterr().err
    assert code == 2 and f"the gold answer of {facts['facts'][0]['id']} is empty" in err and err.count("\n") == 1


def test_reader_needs_the_probe(capsys):
    code = cli.main(["--replay", SHORT, "--reader", "likelihood"])
    err = capsys.readouterr().err
    assert code == 2 and "--reader only works with --probe" in err


def test_a_context_past_the_window_names_itself_and_keeps_the_scores_so_far(capsys):
    class Small(PresenceReader):
        def log_likelihood(self, messages, answer):
            if len(messages) > 8:
                raise ContextOverflow("the context is 9,999 tokens, more than presence-reader's window of 8")
            return super().log_likelihood(messages, answer)
    code, out, err = run(capsys, "--json", model=Small())
    assert code == 1 and "full's context at turn" in err and "asking about" in err and err.count("\n") == 1
    assert json.loads(out)["probe"]["scores"]  # those scored before it are kept


def test_lifts_are_means_with_bootstrap_intervals_that_hold_them():
    scored = [Scored("full", "p1", fact, phrasing, "g", True, lift, 0.0)
              for fact, values in [("a", [1.0, 2.0, 3.0]), ("b", [5.0, 5.0, 5.0])]
              for phrasing, lift in enumerate(values, 1)]
    scored.append(Scored("full", "p1", "a", 1, "d", False, -2.0, 0.0))
    table = lifts(scored)["full"]
    assert table["likelihood"]["b"]["p1"] == {"lift": 5.0, "low": 5.0, "high": 5.0, "distractor_lift": None}
    a = table["likelihood"]["a"]["p1"]
    assert a["lift"] == 2.0 and 1.0 <= a["low"] < 2.0 < a["high"] <= 3.0 and a["distractor_lift"] == -2.0
    point = table["likelihood_by_point"]["p1"]
    assert point["lift"] == 3.5 and 1.0 <= point["low"] < 3.5 < point["high"] <= 5.0
    assert lifts(scored) == lifts(scored) and RESAMPLES >= 1000  # seeded: the same intervals every time


class Characters:
    """A tokenizer of one token per character, within the tiny network's vocabulary."""
    def encode(self, text):
        return [1 + ord(character) % 40 for character in text]

    def decode(self, ids):
        return ""

    def count(self, text):
        return len(text)


def tiny_model() -> LocalModel:
    arch = QWEN_LIKE.__class__(**{**vars(QWEN_LIKE), "context": 200})
    return LocalModel("tiny", Characters(), Transformer(arch, random_weights(arch)), [0], frozenset())


def test_the_embedded_model_scores_the_answer_line_and_reuses_the_question_for_each_answer():
    model = tiny_model()
    messages = [Message.of("system", "rules", "instructions"), Message.of("user", "Question: which?", "question")]
    gold = model.log_likelihood(messages, "ab")
    prompt = [0] + Characters().encode("rules\nQuestion: which?\nAnswer:")
    assert gold == pytest.approx(Transformer(model.network.arch, model.network.w).log_likelihood(
        prompt, Characters().encode(" ab")), abs=1e-6)
    model.log_likelihood(messages, "cd")
    assert model.network.timings["prefill_tokens"] == len(" cd") + 1  # the prompt is not worked through again
    assert np.isfinite(gold) and gold < 0
    with pytest.raises(ValueError):
        model.log_likelihood(messages, " ")
    with pytest.raises(ContextOverflow):
        model.log_likelihood([messages[0], Message.of("user", "x" * 300, "question")], "ab")


@pytest.mark.slow
def test_the_embedded_qwen_lifts_a_kept_fact_far_above_a_lost_one(capsys):
    """The 0.5B on the short conversation: the lock code, kept by full history and lost by window:2 at the last
    probe point, is lifted by several nats under full and by about nothing under window:2."""
    code = cli.main(["--replay", SHORT, "--facts", SHORT_FACTS, "--policies", "full,window:2", "--probe", "--reader",
                     "likelihood", "--model", "local:qwen2.5-coder-0.5b", "--probe-facts", "lock", "--probe-points",
                     "9", "--phrasings", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    policies = {policy["policy"]: policy for policy in json.loads(out)["policies"]}
    last = list(policies["full"]["likelihood"]["lock"])[-1]
    assert policies["window:2"]["facts"]["lock"][last] == "gone"
    assert policies["full"]["likelihood"]["lock"][last]["lift"] > 4
    assert abs(policies["window:2"]["likelihood"]["lock"][last]["lift"]) < 1.5
