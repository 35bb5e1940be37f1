"""What an OpenAI-compatible server may send that is not what the API defines, or is valid HTTP and SSE in a form
the client must still read: a wrong type anywhere is one line naming the server (no traceback, no retries), and
compressed bodies, CR line endings, an event split over data lines, a server that ignores `stream` and one that
never closes all answer."""
import gzip
import json
import socket
import threading
import time
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from models import Message, ModelError, ModelReply, load_model
from models.services import retry
from models.services import openai_compatible
from model_servers import Answer, OpenAIStandIn, completion, sse

MESSAGES = [Message.of("system", "Be brief."), Message.of("user", "Question: 2 + 2?")]
STOP = ["\nObservation"]
STREAM = {"Content-Type": "text/event-stream"}


@pytest.fixture
def served(monkeypatch):
    """A model at a stand-in answering with `replies`; returns (model, stand-in)."""
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    started = []

    def start(replies):
        stand_in = OpenAIStandIn(replies, models=("m",)).__enter__()
        started.append(stand_in)
        monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
        return load_model("llamacpp:m"), stand_in
    yield start
    for stand_in in started:
        stand_in.__exit__(None, None, None)


def chunk(**fields) -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "model": "m", **fields}


def delta(content, finish=None) -> dict:
    return chunk(choices=[{"index": 0, "delta": {"content": content}, "finish_reason": finish}])


WRONG_EVENTS = [  # (the event, what the message says was wrong)
    ([1, 2], "a list where a JSON object was expected"),
    (json.dumps("just text"), "text where a JSON object was expected"),
    (None, "null where a JSON object was expected"),
    (chunk(choices="abc"), "choices that are text, not a list"),
    (chunk(choices=["abc"]), "a choice that is text, not an object"),
    (chunk(choices=[{"index": 0, "delta": "Answer: 4"}]), "a choice whose delta is text, not an object"),
    (chunk(choices=[{"index": 0, "delta": {"content": 4}}]), "content that is a number, not text"),
    (chunk(choices=[{"index": 0, "delta": {"content": "x"}, "finish_reason": ["stop"]}]),
     "a finish_reason that is a list"),
    (chunk(choices=[{"index": 0, "delta": {"content": "x"}, "finish_reason": {"a": 1}}]),
     "a finish_reason that is an object"),
]


@pytest.mark.parametrize("event, said", WRONG_EVENTS)
def test_a_stream_event_of_the_wrong_shape_is_one_line_naming_the_server_and_is_not_retried(served, event, said):
    model, stand_in = served([Answer(200, sse([delta("Thought: "), event, "[DONE]"]), STREAM)])
    with pytest.raises(ModelError) as raised:
        model.generate(MESSAGES, STOP, on_text=lambda text: None)
    message = str(raised.value)
    assert message.startswith(f"llama.cpp server (model m at {stand_in.url}/v1) sent ") and said in message
    assert "\n" not in message and len(stand_in.requests) == 1


WRONG_COMPLETIONS = [
    ({"choices": "abc"}, "choices that are text, not a list"),
    ({"choices": [{"message": "Answer: 4", "finish_reason": "stop"}]}, "a choice whose message is text, not an object"),
    ({"choices": [{"message": {"content": 4.5}, "finish_reason": "stop"}]}, "content that is a number, not text"),
    ({"choices": [{"message": {"content": "x"}, "finish_reason": 7}]}, "a finish_reason that is a number"),
    ({"choices": []}, "a completion with no choices"),
    (b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": Infinity}}', "Infinity where JSON"),
]


@pytest.mark.parametrize("answer, said", WRONG_COMPLETIONS)
def test_a_completion_of_the_wrong_shape_is_one_line_naming_the_server(served, answer, said):
    body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
    model, stand_in = served([Answer(200, [body])])
    with pytest.raises(ModelError) as raised:
        model.generate(MESSAGES, STOP)
    assert said in str(raised.value) and "\n" not in str(raised.value) and len(stand_in.requests) == 1


def test_content_as_a_list_of_parts_is_read_as_its_text(served):
    parts = [{"type": "text", "text": "Answer: "}, {"type": "image_url", "image_url": {"url": "x"}},
             {"type": "text", "text": "4"}]
    model, _ = served([Answer.json(200, {"choices": [{"message": {"content": parts}, "finish_reason": "stop"}]}),
                       Answer(200, sse([chunk(choices=[{"delta": {"content": parts}, "finish_reason": "stop"}]),
                                        "[DONE]"]),
                              STREAM)])
    assert model.generate(MESSAGES, STOP).text == "Answer: 4"
    assert model.generate(MESSAGES, STOP, on_text=lambda text: None).text == "Answer: 4"


@pytest.mark.parametrize("usage", [{"prompt_tokens": "120", "completion_tokens": 12}, {"prompt_tokens": 1e300},
                                   {"prompt_tokens": -4}, {"prompt_tokens": True}, "lots", [1, 2]])
def test_usage_that_is_not_counts_is_counted_here_and_said_once(served, usage):
    answer = completion("Answer: 4")
    answer["usage"] = usage
    model, _ = served([Answer.json(200, answer)])
    events = []
    reply = model.generate(MESSAGES, STOP, on_event=lambda type, **fields: events.append((type, fields)))
    assert reply.text == "Answer: 4" and reply.usage_source == openai_compatible.COUNTED_LOCALLY
    [(kind, fields)] = events
    assert kind == "warning" and "counted here instead" in fields["message"]


@pytest.mark.parametrize("encoding, compress", [("gzip", gzip.compress), ("deflate", zlib.compress)])
def test_a_compressed_completion_or_stream_is_read(served, encoding, compress):
    whole = compress(json.dumps(completion("Answer: 4")).encode())
    stream = compress(b"".join(sse([delta("Answer: "), delta("4", "stop"), "[DONE]"])))
    model, _ = served([Answer(200, [whole], {"Content-Encoding": encoding}),
                       Answer(200, [stream[:10], stream[10:]], {**STREAM, "Content-Encoding": encoding})])
    assert model.generate(MESSAGES, STOP).text == "Answer: 4"
    shown = []
    assert model.generate(MESSAGES, STOP, on_text=shown.append).text == "Answer: 4" and "".join(shown) == "Answer: 4"


def test_server_sent_events_are_read_as_the_standard_defines_them(served):
    first = json.dumps(delta("Answer: ")).encode()
    events = (b"\xef\xbb\xbf: a comment\r" + b"event: message\rdata: " + first + b"\r\r"  # a BOM, CR line endings
              + b'data: {"id": "c", "choices": [{"index": 0,\ndata:  "delta": {"content": "4"},\n'  # one event, 2 lines
              + b'data: "finish_reason": "stop"}]}\r\n\r\ndata: [DONE]')  # and no blank line after the last
    model, _ = served([Answer(200, [events[:7], events[7:40], events[40:]], STREAM)])
    assert model.generate(MESSAGES, STOP, on_text=lambda text: None).text == "Answer: 4"


def test_a_server_that_ignores_stream_and_sends_one_completion_is_read_and_shown(served):
    model, _ = served([Answer.json(200, completion("Thought: easy\nAnswer: 4"))])
    shown = []
    reply = model.generate(MESSAGES, STOP, on_text=shown.append)
    assert reply.text == "Thought: easy\nAnswer: 4" and "".join(shown) == reply.text and reply.input_tokens == 120


class Lingering:
    """A server that answers each connection with `bodies` in turn, then keeps it open, sending nothing more, until
    the test ends: a finished reply with no [DONE] and no end."""

    def __init__(self, bodies: list[bytes]):
        self.bodies, self.done = list(bodies), threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while self.bodies:
            connection, _ = self.listener.accept()
            connection.recv(65536)  # the request: small enough to come at once
            body = self.bodies.pop(0)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(body), body))
            threading.Thread(target=lambda kept=connection: (self.done.wait(), kept.close()), daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.listener.close()


def test_a_finished_reply_from_a_server_that_never_closes_is_answered_at_once(monkeypatch):
    monkeypatch.setattr(openai_compatible, "FINISHED_GRACE", 0.3)
    monkeypatch.setenv("TINYREACT_CALL_DEADLINE", "3")  # without the grace, each call would wait this long
    usage = chunk(choices=[], usage={"prompt_tokens": 50, "completion_tokens": 3})
    bodies = [b"".join(sse([delta("Answer: 4"), delta("", "stop"), usage])),
              b"".join(sse([delta("Answer: 4", "stop")]))]
    with Lingering(bodies) as server:
        monkeypatch.setenv("LLAMACPP_BASE_URL", server.url + "/v1")
        model = load_model("llamacpp:m")
        started = time.monotonic()
        reply = model.generate(MESSAGES, STOP, on_text=lambda text: None)
        assert reply.text == "Answer: 4" and reply.input_tokens == 50 and time.monotonic() - started < 1.5
        started = time.monotonic()
        assert model.generate(MESSAGES, STOP, on_text=lambda text: None).finish == "stop"  # and no usage ever comes
        assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("value", ["Fri, 31 Dec 2025 23:59:59 +10000000000000000000", "Fri, 31 Dec 9999 23:59:59 +9999",
                                   "9" * 400, "Mon, 32 Foo 2025 99:99:99 GMT", "-5"])
def test_a_retry_after_that_makes_no_sense_is_no_wait_asked(value):
    assert retry.retry_after(value) is None


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["choices", "delta", "message", "content", "finish_reason", "usage", "error",
                                         "prompt_tokens", "reasoning", "model", "text", "type"]), inner, max_size=4),
                    max_leaves=12)


class Body:
    """A response whose body is `data`, read as the client reads one (raw.read1), in small pieces."""

    def __init__(self, data: bytes):
        self.raw, self.data, self.headers = self, data, {}

    def read1(self, size: int, decode_content: bool = False) -> bytes:
        piece, self.data = self.data[:7], self.data[7:]
        return piece


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON, st.booleans())
def test_any_json_a_server_sends_is_a_reply_or_one_clear_error(value, streamed):
    model = openai_compatible.OpenAICompatibleModel("m", "http://127.0.0.1:9/v1", backend="llamacpp")
    channel = retry.Channel()
    try:
        if streamed:
            reply, _, _ = model._stream(Body(b"".join(sse([value, "[DONE]"]))), STOP, channel)
        else:
            reply, _, _ = model._whole(Body(json.dumps(value).encode()))
    except (ModelError, retry.Retryable) as error:
        assert "\n" not in str(error)
        return
    except openai_compatible.StreamEndedEarly:
        return
    assert isinstance(reply, ModelReply) and isinstance(reply.text, str)


def llamacpp_at(monkeypatch, stand_in) -> None:
    """The llama.cpp server is `stand_in`, and no other server is set up (nothing listens at Ollama's URL)."""
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")


def llamacpp_lines(listing: str) -> list[str]:
    return [line for line in listing.splitlines() if line.startswith(("✓ llamacpp", "✗ llamacpp"))]


def models_listed(monkeypatch, capsys, stand_in) -> tuple[int, list[str]]:
    import cli
    llamacpp_at(monkeypatch, stand_in)
    code = cli.main(["--models"])
    return code, llamacpp_lines(capsys.readouterr().out)


def test_models_lists_a_long_list_in_part_and_refuses_a_flood(monkeypatch):
    from cli.models import available_models, describe_models

    def listed(stand_in) -> list[str]:
        llamacpp_at(monkeypatch, stand_in)
        # what is read, not how fast: a busy machine can take more than --models' 1 s to send and read 4 MB
        return llamacpp_lines(describe_models(available_models([], probe_seconds=60)))

    with OpenAIStandIn([], models=tuple(f"model-{n:05}" for n in range(20_000))) as stand_in:
        lines = listed(stand_in)
    assert len(lines) == 51 and lines[0].startswith("✓ llamacpp:model-00000")
    assert lines[-1].startswith("✓ llamacpp:…") and lines[-1].endswith("— 19,950 more: the server lists 20,000 models")
    with OpenAIStandIn([], models=tuple(f"model-{n:06}" for n in range(100_000))) as stand_in:
        lines = listed(stand_in)
    assert lines == [f"✗ llamacpp:MODEL  ({stand_in.url}/v1) — {stand_in.url}/v1/models sent more than "
                     "4,000,000 bytes: stopped reading"]


def test_models_does_not_wait_on_a_server_that_drips_its_list(monkeypatch, capsys):
    from hostile_servers import Dripping, seconds_beyond

    with OpenAIStandIn([], models=("a", "b", "c", "d")) as fake, Dripping(fake, interval=0.05) as stand_in:
        # the time beyond the same listing from the server answering at once: --models' own work is not the deadline
        (code, lines), took = seconds_beyond(lambda: models_listed(monkeypatch, capsys, fake),
                                             lambda: models_listed(monkeypatch, capsys, stand_in))
    assert code == 0 and took < 2 and len(lines) == 1 and "did not finish its answer in 1 s" in lines[0]
