"""The real google-genai client against a loopback server speaking the generateContent REST shape."""
import pytest

from agent import StopReason, TinyReAct
from models import Message, ModelConfigError, ModelError
from models.gemini import GeminiModel
from servers import FakeGemini, gemini_error, gemini_text

MESSAGES = [Message.of("system", "Be brief."), Message.of("user", "Question: 2 + 2?"),
            Message.of("model", "Action: add_numbers(2, 2)"), Message.of("user", "Observation1: 4")]


@pytest.fixture
def gemini(monkeypatch):
    def start(replies, **options):
        server = FakeGemini(replies, **options).__enter__()
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        started.append(server)
        return server
    started = []
    yield start
    for server in started:
        server.__exit__(None, None, None)


def test_request_body_and_usage(gemini):
    server = gemini([gemini_text("Thought: done\nAnswer: 4", prompt_tokens=321, output_tokens=12, thoughts_tokens=5)])
    reply = GeminiModel(api_key="test-key").generate(MESSAGES, ["\nObservation"])
    assert reply.text == "Thought: done\nAnswer: 4"
    assert (reply.input_tokens, reply.output_tokens, reply.thoughts_tokens) == (321, 17, 5)
    request = server.requests[0]
    assert request["path"] == "/v1beta/models/gemini-flash-latest:generateContent"
    body = request["body"]
    assert body["systemInstruction"]["parts"][0]["text"] == "Be brief."
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", "Question: 2 + 2?"), ("model", "Action: add_numbers(2, 2)"), ("user", "Observation1: 4")]
    config = body["generationConfig"]
    assert config["stopSequences"] == ["\nObservation"] and config["temperature"] == 0
    # The SDK passes this object through with its Python field names; proto3 JSON accepts either spelling.
    assert list(config["thinkingConfig"].values()) == ["MINIMAL"]


def test_model_temperature_and_thinking_from_environment(gemini, monkeypatch):
    server = gemini(["Answer: 4"])
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_MODEL", "gemini-2.5-flash")
    monkeypatch.setenv("GEMINI_TEMPERATURE", "0.7")
    monkeypatch.setenv("GEMINI_THINKING", "none")
    GeminiModel().generate(MESSAGES, [])
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert body["generationConfig"]["temperature"] == 0.7 and "thinkingConfig" not in body["generationConfig"]


def test_429_is_retried_then_succeeds(gemini):
    server = gemini([gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded"), "Answer: 4"])
    assert GeminiModel(api_key="test-key", retry_delay=0.01).generate(MESSAGES, []).text == "Answer: 4"
    assert len(server.requests) == 2


def test_server_errors_are_retried_a_bounded_number_of_times(gemini):
    server = gemini([gemini_error(503, "UNAVAILABLE", "The model is overloaded")] * 10)
    with pytest.raises(ModelError, match="503 UNAVAILABLE: The model is overloaded"):
        GeminiModel(api_key="test-key", retry_delay=0.01).generate(MESSAGES, [])
    assert len(server.requests) == 4


def test_other_client_errors_are_not_retried(gemini):
    server = gemini([gemini_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument."), "Answer: 4"])
    with pytest.raises(ModelError, match="400"):
        GeminiModel(api_key="test-key", retry_delay=0.01).generate(MESSAGES, [])
    assert len(server.requests) == 1


def test_rejected_key_is_a_configuration_error_without_the_key(gemini):
    server = gemini(["Answer: 4"], key="the-right-key")
    with pytest.raises(ModelConfigError, match="check GEMINI_API_KEY") as raised:
        GeminiModel(api_key="sk-wrong-SECRET", retry_delay=0.01).generate(MESSAGES, [])
    assert "sk-wrong-SECRET" not in str(raised.value)
    assert len(server.requests) == 1


def test_unknown_model_is_a_configuration_error(gemini):
    gemini([gemini_error(404, "NOT_FOUND", "models/gemini-nope is not found for API version v1beta")])
    with pytest.raises(ModelConfigError, match="no model 'gemini-nope'"):
        GeminiModel("gemini-nope", api_key="test-key").generate(MESSAGES, [])


def test_missing_key_names_the_variable():
    with pytest.raises(ModelConfigError, match="set GEMINI_API_KEY"):
        GeminiModel()


def test_unreachable_server_is_a_model_error(monkeypatch):
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(ModelError, match="could not reach Gemini"):
        GeminiModel(api_key="test-key", retry_delay=0.01).generate(MESSAGES, [])


def test_empty_candidate_list_is_a_blocked_reply(gemini):
    gemini([{"candidates": [], "promptFeedback": {"blockReason": "SAFETY"},
             "usageMetadata": {"promptTokenCount": 50, "totalTokenCount": 50}}])
    reply = GeminiModel(api_key="test-key").generate(MESSAGES, [])
    assert reply.text == "" and reply.blocked == "prompt blocked: SAFETY" and reply.input_tokens == 50


def test_loop_cuts_observations_even_when_the_server_ignores_stop_sequences(gemini):
    gemini(["Thought: add\nAction: add_numbers(2, 2)\nObservation: 5\nAnswer: 5", "Answer: 4"], honour_stops=False)
    result = TinyReAct(GeminiModel(api_key="test-key")).query("2 + 2?")
    assert result.answer == "4" and result.stop_reason is StopReason.ANSWER
    assert [e["text"] for e in result.trace if e["type"] == "observation"] == ["4"]
    assert result.usage.input_tokens == 200 and result.usage.output_tokens == 20
