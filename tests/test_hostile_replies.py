"""Replies a service says it cut or withheld, and replies of any size: a cut answer is never taken as the answer,
for every backend by one rule in the loop; what is read from a model response is bounded."""
import json

import pytest

import cli
from agent import StopReason, TinyReAct
from model_servers import GeminiStandIn, OpenAIStandIn, completion, gemini_response
from models import ModelReply
from models.scripted import ScriptedModel

CUT = "Thought: I look up the dose.\nAnswer: The dose is 1"


def run_cli(capsys, argv) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, " ".join(err.split())


@pytest.fixture
def gemini(monkeypatch):
    started = []

    def start(replies):
        server = GeminiStandIn(replies).__enter__()
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        started.append(server)
        return server
    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def openai(monkeypatch):
    started = []

    def start(replies):
        server = OpenAIStandIn(replies, models=("m",)).__enter__()
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123")
        started.append(server)
        return server
    yield start
    for server in started:
        server.__exit__(None, None, None)


# Gemini's finishReason (https://ai.google.dev/api/generate-content#FinishReason): MAX_TOKENS "the maximum number
# of tokens as specified in the request was reached"; SAFETY and RECITATION: the candidate was flagged and stopped.
@pytest.mark.parametrize("finish, reason", [("MAX_TOKENS", "cut"), ("SAFETY", "filtered"), ("RECITATION", "filtered")])
@pytest.mark.parametrize("stream", [True, False])
def test_a_gemini_answer_the_service_cut_or_withheld_is_no_answer(gemini, capsys, tmp_path, finish, reason, stream):
    gemini([gemini_response(CUT, finish=finish)])
    trace = tmp_path / "t.jsonl"
    code, out, err = run_cli(capsys, ["Dose?", "--model", "gemini-2.5-flash-lite", "--json", "--trace", str(trace),
                                      *([] if stream else ["--no-stream"])])
    shown = json.loads(out)
    assert code == 1 and shown["answer"] is None and shown["stop_reason"] == reason
    assert f"finish reason {'length' if reason == 'cut' else 'content_filter'}" in err
    assert "'The dose is 1' is not taken as the answer" in err
    events = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    assert events[-1] == {**events[-1], "type": "stop", "reason": reason, "answer": None}
    assert any(e["type"] == "warning" and "not taken as the answer" in e["message"] for e in events)


# OpenAI's finish_reason (https://platform.openai.com/docs/api-reference/chat/object): "length if the maximum
# number of tokens specified in the request was reached, content_filter if content was omitted due to a flag".
@pytest.mark.parametrize("finish, reason", [("length", "cut"), ("content_filter", "filtered")])
@pytest.mark.parametrize("stream", [True, False])
def test_an_openai_compatible_answer_the_server_cut_is_no_answer(openai, capsys, finish, reason, stream):
    openai([completion(CUT, finish=finish)])
    code, out, err = run_cli(capsys, ["Dose?", "--model", "openai:m", "-q", *([] if stream else ["--no-stream"])])
    assert code == 1 and out == ""  # -q prints the answer, and there is none
    assert f"finish reason {finish}" in err and "not taken as the answer" in err


def test_the_terminal_says_it_once_and_the_summary_names_the_stop(openai, capsys):
    openai([completion(CUT, finish="length")])
    code, out, err = run_cli(capsys, ["Dose?", "--model", "openai:m"])
    assert code == 1 and err.count("not taken as the answer") == 1 and "stopped: cut" in out


def test_a_finished_answer_and_a_cut_thought_are_as_before(openai, capsys):
    openai([completion("Thought: long", finish="length"), completion("Answer: 4", finish="stop")])
    code, out, err = run_cli(capsys, ["2 + 2?", "--model", "openai:m", "--json"])
    shown = json.loads(out)
    assert code == 0 and shown["answer"] == "4" and shown["stop_reason"] == "answer"
    said = [e["text"] for e in shown["trace"] if e["type"] == "observation"]
    assert said[0].startswith("Error: your reply was cut at the output limit")  # no Answer in it: the model is told


def test_the_ttl_finish_call_follows_the_same_rule():
    model = ScriptedModel(["Thought: hm"] * 2 + [ModelReply("Answer: The dose is 1", finish="length")])
    result = TinyReAct(model, ttl=2).query("Dose?", finish=True)
    assert result.stop_reason == StopReason.CUT and result.answer is None

