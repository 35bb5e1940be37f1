"""Usage numbers are the server's word, checked: what it did not report is counted here and said so, never read as
0; numbers that cannot be true are said, not priced; the model a reply names never chooses a listed model's price."""
import json

import pytest

import cli
from model_servers import GeminiStandIn, OpenAIStandIn, completion, gemini_response
from models import COUNTED_LOCALLY, Message, load_model

MESSAGES = [Message.of("system", "Be brief."), Message.of("user", "Question: 2 + 2?")]


def with_usage(usage: dict) -> dict:
    answer = completion("Answer: 4")
    answer["usage"] = usage
    return answer


@pytest.mark.parametrize("usage, said", [
    ({"completion_tokens": 12}, "usage without prompt_tokens"),
    ({"prompt_tokens": 120}, "usage without completion_tokens"),
    ({"prompt_tokens": 120, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 500}},
     "more cached tokens (500) than prompt tokens (120)"),
    ({"prompt_tokens": 120, "completion_tokens": 12, "completion_tokens_details": {"reasoning_tokens": 40}},
     "more reasoning tokens (40) than output tokens (12)"),
])
def test_usage_missing_or_impossible_is_counted_here_and_said(monkeypatch, usage, said):
    with OpenAIStandIn([with_usage(usage)], models=("m",)) as server:
        monkeypatch.setenv("LLAMACPP_BASE_URL", server.url + "/v1")
        events = []
        reply = load_model("llamacpp:m").generate(MESSAGES, [], on_event=lambda type, **f: events.append(f))
    assert reply.usage_source == COUNTED_LOCALLY and reply.input_tokens == 0
    assert any(said in event.get("message", "") for event in events)


def test_a_reply_naming_a_cheaper_model_is_priced_as_the_model_asked_for(monkeypatch, capsys, tmp_path):
    answer = completion("Answer: 4", model="gpt-4.1-nano")  # the cheapest row: a server's word, not the bill
    with OpenAIStandIn([answer], models=("gpt-5",), key="sk-test") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        prices = {"models": {"gpt-5": {"input": 1.25, "cached_input": 0.125, "output": 10.0},
                             "gpt-4.1-nano": {"input": 0.1, "cached_input": 0.025, "output": 0.4}}}
        (tmp_path / "prices.json").write_text(json.dumps(prices))
        monkeypatch.setenv("TINYREACT_PRICES", str(tmp_path / "prices.json"))
        assert cli.main(["What is 2 + 2?", "--model", "openai:gpt-5", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    assert cost["priced_as"] == "gpt-5" and cost["usd"] == pytest.approx((120 * 1.25 + 12 * 10.0) / 1e6)


def test_an_alias_is_priced_as_the_model_that_answered(monkeypatch, capsys):
    response = gemini_response("Answer: 4", prompt_tokens=1000, output_tokens=10)
    response["modelVersion"] = "gemini-3.8-flash"
    with GeminiStandIn([response]) as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        assert cli.main(["What is 2 + 2?", "--model", "gemini-flash-latest", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"]["priced_as"] == "gemini-3.8-flash"


@pytest.mark.parametrize("usage", [None, {"candidatesTokenCount": 10, "totalTokenCount": 10},
                                   {"promptTokenCount": 100, "candidatesTokenCount": 10,
                                    "cachedContentTokenCount": 900, "totalTokenCount": 110}])
def test_gemini_usage_not_reported_or_impossible_is_counted_here(monkeypatch, usage):
    response = gemini_response("Answer: 4")
    if usage is None:
        del response["usageMetadata"]
    else:
        response["usageMetadata"] = usage
    with GeminiStandIn([response]) as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        reply = load_model("gemini-3.8-flash").generate(MESSAGES, [])
    assert reply.usage_source == COUNTED_LOCALLY and reply.cached_tokens == 0
