"""An MCP server's input schema is checked against the model's arguments before the call is sent, in the loop's own
thread: a pattern built to be slow (^(a|a)+$) against a long argument must not hold the run. The check gives up at
the call's deadline and counts inside it."""
import json
import time

from agent import TinyReAct
from models import ModelReply, ToolCall
from models.scripted import ScriptedModel
from protocols import NativeProtocol
from tools.approval import Approval
from tools.mcp_functions import mcp_tool


class Server:
    """A stand-in for tools.mcp.McpServer: its deadline, and what each call sent and was given to answer in."""
    label, deadline = "slow", 0.2

    def __init__(self):
        self.sent = []

    def call(self, name, arguments, seconds=None):
        self.sent.append((arguments, seconds))
        return "done"


class Listed:
    name, description, annotations = "tag", "Tag a thing.", None
    input_schema = {"type": "object", "properties": {"label": {"type": "string", "pattern": "^(a|a)+$"}},
                    "patternProperties": {"^(b|b)+$": {"type": "string"}}, "required": ["label"]}


def test_a_pattern_built_to_be_slow_gives_up_at_the_call_s_deadline_and_the_model_is_told():
    server = Server()
    tool = mcp_tool(server, Listed(), "tag")
    agent = TinyReAct(ScriptedModel([f'Action: tag("{"a" * 40}b")', 'Action: tag("aaa")', "Answer: tagged"]),
                      tools=[tool], approval=Approval(yes=True))
    started = time.monotonic()
    assert agent.query("Tag it").answer == "tagged"
    assert time.monotonic() - started < 2.0
    slow, fine = [event["text"] for event in agent.trace.events if event["type"] == "observation"]
    assert "took longer than the call's deadline (TINYREACT_MCP_DEADLINE); it was not sent" in slow
    assert fine == "done" and len(server.sent) == 1
    arguments, seconds = server.sent[0]
    assert arguments == {"label": "aaa"} and 0 < seconds <= Server.deadline  # what the check left of the deadline


def test_a_name_checked_against_a_slow_pattern_is_bounded_too():
    tool = mcp_tool(Server(), Listed(), "tag")
    started = time.monotonic()
    try:
        tool.check({"label": "a", "b" * 40 + "c": "x"})
    except ValueError as problem:
        assert "took longer than the call's deadline" in str(problem)
    else:
        raise AssertionError("the slow name was taken")
    assert time.monotonic() - started < 2.0


def test_a_property_named_arguments_beside_one_python_cannot_spell_keeps_the_tool():
    class Odd:
        name, description, annotations = "odd", "Takes odd names.", None
        input_schema = {"type": "object", "properties": {"arguments": {"type": "string"}, "a-b": {"type": "string"}},
                        "required": ["arguments"]}
    server = Server()
    tool = mcp_tool(server, Odd(), "odd")
    agent = TinyReAct(ScriptedModel(['Action: odd(arguments="x")', "Answer: ok"]), tools=[tool],
                      approval=Approval(yes=True))
    assert agent.query("Go").answer == "ok"
    called = ModelReply("", calls=(ToolCall("c1", "odd", json.dumps({"arguments": "x", "a-b": "y"})),))
    agent = TinyReAct(ScriptedModel([called, ModelReply("ok")]), tools=[tool], approval=Approval(yes=True),
                      protocol=NativeProtocol())
    assert agent.query("Go").answer == "ok"
    assert [sent for sent, _ in server.sent] == [{"arguments": "x"}, {"arguments": "x", "a-b": "y"}]


def test_additional_properties_read_through_slow_patterns_and_many_slow_items_share_one_deadline():
    class Strict:
        name, description, annotations = "strict", "Takes what its patterns name.", None
        input_schema = {"type": "object", "properties": {"a-b": {"type": "string"},
                                                         "items": {"type": "array",
                                                                   "items": {"type": "string", "pattern": "^(a|a)+$"}}},
                        "patternProperties": {"^(b|b)+$": {"type": "string"}}, "additionalProperties": False}
    tool = mcp_tool(Server(), Strict(), "strict")
    for arguments in ({"b" * 40 + "c": "x"}, {"items": ["a" * 40 + "b"] * 10}):
        started = time.monotonic()
        try:
            tool.check(arguments)
        except ValueError as problem:
            assert "took longer than the call's deadline" in str(problem)
        else:
            raise AssertionError(f"{arguments} was taken")
        assert time.monotonic() - started < 2.0  # one deadline for the whole check
    assert tool.check({"a-b": "x", "bb": "y"}) == {"a-b": "x", "bb": "y"}
    try:
        tool.check({"other": "z"})
    except ValueError as problem:
        assert "'other' is not among the properties it takes" in str(problem)
    else:
        raise AssertionError("an extra property was taken")
