"""The ledger of a run sent through a provider's engine: read back as written, a last line cut off mid-write
skipped, and anything else that is not this run's ledger refused in one line; a flex run's replies kept as they come
and read back instead of asked again."""
import json

import pytest

from experiments.batch import FlexRun
from experiments.ledger import Ledger, LedgerError, custom_id, kept_reply, run_digest
from models import Message, ModelError, ModelReply, Part


def written(path, run="r1") -> Ledger:
    ledger = Ledger(str(path), run, "openai:m")
    ledger.record("call", id="a", body={"model": "m", "messages": []})
    ledger.record("submitting", name="tinyreact-1", ids=["a"])
    ledger.record("submitted", name="tinyreact-1", batch="batch_1", files={"input": "file-1"})
    ledger.record("failed", id="a", batch="batch_1", error="server_error: try again")
    ledger.record("ended", batch="batch_1", status="completed", files={"output": None, "error": "file-2"})
    ledger.close()
    return ledger


def test_a_call_is_named_by_the_digest_of_its_body_whatever_the_order_of_its_keys():
    assert custom_id({"model": "m", "stop": ["x"]}) == custom_id({"stop": ["x"], "model": "m"})
    assert custom_id({"model": "m"}) != custom_id({"model": "n"}) and len(custom_id({})) == 64
    assert run_digest(["b", "a", "a"]) == run_digest(["a", "b"])


def test_the_ledger_is_read_back_as_it_was_written(tmp_path):
    written(tmp_path / "l.jsonl")
    again = Ledger(str(tmp_path / "l.jsonl"), "r1", "openai:m")
    batch = again.batches["tinyreact-1"]
    assert (batch.id, batch.status, batch.files) == ("batch_1", "completed",
                                                      {"input": "file-1", "output": None, "error": "file-2"})
    assert again.calls == {"a": {"model": "m", "messages": []}} and again.failures == {"a": ["server_error: try again"]}
    assert again.tries("a") == 1 and again.open_batches() == [] and again.warning is None
    again.close()


def test_a_call_whose_body_was_rewritten_starts_its_tries_again(tmp_path):
    """A call refused a setting in its batch is recorded again without it: a failure after that (a 500 on its
    first try without the setting) still leaves it one more try."""
    written(tmp_path / "l.jsonl")
    ledger = Ledger(str(tmp_path / "l.jsonl"), "r1", "openai:m")
    ledger.record("call", id="a", body={"model": "m", "messages": [], "stop": None})
    ledger.record("submitting", name="tinyreact-2", ids=["a"])
    assert ledger.tries("a") == 1 and ledger.ever_sent("a")
    ledger.close()
    again = Ledger(str(tmp_path / "l.jsonl"), "r1", "openai:m")
    assert again.tries("a") == 1 and again.calls["a"]["stop"] is None
    again.close()


def test_a_last_line_cut_off_mid_write_is_skipped_and_said(tmp_path):
    path = tmp_path / "l.jsonl"
    written(path)
    with open(path, "ab") as file:
        file.write(b'{"type": "answer", "id": "a", "batch": "batch_1", "respo')
    again = Ledger(str(path), "r1", "openai:m")
    assert again.warning == "line 7 was cut off and skipped" and again.answers == {}
    again.close()
    assert path.read_bytes().endswith(b"\n")  # the cut line taken off: the next record starts a line


def test_a_damaged_line_is_one_line_of_error(tmp_path):
    path = tmp_path / "l.jsonl"
    written(path)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([*lines[:2], b"{not json", *lines[2:]]))
    with pytest.raises(LedgerError, match=r"l.jsonl, line 3: damaged: not JSON"):
        Ledger(str(path), "r1", "openai:m")


def test_a_record_that_belongs_to_no_batch_is_damage(tmp_path):
    path = tmp_path / "l.jsonl"
    written(path)
    with open(path, "a") as file:
        file.write(json.dumps({"type": "ended", "batch": "batch_9", "status": "completed", "files": {}}) + "\n")
    with pytest.raises(LedgerError, match="line 7: damaged") as raised:
        Ledger(str(path), "r1", "openai:m")
    assert "\n" not in str(raised.value)


def test_the_ledger_of_another_run_or_service_is_refused(tmp_path):
    written(tmp_path / "l.jsonl")
    for run, service in [("r2", "openai:m"), ("r1", "openai:n")]:
        with pytest.raises(LedgerError, match="belongs to another run .* name another --ledger, or remove it"):
            Ledger(str(tmp_path / "l.jsonl"), run, service)


def test_a_file_that_is_no_ledger_is_refused(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text('{"format": "tinyreact-trace", "version": 3}\n')
    with pytest.raises(LedgerError, match="is not a TinyReAct ledger"):
        Ledger(str(path), "r1", "openai:m")


def test_a_ledger_is_one_runs_at_a_time(tmp_path):
    first = Ledger(str(tmp_path / "l.jsonl"), "r1", "openai:m")
    with pytest.raises(OSError, match="another run is using it"):
        Ledger(str(tmp_path / "l.jsonl"), "r1", "openai:m")
    first.close()
    Ledger(str(tmp_path / "l.jsonl"), "r1", "openai:m").close()


class Counting:
    """A model whose reply to a call says how many calls it was asked: a reply asked again would show it."""
    name, backend = "m", "openai"

    def __init__(self):
        self.asked = 0

    def batch_body(self, messages, stop, planned=False):
        return {"model": self.name, "messages": [m.text for m in messages], "stop": stop}

    def generate(self, messages, stop, **options):
        self.asked += 1
        return ModelReply(f"Answer: {self.asked}", input_tokens=7, output_tokens=3, finish="stop", temperature=0.2)


def test_a_flex_run_started_again_reads_its_replies_from_the_ledger_and_asks_none(tmp_path):
    """Each reply is written as it comes; a body asked twice (--repeat) is two calls, answered in the order asked."""
    same, other = [Message("user", (Part("question", "Question: x"),))], [Message("user", (Part("q", "y"),))]
    requests = [(same, ["\nObservation"]), (same, ["\nObservation"]), (other, ["\nObservation"])]
    first = FlexRun(Counting(), requests, lambda digest: str(tmp_path / f"{digest[:12]}.jsonl"))
    replies = [first.generate(messages, stop) for messages, stop in requests[:2]]  # stopped before the third
    first.ledger.close()
    model = Counting()
    again = FlexRun(model, requests, lambda digest: str(tmp_path / f"{digest[:12]}.jsonl"))
    assert again.unsent() == [2] and len(set(again.ids)) == 3
    assert [again.generate(messages, stop) for messages, stop in requests] == [*replies, ModelReply(
        "Answer: 1", input_tokens=7, output_tokens=3, finish="stop", temperature=0.2)]
    assert model.asked == 1 and again.unsent() == []


def test_a_ledger_reply_that_is_none_is_damage_in_one_line(tmp_path):
    path = tmp_path / "l.jsonl"
    ledger = Ledger(str(path), "r1", "openai:m flex")
    ledger.record("reply", id="a", reply=kept_reply(ModelReply("Answer: 4", input_tokens=5)))
    ledger.close()
    assert Ledger(str(path), "r1", "openai:m flex").replies == {"a": ModelReply("Answer: 4", input_tokens=5)}
    for kept in ({"text": 4}, {**kept_reply(ModelReply("x")), "input_tokens": True}, "Answer: 4"):
        lines = path.read_text().splitlines()
        path.write_text("\n".join([*lines[:2], json.dumps({"type": "reply", "id": "a", "reply": kept})]) + "\n")
        with pytest.raises(LedgerError, match=r"l.jsonl, line 3: damaged: the reply it holds is not one: ") as raised:
            Ledger(str(path), "r1", "openai:m flex")
        assert "\n" not in str(raised.value)


def test_a_flex_reply_the_ledger_cannot_keep_stops_the_run_in_one_line(tmp_path, monkeypatch):
    """A full disk: the reply came but would be asked again by a run started again, so the run stops there."""
    requests = [([Message("user", (Part("q", "x"),))], [])]
    run = FlexRun(Counting(), requests, lambda digest: str(tmp_path / "l.jsonl"))
    monkeypatch.setattr(run.ledger, "_append", lambda record: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(ModelError, match=r"^cannot write the ledger .*l.jsonl: No space left; the replies before it "
                                         r"are kept in the ledger$"):
        run.generate(*requests[0])


def test_a_flex_call_still_running_when_the_run_stops_writes_its_reply_before_the_ledger_is_let_go(tmp_path):
    """Ctrl-C twice with --jobs: the run stops while a call is being asked; that call is paid for, so its reply is
    written when it comes, and only then is the ledger closed. No call starts after the run stopped."""
    import threading

    class Slow(Counting):
        def __init__(self):
            super().__init__()
            self.started, self.go = threading.Event(), threading.Event()

        def generate(self, messages, stop, **options):
            self.started.set()
            self.go.wait(10)
            return super().generate(messages, stop, **options)

    requests = [([Message("user", (Part("q", text),))], []) for text in ("x", "y")]
    model = Slow()
    run = FlexRun(model, requests, lambda digest: str(tmp_path / "l.jsonl"))
    asking = threading.Thread(target=run.generate, args=requests[0])
    asking.start()
    model.started.wait(10)
    run.close()
    with pytest.raises(ModelError, match="the run has stopped"):
        run.generate(*requests[1])
    model.go.set()
    asking.join(10)
    assert run.ledger._file.closed
    again = FlexRun(Counting(), requests, lambda digest: str(tmp_path / "l.jsonl"))
    assert again.unsent() == [1]
