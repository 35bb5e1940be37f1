"""A reply that arrived whole, finish reason and all, is the answer even when the server then keeps the stream
open (no [DONE], keep-alive comments, or nothing at all): it is waited on for a moment, not until the deadline.
A stream that never finishes ends at TINYREACT_CALL_DEADLINE, and the terminal says so, as a pipe does."""
import json
import re
import time

import pytest

from model_servers import gemini_response
from models import Message, load_model
from servers import Answer, Loopback

MESSAGES = [Message.of("user", "Question: 2 + 2?")]
DEADLINE = "20"  # far longer than the test may take: the answer must come well before it


class OpenStream(Loopback):
    """Sends the given events, then holds the stream open: `tail` forever (keep-alive comments), or nothing."""

    def __init__(self, events: list[bytes], tail: bytes):
        super().__init__()
        self.events, self.tail = events, tail

    def handle(self, request):
        if self.tail:
            return Answer(200, self.events + [self.tail] * 200, {"Content-Type": "text/event-stream"}, pause=0.2)
        return Answer(200, [b"".join(self.events), b"x"], {"Content-Type": "text/event-stream"}, pause=30)


def openai_events() -> list[bytes]:
    base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"content": "Answer: 4"}, "finish_reason": None}]},
              {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]


def answered(monkeypatch, spec: str, server: OpenStream) -> tuple[str, float]:
    from models.services import openai_compatible

    monkeypatch.setenv("TINYREACT_CALL_DEADLINE", DEADLINE)
    # the grace a complete reply's stream is given to end, shortened: what is tested is that it ends, not its length
    monkeypatch.setattr(openai_compatible, "FINISHED_GRACE", 0.5)
    with server:
        monkeypatch.setenv("LLAMACPP_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        started = time.monotonic()
        reply = load_model(spec).generate(MESSAGES, [], on_text=lambda text: None, on_event=lambda *a, **f: None)
        return reply.text, time.monotonic() - started


def test_an_openai_compatible_stream_kept_open_with_keep_alives_gives_its_answer(monkeypatch):
    text, seconds = answered(monkeypatch, "llamacpp:m", OpenStream(openai_events(), b": keep-alive\n\n"))
    assert text == "Answer: 4" and seconds < 3


def test_an_openai_compatible_stream_kept_open_silently_gives_its_answer(monkeypatch):
    text, seconds = answered(monkeypatch, "llamacpp:m", OpenStream(openai_events(), b""))
    assert text == "Answer: 4" and seconds < 3


def test_a_gemini_stream_kept_open_after_its_finish_reason_gives_its_answer(monkeypatch):
    event = f"data: {json.dumps(gemini_response('Answer: 4'))}\r\n\r\n".encode()
    text, seconds = answered(monkeypatch, "gemini-3.8-flash", OpenStream([event], b""))
    assert text == "Answer: 4" and seconds < 3


class CutThenWhole(Loopback):
    """Cuts its stream in the middle of an event (of a line, or of a UTF-8 character); answers a request made
    without streaming whole, as a server that could not keep its stream going would."""

    def __init__(self, cut_at_character: bool):
        super().__init__()
        self.cut_at_character = cut_at_character

    def handle(self, request):
        if not request["body"].get("stream"):
            return Answer.json(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                     "choices": [{"index": 0, "message": {"role": "assistant",
                                                                          "content": "Answer: café au lait"},
                                                  "finish_reason": "stop"}],
                                     "usage": {"prompt_tokens": 5, "completion_tokens": 5}})
        whole = b"".join(openai_events()).replace(b"Answer: 4", "Answer: café".encode())
        end = whole.index("é".encode()) + 1 if self.cut_at_character else len(whole) - 20
        return Answer(200, [whole[:end]], {"Content-Type": "text/event-stream"})


def test_a_stream_cut_in_the_middle_of_an_event_is_asked_again_whole(monkeypatch):
    for cut_at_character in (False, True):
        with CutThenWhole(cut_at_character) as server:
            monkeypatch.setenv("LLAMACPP_BASE_URL", server.url + "/v1")
            events = []
            reply = load_model("llamacpp:m").generate(MESSAGES, [], on_text=lambda text: None,
                                                      on_event=lambda type, **fields: events.append(fields))
        assert reply.text == "Answer: café au lait"
        assert any("ended in the middle of an event" in event.get("message", "") for event in events)


# ---------------------------------------------------------------- streams that never finish, on a terminal

def on_a_terminal(agent_py, monkeypatch, spec: str, server: OpenStream) -> tuple[int, str]:
    """agent.py SPEC "Q?" with its stdout a terminal (so the reply streams), a call deadline of 0.5 s; the exit code
    and what the person sees."""
    import sys
    monkeypatch.setenv("TINYREACT_CALL_DEADLINE", "0.5")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)  # capsys's own stream, gone with the test
    with server:
        monkeypatch.setenv("LLAMACPP_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        done = agent_py("Q?", "--model", spec)
    return done.returncode, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", done.stdout + done.stderr)  # no styles, no spinner


def test_a_gemini_stream_of_keep_alives_alone_ends_at_the_deadline_and_says_so(agent_py, monkeypatch):
    # A comment line is part of the event stream format (the HTML standard, 9.2.6): servers and proxies send them
    # to keep a connection open. The SDK read one as JSON, and the call ended at once as "not JSON".
    code, shown = on_a_terminal(agent_py, monkeypatch, "gemini-2.5-flash-lite", OpenStream([], b": keep-alive\n\n"))
    assert code == 1 and "did not finish within TINYREACT_CALL_DEADLINE (0.5 s)" in " ".join(shown.split())
    assert "not JSON" not in shown


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_keep_alives_between_and_inside_gemini_events_are_passed_over(gemini, size):
    first = json.dumps({"candidates": [{"content": {"parts": [{"text": "Answer: "}], "role": "model"}, "index": 0}]})
    last = json.dumps(gemini_response("4"))  # the last event: its text, the finish reason and the usage
    body = (f": ping\r\n\r\ndata: {first}\r\n:ping\r\n\r\n:\rdata: {last}\n: ping".encode())  # every line end
    gemini([Answer(200, [body[i:i + size] for i in range(0, len(body), size)], {"Content-Type": "text/event-stream"})])
    shown = []
    reply = load_model("gemini-2.5-flash-lite").generate(MESSAGES, [], on_text=shown.append)
    assert reply.text == "Answer: 4" == "".join(shown) and reply.finish == "stop"


def test_a_stream_that_stops_midway_says_the_deadline_on_a_line_of_its_own(agent_py, monkeypatch):
    started = [openai_events()[0].replace(b"Answer: 4", b"Thought: I will look it up")]  # then nothing, no end
    code, shown = on_a_terminal(agent_py, monkeypatch, "llamacpp:m", OpenStream(started, b""))
    lines = shown.replace("\r", "").splitlines()
    assert code == 1 and "Thought: I will look it up" in lines  # what came is shown, and ended
    assert any(line.startswith("Error: llama.cpp server") for line in lines)
    assert "did not finish within TINYREACT_CALL_DEADLINE (0.5 s)" in " ".join(shown.split())
