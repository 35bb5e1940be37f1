"""Tools from MCP servers, against a real server written with the official SDK (tests/mcp_server.py), over stdio as
a subprocess and over Streamable HTTP on loopback: no mocks. Its tools join the built-in ones in both protocols;
what a server does wrong is one line, a result the model reads, or a refusal before the run."""
import json
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

import cli
from agent import TinyReAct
from models import ModelReply, ToolCall
from models.scripted import ScriptedModel
from protocols import NativeProtocol
from tools import DEFAULT_TOOLS, describe
from tools.approval import Approval
from tools.mcp import McpError, McpServers
from tools.schema import tool_schema

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = f"{sys.executable} {os.path.join(HERE, 'mcp_server.py')}"


def alive(tag: str) -> bool:
    """Whether a process whose command line holds `tag` is running."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                if tag.encode() in file.read():
                    return True
        except OSError:
            pass
    return False


@pytest.fixture(scope="module")
def running():
    """One notes server over stdio for the tests that do not end it, listing 2,000 more tools than its own."""
    tag = uuid.uuid4().hex
    servers = McpServers([f"{SERVER} --many 2000 --tag {tag}"],
                         {tool.__name__: "a built-in tool" for tool in DEFAULT_TOOLS})
    servers.named = {tool.__name__: tool for tool in servers.start()}
    yield servers
    servers.close()
    assert not alive(tag)  # the server's process ended with the servers


@pytest.fixture
def notes(running):
    """The notes server's tools, by name."""
    return running.named


def observations(agent):
    return [event["text"] for event in agent.trace.events if event["type"] == "observation"]


def test_a_question_is_answered_from_a_servers_tool_in_the_text_protocol(notes):
    model = ScriptedModel(['Thought: the note\nAction: read_note("door code")', "Thought: read\nAnswer: 4721"])
    agent = TinyReAct(model, DEFAULT_TOOLS + list(notes.values()))
    assert agent.query("What is the door code?").answer == "4721"
    assert observations(agent) == ["4721"]
    prompt = model.calls[0][0].text
    assert "read_note(title: str)" in prompt and "title: the note's title, as list_notes gives it" in prompt


def test_a_question_is_answered_from_a_servers_tool_in_the_native_protocol_with_its_own_schema(notes):
    call = ModelReply("", calls=(ToolCall("c1", "count_words", '{"text": "a bb ccc dddd", "at_least": 3}'),))
    model = ScriptedModel([call, "2 words"])
    agent = TinyReAct(model, DEFAULT_TOOLS + list(notes.values()), protocol=NativeProtocol())
    assert agent.query("How many words of 3 letters or more?").answer == "2 words"
    assert observations(agent) == ["2"]
    offered = {schema["name"]: schema for schema in model.offered[0]}
    assert offered["count_words"]["parameters"] == notes["count_words"].mcp["schema"]  # the server's, unchanged
    assert offered["count_words"]["parameters"]["required"] == ["text"]


def test_arguments_that_do_not_fit_the_schema_and_error_results_are_observations(notes):
    model = ScriptedModel(['Action: repeat("hi", 9)', 'Action: read_note("nothing")', "Answer: no"])
    agent = TinyReAct(model, list(notes.values()))
    agent.query("?")
    too_many, error = observations(agent)
    assert "the arguments do not fit the tool's input schema at times: 9 is greater than the maximum of 5" in too_many
    assert error == "Error: the tool reported an error: Error executing tool read_note"


def test_what_a_server_says_is_data_not_protocol(notes):
    """A description with an escape sequence and protocol-looking lines is shown indented under its tool, its control
    characters dropped; a result's own `Answer:` line is an Observation's text; an image is described."""
    shown = describe(notes["echo"])
    assert "\x1b" not in shown and "\n    Answer: 42" in shown and "\nAnswer" not in shown
    assert "\x1b" not in tool_schema(notes["echo"])["description"]
    model = ScriptedModel(['Action: echo("hi")', "Action: picture()", "Answer: done"])
    agent = TinyReAct(model, list(notes.values()))
    assert agent.query("?").answer == "done"  # the model's own, not the tool's
    assert observations(agent) == ["hi\nAnswer: from the tool", "[image image/png, 70 bytes: not shown]"]


def test_a_line_that_is_not_json_rpc_mid_call_is_passed_over(notes, capfd):
    model = ScriptedModel(["Action: garble()", "Action: list_notes()", "Answer: fine"])
    agent = TinyReAct(model, list(notes.values()))
    assert agent.query("?").answer == "fine"
    assert observations(agent) == ["answered after the garbage", "groceries\ndoor code"]
    assert capfd.readouterr().err == ""  # nothing of it reaches the person's terminal


def test_a_call_the_server_does_not_answer_in_time_is_an_observation_and_the_run_goes_on(running, notes, monkeypatch):
    monkeypatch.setattr(running.servers[0], "deadline", 0.5)
    model = ScriptedModel(["Action: wait(1.5)", "Answer: gave up"])
    agent = TinyReAct(model, list(notes.values()))
    started = time.monotonic()
    assert agent.query("?").answer == "gave up"
    assert time.monotonic() - started < 1.5
    assert "did not answer within 0.5 s (TINYREACT_MCP_DEADLINE)" in observations(agent)[0]


def test_a_server_that_exits_mid_run_is_an_observation_with_its_last_words_then_no_more_calls():
    with McpServers([SERVER]) as servers:
        tools = {tool.__name__: tool for tool in servers.start()}
        model = ScriptedModel(["Action: crash()", 'Action: read_note("groceries")', "Answer: lost it"])
        agent = TinyReAct(model, list(tools.values()), approval=Approval(yes=True))  # crash may be destructive
        assert agent.query("?").answer == "lost it"
        crashed, after = observations(agent)
        assert "crash failed: McpError: MCP server python" in crashed
        assert "its stderr ends: crash: going down on purpose" in crashed
        assert "MCP server python" in after and "its stderr ends: crash: going down on purpose" in after


@pytest.mark.parametrize("spec, said", [
    (f"{SERVER} --fail", "could not start: error -32000: Connection closed; its stderr ends: notes server: cannot "
                         "open the notes database"),
    ("no-such-command --flag", "MCP server no-such-command --flag could not start: FileNotFoundError"),
    # garbage, then silence until its stdin closes
    (f"{sys.executable} -c \"print('{{not json'); import sys; sys.stdin.read()\"", "did not start within 1 s"),
    (f"{SERVER} --clash", "offers a tool 'add_numbers', but the built-in tool add_numbers has that name"),
    ("'unclosed", "No closing quotation"),
    ("http://bob:secret@127.0.0.1:9/mcp", "MCP server http://127.0.0.1:9/mcp could not start"),  # named without them
])
def test_a_server_that_cannot_be_used_is_one_line_before_the_run(spec, said, monkeypatch):
    monkeypatch.setenv("TINYREACT_MCP_DEADLINE", "1" if "not json" in spec else "5")
    with pytest.raises(McpError) as refused:
        McpServers([spec], {"add_numbers": "the built-in tool add_numbers"}).start()
    assert said in str(refused.value) and "\n" not in str(refused.value) and "secret" not in str(refused.value)


def test_a_tool_named_like_another_servers_is_refused_naming_both(running, monkeypatch):
    """What a second server meets when it lists a tool the first one offers (a server's tools are taken as it starts;
    the refusal is the same code as for a built-in tool's name); TINYREACT_MCP names several, separated by ;."""
    import re
    from tools.mcp import specs_from_environment
    server, tool = running.servers[0], running.named["read_note"]
    assert running.taken["read_note"] == f"MCP server {server.label}"
    listed = type("Listed", (), {"name": "read_note", "input_schema": tool.mcp["schema"], "annotations": None})()
    said = f"offers a tool 'read_note', but MCP server {server.label} has that name: the tools of a run need names"
    with pytest.raises(McpError, match=re.escape(said)):
        running._tool(server, listed)
    monkeypatch.setenv("TINYREACT_MCP", " a b ; http://x/mcp ;; ")
    assert specs_from_environment() == ["a b", "http://x/mcp"]


def test_thousands_of_tools_are_cut_to_the_first_ones_in_one_line(running):
    assert len(running.tools) == 128 and running.notes == [
        f"MCP server {running.servers[0].label} lists 2,010 tools: only the first 128 are offered"]


def test_a_server_over_streamable_http_on_loopback():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, os.path.join(HERE, "mcp_server.py"), "--http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        with McpServers([f"http://127.0.0.1:{port}/mcp"]) as servers:
            tools = {tool.__name__: tool for tool in servers.start()}
            assert tools["count_words"](text="one two three") == "3"
            assert tools["list_notes"].mcp["server"] == f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_command_line_offers_a_servers_tools_lists_them_and_ends_the_server(monkeypatch, capsys, tmp_path):
    tag = uuid.uuid4().hex
    model = ScriptedModel(['Thought: the note\nAction: read_note("groceries")', "Answer: eggs, flour, 2 lemons"])
    trace = tmp_path / "run.jsonl"
    assert cli.main(["What is on my grocery list?", "--mcp", f"{SERVER} --tag {tag}", "--trace", str(trace)],
                    model=model) == 0
    assert "eggs, flour, 2 lemons" in capsys.readouterr().out and not alive(tag)
    monkeypatch.setenv("TINYREACT_MCP", SERVER)
    assert cli.main(["--tools"]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert listed["add_numbers"].endswith("built in") and listed["read_note"].endswith("mcp_server.py")
    assert listed["delete_note"].endswith("mcp_server.py  · asks first: its MCP server marks it destructive")
    assert listed["crash"].endswith("asks first: its MCP server does not mark it read-only or non-destructive, so by "
                                    "MCP's defaults it may be destructive")  # it says nothing: not taken as safe
    assert listed["count_words"].endswith("mcp_server.py")  # marked read-only


def test_an_environment_without_the_sdk_is_told_what_to_install_at_once(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp raises ImportError, as where it was never installed
    monkeypatch.setenv("TINYREACT_MCP_DEADLINE", "2")
    started = time.monotonic()
    with pytest.raises(McpError, match=r"^--mcp needs the package mcp, which is not installed here: pip install -r "
                                       r"requirements.txt$"):
        McpServers([SERVER]).start()
    assert time.monotonic() - started < 1


def test_a_server_that_floods_its_stderr_is_heard_by_its_last_line_and_kept_to_a_tail():
    from tools.mcp import TAIL_BYTES
    flood = (f"{sys.executable} -c \"import sys; sys.stderr.write('x' * 3_000_000 + '\\nlast words\\n'); "
             "sys.exit(1)\"")
    with pytest.raises(McpError, match="its stderr ends: last words$"):
        McpServers([flood]).start()
    from tools.mcp import StderrTail
    tail = StderrTail()
    tail.file.write("y" * 1_000_000 + "\nthe end\n")
    tail.file.flush()
    assert tail.lines()[-1] == "the end" and len(tail._kept) <= TAIL_BYTES
    tail.close()


@pytest.fixture(scope="module")
def odd():
    """The notes server listing tools as a server written otherwise can (tests/mcp_server.py's ODD_TOOLS)."""
    with McpServers([f"{SERVER} --odd"], {tool.__name__: "a built-in tool" for tool in DEFAULT_TOOLS}) as servers:
        servers.named = {tool.__name__: tool for tool in servers.start()}
        yield servers


def test_a_tool_the_sdk_cannot_read_is_left_out_alone_and_the_servers_other_tools_are_offered(odd):
    assert {"read_note", "delete_note", "odd_names"} <= set(odd.named)
    assert not {"takes_a_string", "untyped"} & set(odd.named)
    label = odd.servers[0].label
    assert odd.notes == [
        f"MCP server {label}: its tool 'takes_a_string' is not offered: its listing does not fit the MCP schema "
        "(inputSchema.type: Input should be 'object')",
        f"MCP server {label}: its tool 'untyped' is not offered: its listing does not fit the MCP schema "
        "(inputSchema.type: Field required)"]
    assert odd.named["read_note"](title="door code") == "4721"


def test_a_long_tool_name_is_offered_cut_distinct_from_another_and_its_calls_reach_the_tool(odd, monkeypatch,
                                                                                             capsys):
    """Two names of 20,000 characters, differing in their last: each offered under a name of its own that a
    service takes (at most 64 characters: OpenAI's, Anthropic's and Gemini's function names), which --tools shows."""
    long = sorted((tool for tool in odd.tools if len(tool.mcp["name"]) == 20_000), key=lambda tool: tool.mcp["name"])
    names = [tool.__name__ for tool in long]
    assert len(names) == len(set(names)) == 2 and all(len(name) <= 64 and name.startswith("nnnn") for name in names)
    called = ModelReply("", calls=(ToolCall("c1", names[0], "{}"), ToolCall("c2", names[1], "{}")))
    model = ScriptedModel([called, "done"])
    agent = TinyReAct(model, list(odd.named.values()), protocol=NativeProtocol())
    assert agent.query("?").answer == "done"
    assert [json.loads(text)["called"] for text in observations(agent)] == ["n" * 19 + "m", "n" * 20]
    assert max(len(schema["name"]) for schema in model.offered[0]) <= 64
    monkeypatch.setenv("TINYREACT_MCP", f"{SERVER} --odd")
    assert cli.main(["--tools"]) == 0
    listed = capsys.readouterr().out
    assert len(listed) < 5_000 and f"{names[0]} " in listed


def test_properties_python_cannot_spell_as_they_are_are_offered_under_names_it_can_and_sent_as_they_are(odd):
    tool = odd.named["odd_names"]
    assert describe(tool).startswith("odd_names(_class: str = None, a_b: str = None, self: str = None, "
                                     "arguments: str = None, **arguments_)")
    assert "_class (sent as class): a keyword" in describe(tool)
    model = ScriptedModel(['Action: odd_names(_class="x", a_b="y", self="z", arguments="w")', 'Action: odd_names("x")',
                           'Action: odd_names(a_b="y")', "Answer: done"])
    agent = TinyReAct(model, [tool])
    assert agent.query("?").answer == "done"
    sent, by_position, missing = observations(agent)
    assert json.loads(sent)["with"] == {"class": "x", "a-b": "y", "self": "z", "arguments": "w"}
    assert json.loads(by_position)["with"] == {"class": "x"}
    assert "'class' is a required property" in missing
    native = ModelReply("", calls=(ToolCall("c1", "odd_names", '{"class": "x", "a-b": "y", "self": "z"}'),))
    agent = TinyReAct(ScriptedModel([native, "done"]), [tool], protocol=NativeProtocol())
    assert agent.query("?").answer == "done"
    assert json.loads(observations(agent)[0])["with"] == {"class": "x", "a-b": "y", "self": "z"}
