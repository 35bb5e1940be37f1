"""No secret is written anywhere: not an API key, not the user and password of a base URL, not even when a server
echoes them back; every URL shown is shown without its user and password."""
import base64
import json
import sys
from urllib.parse import quote

import pytest

import cli
from model_servers import OpenAIStandIn, openai_error
from redaction import redacted, shown_url

KEY = "sk-test-secret-0123456789"
PASSWORD = "s3cretpass"


def written(tmp_path, capsys) -> dict:
    out, err = capsys.readouterr()
    files = {path.name: path.read_text(encoding="utf-8") for path in tmp_path.iterdir() if path.is_file()}
    return {"stdout": out, "stderr": err, **files}


def assert_no_secret(texts: dict):
    for name, text in texts.items():
        for secret in (KEY, PASSWORD, "alice:", "YWxpY2U6czNjcmV0cGFzcw"):  # the last: alice:s3cretpass as Basic auth
            assert secret not in text, (name, secret)


@pytest.fixture
def configured(monkeypatch):
    def start(replies, **options):
        stand_in = OpenAIStandIn(replies, models=("m",), **options).__enter__()
        monkeypatch.setenv("OPENAI_BASE_URL", stand_in.url.replace("http://", f"http://alice:{PASSWORD}@") + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        return stand_in
    return start


def test_a_reply_that_echoes_the_key_and_the_password_leaves_them_in_no_output(tmp_path, capsys, configured):
    echo = f"Thought: I was sent {KEY} with alice:{PASSWORD} (YWxpY2U6czNjcmV0cGFzcw==)\nAnswer: done {KEY}"
    stand_in = configured([echo])
    try:
        code = cli.main(["What?", "--model", "openai:m", "--trace", str(tmp_path / "t.jsonl"),
                         "--html", str(tmp_path / "p.html"), "--json"])
    finally:
        stand_in.__exit__(None, None, None)
    assert code == 0
    assert stand_in.requests[0]["headers"]["Authorization"].startswith("Basic ")  # the URL's user and password, sent
    texts = written(tmp_path, capsys)
    assert_no_secret(texts)
    assert (json.loads(texts["stdout"])["answer"] == "done ***"
            and "***" in texts["t.jsonl"] and "***" in texts["p.html"])


@pytest.mark.parametrize("form", ["as written", "URL-encoded", "in base64"])
def test_a_streamed_reply_that_echoes_the_key_across_events_leaves_it_in_no_output(tmp_path, capsys, configured,
                                                                                   monkeypatch, form):
    """The stand-in streams five characters an event, so the key reaches the terminal in pieces."""
    key = "sk-proj/Abc+123_secret-XYZ"  # a / and a + so that each form differs
    forms = {"as written": key, "URL-encoded": quote(key, safe=""),
             "in base64": base64.b64encode(f"key={key}".encode()).decode()}
    stand_in = configured([f"Thought: I hold {forms[form]}, also {forms[form]}\nAnswer: done"])
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal: the reply is streamed
    try:
        code = cli.main(["What?", "--model", "openai:m", "--trace", str(tmp_path / "t.jsonl"),
                         "--html", str(tmp_path / "p.html")])
    finally:
        stand_in.__exit__(None, None, None)
    assert code == 0 and stand_in.bodies[0]["stream"] is True
    texts = written(tmp_path, capsys)
    for name, text in texts.items():
        assert not any(value in text for value in forms.values()), name
        assert not any(value[:-1] in text for value in forms.values()), name  # nor all but its last character
    assert "***" in texts["stdout"] and "***" in texts["t.jsonl"] and "***" in texts["p.html"]


def test_an_error_that_echoes_the_key_names_the_server_without_its_password(tmp_path, capsys, configured):
    stand_in = configured([openai_error(400, f"bad request from {KEY} at alice:{PASSWORD}")])
    try:
        code = cli.main(["What?", "--model", "openai:m", "--trace", str(tmp_path / "t.jsonl")])
    finally:
        stand_in.__exit__(None, None, None)
    texts = written(tmp_path, capsys)
    assert code != 0 and f"at {stand_in.url}/v1)" in " ".join((texts["stdout"] + texts["stderr"]).split())
    assert_no_secret(texts)


def test_models_shows_each_url_without_its_user_and_password(capsys, configured, monkeypatch):
    stand_in = configured([])
    monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url.replace("http://", f"http://alice:{PASSWORD}@") + "/v1")
    try:
        assert cli.main(["--models"]) == 0
    finally:
        stand_in.__exit__(None, None, None)
    out = capsys.readouterr().out
    assert f"✓ llamacpp:m  ({stand_in.url}/v1)" in out
    assert_no_secret({"stdout": out})


@pytest.mark.parametrize("url, shown", [
    ("http://alice:pw@host:8080/v1", "http://host:8080/v1"), ("https://tok@host/v1", "https://host/v1"),
    ("http://host/v1", "http://host/v1"), ("http://a:b@c@host/v1", "http://host/v1"), ("http://[::1]:80/v1", "http://[::1]:80/v1"),
])
def test_a_url_is_shown_without_its_user_and_password(url, shown):
    assert shown_url(url) == shown


def test_short_values_are_no_secrets_and_long_ones_go_in_every_form(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "test")
    assert redacted("a test run") == "a test run"
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-long-enough-key")
    assert redacted("k=AIza-long-enough-key b'AIza-long-enough-key'") == "k=*** b'***'"


def test_the_headers_spans_are_sent_with_are_secrets_in_every_form(monkeypatch):
    # Langfuse's header: Basic base64(public key:secret key), URL-encoded as OTEL_EXPORTER_OTLP_HEADERS writes it
    basic = base64.b64encode(b"pk-lf-public:sk-lf-0123456789").decode()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Basic%20{basic},x-api-key=phx-key-42")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api_key=another-one-7")
    text = (f"{basic} · Basic {basic} · Basic%20{basic} · sk-lf-0123456789 · pk-lf-public:sk-lf-0123456789 · "
            f"{quote('sk-lf-0123456789')} · phx-key-42 · another-one-7")
    assert redacted(text) == " · ".join(["***"] * 8)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Basic%20not*base64,broken")
    assert redacted("Basic not*base64 was sent, and not*base64") == "*** was sent, and ***"


def test_a_header_that_names_no_credential_is_no_secret(monkeypatch):
    """A dataset's or a tenant's name sent as a header is a word the answers may hold: it is left alone, while the
    credential beside it is blanked."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-honeycomb-team=hc-key-123456,x-honeycomb-dataset=production,"
                                                     "X-Scope-OrgID=default")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-api-token=tok-98765")
    assert redacted("Deploy it to production by default; hc-key-123456 tok-98765") == (
        "Deploy it to production by default; hc-key-123456 ***")  # x-honeycomb-team names no credential either
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-honeycomb-team-key=hc-key-123456")
    assert redacted("hc-key-123456") == "***"


def test_a_tool_result_cut_through_a_key_keeps_no_part_of_it(tmp_path, monkeypatch):
    """A result longer than the trace keeps, with the key across the cut: the key is blanked before the cut, so no
    piece of it is left in the trace."""
    from agent import RECORD_LIMIT, TinyReAct
    from models.scripted import ScriptedModel
    from traces import Trace, read_trace

    key = "AIzaSyD-0123456789abcdefghijklmnopqrst"
    monkeypatch.setenv("GEMINI_API_KEY", key)

    kept = (RECORD_LIMIT - 40) - (RECORD_LIMIT - 40) // 3  # the head a cut keeps (policies/rendering.py's cap)

    def long_page() -> str:
        """A page that holds a key across the point where the trace cuts a result."""
        return "x" * (kept - 10) + key + "y" * RECORD_LIMIT

    agent = TinyReAct(ScriptedModel(["Thought: read\nAction: long_page()", "Thought: done\nAnswer: read"]),
                      tools=[long_page], trace=Trace(str(tmp_path / "t.jsonl")))
    assert agent.query("Read the page.").answer == "read"
    agent.trace.close()
    [observation] = [e["text"] for e in read_trace(str(tmp_path / "t.jsonl")) if e["type"] == "observation"]
    assert key[:8] not in observation and "***" in observation
