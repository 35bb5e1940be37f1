"""A secret is never shown, however a stream splits it: redaction runs over the joined stream, holding back what
could be the start of a secret until the next piece or the end; and a key is looked for in the forms it travels in
(URL-encoded, inside base64), not only as written."""
import base64
import io
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings, strategies as st
from rich.console import Console

from redaction import MASK, StreamRedactor, redacted, secrets
from views.display import LiveDisplay

KEY = "sk-proj/Abc+123_secret-XYZ"


def forms(key: str) -> list[str]:
    return [key, quote(key, safe=""), base64.b64encode(key.encode()).decode().rstrip("=")]


def in_base64(key: str, before: bytes, after: bytes) -> str:
    return base64.b64encode(before + key.encode() + after).decode()


def shown(pieces: list[str]) -> str:
    display = LiveDisplay()
    display.console = Console(file=io.StringIO(), width=10_000, highlight=False, color_system=None)
    for piece in pieces:
        display.stream(piece)
    display.show({"type": "reply", "step": 1, "text": "".join(pieces)})
    return display.console.file.getvalue()


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in zip(points, points[1:])]


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=texts, after=texts, form=st.sampled_from(["plain", "url", "base64"]),
       padding=st.tuples(st.binary(max_size=3), st.binary(max_size=3)), cuts=st.lists(st.integers(0, 500), max_size=30))
def test_a_secret_split_anywhere_across_any_number_of_pieces_is_never_shown(monkeypatch, before, after, form,
                                                                           padding, cuts):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    secret = {"plain": KEY, "url": quote(KEY, safe=""), "base64": in_base64(KEY, *padding)}[form]
    out = shown(split(before + secret + after, cuts))
    assert not any(value in out for value in forms(KEY)) and MASK in out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, cuts=st.lists(st.integers(0, 100), max_size=10))
def test_a_stream_with_no_secret_in_it_is_shown_whole(monkeypatch, text, cuts):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    redactor = StreamRedactor()
    assert "".join(redactor.feed(piece) for piece in split(text, cuts)) + redactor.end() == text


def test_the_secrets_are_worked_out_again_only_when_the_environment_changes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    first = secrets()
    assert secrets() is first  # the same list: not worked out again
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "-rotated")
    assert secrets() is not first and redacted(KEY + "-rotated") == MASK
