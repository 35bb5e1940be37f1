"""The native protocol against the services' stand-ins, with the real client code: OpenAI-compatible tools and
tool_calls (whole, parallel, streamed in pieces), the failures users hit (arguments sent as an object, no id,
null content beside the calls, an unknown finish reason), and histories the stand-in checks as the service does."""
import json

import pytest

from agent import TinyReAct
from models import load_model
from policies import make_policy
from protocols import NativeProtocol
from results import StopReason
from tools.arithmetic import add_numbers, multiply_numbers
from tools.calculator import calculate
from tools.schema import tool_schema
from model_servers import (Answer, OpenAIStandIn, completion, gemini_calls, gemini_response, ollama_answer, sse,
                           tool_completion)
from test_openai_compatible import KEY, openai_model, server  # noqa: F401  (server: a fixture)

TOOLS = [add_numbers, multiply_numbers, calculate]


@pytest.fixture
def openai(server, monkeypatch):
    """Starts the OpenAI stand-in (test_openai_compatible's `server`); gives it and the model pointed at it. (In this
    file it stands for conftest's `openai`, which gives the stand-in alone.)"""
    def start(replies, **options):
        stand_in = server(replies, key=KEY, **options)
        return stand_in, openai_model(monkeypatch, stand_in)
    return start


@pytest.fixture
def gemini3(gemini):
    """Starts the Gemini stand-in (conftest's `gemini`); gives it and a Gemini 3 model (or `name`) pointed at it."""
    def start(replies, name="gemini-3-flash-preview"):
        return gemini(replies), load_model(name)
    return start


def observations(agent):
    return [(e.get("id"), e["text"]) for e in agent.trace.events if e["type"] == "observation"]


@pytest.mark.parametrize("stream", [False, True])
def test_the_first_question_through_parallel_calls_whole_and_streamed(openai, stream):
    stand_in, model = openai([tool_completion(("multiply_numbers", '{"x": 7, "y": 6}'),
                                              ("add_numbers", '{"x": 0.5, "y": 0.5}'), text="Two sums first."),
                              tool_completion(("calculate", '{"expression": "42 + 5"}')), "47"])
    shown = []
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=shown.append if stream else None)
    result = agent.query("What is 7 * 6 + 5?")
    assert (result.answer, result.stop_reason) == ("47", StopReason.ANSWER)
    assert observations(agent) == [("call_1", "42"), ("call_2", "1"), ("call_1", "47")]
    first, second, third = stand_in.bodies
    assert first["tools"] == [{"type": "function", "function": tool_schema(tool)} for tool in TOOLS]
    assert "stop" not in first and first["stream"] is stream
    assert second["messages"][-3:] == [
        {"role": "assistant", "content": "Two sums first.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "multiply_numbers", "arguments": '{"x": 7, "y": 6}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "add_numbers", "arguments": '{"x": 0.5, "y": 0.5}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {"role": "tool", "tool_call_id": "call_2", "content": "1"}]
    assert third["messages"][-2]["tool_calls"][0]["function"]["name"] == "calculate"
    if stream:
        assert "".join(shown).startswith("Two sums first.")


def test_arguments_as_an_object_no_id_and_null_content_are_read_as_a_service_sends_them(openai):
    stand_in, model = openai([tool_completion(("add_numbers", {"x": 2, "y": 3}), ids=False), "5"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol())
    assert agent.query("2 + 3?").answer == "5"
    assert observations(agent) == [("call_1", "5")]  # an id made where the service gave none, sent back with it
    assert stand_in.bodies[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}


def test_an_unknown_finish_reason_beside_text_is_an_answer_and_a_cut_one_is_not(openai):
    _, model = openai([completion("Paris", finish="some_new_reason"), completion("Par", finish="length")])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol())
    assert agent.query("Capital of France?").answer == "Paris"
    assert agent.query("And again?").stop_reason is StopReason.CUT


@pytest.mark.parametrize("policy", ["window:0", "window:1", "elide:0", "retrieve:1", "budget:400", "facts"])
def test_every_history_a_policy_sends_is_one_the_service_accepts(openai, policy):
    replies = [tool_completion(("add_numbers", '{"x": 1, "y": 2}'), ("add_numbers", '{"x": 3, "y": 4}')),
               tool_completion(("multiply_numbers", '{"x": 3, "y": 7}')), "21",
               tool_completion(("calculate", '{"expression": "2 ** 10"}')), "1024"]
    stand_in, model = openai(replies)
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), policy=make_policy(policy))
    assert agent.query("What is (1 + 2) * (3 + 4)?").answer == "21"
    assert agent.query("What is 2 to the 10th?").answer == "1024"  # a 400 for a split pair would end it in an error
    assert len(stand_in.bodies) == 5


def test_the_stand_in_refuses_a_split_pair_as_the_service_does(openai):
    stand_in, model = openai([])
    from models import Message, Part, ToolCall
    call = ToolCall("call_9", "add_numbers", "{}")
    orphan = [Message("system", (Part("instructions", "x"),)), Message("user", (Part("question", "q"),)),
              Message("user", (Part("observation", "Observation1: 3", call=call, said="3"),))]
    with pytest.raises(Exception, match="must be a response to a preceding message with 'tool_calls'"):
        model.generate(orphan, [], tools=[tool_schema(add_numbers)])
    json.dumps(stand_in.requests[-1]["body"])  # what was sent is JSON, whatever was in it


def test_the_command_line_runs_native_records_a_trace_that_replays_and_refuses_a_model_that_cannot(
        openai, capsys, tmp_path):
    import cli

    stand_in, _ = openai([tool_completion(("calculate", '{"expression": "7 * 6 + 5"}')), "47"])
    trace = tmp_path / "native.jsonl"
    assert cli.main(["What is 7 * 6 + 5?", "--protocol", "native", "--model", "openai:qwen3:8b", "--trace",
                     str(trace), "--no-stream", "--show-context", "full"]) == 0
    out = capsys.readouterr().out
    assert 'Action1: calculate({"expression": "7 * 6 + 5"})' in out and "Answer: 47" in out
    tools = len(__import__("tools").DEFAULT_TOOLS)  # however many the defaults hold
    assert f"[tools · {tools} tool schemas, sent beside the messages ·" in out  # what --show-context shows of them
    assert stand_in.bodies[0]["tools"][0]["function"]["name"] == "add_numbers"
    assert cli.main(["--replay", str(trace), "--policies", "full,window:0,elide:0"]) == 0
    assert "violations" not in capsys.readouterr().err
    class TextOnly:  # as the embedded Gemma: its chat template has no tools
        name, backend, usage_source, window, temperature = "gemma-3-270m", "local", "test", None, 0.0

    assert cli.main(["hi", "--protocol", "native", "--trace", str(trace)], model=TextOnly()) == 2
    assert capsys.readouterr().err.startswith("error: gemma-3-270m cannot call tools natively here: use "
                                              "--protocol text with it")
    assert cli.main(["--replay", str(trace)]) == 0  # the trace of the run before is left whole


def test_show_prompt_shows_the_native_instructions_and_the_schemas_sent_beside_them(capsys):
    import cli

    assert cli.main(["--show-prompt", "--protocol", "native", "--model", "openai:any"]) == 0
    out = capsys.readouterr().out
    defaults = __import__("tools").DEFAULT_TOOLS
    assert f"Tools, sent beside the messages as {len(defaults)} tool schemas:" in out
    assert json.loads(out[out.index("["):]) == [tool_schema(tool) for tool in defaults]


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_3_gets_its_signed_calls_back_unchanged_and_answers(gemini3, stream):
    stand_in, model = gemini3([gemini_calls(("multiply_numbers", {"x": 7, "y": 6}), ("add_numbers", {"x": 1, "y": 1}),
                                           text="Both."),
                              gemini_calls(("calculate", {"expression": "42 + 5"})), "47"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append if stream else None)
    result = agent.query("What is 7 * 6 + 5?")
    assert (result.answer, result.stop_reason) == ("47", StopReason.ANSWER), agent.trace.events[-3:]
    assert observations(agent) == [("call_1", "42"), ("call_2", "2"), ("call_1", "47")]
    first, second, third = stand_in.bodies
    declared = first["tools"][0]["functionDeclarations"]
    # The SDK writes the field in snake case, which the API's JSON (proto3's) accepts as it accepts camel case
    assert [(d["name"], d.get("parametersJsonSchema", d.get("parameters_json_schema"))) for d in declared] == [
        (tool.__name__, tool_schema(tool)["parameters"]) for tool in TOOLS]
    model_turn, results = second["contents"][-2:]
    assert model_turn["parts"][1]["thoughtSignature"] and model_turn["parts"][0] == {"text": "Both."}
    assert results == {"role": "user", "parts": [
        {"functionResponse": {"name": "multiply_numbers", "response": {"result": "42"}}},
        {"functionResponse": {"name": "add_numbers", "response": {"result": "2"}}}]}
    assert len(third["contents"]) == 5


def test_gemini_3_refuses_a_call_sent_back_without_its_signature_as_the_service_does(gemini3):
    """The rule the stand-in enforces is the service's: a trace recorded elsewhere (no native parts) is sent as
    rebuilt calls, which Gemini 3 refuses in one line; Gemini 2.5 takes them."""
    from models import Message, Part, ToolCall

    call = ToolCall("call_1", "add_numbers", '{"x": 1, "y": 2}')
    history = [Message("system", (Part("instructions", "x"),)), Message("user", (Part("question", "Q: 1 + 2?"),)),
               Message("model", (Part("reply", "", calls=(call,), said=""),)),
               Message("user", (Part("observation", "Observation1: 3", call=call, said="3"),))]
    _, model = gemini3([])
    with pytest.raises(Exception, match="Function call is missing a thought_signature"):
        model.generate(history, [], tools=[tool_schema(add_numbers)])
    _, older = gemini3(["3"], name="gemini-2.5-flash-lite")
    assert older.generate(history, [], tools=[tool_schema(add_numbers)]).text == "3"


def test_a_malformed_function_call_finish_is_a_reply_the_model_is_told_of(gemini3):
    _, model = gemini3([gemini_response("", finish="MALFORMED_FUNCTION_CALL"), "done"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol())
    assert agent.query("go").answer == "done"
    assert "MALFORMED_FUNCTION_CALL" in observations(agent)[0][1]


def test_llama_cpp_takes_tools_through_its_openai_compatible_endpoint(monkeypatch):
    """llama.cpp's server documents tools on /v1/chat/completions (with --jinja: tools/server/README.md)."""
    replies = [tool_completion(("calculate", {"expression": "7 * 6 + 5"})), "47"]
    with OpenAIStandIn(replies, models=("qwen3:8b",)) as stand_in:
        monkeypatch.setenv("LLAMACPP_BASE_URL", stand_in.url + "/v1")
        agent = TinyReAct(load_model("llamacpp:qwen3:8b"), tools=TOOLS, protocol=NativeProtocol(), on_text=[].append)
        assert agent.query("What is 7 * 6 + 5?").answer == "47"
        assert observations(agent) == [("call_1", "47")]
        assert stand_in.bodies[0]["tools"] and stand_in.bodies[1]["messages"][-1]["role"] == "tool"


@pytest.fixture
def ollama(monkeypatch):
    """Starts the Ollama stand-in (its /api/chat and its /v1) and gives it and `ollama:qwen3:8b` pointed at it."""
    started = []

    def start(replies, **options):
        stand_in = OpenAIStandIn(replies, models=("qwen3:8b",), **options).__enter__()
        started.append(stand_in)
        monkeypatch.setenv("OLLAMA_HOST", stand_in.url)
        return stand_in, load_model("ollama:qwen3:8b")
    yield start
    for stand_in in started:
        stand_in.__exit__(None, None, None)


def api_chat_bodies(stand_in) -> list[dict]:
    return [request["body"] for request in stand_in.requests if request["path"] == "/api/chat"]


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_calls_tools_through_its_own_api_chat_and_gets_each_result_by_tool_name(ollama, stream):
    """Ollama's tool calling is documented on /api/chat: arguments as an object and no id in either direction, each
    result a `tool` message naming its tool, in the calls' order (docs.ollama.com/capabilities/tool-calling)."""
    calls = ("add_numbers", {"x": 1, "y": 2}), ("multiply_numbers", {"x": 3, "y": 4})
    stand_in, model = ollama([ollama_answer("", *calls), "Answer: 3 and 12"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append if stream else None)
    result = agent.query("1 + 2 and 3 * 4?")
    assert result.answer == "Answer: 3 and 12" and observations(agent) == [("call_1", "3"), ("call_2", "12")]
    first, second = api_chat_bodies(stand_in)
    assert first["stream"] is stream and first["tools"][0]["function"]["name"] == "add_numbers"
    assert first["options"] == {"temperature": 0}  # greedy on one's own server; no stop: nothing to cut
    sent = second["messages"]
    assert sent[-3] == {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "add_numbers", "arguments": {"x": 1, "y": 2}}},
        {"function": {"name": "multiply_numbers", "arguments": {"x": 3, "y": 4}}}]}
    assert sent[-2:] == [{"role": "tool", "tool_name": "add_numbers", "content": "3"},
                         {"role": "tool", "tool_name": "multiply_numbers", "content": "12"}]
    assert not stand_in.bodies  # nothing went to /v1
    assert vars(result.usage)["input_tokens"] == 240 and result.usage_source == "reported by the server"


def test_ollama_text_protocol_stays_on_its_openai_compatible_endpoint(ollama):
    stand_in, model = ollama(["Thought: done\nAnswer: 47"])
    assert TinyReAct(model, tools=TOOLS, on_text=[].append).query("What is 7 * 6 + 5?").answer == "47"
    assert len(stand_in.bodies) == 1 and not api_chat_bodies(stand_in)


def ndjson(*lines) -> Answer:
    return Answer(200, [json.dumps(line).encode() + b"\n" for line in lines], {"Content-Type": "application/x-ndjson"})


@pytest.mark.parametrize("answer, said", [
    # an error once the stream has begun comes as a line of it (docs.ollama.com/api/errors)
    (ndjson({"model": "qwen3:8b", "message": {"role": "assistant", "content": "Th"}, "done": False},
            {"error": "an error was encountered while running the model"}),
     "failed in the middle of the reply: an error was encountered while running the model"),
    (ndjson([1, 2]), "a list where an object was expected: not an answer of Ollama's /api/chat"),
    (ndjson({"message": {"tool_calls": {"function": {}}}, "done": True}), "tool_calls that are an object"),
])
def test_ollama_answers_that_cannot_be_read_are_one_line_errors_not_tracebacks(ollama, answer, said):
    stand_in, model = ollama([answer])
    result = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append).query("go")
    assert result.stop_reason is StopReason.ERROR and said in str(result.error)


def test_an_ollama_stream_cut_before_its_last_line_is_asked_for_once_more_whole(ollama):
    cut = Answer(200, [b'{"message": {"content": "x"}, "don'], {"Content-Type": "application/x-ndjson"})
    stand_in, model = ollama([cut, "Answer: 47"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append)
    assert agent.query("What is 7 * 6 + 5?").answer == "Answer: 47"
    assert [body["stream"] for body in api_chat_bodies(stand_in)] == [True, False]
    assert any("the stream ended before its last line" in event.get("message", "") for event in agent.trace.events
               if event["type"] == "warning")


def test_ollama_counts_missing_after_a_cached_prompt_are_counted_here_and_cached_ones_read(ollama):
    """An older Ollama leaves prompt_eval_count out when the prompt was cached (ollama/ollama#2068); a newer one
    sends prompt_eval_cached_count beside it."""
    uncounted = ollama_answer("Answer: 47")
    del uncounted["prompt_eval_count"], uncounted["eval_count"]
    cached = {**ollama_answer("Answer: 47"), "prompt_eval_cached_count": 100}
    stand_in, model = ollama([uncounted, cached])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol())
    assert agent.query("What is 7 * 6 + 5?").answer == "Answer: 47"
    assert agent.query("Again?").answer == "Answer: 47"
    counted = [event for event in agent.trace.events if event["type"] == "usage"]
    assert counted[0].get("counted_locally") and counted[0]["input_tokens"] > 0
    assert not counted[1].get("counted_locally") and counted[1]["cached_tokens"] == 100


def test_an_unknown_ollama_model_says_how_to_fetch_it(ollama):
    stand_in, _ = ollama([])
    stand_in.models = ["llama3.2"]
    result = TinyReAct(load_model("ollama:qwen3:8b"), tools=TOOLS, protocol=NativeProtocol()).query("go")
    assert "has no model 'qwen3:8b'; it has: llama3.2 — to fetch it: ollama pull qwen3:8b" in str(result.error)


def test_protocols_side_by_side_share_the_tool_results_and_print_one_table(openai, capsys, tmp_path, monkeypatch):
    import cli

    monkeypatch.setenv("COLUMNS", "160")
    stand_in, _ = openai(['Thought: one expression\nAction: calculate("7 * 6 + 5")', "Thought: done\nAnswer: 47",
                          tool_completion(("calculate", '{"expression": "7 * 6 + 5"}')), "47"])
    trace = tmp_path / "side.jsonl"
    assert cli.main(["What is 7 * 6 + 5?", "--protocol", "text,native", "--model", "openai:qwen3:8b", "--trace",
                     str(trace), "--expect", "47", "--html", str(tmp_path / "side.html")]) == 0
    page = (tmp_path / "side.html").read_text(encoding="utf-8")
    assert "Protocols compared: What is 7 * 6 + 5?" in page and "full · native" in page
    out = " ".join(capsys.readouterr().out.split())
    assert "Protocols compared · model qwen3:8b" in out and "unreadable" in out
    assert out.count("full") >= 2 and "text" in out and "native" in out and out.count("1/1") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["side.full.native.jsonl", "side.full.text.jsonl", "side.html"]
    assert "tools" not in stand_in.bodies[0] and "tools" in stand_in.bodies[2]
    assert cli.main(["What?", "--protocol", "text,native", "--chat"]) == 2
    assert "compares runs of a question: it does not go with --chat" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["What?", "--protocol", "text,text"])
    assert "names a protocol twice" in capsys.readouterr().err
    assert cli.main(["--replay", str(tmp_path / "side.full.native.jsonl")]) == 0


def streamed(*deltas) -> Answer:
    """A completion streamed as these tool_calls deltas, then finish_reason tool_calls."""
    base = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "qwen3:8b"}
    events = [{**base, "choices": [{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": None}]}
              for delta in deltas]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return Answer(200, sse(events + ["[DONE]"]), {"Content-Type": "text/event-stream"})


@pytest.mark.parametrize("deltas, read", [
    # Ollama streams each call whole at index 0, each with its own id (ollama/ollama#15457)
    ([{"index": 0, "id": "a", "function": {"name": "add_numbers", "arguments": {"x": 1, "y": 2}}},
      {"index": 0, "id": "b", "function": {"name": "multiply_numbers", "arguments": {"x": 3, "y": 4}}}],
     [("a", "3"), ("b", "12")]),
    # the name sent again with every piece
    ([{"index": 0, "id": "a", "function": {"name": "add_numbers", "arguments": '{"x": 1,'}},
      {"index": 0, "function": {"name": "add_numbers", "arguments": ' "y": 2}'}}], [("a", "3")]),
    # pieces with no index continue the call before them
    ([{"id": "a", "function": {"name": "add_numbers", "arguments": '{"x": 1,'}},
      {"function": {"arguments": ' "y": 5}'}}], [("a", "6")]),
])
def test_streamed_calls_are_joined_as_each_server_sends_them(openai, deltas, read):
    _, model = openai([streamed(*deltas), "done"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append)
    assert agent.query("go").answer == "done"
    assert observations(agent) == read


def test_arguments_streamed_as_an_object_then_as_text_are_a_malformed_reply_not_a_crash(openai):
    _, model = openai([streamed({"index": 0, "id": "a", "function": {"name": "add_numbers", "arguments": {"x": 1}}},
                                {"index": 0, "function": {"arguments": '{"y": 2}'}})] * 2)
    result = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append).query("go")
    assert result.stop_reason is StopReason.ERROR
    assert "arguments came both as text and as an object" in str(result.error)


def test_gemini_is_never_sent_an_empty_text_part_after_an_empty_reply(gemini3):
    stand_in, model = gemini3([gemini_response("", finish="MALFORMED_FUNCTION_CALL"), gemini_response(""), "done"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol())
    assert agent.query("go").answer == "done"
    sent = [part for body in stand_in.bodies for content in body["contents"] for part in content["parts"]]
    assert {"text": ""} not in sent and {"text": "(empty reply)"} in sent


def test_a_comparison_refuses_a_model_that_cannot_speak_a_protocol_before_any_run(capsys, tmp_path):
    import cli

    class TextOnly:
        name, backend, usage_source, window, temperature = "gemma-3-270m", "local", "test", None, 0.0

        def generate(self, *args, **kwargs):
            raise AssertionError("no run is made")
    assert cli.main(["2 + 3?", "--protocol", "text,native", "--trace", str(tmp_path / "t.jsonl")],
                    model=TextOnly()) == 2
    assert "gemma-3-270m cannot call tools natively here" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_replay_of_a_native_trace_counts_the_schemas_as_the_run_did(openai, tmp_path):
    from experiments.replay import replay
    from tokens import local_counter
    from traces import Trace, read_trace_file

    _, model = openai([tool_completion(("calculate", '{"expression": "7 * 6 + 5"}')), "47"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), trace=Trace(str(tmp_path / "n.jsonl")))
    agent.query("What is 7 * 6 + 5?")
    agent.trace.close()
    header, events = read_trace_file(str(tmp_path / "n.jsonl"))
    [report] = replay(header, events, ["full"], counter=local_counter(), facts=[], points=[])
    assert report.calls == [event["tokens"] for event in events if event["type"] == "context"]


def test_native_with_the_embedded_half_billion_model_says_first_what_works_instead(capsys):
    import cli
    from models.scripted import ScriptedModel

    class Small(ScriptedModel):
        name = "qwen2.5-coder-0.5b"
    assert cli.main(["2 + 2?", "--protocol", "native", "--no-stream"], model=Small(["4"])) == 0
    assert "note: the embedded 0.5B repeats its tool calls in the native protocol" in capsys.readouterr().err


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_content_as_a_list_is_read_as_the_other_services_are(ollama, stream):
    """Read through the same checks as an OpenAI-compatible reply's content (wire.text_of): text parts joined, anything
    else a one-line error; it ended the run in AttributeError whole, and was dropped unsaid streamed."""
    texts = [{"type": "text", "text": "The answer "}, {"type": "text", "text": "is 4"}]
    parts = {"role": "assistant", "content": texts}
    stand_in, model = ollama([ndjson({"model": "qwen3:8b", "message": parts, "done": True, "done_reason": "stop"})])
    result = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append if stream else None).query("go")
    assert result.answer == "The answer is 4"
    wrong = {"role": "assistant", "content": [5]}
    stand_in, model = ollama([ndjson({"model": "qwen3:8b", "message": wrong, "done": True, "done_reason": "stop"})])
    result = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append if stream else None).query("go")
    assert result.stop_reason is StopReason.ERROR and "content as a list holding a number" in str(result.error)


@pytest.mark.parametrize("stream", [False, True])
def test_seventy_calls_in_one_reply_are_bounded_the_same_whole_or_streamed(openai, stream):
    """64 calls read, 8 run and the rest refused, whether the reply came whole or as deltas at indexes 0 to 69 (a
    delta at index 64 or past ended a streamed run as "not an OpenAI-compatible chat completion")."""
    calls = [("add_numbers", json.dumps({"x": n, "y": 1})) for n in range(70)]
    reply = streamed(*({"index": n, "id": f"c{n}", "function": {"name": name, "arguments": args}}
                       for n, (name, args) in enumerate(calls))) if stream else tool_completion(*calls)
    _, model = openai([reply, "done"])
    agent = TinyReAct(model, tools=TOOLS, protocol=NativeProtocol(), on_text=[].append if stream else None)
    assert agent.query("go").answer == "done"
    results = [event["text"] for event in agent.trace.events if event["type"] == "observation"]
    assert len(results) == 64 and results[:8] == [str(n + 1) for n in range(8)]
    assert all(text.startswith("Error: one reply may make at most 8 tool calls") for text in results[8:])
