"""Ollama's side doors, /api/ps and /api/show, asked for the context a model runs with: read through the same
bounded reader as the model list, with a size cap and a deadline for the whole answer, and anything they send that
is not a sensible answer leaves Ollama's default (4,096) in force, never a crash or a hang."""
import json
import time

import pytest

from models import load_model
from servers import Answer, Loopback

DEFAULT = 4096


class Ollama(Loopback):
    """Answers /api/ps and /api/show with whatever the test gives: an Answer each."""

    def __init__(self, ps: Answer, show: Answer | None = None):
        super().__init__()
        self.ps, self.show = ps, show or Answer(404, [b"not found"])

    def handle(self, request):
        return self.ps if request["path"] == "/api/ps" else self.show


def window_of(monkeypatch, ps: Answer, show: Answer | None = None) -> tuple[int, float]:
    with Ollama(ps, show) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)
        started = time.monotonic()
        window = load_model("ollama:m").window
        return window, time.monotonic() - started


def test_a_loaded_model_s_context_is_read(monkeypatch):
    assert window_of(monkeypatch, Answer.json(200, {"models": [{"name": "m", "context_length": 8192}]}))[0] == 8192


def test_a_modelfile_s_num_ctx_is_read_and_zero_is_no_context(monkeypatch):
    empty = Answer.json(200, {"models": []})
    assert window_of(monkeypatch, empty, Answer.json(200, {"parameters": "num_ctx 16384\nstop x"}))[0] == 16384
    assert window_of(monkeypatch, empty, Answer.json(200, {"parameters": "num_ctx 0"}))[0] == DEFAULT
    assert window_of(monkeypatch, empty, Answer.json(200, {"parameters": "num_ctx " + "9" * 5000}))[0] == DEFAULT
    # superscript digits are digits to str.isdigit, not to int()
    assert window_of(monkeypatch, empty, Answer.json(200, {"parameters": "num_ctx \u00b9\u00b2"}))[0] == DEFAULT


def test_a_flood_is_cut_short(monkeypatch):
    # 40 MB of a model list: read whole, as before, it took gigabytes of memory in json
    flood = Answer(200, [b'{"models": [' + b'{"name": "x"},' * 2_000_000 + b'{}]}'])
    window, seconds = window_of(monkeypatch, flood)
    assert window == DEFAULT and seconds < 5


def test_a_drip_is_given_up_at_the_deadline(monkeypatch):
    drip = Answer(200, [b"{"] + [b" "] * 100, {"Content-Length": "101"}, pause=0.1)  # ten seconds in all
    window, seconds = window_of(monkeypatch, drip)
    assert window == DEFAULT and seconds < 4


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b'{"models": NaN}', b"\xff\xfe", b"[1, 2]",
                                  b'{"models": [1, "x", null]}', b'{"models": [{"name": "m", "context_length": -1}]}'])
def test_what_is_not_an_answer_leaves_the_default(monkeypatch, body):
    assert window_of(monkeypatch, Answer(200, [body]), Answer(200, [body]))[0] == DEFAULT


def test_a_nested_show_answer_leaves_the_default(monkeypatch):
    nested = json.dumps({"parameters": {"num_ctx": 5}}).encode()
    assert window_of(monkeypatch, Answer.json(200, {}), Answer(200, [nested]))[0] == DEFAULT
