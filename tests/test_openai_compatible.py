"""The OpenAI-compatible backend (requests) against a loopback server speaking /v1/chat/completions."""
import json
import socket
import time

import pytest

import cli
from agent import TinyReAct
from models import Message, ModelConfigError, ModelError, load_model
from models.services import retry
from models.services.endpoints import temperature_for
from models.services.openai_compatible import COUNTED_LOCALLY
from tokens import local_counter
from model_servers import (Answer, GeminiStandIn, OpenAIStandIn, completion, gemini_error,
                           openai_error, sse)

MESSAGES = [Message.of("system", "Be brief."), Message.of("user", "Question: 2 + 2?"),
            Message.of("model", "Action: add_numbers(2, 2)"), Message.of("user", "Observation1: 4")]
STOP = ["\nObservation"]
KEY = "sk-test-0123456789"


@pytest.fixture
def server():
    started = []

    def start(replies, **options):
        stand_in = OpenAIStandIn(replies, **options).__enter__()
        started.append(stand_in)
        return stand_in
    yield start
    for stand_in in started:
        stand_in.__exit__(None, None, None)


@pytest.fixture
def waits(monkeypatch):
    asked = []
    monkeypatch.setattr(retry, "sleep", asked.append)
    return asked


def openai_model(monkeypatch, stand_in, name="qwen3:8b", key=KEY):
    monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return load_model(f"openai:{name}")


def events_of(recorded):
    return lambda type, **fields: recorded.append({"type": type, **fields})


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_request_and_reply_without_streaming(server, monkeypatch):
    stand_in = server(["Thought: done\nAnswer: 4"], key=KEY)
    model = openai_model(monkeypatch, stand_in)
    reply = model.generate(MESSAGES, STOP)
    assert (reply.text, reply.finish, reply.input_tokens, reply.output_tokens, reply.usage_source) == (
        "Thought: done\nAnswer: 4", "stop", 120, 12, None)
    request = stand_in.requests[0]
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    body = request["body"]
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", "Be brief."), ("user", "Question: 2 + 2?"), ("assistant", "Action: add_numbers(2, 2)"),
        ("user", "Observation1: 4")]
    assert body["stop"] == STOP and body["stream"] is False and "stream_options" not in body
    assert (model.name, model.backend) == ("qwen3:8b", "openai")


def test_streamed_reply_equals_the_whole_one_and_takes_usage_from_the_last_chunk(server, monkeypatch):
    text = "Thought: add them\nAction: add_numbers(2, 2)\nObservation: 4"
    stand_in = server([text, text])
    model = openai_model(monkeypatch, stand_in)
    whole = model.generate(MESSAGES, STOP)
    shown = []
    streamed = model.generate(MESSAGES, STOP, on_text=shown.append)
    assert streamed == whole and "".join(shown) == whole.text == "Thought: add them\nAction: add_numbers(2, 2)"
    assert len(shown) > 3 and streamed.input_tokens == 120
    body = stand_in.bodies[1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_the_stream_is_closed_at_the_cut_when_the_server_ignores_stops(server, monkeypatch):
    stand_in = server([], refuse_stop=True)
    stand_in.replies = ["Thought: x\nAction: add_numbers(2, 2)\nObservation: 5\nAnswer: 5"]
    model = openai_model(monkeypatch, stand_in)
    shown, recorded = [], []
    reply = model.generate(MESSAGES, STOP, on_text=shown.append, on_event=events_of(recorded))
    # The server refused `stop` (as reasoning models do): sent again without it, and cut here instead.
    assert [e["type"] for e in recorded] == ["config_fallback"] and recorded[0]["field"] == "stop"
    assert reply.text == "Thought: x\nAction: add_numbers(2, 2)" and "".join(shown) == reply.text
    assert "stop" not in stand_in.bodies[-1]
    assert reply.usage_source == COUNTED_LOCALLY  # closed before the usage chunk came


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_without_usage_is_counted_locally(server, monkeypatch, stream):
    stand_in = server(["Answer: 4"], usage=False)
    reply = openai_model(monkeypatch, stand_in).generate(MESSAGES, STOP, on_text=[].append if stream else None)
    assert reply.text == "Answer: 4" and reply.usage_source == COUNTED_LOCALLY
    stand_in.replies = ["Answer: 4"]
    result = TinyReAct(openai_model(monkeypatch, stand_in), on_text=[].append if stream else None).query("2 + 2?")
    assert result.answer == "4" and result.usage_source == COUNTED_LOCALLY  # the loop counted it, and says so
    assert result.usage.input_tokens > 900 and result.usage.output_tokens == local_counter().count("Answer: 4")


@pytest.mark.parametrize("finish, text, blocked", [("length", "Thought: a long", None),
                                                    ("content_filter", "", "content filter")])
def test_finish_reasons_are_reported(server, monkeypatch, finish, text, blocked):
    stand_in = server([completion(text, finish=finish), completion(text, finish=finish)])
    model = openai_model(monkeypatch, stand_in)
    for on_text in (None, [].append):
        reply = model.generate(MESSAGES, STOP, on_text=on_text)
        assert (reply.text, reply.finish, reply.blocked) == (text, finish, blocked)


def test_reasoning_is_never_reply_text(server, monkeypatch):
    stand_in = server(["Answer: 4", "<think>2 and 2 make 4.\nObservation: none</think>\nAnswer: 4", "Answer: 4"],
                      reasoning="Let me add.")
    model = openai_model(monkeypatch, stand_in)
    recorded = []
    assert model.generate(MESSAGES, STOP, on_text=[].append, on_event=events_of(recorded)).text == "Answer: 4"
    assert "".join(e["text"] for e in recorded if e["type"] == "reasoning") == "Let me add."
    assert model.generate(MESSAGES, [], on_text=[].append).text == "Answer: 4"  # inline <think>, streamed
    assert model.generate(MESSAGES, STOP).text == "Answer: 4"


def test_a_rejected_key_is_a_configuration_error(server, monkeypatch):
    stand_in = server(["Answer: 4"], key=KEY)
    with pytest.raises(ModelConfigError, match=r"rejected the API key \(401\): check OPENAI_API_KEY"):
        openai_model(monkeypatch, stand_in, key="sk-wrong").generate(MESSAGES, STOP)


def test_a_missing_key_names_the_variable(monkeypatch):
    with pytest.raises(ModelConfigError, match="no OPENAI_API_KEY"):
        load_model("openai:gpt-test")


def test_an_unknown_model_lists_the_servers_models(server, monkeypatch):
    stand_in = server(["Answer: 4"], models=("qwen3:8b", "llama3.2"))
    monkeypatch.setenv("OLLAMA_HOST", stand_in.url)
    with pytest.raises(ModelConfigError, match=r"has no model 'qwen3:0.6b'; it has: llama3.2, qwen3:8b — to fetch it: "
                                               r"ollama pull qwen3:0.6b$"):
        load_model("ollama:qwen3:0.6b").generate(MESSAGES, STOP)


def test_no_server_at_the_url_says_how_to_start_one(monkeypatch, waits):
    port = free_port()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    with pytest.raises(ModelConfigError) as raised:
        load_model("ollama:qwen3:8b").generate(MESSAGES, STOP)
    assert str(raised.value) == f"no server at http://127.0.0.1:{port}/v1 — is Ollama running? `ollama serve`"
    assert waits == []


def test_retry_after_is_honoured_and_a_spent_account_is_not_retried(server, monkeypatch, waits):
    stand_in = server([openai_error(429, "Rate limit reached", code="rate_limit_exceeded",
                                    headers={"Retry-After": "2"}),
                       openai_error(503, "overloaded", type="server_error"), "Answer: 4",
                       openai_error(429, "You exceeded your current quota", code="insufficient_quota")])
    model = openai_model(monkeypatch, stand_in)
    recorded = []
    assert model.generate(MESSAGES, STOP, on_event=events_of(recorded)).text == "Answer: 4"
    assert waits[0] == 2.0 and len(waits) == 2
    assert retry.describe(recorded[0]) == "OpenAI-compatible server 429 Too Many Requests — attempt 2/4 in 2.0 s"
    with pytest.raises(ModelError, match="insufficient_quota; not retried"):
        model.generate(MESSAGES, STOP)
    assert len(waits) == 2


def test_a_stream_that_breaks_midway_is_retried_whole(server, monkeypatch, waits):
    half = sse([{"choices": [{"index": 0, "delta": {"content": "Thought: half"}, "finish_reason": None}]}])
    stand_in = server([Answer(200, half, {"Content-Length": "4000"}), "Answer: 4"])
    shown, recorded = [], []
    reply = openai_model(monkeypatch, stand_in).generate(MESSAGES, STOP, on_text=shown.append,
                                                         on_event=events_of(recorded))
    assert reply.text == "Answer: 4" and "".join(shown) == "Thought: halfAnswer: 4"
    assert [(e["type"], e["restart_stream"]) for e in recorded] == [("retry", True)]


def test_a_slow_drip_hands_control_back_by_the_deadline(server, monkeypatch, waits):
    body = sse([{"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}] * 200)
    stand_in = server([Answer(200, body, pause=0.1)] * 2)
    monkeypatch.setenv("TINYREACT_CALL_DEADLINE", "0.8")
    model = openai_model(monkeypatch, stand_in)  # before the clock: the deadline is the call's, not the loading's
    started = time.monotonic()
    with pytest.raises(retry.DeadlineExceeded):
        model.generate(MESSAGES, STOP, on_text=[].append)
    assert time.monotonic() - started < 1.3 and len(stand_in.requests) == 1


def test_a_redirect_is_not_followed(server, monkeypatch):
    elsewhere = server(["Answer: 4"])
    stand_in = server([Answer(307, [], {"Location": elsewhere.url + "/v1/chat/completions"})])
    redirected = f"307, redirecting to {elsewhere.url}/v1/chat/completions: not followed"
    with pytest.raises(ModelConfigError, match=redirected):
        openai_model(monkeypatch, stand_in).generate(MESSAGES, STOP)
    assert elsewhere.requests == []


def test_a_body_that_is_not_a_completion_is_reported_as_such(server, monkeypatch):
    stand_in = server([Answer(200, [b"<html>login</html>"], {"Content-Type": "text/html"})])
    with pytest.raises(ModelError, match="sent something that is not JSON \\('<html>login"):
        openai_model(monkeypatch, stand_in).generate(MESSAGES, STOP)


def test_llamacpp_and_ollama_urls(server, monkeypatch):
    stand_in = server(["Answer: 4", "Answer: 5"], models=("any",))
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
    monkeypatch.setenv("OLLAMA_HOST", stand_in.url)
    assert load_model("llamacpp:any").generate(MESSAGES, STOP).text == "Answer: 4"
    assert load_model("ollama:any").generate(MESSAGES, STOP).text == "Answer: 5"
    assert all("Authorization" not in r["headers"] for r in stand_in.requests)


def test_the_key_never_appears_whatever_fails(server, monkeypatch, waits):
    """A careless server quotes the key in its errors and its redirect; none of it may reach the user."""
    secret = "sk-SECRET-do-not-print-42"
    stand_in = server([], key=secret, echo_key=True)
    stand_in.replies = [openai_error(503, f"upstream rejected {secret}", type="server_error")] * 4 + [
        Answer(200, [f"<html>{secret}</html>".encode()]),
        Answer(302, [], {"Location": f"http://127.0.0.1:9/?key={secret}"}),
    ]
    recorded, failures = [], []
    model = openai_model(monkeypatch, stand_in, key=secret)
    for _ in range(3):
        with pytest.raises(ModelError) as raised:
            model.generate(MESSAGES, STOP, on_event=events_of(recorded))
        failures.append(raised.value)
    stand_in.key = "another"  # now the server refuses the key and quotes it back
    with pytest.raises(ModelConfigError) as raised:
        model.generate(MESSAGES, STOP)
    failures.append(raised.value)
    monkeypatch.setenv("OPENAI_API_KEY", secret + "\nX-Injected: 1")
    with pytest.raises(ModelConfigError, match="line break") as raised:
        load_model("openai:qwen3:8b")
    failures.append(raised.value)
    gemini = GeminiStandIn([gemini_error(500, "INTERNAL", f"bad key {secret}")] * 4, key=secret).__enter__()
    try:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GEMINI_API_KEY", secret)
        with pytest.raises(ModelError) as raised:
            load_model("gemini:gemini-2.5-flash").generate(MESSAGES, STOP, on_event=events_of(recorded))
        failures.append(raised.value)
    finally:
        gemini.__exit__(None, None, None)
    assert len(recorded) >= 3 and "***" in str(recorded)
    shown = " ".join([str(f) for f in failures] + [repr(f) for f in failures] + [str(recorded), repr(model)])
    assert secret not in shown and "SECRET" not in shown


@pytest.mark.parametrize("backend", ["ollama", "llamacpp", "openai"])
def test_a_local_or_self_hosted_server_is_sent_temperature_0_and_the_run_says_so(server, monkeypatch, capsys, tmp_path,
                                                                                 backend):
    stand_in = server(["Thought: add\nAction: add_numbers(2, 2)", "Answer: 4"], models=("m",))
    monkeypatch.setenv({"ollama": "OLLAMA_HOST", "llamacpp": "LLAMACPP_BASE_URL", "openai": "OPENAI_BASE_URL"}[backend],
                       stand_in.url + ("" if backend == "ollama" else "/v1"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    trace = tmp_path / "run.jsonl"
    assert cli.main(["What is 2 + 2?", "--model", f"{backend}:m", "--trace", str(trace), "--no-stream"]) == 0
    assert [body["temperature"] for body in stand_in.bodies] == [0, 0]
    out = " ".join(capsys.readouterr().out.split())
    assert "· temperature 0 ·" in out
    header = json.loads(trace.read_text().splitlines()[0])
    assert header["temperature"] == 0 and header["backend"] == backend


def test_openai_s_own_api_is_sent_no_temperature_and_the_variable_chooses_one(monkeypatch):
    assert temperature_for("openai", "https://api.openai.com/v1") is None  # its reasoning models take only 1
    assert temperature_for("openai", "http://localhost:8000/v1") == 0 and temperature_for("ollama", "x") == 0
    monkeypatch.setenv("TINYREACT_TEMPERATURE", "0.7")
    assert temperature_for("openai", "https://api.openai.com/v1") == 0.7 and temperature_for("llamacpp", "x") == 0.7
    monkeypatch.setenv("TINYREACT_TEMPERATURE", "server")
    assert temperature_for("llamacpp", "x") is None
    for bad in ("hot", "nan", "-1", "2.5", "inf"):
        monkeypatch.setenv("TINYREACT_TEMPERATURE", bad)
        with pytest.raises(ModelConfigError, match="TINYREACT_TEMPERATURE must be a number from 0 to 2"):
            temperature_for("ollama", "x")


def test_a_bad_temperature_setting_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("TINYREACT_TEMPERATURE", "warm")
    assert cli.main(["What is 2 + 2?", "--model", "llamacpp:m"]) == 2
    assert capsys.readouterr().err == ("error: TINYREACT_TEMPERATURE must be a number from 0 to 2, or `server` to send "
                                       "none, got 'warm'\n")


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_temperature_is_dropped_once_said_once_and_the_json_says_what_was_sent(server, monkeypatch, capsys,
                                                                                          stream):
    stand_in = server(["Thought: add\nAction: add_numbers(2, 2)", "Answer: 4"], models=("o-test",),
                      refuse_temperature=True)
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
    model = load_model("llamacpp:o-test")
    shown = []
    result = TinyReAct(model, on_text=shown.append if stream else None).query("What is 2 + 2?")
    assert result.answer == "4" and result.temperatures == [None]  # none was sent on the calls that answered
    fallbacks = [e for e in result.trace if e["type"] == "config_fallback"]
    assert len(fallbacks) == 1 and fallbacks[0]["field"] == "temperature"
    assert fallbacks[0]["variable"] == "TINYREACT_TEMPERATURE"
    assert [body.get("temperature") for body in stand_in.bodies] == [0, None, None]
    assert result.to_dict()["temperatures"] == [None]


def test_the_server_s_cached_tokens_are_kept_and_its_own_server_costs_nothing(server, monkeypatch, capsys):
    answer = completion("Answer: 4")
    answer["usage"] = {"prompt_tokens": 1200, "completion_tokens": 5, "total_tokens": 1205,
                       "prompt_tokens_details": {"cached_tokens": 1024}}  # the shape OpenAI documents for caching
    stand_in = server([answer, completion("Answer: 4")], models=("m",))
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
    assert cli.main(["What is 2 + 2?", "--model", "llamacpp:m", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["usage"]["cached_input_tokens"] == 1024 and result["cost"]["usd"] == 0
    monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert cli.main(["What is 2 + 2?", "--model", "openai:m", "--no-stream"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cost not known: no listed price for this model (models/prices.json)" in out


@pytest.mark.parametrize("details", [[1024], {"cached_tokens": "1024"}, {"cached_tokens": -5}, None])
def test_cached_tokens_of_a_wrong_type_count_as_none(details):
    from models.services.openai_compatible import _reply
    from models.services.wire import usage_counts

    counts, problem = usage_counts({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": details})
    reply = _reply("Answer: 4", "stop", counts)
    assert problem is None
    assert reply.cached_tokens == 0 and reply.input_tokens == 10


def test_a_stream_that_ends_early_is_asked_once_whole_so_the_server_s_own_error_is_said(server, monkeypatch, waits):
    # llama.cpp's server, past its context: the stream is closed with no finish reason; a whole request gets a 400
    # saying why (seen against llama-cpp-python 0.3.36's server).
    unfinished = {"choices": [{"index": 0, "delta": {"content": "Thought: hm"}, "finish_reason": None}]}
    cut = Answer(200, sse([unfinished])[:1],
                 {"Content-Type": "text/event-stream"})
    too_long = openai_error(400, "the request exceeds the available context size, try increasing it",
                            type="exceed_context_size_error")
    stand_in = server([cut, too_long], models=("m",))
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
    recorded, shown = [], []
    with pytest.raises(ModelError, match="exceeds the available context size"):
        load_model("llamacpp:m").generate(MESSAGES, STOP, on_text=shown.append, on_event=events_of(recorded))
    assert [body["stream"] for body in stand_in.bodies] == [True, False] and waits == []  # no retry storm
    assert [e["type"] for e in recorded] == ["warning"]
    assert "stream ended before the reply was complete; asking once more without streaming" in recorded[0]["message"]


@pytest.mark.parametrize("code, retried", [(502, True), (408, True), (400, False)])
def test_an_error_inside_a_200_answer_follows_the_retry_rules_of_its_code(server, monkeypatch, waits, code, retried):
    # OpenRouter, once the model started: HTTP 200 and {"error": {"code", "message"}} (its errors page).
    inside = Answer.json(200, {"error": {"code": code, "message": "the provider returned an error"}})
    stand_in = server([inside, "Answer: 4"], models=("m",))
    model = openai_model(monkeypatch, stand_in, name="m")
    if retried:
        assert model.generate(MESSAGES, STOP).text == "Answer: 4" and len(waits) == 1
    else:
        with pytest.raises(ModelError, match=f"answered 200 with an error {code}: the provider returned an error"):
            model.generate(MESSAGES, STOP)
        assert waits == []


def test_408_is_retried(server, monkeypatch, waits):
    stand_in = server([openai_error(408, "Your request timed out"), "Answer: 4"], models=("m",))
    assert openai_model(monkeypatch, stand_in, name="m").generate(MESSAGES, STOP).text == "Answer: 4"
    assert len(waits) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_empty_but_for_its_reasoning_is_asked_again_without_the_stop_sequence(server, monkeypatch, stream):
    # A reasoning model whose stop string matched inside its reasoning (vLLM #52393): content empty, reasoning not.
    stand_in = server(["", "Thought: so\nAction: add_numbers(2, 2)"], models=("m",), reasoning="Observation is 4?")
    model = openai_model(monkeypatch, stand_in, name="m")
    recorded = []
    reply = model.generate(MESSAGES, STOP, on_text=(lambda text: None) if stream else None,
                           on_event=events_of(recorded))
    assert reply.text == "Thought: so\nAction: add_numbers(2, 2)"
    assert [e["type"] for e in recorded if e["type"] != "reasoning"] == ["config_fallback"]
    assert "stop" in stand_in.bodies[0] and "stop" not in stand_in.bodies[1]


def test_ollama_s_context_is_learned_and_a_prompt_it_would_cut_is_said_before_the_call(server, monkeypatch):
    stand_in = server(['Action: fetch("the report")', "Answer: done"], ollama_context=400)
    monkeypatch.setenv("OLLAMA_HOST", stand_in.url)
    model = load_model("ollama:qwen3:8b")
    assert model.window == 400  # its loaded context, from /api/ps

    def fetch(page: str) -> str:
        """Returns a long report."""
        return "figures " * 2000
    result = TinyReAct(model, tools=[fetch]).query("Summarise the report.")
    kinds = [e["type"] for e in result.trace]
    warning = kinds.index("warning")
    assert warning < [i for i, kind in enumerate(kinds) if kind == "usage"][1]  # before the call that would be cut
    assert "more than qwen3:8b's window of 400" in result.trace[warning]["message"]
    assert stand_in.cut[0] == 0 and stand_in.cut[1] >= 1  # what the server did to that call: instructions first
    assert kinds.count("warning") == 1


def test_ollama_s_default_context_when_the_server_does_not_say(server, monkeypatch):
    stand_in = server(["Answer: 4"])  # no /api/ps, no /api/show: an older Ollama
    monkeypatch.setenv("OLLAMA_HOST", stand_in.url)
    assert load_model("ollama:qwen3:8b").window == 4096  # "< 24 GiB VRAM: 4k context"
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
    assert load_model("llamacpp:any").window is None  # a server that refuses what it cannot take


def test_a_server_without_usage_still_says_the_temperature_sent_and_that_nothing_is_billed(server, monkeypatch, capsys):
    # llama-cpp-python's server (0.3.36) sends no usage chunk on a stream: seen with bench/llama_server.py
    stand_in = server(["Answer: 4"], models=("m",), usage=False)
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
    assert cli.main(["What is 2 + 2?", "--model", "llamacpp:m", "--no-stream"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(counted locally: the server reported no usage) · temperature 0 · nothing billed" in out
