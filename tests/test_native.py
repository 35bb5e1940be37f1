"""The native protocol: tools offered as schemas written from their signatures and docstrings, structured calls read
and checked exactly as text actions are, every malformed call answered as a result the model reads, and the trace,
the policies and the invariants the same for both protocols."""
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agent import TinyReAct
from experiments.replay import replay
from models import Message, ModelConfigError, ModelReply, Part, ToolCall
from models.embedded import qwen_tools
from models.scripted import ScriptedModel
from policies import make_policy
from policies.invariants import violations
from protocols import MAX_CALLS, MAX_DEPTH, NativeProtocol
from results import StopReason
from tokens import TokenCounter
from tools.arithmetic import add_numbers, multiply_numbers
from tools.schema import tool_schema
from tools.weather import get_temperature
from traces import Trace, read_trace_file

TOOLS = [add_numbers, multiply_numbers]


def calling(*calls, text=""):
    """A reply that makes these calls: (name, arguments as JSON text or an object)."""
    return ModelReply(text, calls=tuple(ToolCall(f"call_{n}", name, args if isinstance(args, str) else json.dumps(args))
                                        for n, (name, args) in enumerate(calls, 1)))


def native_agent(replies, tools=TOOLS, **options):
    model = ScriptedModel(replies)
    return TinyReAct(model, tools=tools, protocol=NativeProtocol(), **options), model


def results(agent):
    return [(e.get("id"), e["text"]) for e in agent.trace.events if e["type"] == "observation"]


def test_a_tool_schema_is_written_from_the_signature_and_the_docstring():
    schema = tool_schema(get_temperature)
    assert schema["name"] == "get_temperature"
    assert schema["description"].startswith("Get the current air temperature")
    assert schema["parameters"] == {
        "type": "object", "required": ["latitude", "longitude"], "additionalProperties": False,
        "properties": {"latitude": {"type": "number", "description": "-90 to 90, north positive."},
                       "longitude": {"type": "number", "description": "-180 to 180, east positive."}}}

    def lookup(term: str, limit: int = 5, exact: bool | None = None, tags: list[str] | None = None) -> str:
        """Look a term up.

        Args:
            term: what to look for.
            limit (int): at most this many results.
        """
    parameters = tool_schema(lookup)["parameters"]
    assert parameters["required"] == ["term"]
    assert parameters["properties"] == {
        "term": {"type": "string", "description": "what to look for."},
        "limit": {"type": "integer", "description": "at most this many results."},
        "exact": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}}}


def test_the_first_question_is_answered_through_parallel_native_calls_each_answered_by_its_id():
    agent, model = native_agent([calling(("multiply_numbers", {"x": 7, "y": 6}), ("add_numbers", '{"x": 1, "y": 1}'),
                                         text="I will compute both."),
                                 calling(("add_numbers", {"x": 42, "y": 5})), ModelReply("47")])
    result = agent.query("What is 7 * 6 + 5?")
    assert (result.answer, result.stop_reason) == ("47", StopReason.ANSWER)
    assert results(agent) == [("call_1", "42"), ("call_2", "2"), ("call_1", "47")]
    assert model.offered[0] == [tool_schema(tool) for tool in TOOLS] and model.stops[0] == []
    reply, first, second = [part for message in model.calls[1][-2:] for part in message.parts]
    assert reply.calls[0].name == "multiply_numbers" and reply.said == "I will compute both."
    assert (first.call.id, first.sent, second.call.id, second.sent) == ("call_1", "42", "call_2", "2")
    assert [e["text"] for e in agent.trace.events if e["type"] == "thought"] == ["I will compute both."]
    assert "Action:" not in model.calls[0][0].text  # the text protocol's instructions are not given


@pytest.mark.parametrize("arguments, error", [
    ('{"x": 1', "the arguments are not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"x": 1}', "missing a required argument: y"),
    ('{"x": 1, "y": 2, "z": 3}', "got an unexpected keyword argument z"),
    ('{"x": "one", "y": 2}', "x must be a number"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nest deeper than {MAX_DEPTH}"),
    ('"' + "x" * 30_000 + '"', "longer than 20,000 characters, the limit"),
])
def test_a_malformed_call_is_answered_with_what_is_wrong_and_the_run_goes_on(arguments, error):
    agent, _ = native_agent([calling(("add_numbers", arguments)), ModelReply("done")])
    assert agent.query("add").answer == "done"
    [(call_id, text)] = results(agent)
    assert call_id == "call_1" and text.startswith("Error") and error in text


def test_arguments_sent_as_a_json_string_inside_the_json_are_read():
    agent, _ = native_agent([calling(("add_numbers", json.dumps('{"x": 2, "y": 3}'))), ModelReply("5")])
    agent.query("2 + 3?")
    assert results(agent) == [("call_1", "5")]


def test_a_tool_not_offered_and_calls_past_the_limit_are_answered_each_by_its_id():
    many = [("add_numbers", {"x": n, "y": 1}) for n in range(MAX_CALLS + 2)]
    agent, _ = native_agent([calling(("rm_rf", {}), *many), ModelReply("done")])
    agent.query("go")
    answered = results(agent)
    assert [call_id for call_id, _ in answered] == [f"call_{n}" for n in range(1, MAX_CALLS + 4)]
    assert "there is no tool named 'rm_rf'" in answered[0][1]
    assert [text for _, text in answered[1:MAX_CALLS]] == [str(float(n + 1)).removesuffix(".0")
                                                          for n in range(MAX_CALLS - 1)]
    assert all(f"at most {MAX_CALLS} tool calls" in text for _, text in answered[MAX_CALLS:])


def test_a_model_that_cannot_call_tools_natively_is_refused_in_one_line():
    class TextOnly:
        name, backend, usage_source, window, temperature = "text-only", "test", "test", None, None

        def generate(self, messages, stop, *, on_text=None, on_event=None):
            raise AssertionError("never called")
    with pytest.raises(ModelConfigError, match="text-only cannot call tools natively here: use --protocol text"):
        TinyReAct(TextOnly(), tools=TOOLS, protocol=NativeProtocol())


def test_an_empty_native_reply_is_an_error_the_model_reads_and_three_end_the_run():
    agent, _ = native_agent([ModelReply("")] * 3)
    assert agent.query("?").stop_reason is StopReason.FORMAT_ERRORS
    assert all("Call a tool, or reply with your answer as text" in text for _, text in results(agent))


def test_the_finish_call_asks_for_the_answer_as_text():
    agent, model = native_agent([calling(("add_numbers", {"x": 1, "y": 2})), ModelReply("3")], ttl=1)
    assert agent.query("1 + 2?", finish=True).answer == "3"
    assert model.calls[-1][-1].parts[-1].text.endswith("reply now with your best final answer as plain text, "
                                                       "and call no tool.")


ARGUMENTS = st.one_of(
    st.dictionaries(st.sampled_from(["x", "y", "z", ""]), st.one_of(st.integers(), st.text(max_size=5), st.none(),
                                                                     st.floats(allow_nan=True)), max_size=4)
    .map(json.dumps),
    st.text(max_size=40),
    st.recursive(st.integers(), lambda inner: st.lists(inner, max_size=2), max_leaves=30).map(json.dumps),
)
CALLS = st.lists(st.tuples(st.sampled_from(["add_numbers", "multiply_numbers", "nope", "", "add_numbers(1,2)"]),
                           ARGUMENTS), min_size=1, max_size=MAX_CALLS + 2)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(st.one_of(CALLS.map(lambda calls: calling(*calls)), st.just(ModelReply("the answer"))),
                      min_size=1, max_size=4),
       policy=st.sampled_from(["full", "window:1", "elide:0", "retrieve:1", "budget:600", "forget", "facts", "pinned",
                               "user-only:1", "window:1+facts", "elide:1+pinned"]))
def test_random_tool_call_payloads_never_crash_and_every_call_is_answered_in_every_policy(turns, policy):
    agent, model = native_agent(turns + [ModelReply("done")] * 2, ttl=len(turns) + 1, policy=make_policy(policy))
    agent.query("first")
    agent.query("second")
    calls = [call.id for e in agent.trace.events if e["type"] == "reply" for call in
             (ToolCall(**c) for c in e.get("calls", []))]
    assert len(results(agent)) == len(calls)  # each call answered, whatever it held
    events = agent.trace.events
    rendered_at = [index for index, event in enumerate(events) if event["type"] == "context"]
    for messages, length in zip(model.calls, rendered_at, strict=True):
        assert violations(messages, events[:length], agent.policy.ordered) == []


def test_every_policy_replays_a_native_trace_with_no_violations_and_never_splits_a_call_from_its_result(tmp_path):
    agent, _ = native_agent([calling(("multiply_numbers", {"x": 7, "y": 6}), ("add_numbers", {"x": 1, "y": 1})),
                             calling(("add_numbers", {"x": 42, "y": 5})), ModelReply("47"),
                             calling(("add_numbers", {"x": 2, "y": 2})), ModelReply("4"),
                             calling(("multiply_numbers", {"x": 3, "y": 3})), ModelReply("9")],
                            trace=Trace(str(tmp_path / "native.jsonl")))
    for question in ["What is 7 * 6 + 5?", "What is 2 + 2?", "And 3 * 3?"]:
        agent.query(question)
    specs = ["full", "window:1", "window:0", "user-only:1", "elide:0", "pinned", "facts", "retrieve:1", "budget:700",
             "forget", "window:1+facts"]
    agent.trace.close()
    header, events = read_trace_file(str(tmp_path / "native.jsonl"))  # written, and read back as any trace
    assert [e["id"] for e in events if e["type"] == "observation"][:2] == ["call_1", "call_2"]
    reports = replay(header, events, specs, counter=TokenCounter(), facts=[], points=[])
    assert {report.policy: report.violations for report in reports} == dict.fromkeys(specs, 0)


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "qwen_tools.json"),
          encoding="utf-8") as _file:
    TEMPLATE_CASES = json.load(_file)["cases"]


@pytest.mark.parametrize("case", TEMPLATE_CASES, ids=[case["name"] for case in TEMPLATE_CASES])
def test_the_embedded_qwen_is_shown_tools_and_results_as_its_own_chat_template_renders_them(case):
    """tests/fixtures/qwen_tools.json: the GGUF file's template rendered with jinja2 (bench/qwen_tool_goldens.py)."""
    messages = [Message(role, tuple(Part(kind, text, said=said, calls=tuple(ToolCall(*c) for c in calls),
                                         call=ToolCall(*call) if call else None)
                                    for kind, text, said, calls, call in parts)) for role, parts in case["parts"]]
    pieces, shared = qwen_tools.segments(messages, case["schemas"])
    assert "".join(text for text, _ in pieces) == case["rendered"]
    assert [text for text, control in pieces if control and text] and all(
        text in ("<|im_start|>", "<|im_end|>") for text, control in pieces if control)  # data is never a control


@pytest.mark.parametrize("written, said, calls", [
    ('{"name": "add_numbers", "arguments": {"x": 7, "y": 6}}', "", [("add_numbers", '{"x": 7, "y": 6}')]),
    ('Both.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "b", '
     '"arguments": {}}\n</tool_call>', "Both.", [("a", '{"x": 1}'), ("b", "{}")]),
    ('```json\n{"name": "a", "arguments": {"x": 1}}\n```', "", [("a", '{"x": 1}')]),
    ("The answer is 47.", "The answer is 47.", []),
    ('<tool_call>\n{"name": "a", "arguments": {"x": 1', "", [("a", '{"name": "a", "arguments": {"x": 1')]),
])
def test_the_embedded_qwens_calls_are_read_in_every_form_llama_cpp_reads(written, said, calls):
    read, made = qwen_tools.read_calls(written)
    assert (read, [(call.name, call.arguments) for call in made]) == (said, calls)
    first = qwen_tools.FirstCall().cut(written + "\n<tool_call>\n{}")
    assert first == -1 or (calls and written[:first].count('"name"') == 1)


def test_a_native_runs_page_shows_the_schemas_sent_and_each_call_as_the_model_made_it():
    from views.pages import run_page

    agent, _ = native_agent([calling(("multiply_numbers", {"x": 7, "y": 6}), text="First the product."),
                             ModelReply("42")])
    agent.query("What is 7 * 6?")
    page = run_page({"model": "scripted", "backend": "scripted"}, agent.trace.events, TokenCounter())
    assert "Tools, sent beside the messages as 2 tool schemas (native protocol)" in page
    assert '\\"name\\": \\"multiply_numbers\\"' in page  # the schemas, folded: in the page's store of texts
    assert "Call: multiply_numbers({&quot;x&quot;: 7, &quot;y&quot;: 6})" in page


def test_calls_with_one_id_twice_or_a_lone_surrogate_each_get_their_own_result_and_the_trace_reads_back(tmp_path):
    path = tmp_path / "odd-ids.jsonl"
    odd = ModelReply("", calls=(ToolCall("same", "add_numbers", '{"x": 1, "y": 1}'),
                                ToolCall("same", "add_numbers", '{"x": 20, "y": 5}'),
                                ToolCall("c\ud800", "multiply_numbers", '{"x": 2, "y": 3}'),
                                ToolCall("", "add_numbers", '{"x": 0, "y": 0}')))
    agent, model = native_agent([odd, ModelReply("done")], trace=Trace(str(path)))
    agent.query("go")
    agent.trace.close()
    answered = [part.sent for message in model.calls[1] for part in message.parts if part.call]
    assert answered == ["2", "25", "6", "0"]  # each result once, in the order of the calls
    ids = [part.call.id for message in model.calls[1] for part in message.parts if part.call]
    assert len(set(ids)) == 4 and "c\ufffd" in ids
    header, events = read_trace_file(str(path))  # every id made text a file holds
    assert [e["id"] for e in events if e["type"] == "observation"] == ids


def test_a_native_answer_that_reads_like_an_action_line_is_no_violation():
    agent, model = native_agent([ModelReply("Action: add_numbers(1, 2) is what I would do. 3"), ModelReply("ok")])
    agent.query("first")
    agent.query("second")
    events = agent.trace.events
    contexts = [index for index, event in enumerate(events) if event["type"] == "context"]
    assert violations(model.calls[1], events[:contexts[1]]) == []


def test_tools_taking_values_by_position_only_are_called_natively_by_name():
    def total(*numbers: float) -> float:
        """Add any numbers."""
        return sum(numbers)

    def scaled(x: float, /, factor: float = 2) -> float:
        """x times factor."""
        return x * factor

    def counted(n: int = None) -> str:
        """Say n."""
        return f"n={n}"
    agent, _ = native_agent([calling(("total", {"numbers": [1, 2, 3.5]}), ("scaled", {"x": 4}), ("counted", {})),
                             ModelReply("done")], tools=[total, scaled, counted])
    agent.query("go")
    assert [text for _, text in results(agent)] == ["6.5", "8", "n=None"]


def test_a_conversation_script_records_as_native_calls_and_replays_under_every_policy(tmp_path):
    import cli

    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conversations",
                           "example.script.json"), encoding="utf-8") as file:
        script = json.load(file) | {"protocol": "native"}
    (tmp_path / "native.script.json").write_text(json.dumps(script), encoding="utf-8")
    trace = tmp_path / "native.jsonl"
    assert cli.main(["--record", str(tmp_path / "native.script.json"), "--trace", str(trace)]) == 0
    header, events = read_trace_file(str(trace))
    assert [e.get("protocol") for e in events if e["type"] == "instructions"] == ["native"]
    calls = [call for e in events if e["type"] == "reply" for call in e.get("calls", [])]
    assert [(call["name"], json.loads(call["arguments"])) for call in calls] == [
        ("lookup_order", {"arg1": "ZQ-5521"}), ("subtract_numbers", {"x": 11, "y": 3})]
    assert [e["text"] for e in events if e["type"] == "observation"][0].startswith("Order ZQ-5521: 2 items")
    assert [e["text"] for e in events if e["type"] == "answer"][-1] == "8 days ago."
    specs = ["full", "window:0", "elide:0", "retrieve:1", "budget:600", "forget", "user-only:1+facts"]
    reports = replay(header, events, specs, counter=TokenCounter(), facts=[], points=[])
    assert {report.policy: report.violations for report in reports} == dict.fromkeys(specs, 0)
    (tmp_path / "bad.json").write_text(json.dumps(script | {"protocol": "xml"}), encoding="utf-8")
    assert cli.main(["--record", str(tmp_path / "bad.json")]) == 2
