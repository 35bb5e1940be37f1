"""--otel as an OTLP/HTTP receiver sees it (FakeOtlp in tests/servers.py decodes the protobuf with opentelemetry-proto):
one trace a question, an invoke_agent span with the model calls and tool calls under it, the GenAI conventions'
attributes beside OpenInference's, what the policy did at each call, cached tokens where the service reported them,
content only when asked, and no key or header value anywhere in the bytes sent. A saved trace goes at its recorded
times; an endpoint that is down costs the run nothing it would notice and one line; without the packages or an
endpoint, --otel is refused in one line."""
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

import cli as agent
from model_servers import GeminiStandIn, gemini_response
from servers import Answer, FakeOtlp
from tokens import TokenCounter
from traces import load_trace
from views.telemetry import CONVENTIONS, question_spans, started

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "AIza-otel-test-secret-5150"
TOKEN = "otlp-bearer-secret-8086"  # the Authorization header's credential, which the endpoint needs and nothing holds
CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
QUESTION = "What is (2 + 3) * 4?"


def cached(text: str, tokens: int) -> dict:
    """A generateContent response of 120 prompt tokens, `tokens` of them served from the service's cache."""
    return gemini_response(text, prompt_tokens=120, cached_tokens=tokens)


REPLIES = ["Thought: 2 + 3 first.\nAction: add_numbers(2, 3)",
           cached("Thought: then times 4.\nAction: multiply_numbers(5, 4)", 96), cached("Answer: 20", 100)]


@pytest.fixture
def endpoint(gemini, monkeypatch, tmp_path):
    """start(replies): the loopback Gemini for the model and a loopback OTLP receiver for the spans, named through the
    environment as a user names them, with a key and an Authorization header that must never be sent as data."""
    receivers = []
    monkeypatch.setattr("cli.loading.ENV_BESIDE_AGENT", tmp_path / ".env")  # no developer's .env

    def start(replies: list) -> tuple[GeminiStandIn, FakeOtlp]:
        otlp = FakeOtlp().__enter__()
        receivers.append(otlp)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{TOKEN}")
        return gemini(replies, key=KEY), otlp
    yield start
    for otlp in receivers:
        otlp.__exit__(None, None, None)


def by_operation(spans: list[dict], operation: str) -> list[dict]:
    return sorted((span for span in spans if span["attributes"]["gen_ai.operation.name"] == operation),
                  key=lambda span: span["start"])


def assert_nothing_secret(otlp: FakeOtlp):
    sent = b"".join(otlp.bodies)
    for secret in (KEY, TOKEN):
        assert secret.encode() not in sent


def test_a_question_is_one_trace_its_model_calls_and_tool_calls_under_its_own_span(endpoint, capsys):
    gemini, otlp = endpoint(REPLIES)
    assert agent.main([QUESTION, "--otel", "-q"]) == 0
    out, err = capsys.readouterr()
    assert out == "20\n"
    assert err == f"--otel: sent 6 spans of 1 question to {otlp.url}/v1/traces\n"
    spans = otlp.spans
    [root] = [span for span in spans if span["parent"] is None]
    assert {span["trace"] for span in spans} == {root["trace"]}
    assert all(span["parent"] == root["id"] for span in spans if span is not root)
    calls, tools = by_operation(spans, "generate_content"), by_operation(spans, "execute_tool")
    assert len(spans) == 1 + len(calls) + len(tools) == 6
    # the spans' times follow the run: call, tool, call, tool, call, all within the question's span
    order = [calls[0], tools[0], calls[1], tools[1], calls[2]]
    assert root["start"] <= order[0]["start"] and order[-1]["end"] <= root["end"]
    assert all(a["start"] <= a["end"] <= b["start"] for a, b in zip(order, order[1:]))
    assert [span["kind"] for span in (root, calls[0], tools[0])] == [1, 3, 1]  # INTERNAL, CLIENT, INTERNAL
    assert root["name"] == "invoke_agent TinyReAct"
    assert root["attributes"] | {"gen_ai.conversation.id": "", "session.id": ""} == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "gcp.gemini", "gen_ai.agent.name": "TinyReAct",
        "openinference.span.kind": "AGENT", "tinyreact.model": "gemini-flash-latest", "tinyreact.backend": "gemini",
        "tinyreact.stop_reason": "answer", "tinyreact.question": 1, "tinyreact.steps": 2, "tinyreact.model_calls": 3,
        "tinyreact.usage.input_tokens": 340, "tinyreact.usage.output_tokens": 30, "tinyreact.usage.cached_tokens": 196,
        "tinyreact.policy": "full", "tinyreact.cost.usd": root["attributes"]["tinyreact.cost.usd"],
        "gen_ai.conversation.id": "", "session.id": ""}
    assert root["attributes"]["gen_ai.conversation.id"] == root["attributes"]["session.id"] != ""
    assert root["attributes"]["tinyreact.cost.usd"] > 0
    first = calls[0]["attributes"]
    assert calls[0]["name"] == "generate_content gemini-flash-latest"
    assert (first["gen_ai.provider.name"], first["gen_ai.request.model"], first["gen_ai.response.model"],
            first["llm.model_name"], first["llm.provider"], first["openinference.span.kind"]) == (
        "gcp.gemini", "gemini-flash-latest", "gemini-3.8-flash", "gemini-3.8-flash", "google", "LLM")
    assert first["gen_ai.response.finish_reasons"] == ("stop",)
    # the tokens each call reported, cached ones only where the service said so, in both conventions' names
    reported = {"gen_ai.usage.input_tokens": [100, 120, 120], "llm.token_count.prompt": [100, 120, 120],
                "gen_ai.usage.output_tokens": [10, 10, 10], "llm.token_count.completion": [10, 10, 10],
                "gen_ai.usage.cache_read.input_tokens": [None, 96, 100],
                "llm.token_count.prompt_details.cache_read": [None, 96, 100]}
    assert {name: [call["attributes"].get(name) for call in calls] for name in reported} == reported
    # what the policy did: its name and the context's tokens by kind, as the trace's context events say
    assert first["tinyreact.policy"] == "full"
    buckets = {name: value for name, value in first.items() if name.startswith("tinyreact.context.tokens.")}
    assert set(buckets) >= {"tinyreact.context.tokens.instructions", "tinyreact.context.tokens.user"}
    assert sum(buckets.values()) == first["tinyreact.context.tokens"] > 0
    assert (calls[2]["attributes"]["tinyreact.context.added"], calls[2]["attributes"]["tinyreact.context.dropped"]) \
        == (2, 0)  # the step before (its reply and observation), nothing dropped under full
    assert [tool["name"] for tool in tools] == ["execute_tool add_numbers", "execute_tool multiply_numbers"]
    assert tools[0]["attributes"] == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add_numbers",
                                      "gen_ai.tool.type": "function", "openinference.span.kind": "TOOL",
                                      "tool.name": "add_numbers", "tinyreact.step": 1}
    assert not [name for span in spans for name in span["attributes"]  # no content unless asked for
                if name.startswith(("input.", "output.", "gen_ai.input", "gen_ai.output", "llm.input_messages",
                                    "llm.output_messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"))]
    assert root["resource"]["service.name"] == "tinyreact"
    assert root["schema"] == f"https://opentelemetry.io/schemas/{CONVENTIONS}"
    assert otlp.requests[0]["headers"]["authorization"] == f"Bearer {TOKEN}"  # sent as the header it is, only
    assert_nothing_secret(otlp)


def test_a_chat_is_a_trace_a_question_with_what_the_policy_dropped_and_the_content_asked_for(endpoint, monkeypatch,
                                                                                             capsys):
    gemini, otlp = endpoint(REPLIES + [f"Answer: it is still 20 (my key is {KEY}, the header {TOKEN})"])
    monkeypatch.setenv(CONTENT, "true")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "my-agents")
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{QUESTION}\nAnd now?\n"))
    assert agent.main(["--chat", "--policy", "window:1", "--otel", "-q"]) == 0
    assert capsys.readouterr().err.endswith("--otel: sent 8 spans of 2 questions to " + otlp.url + "/v1/traces\n")
    spans = otlp.spans
    roots = sorted((span for span in spans if span["parent"] is None), key=lambda span: span["start"])
    assert len(roots) == 2 and roots[0]["trace"] != roots[1]["trace"]
    assert roots[0]["attributes"]["gen_ai.conversation.id"] == roots[1]["attributes"]["gen_ai.conversation.id"]
    assert [root["attributes"]["tinyreact.question"] for root in roots] == [1, 2]
    assert (roots[0]["attributes"]["input.value"], roots[0]["attributes"]["output.value"]) == (QUESTION, "20")
    assert roots[1]["attributes"]["output.value"] == "it is still 20 (my key is ***, the header ***)"
    calls = by_operation(spans, "generate_content")
    # window:1 keeps the last step: the third call no longer shows the first step's reply and observation
    third = calls[2]["attributes"]
    assert (third["tinyreact.policy"], third["tinyreact.context.dropped"]) == ("window:1", 2)
    assert third["tinyreact.context.dropped_tokens"] > 0
    shown = json.loads(third["gen_ai.input.messages"])
    assert shown[0]["role"] == "system" and third["llm.input_messages.0.message.role"] == "system"
    assert QUESTION in third["llm.input_messages.1.message.content"]
    assert "add_numbers(2, 3)" not in third["input.value"]  # dropped, as the policy says
    assert json.loads(calls[0]["attributes"]["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "stop", "parts": [
            {"type": "text", "content": "Thought: 2 + 3 first.\nAction: add_numbers(2, 3)"}]}]
    tool = by_operation(spans, "execute_tool")[0]["attributes"]
    assert (tool["gen_ai.tool.call.arguments"], tool["gen_ai.tool.call.result"], tool["output.value"]) == (
        "add_numbers(2, 3)", "5", "5")
    assert roots[0]["resource"]["service.name"] == "my-agents"
    assert_nothing_secret(otlp)


def test_a_saved_trace_is_sent_at_the_times_it_recorded(endpoint, capsys):
    gemini, otlp = endpoint([])
    path = os.path.join(ROOT, "conversations", "superbowl.jsonl")
    assert agent.main(["--from", path, "--otel"]) == 0
    assert capsys.readouterr().err == f"--otel: sent 14 spans of 1 question to {otlp.url}/v1/traces\n"
    recorded = load_trace(path)
    origin = started(recorded.header)
    [root] = [span for span in otlp.spans if span["parent"] is None]
    assert root["start"] == round((origin + recorded.events[1]["t"]) * 1e9)  # from the question
    assert root["end"] == round((origin + recorded.events[-1]["t"]) * 1e9)  # to its stop
    tools = sorted(by_operation(otlp.spans, "execute_tool"), key=lambda span: span["attributes"]["tinyreact.step"])
    assert [span["attributes"]["gen_ai.tool.name"] for span in tools] == [
        "search_wikipedia_page", "wikipedia_summary", "wikipedia_coordinates", "get_temperature",
        "multiply_numbers", "add_numbers"]
    assert all(root["start"] <= span["start"] <= span["end"] <= root["end"] for span in otlp.spans)


def test_a_saved_trace_sent_twice_is_the_same_trace_not_a_copy(endpoint, monkeypatch, tmp_path):
    """The ids are made from the saved trace's content: a viewer (Phoenix keeps a span whose id it has) shows one
    trace, not two. Another trace, even one differing in a single answer, has ids of its own."""
    gemini, otlp = endpoint([])
    path = os.path.join(ROOT, "conversations", "short.jsonl")
    ids, sessions = [], []
    for _ in range(2):
        assert agent.main(["--from", path, "--otel"]) == 0
        ids.append(sorted((span["trace"], span["id"], span["parent"] or "") for span in otlp.spans))
        sessions.append({span["attributes"]["session.id"] for span in otlp.spans if "session.id" in span["attributes"]})
        otlp.bodies.clear()
    assert ids[0] == ids[1] and len(ids[0]) == len(set(ids[0])) > 1
    assert len({trace for trace, _, _ in ids[0]}) > 1  # a trace a question
    assert sessions[0] == sessions[1] and len(sessions[0]) == 1  # one chat, as the viewer groups it
    changed = tmp_path / "changed.jsonl"
    with open(path, encoding="utf-8") as file:
        changed.write_text(file.read().replace('"answer": "', '"answer": "(changed) ', 1), encoding="utf-8")
    assert agent.main(["--from", str(changed), "--otel"]) == 0
    assert not {id for _, id, _ in ids[0]} & {span["id"] for span in otlp.spans}


def test_every_question_of_a_saved_chat_is_sent(endpoint, capsys):
    """A saved trace of several questions: each is its own trace (the first alone was sent, the others lost to an
    error said as spans that could not be made)."""
    gemini, otlp = endpoint([])
    path = os.path.join(ROOT, "conversations", "short.jsonl")
    asked = sum(event["type"] == "question" for event in load_trace(path).events)
    assert agent.main(["--from", path, "--otel"]) == 0
    err = capsys.readouterr().err
    assert "could not be made" not in err and f" of {asked} questions to " in err
    assert len([span for span in otlp.spans if span["parent"] is None]) == asked > 1


def test_an_odd_saved_trace_is_sent_without_what_it_holds_oddly_and_a_damaged_one_is_one_line(endpoint, monkeypatch,
                                                                                                tmp_path, capsys):
    gemini, otlp = endpoint([])
    monkeypatch.setenv(CONTENT, "span_only")
    header, *events = [json.loads(line) for line in open(os.path.join(ROOT, "conversations", "superbowl.jsonl"))]
    header |= {"model": {"a": "table"}, "backend": 7}  # no reader checks these: a hand-made file may hold anything
    context = next(event for event in events if event["type"] == "context")
    context["tokens"] |= {"Weird Key!": 3, "huge": 10 ** 15}
    observation = next(event for event in events if event["type"] == "observation")
    observation["text"] += f" (the endpoint's token, {TOKEN}, written before it was one)"
    events.insert(3, {"type": "from_a_newer_writer", "t": 0.001, "payload": [1, 2]})
    odd = tmp_path / "odd.jsonl"
    odd.write_text("".join(json.dumps(record) + "\n" for record in [header, *events]))
    assert agent.main(["--from", str(odd), "--otel"]) == 0
    spans = otlp.spans
    assert len(spans) == 14 and {span["attributes"].get("gen_ai.request.model") for span in spans} == {None, "unknown"}
    first = min(by_operation(spans, "chat"), key=lambda span: span["start"])["attributes"]
    assert first["tinyreact.context.tokens.huge"] == 10 ** 15 and "tinyreact.context.tokens.Weird Key!" not in first
    assert "***" in by_operation(spans, "execute_tool")[0]["attributes"]["gen_ai.tool.call.result"]
    assert_nothing_secret(otlp)
    capsys.readouterr()
    (tmp_path / "damaged.jsonl").write_text("not a trace\n")
    assert agent.main(["--from", str(tmp_path / "damaged.jsonl"), "--otel"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    # a time no clock gives, on an event type no reader knows: refused when the file is read, as on a known one
    for forged in (1e308, 10 ** 400):
        events[3]["t"] = forged
        odd.write_text("".join(json.dumps(record) + "\n" for record in [header, *events]))
        for mode in (["--otel"], ["--html", str(tmp_path / "page.html")]):
            assert agent.main(["--from", str(odd), *mode]) == 2
            err = capsys.readouterr().err
            assert "t must be a number of seconds" in err and err.count("\n") == 1


def test_a_comparison_and_a_recording_send_a_trace_a_question(endpoint, tmp_path, capsys):
    gemini, otlp = endpoint(["Answer: 4", "Answer: 4"])
    assert agent.main(["What is 2 + 2?", "--compare", "full,window:2", "--otel", "--json"]) == 0
    roots = [span for span in otlp.spans if span["parent"] is None]
    assert sorted(root["attributes"]["tinyreact.policy"] for root in roots) == ["full", "window:2"]
    assert len({root["trace"] for root in roots}) == 2
    otlp.bodies.clear()
    script = shutil.copy(os.path.join(ROOT, "conversations", "short.script.json"), tmp_path)
    assert agent.main(["--record", script, "--otel"]) == 0
    roots = [span for span in otlp.spans if span["parent"] is None]
    assert len(roots) == 8 and {root["attributes"]["gen_ai.provider.name"] for root in roots} == {"scripted"}
    assert capsys.readouterr().err.endswith(f"--otel: sent {len(otlp.spans)} spans of 8 questions to "
                                            f"{otlp.url}/v1/traces\n")
    otlp.bodies.clear()  # recorded into a device, which cannot be read back: the spans go as the turns are played
    assert agent.main(["--record", script, "--trace", os.devnull, "--otel"]) == 0
    assert len([span for span in otlp.spans if span["parent"] is None]) == 8


def test_a_question_cut_short_is_sent_when_the_run_ends_marked_interrupted(endpoint):
    gemini, otlp = endpoint([])
    from views.otlp import OtlpExport

    events = load_trace(os.path.join(ROOT, "conversations", "superbowl.jsonl")).events
    second = [index for index, event in enumerate(events) if event["type"] == "context"][1]
    export = OtlpExport(TokenCounter().count)
    follow = export.follow({"model": "m", "backend": "openai"})
    for event in events[:second + 1] + [{"type": "error", "message": "interrupted", "t": events[second]["t"]}]:
        follow(event)  # Ctrl-C during the second model call, as cli/ask.py records it
    assert otlp.bodies == [] and export.close() is None
    spans = otlp.spans
    assert sorted((span["name"], span["status"], span["attributes"].get("error.type")) for span in spans) == [
        ("chat m", 0, None), ("chat m", 2, "interrupted"), ("execute_tool search_wikipedia_page", 0, None),
        ("invoke_agent TinyReAct", 2, "interrupted")]  # status 2: ERROR


def closed_port() -> int:
    """A loopback port nothing listens on: a connection to it is refused at once, as an endpoint that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_endpoint_that_is_down_costs_the_run_no_noticeable_time_and_one_line_at_the_end(endpoint, monkeypatch,
                                                                                            capsys):
    gemini, otlp = endpoint(REPLIES * 2)
    down = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", down)
    started_at = time.monotonic()
    assert agent.main([QUESTION, "-q"]) == 0
    plain = time.monotonic() - started_at
    capsys.readouterr()
    started_at = time.monotonic()
    assert agent.main([QUESTION, "-q", "--otel"]) == 0
    exported = time.monotonic() - started_at
    out, err = capsys.readouterr()
    assert out == "20\n"
    assert err == (f"warning: --otel: 6 of 6 spans were not sent to {down}/v1/traces (connection refused); the run "
                   "itself is not affected\n")
    assert exported - plain < 1.0, (plain, exported)


def test_what_a_user_sees_when_the_endpoint_is_down_is_the_answer_and_one_line(endpoint):
    """As a user runs it, to its exit: nothing the SDK logs, from any thread, reaches the terminal."""
    gemini, otlp = endpoint(REPLIES)
    down = f"http://127.0.0.1:{closed_port()}"
    environment = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    environment |= {"OTEL_EXPORTER_OTLP_ENDPOINT": down, "NO_PROXY": "127.0.0.1"}
    done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), QUESTION, "-q", "--otel"],
                          capture_output=True, text=True, env=environment, timeout=60, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (0, "20\n")
    assert done.stderr == (f"warning: --otel: 6 of 6 spans were not sent to {down}/v1/traces (connection refused); "
                           "the run itself is not affected\n")


def test_without_the_packages_otel_says_what_to_install_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)  # not installed
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    assert agent.main(["What is 2 + 2?", "--otel"]) == 2
    assert capsys.readouterr().err == ("error: --otel needs the OpenTelemetry SDK and its OTLP/HTTP exporter: "
                                       "pip install -r requirements-otel.txt\n")


def test_without_an_endpoint_otel_names_the_variable_to_set(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr("cli.loading.ENV_BESIDE_AGENT", tmp_path / ".env")
    assert agent.main(["--from", os.path.join(ROOT, "conversations", "short.jsonl"), "--otel"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --otel sends the run's spans to an OTLP/HTTP endpoint: set "
                          "OTEL_EXPORTER_OTLP_ENDPOINT") and err.count("\n") == 1


def test_each_backend_names_its_operation_and_provider_as_the_conventions_do():
    events = load_trace(os.path.join(ROOT, "conversations", "short.jsonl")).events
    names = {}
    for backend in ("openai", "gemini", "ollama", "local"):
        spans = question_spans({"model": "m", "backend": backend}, events, 1, TokenCounter().count)
        call = next(span for span in spans if span.attributes.get("openinference.span.kind") == "LLM")
        names[backend] = (call.name, call.attributes["gen_ai.provider.name"], call.client)
    assert names == {"openai": ("chat m", "openai", True), "gemini": ("generate_content m", "gcp.gemini", True),
                     "ollama": ("chat m", "ollama", True), "local": ("chat m", "local", False)}


def test_every_gen_ai_attribute_sent_is_one_the_conventions_name():
    """The names are checked against the semantic conventions package the SDK installs (its GenAI attributes are
    those of v1.41.0, the release docs/telemetry.md cites), so a misspelt one cannot go unnoticed."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

    known = {value for name, value in vars(gen_ai_attributes).items() if name.startswith("GEN_AI_")}
    events = load_trace(os.path.join(ROOT, "conversations", "superbowl.jsonl")).events
    spans = question_spans({"model": "m", "backend": "gemini"}, events, 1, TokenCounter().count, content=True,
                           conversation="c")
    sent = {name for span in spans for name in span.attributes if name.startswith("gen_ai.")}
    assert sent - known == set()
    assert {"gen_ai.usage.input_tokens", "gen_ai.tool.name", "gen_ai.input.messages"} <= sent


def test_after_a_reset_a_call_is_not_compared_with_the_session_before():
    """A chat's /reset starts a new session: its first call dropped nothing, though the call before it showed more."""
    from agent import TinyReAct
    from models.scripted import ScriptedModel
    from tokens import local_counter

    agent_ = TinyReAct(ScriptedModel(["Thought: a\nAnswer: 1", "Thought: b\nAnswer: 2", "Thought: c\nAnswer: 3"]))
    agent_.query("First question here?")
    agent_.query("Second question here?")
    agent_.reset()
    agent_.query("Third question?")
    dropped = [[span.attributes["tinyreact.context.dropped"] for span in spans
                if "tinyreact.context.dropped" in span.attributes]
               for spans in (question_spans({}, agent_.trace.events, first, local_counter().count)
                             for first, event in enumerate(agent_.trace.events) if event["type"] == "question")]
    assert dropped == [[0], [0], [0]]


def test_spans_the_sampler_does_not_record_are_said_apart_not_as_lost(endpoint, monkeypatch, capsys):
    """OTEL_TRACES_SAMPLER=always_off: nothing is sent, and the line says the sampler chose that, not that the
    endpoint failed."""
    gemini, otlp = endpoint(REPLIES)
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    assert agent.main([QUESTION, "-q", "--otel"]) == 0
    out, err = capsys.readouterr()
    assert out == "20\n" and otlp.spans == []
    assert err == ("warning: --otel: none of the 6 spans was recorded (OTEL_TRACES_SAMPLER or OTEL_SDK_DISABLED says "
                   "so): none was sent\n")


class Redirecting(FakeOtlp):
    """An endpoint that answers every export with 307, to itself or elsewhere: it takes no span."""

    def __init__(self, to: str | None = None):
        super().__init__()
        self.to = to

    def handle(self, request):
        self.bodies.append(b"")
        return Answer(307, [b""], {"Location": self.to or f"{self.url}/v1/traces"})


@pytest.mark.parametrize("elsewhere", [False, True])
def test_an_endpoint_that_only_redirects_is_not_counted_as_sent(endpoint, monkeypatch, capsys, elsewhere):
    """The exporter counts any status below 400 as sent; a redirect delivers nothing, so it is not followed and the
    spans are said as not sent."""
    gemini, otlp = endpoint(REPLIES)
    with Redirecting(otlp.url + "/v1/traces" if elsewhere else None) as redirecting:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", redirecting.url)
        assert agent.main([QUESTION, "-q", "--otel"]) == 0
    out, err = capsys.readouterr()
    assert out == "20\n" and not otlp.bodies  # not followed, even to a real receiver
    assert err == (f"warning: --otel: 6 of 6 spans were not sent to {redirecting.url}/v1/traces (the endpoint "
                   "answered with a redirect, which is not followed: name the endpoint it points to); the run itself "
                   "is not affected\n")
