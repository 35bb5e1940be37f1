"""The real google-genai client against a loopback Gemini that behaves like today's models."""
import json
import time

import pytest

from models import Message, ModelConfigError, ModelError
from models.services import retry
from models.services.gemini import GeminiModel
from model_servers import (Answer, GeminiStandIn, gemini_error, gemini_response, quota_failure, retry_info, sse)

MESSAGES = [Message.of("system", "Be brief."), Message.of("user", "Question: 2 + 2?"),
            Message.of("model", "Action: add_numbers(2, 2)"), Message.of("user", "Observation1: 4")]
STOP = ["\nObservation"]


@pytest.fixture
def waits(monkeypatch):
    """The waits the retry policy asked for, without waiting them."""
    asked = []
    monkeypatch.setattr(retry, "sleep", asked.append)
    return asked


def events_of(recorded):
    return lambda type, **fields: recorded.append({"type": type, **fields})


def thinking(body) -> dict:
    return body["generationConfig"].get("thinkingConfig")


def test_default_request_follows_the_family_rule_and_reads_usage(gemini):
    server = gemini([gemini_response("Thought: done\nAnswer: 4", prompt_tokens=321, output_tokens=12,
                                     thoughts_tokens=5)])
    reply = GeminiModel().generate(MESSAGES, STOP)
    assert reply.text == "Thought: done\nAnswer: 4" and reply.finish == "stop"
    assert (reply.input_tokens, reply.output_tokens, reply.thoughts_tokens) == (321, 17, 5)
    request = server.requests[0]
    assert request["path"] == "/v1beta/models/gemini-flash-latest:generateContent"
    body = request["body"]
    assert body["systemInstruction"]["parts"][0]["text"] == "Be brief."
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", "Question: 2 + 2?"), ("model", "Action: add_numbers(2, 2)"), ("user", "Observation1: 4")]
    config = body["generationConfig"]
    # -latest is Gemini 3 or later: the lowest level every 3.x model takes, and no temperature.
    assert config["stopSequences"] == STOP and config["maxOutputTokens"] == 8192 and "temperature" not in config
    assert thinking(body) == {"thinking_level": "LOW"}  # the SDK's spelling; the API reads either


@pytest.mark.parametrize("name, sent_thinking, sent_temperature", [
    ("gemini-3.8-flash", {"thinking_level": "LOW"}, None),
    ("gemini-3.1-pro-preview", {"thinking_level": "LOW"}, None),
    ("gemini-2.5-flash-lite", {"thinking_budget": 0}, 0),
    ("gemma-3-27b-it", None, 0),
])
def test_each_family_gets_a_request_it_accepts_first_time(gemini, name, sent_thinking, sent_temperature):
    server = gemini(["Answer: 4"])
    recorded = []
    assert GeminiModel(name).generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 4"
    body = server.bodies[0]
    assert thinking(body) == sent_thinking and body["generationConfig"].get("temperature") == sent_temperature
    assert recorded == [] and len(server.requests) == 1


@pytest.mark.parametrize("name, successor", [("gemini-2.5-flash", "gemini-3.5-flash-lite"),
                                             ("gemini-2.5-pro", "gemini-3.8-flash")])
def test_a_retired_name_is_said_once_and_sent_the_rules_of_the_model_that_answers_it(gemini, name, successor):
    server = gemini(["Answer: 4", "Answer: 5"])
    recorded = []
    model = GeminiModel(name)
    assert model.generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 4"
    assert model.generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 5"
    assert recorded == [{"type": "warning", "message": f"{name} was retired on 2026-12-01: Google answers it with "
                         f"{successor}, at that model's prices and request rules, which are sent; name a current "
                         f"model (--model gemini:{successor}, say) to choose one yourself"}]
    for body in server.bodies:  # the successor's rules: a thinking level, no temperature; nothing refused
        assert thinking(body) == {"thinking_level": "LOW"} and "temperature" not in body["generationConfig"]
    assert len(server.requests) == 2


@pytest.mark.parametrize("name, variable, value, field", [
    ("gemini-3.8-flash", "GEMINI_THINKING", "minimal", "thinking"),  # the old default
    ("gemini-2.5-flash-lite", "GEMINI_THINKING", "low", "thinking"),  # a level where a budget is wanted
    ("gemini-3.8-flash", "GEMINI_TEMPERATURE", "0", "temperature"),
])
def test_a_refused_setting_is_dropped_once_with_a_notice(gemini, monkeypatch, name, variable, value, field):
    server = gemini(["Answer: 4", "Answer: 5"])
    monkeypatch.setenv(variable, value)
    recorded = []
    model = GeminiModel(name)
    assert model.generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 4"
    assert [e["type"] for e in recorded] == ["config_fallback"]
    event = recorded[0]
    assert event["field"] == field and event["variable"] == variable and field in event["message"].lower()
    assert retry.describe(event).startswith(f"Gemini did not accept {field} for {name}: trying again without it")
    # Remembered: the next call sends the request the API took, without a second notice.
    assert model.generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 5"
    assert len(recorded) == 1 and len(server.requests) == 3
    key = "thinkingConfig" if field == "thinking" else "temperature"
    assert key not in server.bodies[2]["generationConfig"]


def test_a_fallback_that_fails_too_names_the_variable(gemini, monkeypatch):
    gemini([gemini_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")])
    monkeypatch.setenv("GEMINI_THINKING", "minimal")
    with pytest.raises(ModelConfigError, match="after leaving out thinking.*set GEMINI_THINKING"):
        GeminiModel("gemini-3.8-flash").generate(MESSAGES, STOP)


@pytest.mark.parametrize("variable, value", [
    ("GEMINI_THINKING", "lots"), ("GEMINI_THINKING", "1.5"), ("GEMINI_TEMPERATURE", "nan"),
    ("GEMINI_TEMPERATURE", "inf"), ("GEMINI_TEMPERATURE", "3"), ("GEMINI_TEMPERATURE", "warm"),
    ("GEMINI_MAX_OUTPUT_TOKENS", "0"), ("GEMINI_MAX_OUTPUT_TOKENS", "lots"),
    ("TINYREACT_CALL_DEADLINE", "0"), ("TINYREACT_CALL_DEADLINE", "nan"), ("TINYREACT_CALL_DEADLINE", "soon"),
    ("TINYREACT_CALL_DEADLINE", "1e10"),  # past what a thread's wait can take: it would fail at the first call
])
def test_invalid_settings_are_refused_up_front_in_one_line(monkeypatch, variable, value):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv(variable, value)
    with pytest.raises(ModelConfigError) as refused:
        GeminiModel("gemini-2.5-flash")
    assert variable in str(refused.value) and "\n" not in str(refused.value)


def test_a_budget_and_the_none_setting(gemini, monkeypatch):
    server = gemini(["Answer: 4", "Answer: 4"])
    monkeypatch.setenv("GEMINI_THINKING", "512")
    GeminiModel("gemini-2.5-flash").generate(MESSAGES, STOP)
    monkeypatch.setenv("GEMINI_THINKING", "none")
    GeminiModel("gemini-2.5-flash").generate(MESSAGES, STOP)
    assert thinking(server.bodies[0]) == {"thinking_budget": 512} and thinking(server.bodies[1]) is None


def test_429_waits_the_delay_the_server_asks_then_answers(gemini, waits):
    server = gemini([gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry_info("2s")), "Answer: 4"])
    recorded = []
    assert GeminiModel().generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 4"
    assert waits == [2.0] and len(server.requests) == 2
    assert retry.describe(recorded[0]) == "Gemini 429 RESOURCE_EXHAUSTED — attempt 2/4 in 2.0 s"


def test_429_asking_for_minutes_fails_at_once_saying_how_long(gemini, waits):
    server = gemini([gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry_info("300s")), "Answer: 4"])
    with pytest.raises(ModelError, match="asks to wait 300 s"):
        GeminiModel().generate(MESSAGES, STOP)
    assert waits == [] and len(server.requests) == 1


def test_a_spent_daily_quota_is_not_retried(gemini, waits):
    server = gemini([gemini_error(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota",
                                  quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
                                  retry_info("36s"))])
    with pytest.raises(ModelError, match="daily quota is used up .*PerDay"):
        GeminiModel().generate(MESSAGES, STOP)
    assert waits == [] and len(server.requests) == 1


def test_gateway_timeouts_and_overload_are_retried_with_a_line_each(gemini, waits):
    server = gemini([gemini_error(504, "DEADLINE_EXCEEDED", "Deadline expired"),
                     gemini_error(503, "UNAVAILABLE", "The model is overloaded"), "Answer: 4"])
    recorded = []
    assert GeminiModel().generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 4"
    assert len(server.requests) == 3 and len(waits) == 2 and 1 <= waits[0] <= 1.25 and 2 <= waits[1] <= 2.5
    lines = [retry.describe(e) for e in recorded]
    assert lines[0].startswith("Gemini 504 DEADLINE_EXCEEDED — attempt 2/4 in 1.")
    assert lines[1].startswith("Gemini 503 UNAVAILABLE — attempt 3/4 in 2.")


def test_retries_are_bounded(gemini, waits):
    server = gemini([gemini_error(503, "UNAVAILABLE", "The model is overloaded")] * 10)
    with pytest.raises(ModelError, match="503 UNAVAILABLE: The model is overloaded — gave up after 4 attempts"):
        GeminiModel().generate(MESSAGES, STOP)
    assert len(server.requests) == 4 and len(waits) == 3


def test_other_client_errors_are_not_retried(gemini, waits):
    server = gemini([gemini_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument."), "Answer: 4"])
    with pytest.raises(ModelError, match="400 INVALID_ARGUMENT"):
        GeminiModel("gemma-3-27b-it", temperature=None).generate(MESSAGES, STOP)
    assert len(server.requests) == 1


def test_a_slow_drip_hands_control_back_by_the_deadline_and_is_not_retried(gemini, monkeypatch, waits):
    body = b'{"candidates": [{"content": {"parts": [{"text": "Answer: 4"}]}}]}'
    server = gemini([Answer(200, [bytes([b]) for b in body], pause=0.2)] * 2)
    monkeypatch.setenv("TINYREACT_CALL_DEADLINE", "1")
    model = GeminiModel()  # before the clock: the SDK's first import and its client take seconds on a busy machine
    started = time.monotonic()
    with pytest.raises(retry.DeadlineExceeded, match="did not finish within TINYREACT_CALL_DEADLINE"):
        model.generate(MESSAGES, STOP)
    assert time.monotonic() - started < 1.5
    assert len(server.requests) == 1 and waits == []


def test_a_redirect_is_not_followed_so_the_key_stays_home(gemini):
    elsewhere = GeminiStandIn(["Answer: 4"], key="anything").__enter__()
    try:
        gemini([Answer(307, [], {"Location": elsewhere.url + "/v1beta/models/gemini-flash-latest:generateContent"})])
        redirected = f"answered 307, redirecting to {elsewhere.url}/v1beta.*not followed"
        with pytest.raises(ModelConfigError, match=redirected):
            GeminiModel().generate(MESSAGES, STOP)
        assert elsewhere.requests == []
    finally:
        elsewhere.__exit__(None, None, None)


def test_an_empty_answer_is_not_called_a_block(gemini):
    gemini([{}])
    with pytest.raises(ModelError, match="200 with no candidates and no block reason") as raised:
        GeminiModel().generate(MESSAGES, STOP)
    assert "blocked" not in str(raised.value)


def test_a_body_that_is_not_json_is_reported_as_such(gemini):
    gemini([Answer(200, [b"<html><body>Welcome to the captive portal</body></html>"], {"Content-Type": "text/html"})])
    with pytest.raises(ModelError, match="answered 200 with a body that is not JSON: '<html><body>Welcome"):
        GeminiModel().generate(MESSAGES, STOP)


def test_a_blocked_prompt_is_a_blocked_reply(gemini):
    gemini([{"promptFeedback": {"blockReason": "SAFETY"},
             "usageMetadata": {"promptTokenCount": 50, "totalTokenCount": 50}}])
    reply = GeminiModel().generate(MESSAGES, STOP)
    assert (reply.text, reply.blocked, reply.finish, reply.input_tokens) == ("", "prompt blocked: SAFETY", "blocked",
                                                                              50)


def test_a_reply_cut_at_the_output_limit_says_so_with_its_thinking(gemini):
    gemini([gemini_response("", finish="MAX_TOKENS", output_tokens=0, thoughts_tokens=8192)])
    reply = GeminiModel().generate(MESSAGES, STOP)
    assert (reply.text, reply.finish, reply.blocked, reply.thoughts_tokens) == ("", "length", None, 8192)


def test_streaming_shows_decided_text_and_returns_what_a_whole_call_returns(gemini):
    text = "Thought: add them\nAction: add_numbers(2, 2)"
    server = gemini([text, text])
    whole = GeminiModel().generate(MESSAGES, STOP)
    shown = []
    streamed = GeminiModel().generate(MESSAGES, STOP, on_text=shown.append)
    assert streamed == whole and "".join(shown) == text and len(shown) > 3
    assert server.requests[1]["path"].endswith(":streamGenerateContent")


def test_a_stream_is_closed_at_an_observation_line_the_stop_sequence_missed(gemini):
    gemini(["Thought: add\nAction: add_numbers(2, 2)\n**Observation: 5\nAnswer: 5"])
    shown = []
    reply = GeminiModel().generate(MESSAGES, STOP, on_text=shown.append)
    assert reply.text == "Thought: add\nAction: add_numbers(2, 2)\n" and "".join(shown) == reply.text


def test_a_stream_that_breaks_midway_is_retried_whole_and_says_so(gemini, waits):
    first = sse([{"candidates": [{"content": {"parts": [{"text": "Thought: half"}]}}]}])
    broken = Answer(200, first, {"Content-Length": "4000"})  # promises more than it sends, then hangs up
    gemini([broken, "Thought: whole\nAnswer: 4"])
    shown, recorded = [], []
    reply = GeminiModel().generate(MESSAGES, STOP, on_text=shown.append, on_event=events_of(recorded))
    assert reply.text == "Thought: whole\nAnswer: 4"
    retries = [e for e in recorded if e["type"] == "retry"]
    assert len(retries) == 1 and retries[0]["restart_stream"] and retries[0]["status"] is None
    assert "".join(shown).startswith("Thought: half") and "".join(shown).endswith(reply.text)
    assert retry.describe(retries[0]).endswith("(the reply starts over)")


def test_missing_key_names_the_variable():
    with pytest.raises(ModelConfigError, match="set GEMINI_API_KEY"):
        GeminiModel()


def test_unreachable_server_is_a_model_error_after_the_retries(monkeypatch, waits):
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(ModelError, match=r"Gemini \(model gemini-flash-latest at http://127.0.0.1:9\) failed: "
                                         "connection refused.*gave up after 4 attempts"):
        GeminiModel(api_key="test-key").generate(MESSAGES, STOP)
    assert len(waits) == 3


def test_unknown_model_is_a_configuration_error(gemini):
    gemini([gemini_error(404, "NOT_FOUND", "models/gemini-nope is not found for API version v1beta")])
    with pytest.raises(ModelConfigError, match="no model 'gemini-nope'"):
        GeminiModel("gemini-nope").generate(MESSAGES, STOP)


def test_cached_tokens_are_counted_apart_and_priced_at_the_cached_rate(gemini, capsys):
    import cli

    gemini([gemini_response("Thought: add\nAction: add_numbers(2, 2)", prompt_tokens=1000, output_tokens=20),
            gemini_response("Answer: 4", prompt_tokens=1040, output_tokens=8, cached_tokens=1000)])
    assert cli.main(["What is 2 + 2?", "--model", "gemini-3.5-flash-lite", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["usage"] == {"input_tokens": 2040, "output_tokens": 28, "cached_input_tokens": 1000}
    assert [e.get("cached_tokens", 0) for e in result["trace"] if e["type"] == "usage"] == [0, 1000]
    # 1,040 fresh input at $0.30, 1,000 cached at $0.03, 28 out at $2.50, per million (models/prices.json)
    assert result["cost"]["usd"] == round((1040 * 0.30 + 1000 * 0.03 + 28 * 2.50) / 1e6, 10)
    assert result["cost"]["priced_as"] == "gemini-3.5-flash-lite"


def test_the_summary_line_says_what_was_cached_and_what_it_cost(gemini, capsys):
    import cli

    gemini([gemini_response("Answer: 4", prompt_tokens=3000, output_tokens=10, cached_tokens=2048)])
    assert cli.main(["What is 2 + 2?", "--model", "gemini-3.8-flash", "--no-stream"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "3,000 tokens in (2,048 cached) / 10 out (billed, from the API)" in out
    assert "$0.000905 at list price (gemini-3.8-flash, prices of 2026-10-07)" in out  # 952×0.75+2048×0.075+10×3.75


def test_a_model_without_a_listed_price_has_no_cost_and_a_price_file_can_add_one(gemini, capsys, monkeypatch, tmp_path):
    import cli

    gemini([gemini_response("Answer: 4", prompt_tokens=100, output_tokens=10)] * 2)
    assert cli.main(["What is 2 + 2?", "--model", "gemma-3-27b-it", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"] is None  # not a guess
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"gemma-3-27b-it": {"input": 1, "cached_input": 0.1, "output": 2,
                                                                "read": "2026-12-02", "source": "my contract"}}}))
    monkeypatch.setenv("TINYREACT_PRICES", str(prices))
    assert cli.main(["What is 2 + 2?", "--model", "gemma-3-27b-it", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"] == {"usd": 0.00012, "priced_as": "gemma-3-27b-it",
                                                           "prices_read": "2026-12-02", "source": "my contract"}
    prices.write_text('{"models": {"x": {"input": "cheap"}}}')
    assert cli.main(["What is 2 + 2?", "--model", "gemma-3-27b-it"]) == 2
    assert capsys.readouterr().err == (f"error: {prices}: the price of x needs input, cached_input, output as dollars "
                                       "per million tokens (numbers of 0 or more, up to 100,000)\n")


def test_a_live_runs_cost_pays_the_write_premium_on_what_was_not_read_from_the_cache(gemini, capsys, monkeypatch,
                                                                                       tmp_path):
    """A row whose provider bills cache writes: the uncached part of a call at least the minimum long is priced at
    the write price, as the replay prices it; a shorter call at the input price."""
    import cli

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"gemma-3-27b-it": {
        "input": 1, "cached_input": 0.1, "output": 2, "cache_write": 1.25, "min_cache_tokens": 1024}}}))
    monkeypatch.setenv("TINYREACT_PRICES", str(prices))
    gemini([gemini_response("Thought: add\nAction: add_numbers(2, 2)", prompt_tokens=1000, output_tokens=20),
            gemini_response("Answer: 4", prompt_tokens=1040, output_tokens=8, cached_tokens=1000)])
    assert cli.main(["What is 2 + 2?", "--model", "gemma-3-27b-it", "--json"]) == 0
    # the first call, under the minimum: 1,000 at $1; the second, 1,040 long: 1,000 read at $0.10, 40 written at $1.25
    expected = (1000 * 1 + 40 * 1.25 + 1000 * 0.1 + 28 * 2) / 1e6
    assert json.loads(capsys.readouterr().out)["cost"]["usd"] == round(expected, 10)
