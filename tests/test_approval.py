"""A person's yes before a tool runs (tools/approval.py, cli/approval.py): an MCP tool that may be destructive never
runs without one; asked on a real pseudo-terminal against the real notes server (tests/mcp_server.py), each
answer (n, e with a bad then a good edit, a), every decision in the trace and on the page, and Ctrl-C at the question
ending the run and the server."""
import json
import sys
import uuid


import cli
from agent import TinyReAct
from models.scripted import ScriptedModel
from test_mcp import SERVER, alive
from terminals import Terminal
from tools.approval import Approval



def remove(path: str) -> str:
    """Remove a file."""
    return f"removed {path}"


remove.mcp = {"server": "files", "name": "remove", "schema": {}, "destructive": "its MCP server marks it destructive"}


def looked_up(name: str) -> str:
    """Look a name up."""
    return f"found {name}"


def events(agent, kind):
    return [event for event in agent.trace.events if event["type"] == kind]


def test_a_destructive_tool_never_runs_without_a_yes_and_the_model_is_told():
    """No one to ask, or no answer (Ctrl-D), declines; --yes allows; a tool no server marks asks nothing."""
    for approval, by in [(Approval(), "no one to ask (no terminal)"),
                         (Approval(ask=lambda *asked: (_ for _ in ()).throw(EOFError)), "no answer (the input ended)")]:
        agent = TinyReAct(ScriptedModel(['Action: remove("/home")', 'Action: looked_up("x")', "Answer: kept"]),
                          tools=[remove, looked_up], approval=approval)
        assert agent.query("Tidy up").answer == "kept"
        declined, found = [event["text"] for event in events(agent, "observation")]
        assert declined.startswith("Declined: remove(path='/home') was not run") and found == "found x"
        assert [(e["tool"], e["decision"], e["by"], e["arguments"]) for e in events(agent, "approval")] == [
            ("remove", "declined", by, '{"path": "/home"}')]
    agent = TinyReAct(ScriptedModel(['Action: remove("/tmp/x")', "Answer: done"]), tools=[remove],
                      approval=Approval(yes=True))
    agent.query("Tidy up")
    assert events(agent, "observation")[0]["text"] == "removed /tmp/x"
    assert events(agent, "approval")[0]["by"] == "--yes"


def answering(answers: list) -> tuple[Approval, list]:
    """An Approval whose person gives `answers` in turn, and the problems each question said (None: the first)."""
    problems, given = [], iter(answers)

    def ask(tool, arguments, why, problem):
        problems.append(problem)
        return next(given)
    return Approval(ask=ask), problems


def test_an_edit_is_checked_again_until_the_tool_can_take_it():
    approval, problems = answering([("e", "{not json"), ("e", '["/a"]'), ("e", '{"where": "/a"}'),
                                    ("e", '{"path": "/tmp/old"}')])
    agent = TinyReAct(ScriptedModel(['Action: remove("/")', "Answer: done"]), tools=[remove], approval=approval)
    agent.query("Tidy up")
    assert problems[0] is None and problems[1].startswith("that is not JSON")
    assert problems[2] == 'the arguments are a JSON object, like {"name": "value"}'
    assert "unexpected keyword argument" in problems[3] or "missing a required argument" in problems[3]
    assert events(agent, "observation")[0]["text"] == "removed /tmp/old"  # the edit ran, not the model's call
    approval, = events(agent, "approval")
    assert (approval["decision"], approval["arguments"], approval["edited"]) == ("edited", '{"path": "/"}',
                                                                                 '{"path": "/tmp/old"}')


def test_a_declined_call_in_a_piped_chat_and_the_confirm_command(monkeypatch, capsys, tmp_path):
    """Piped (no terminal), /confirm on makes even a built-in tool ask, and so be declined; /confirm off, it runs."""
    import io
    model = ScriptedModel(["Action: add_numbers(2, 3)", "Answer: could not", "Action: add_numbers(2, 3)", "Answer: 5"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("/confirm on\n2+3?\n/confirm off\n2+3?\n"))
    trace = tmp_path / "chat.jsonl"
    assert cli.main(["--chat", "--trace", str(trace)], model=model) == 0
    out, err = capsys.readouterr()
    assert "asking before every tool call" in out and "asking only before MCP tools that may be destructive" in out
    assert 'Approval: add_numbers {"x": 2, "y": 3} declined by no one to ask (no terminal)' in " ".join(err.split())
    written = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    assert [event["decision"] for event in written if event["type"] == "approval"] == ["declined"]
    assert [event["text"] for event in written if event["type"] == "observation"][1] == "5"


def test_confirm_alone_in_a_chat_names_when_it_asks(monkeypatch, capsys):
    """/confirm with nothing after it says the setting in use and how to change it (it was an unknown command)."""
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("/confirm\n/confirm on\n/confirm\n"))
    assert cli.main(["--chat"], model=ScriptedModel([])) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "unknown command" not in out
    assert "asking only before MCP tools that may be destructive · /confirm on|off changes it" in out
    assert "asking before every tool call · /confirm on|off changes it" in out


def test_confirm_with_another_word_says_what_it_takes(monkeypatch, capsys):
    """/confirm maybe is a mistake in /confirm, said as one, and the setting stays (it was an unknown command);
    a space more before the word is no mistake."""
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO("/confirm maybe\n/confirm  on\n"))
    assert cli.main(["--chat"], model=ScriptedModel([])) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "unknown command" not in out and "not 'on'" not in out
    assert ("error: /confirm takes on or off, not 'maybe'; asking only before MCP tools that may be destructive "
            "still") in out
    assert out.endswith("asking before every tool call")


def test_yes_and_confirm_on_the_command_line(monkeypatch, capsys):
    assert cli.main(["Q?", "--confirm", "--yes"]) == 2
    assert "--confirm does not go with --yes" in capsys.readouterr().err
    monkeypatch.setenv("TINYREACT_YES", "maybe")
    assert cli.main(["--tools"]) == 2
    assert capsys.readouterr().err == ("error: TINYREACT_YES is 'maybe': set it to 1 to run every tool call without "
                                       "asking, or leave it unset\n")
    monkeypatch.setenv("TINYREACT_YES", "1")
    monkeypatch.setattr(sys.modules["cli.models"], "DEFAULT_TOOLS", [remove, looked_up])
    assert cli.main(["--tools"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "remove     built in  · runs without asking (--yes): its MCP server marks it destructive",
        "looked_up  built in"]
    assert cli.main(["--tools", "--confirm"]) == 0  # --confirm wins over TINYREACT_YES, for every tool
    assert capsys.readouterr().out.count("asks first: --confirm asks before every tool call") == 2


def test_the_page_shows_each_decision(tmp_path):
    from views.pages import run_page
    agent = TinyReAct(ScriptedModel(['Action: remove("<b>/home</b>")', "Answer: kept"]), tools=[remove])
    agent.query("Tidy up")
    page = run_page({"model": "scripted"}, agent.trace.events, agent.counter)
    assert ('<p class="approval declined"><b>Approval:</b> remove {&quot;path&quot;: &quot;&lt;b&gt;/home&lt;/b&gt;'
            '&quot;} declined by no one to ask (no terminal)') in page


def test_each_answer_on_a_terminal_with_a_real_server(openai, tmp_path):
    """A chat on a pseudo-terminal: n, then a tool that asks nothing; /confirm on, e with an edit the schema refuses,
    then one it takes; a for the session; last, Ctrl-C at a question, then at the prompt, which ends the server."""
    replies = ['Thought: tidy\nAction: delete_note("groceries")', "Thought: declined\nAction: list_notes()",
               "Answer: kept",
               'Action: repeat("hi", 2)', "Answer: ho",
               'Action: delete_note("door code")', 'Action: delete_note("groceries")', 'Action: list_notes()',
               "Answer: gone", 'Action: list_notes()']
    server = openai(replies)
    trace, tag = tmp_path / "chat.jsonl", uuid.uuid4().hex
    terminal = Terminal(["--chat", "--model", "openai:m", "--mcp", f"{SERVER} --tag {tag}", "--trace", str(trace)],
                        {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "k" * 8})
    choices = "y run it, n decline it, e edit its arguments, a allow this tool for the session? "
    try:
        terminal.wait_for("> ")
        terminal.type("Tidy my notes\r")
        asked = terminal.wait_for(choices)
        assert "Run delete_note (from the MCP server python" in asked
        assert "A yes is needed: its MCP server marks it destructive." in asked
        assert 'arguments: {"title": "groceries"}' in asked
        terminal.type("maybe\r")  # not a choice: asked again
        terminal.wait_for(choices)
        terminal.type("n\r")
        assert "groceries" in terminal.wait_for("Answer: kept")  # list_notes ran, without asking: still there
        terminal.wait_for("> ")
        terminal.type("/confirm on\r")
        terminal.wait_for("asking before every tool call")
        terminal.type("Say hi\r")
        assert "--confirm asks before every tool call" in terminal.wait_for(choices)
        offered = '(Enter keeps them): {"text": "hi", "times": 2}'  # the model's, on the line to edit
        terminal.type("e\r")
        terminal.wait_for(offered)
        terminal.type('\x15{"text": "ho", "times": 9}\r')  # Ctrl-U clears the line
        assert "is greater than the maximum of 5" in terminal.wait_for(choices)
        terminal.type('e\r')
        terminal.wait_for(offered)
        terminal.type('\x15{"text": "ho", "times": 3}\r')
        terminal.wait_for("Answer: ho")
        terminal.type("/confirm off\r")
        terminal.wait_for("> ")
        terminal.type("Delete them all\r")
        terminal.wait_for(choices)
        terminal.type("a\r")  # for the session: the second deletion is not asked about
        assert choices not in terminal.wait_for("Answer: gone")
        terminal.wait_for("> ")
        terminal.type("/confirm on\r")
        terminal.type("Once more\r")
        terminal.wait_for(choices)
        assert alive(tag)
        terminal.interrupt("the question was cancelled")  # Ctrl-C at the question cancels the question
        terminal.wait_for("> ")
        terminal.interrupt()  # and at the prompt, it leaves
        assert terminal.exit_code() == 130
    finally:
        terminal.close()
    assert not alive(tag)  # the server ended with the chat
    written = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    assert (written[-1]["type"], written[-1]["message"]) == ("error", "interrupted")
    decided = [(e["tool"], e["decision"], e["by"], e.get("edited")) for e in written if e["type"] == "approval"]
    assert decided == [("delete_note", "declined", "the person", None),
                       ("repeat", "edited", "the person", '{"text": "ho", "times": 3}'),
                       ("delete_note", "allowed", "the person, for the session", None),
                       ("delete_note", "allowed", "the person, for the session", None)]
    seen = [e["text"] for e in written if e["type"] == "observation"]
    assert seen[0].startswith("Declined: delete_note(title='groceries') was not run, because the person declined it")
    assert seen[2] == "ho ho ho" and seen[-1] == "(the tool returned nothing)"  # every note deleted


def test_what_the_person_is_shown_is_what_runs(capsys, monkeypatch):
    """Characters a terminal would swallow or reorder are shown as escapes, on the question and in the trace; a value
    JSON cannot hold is shown as itself, not a crash; a keyword named like *args is refused, not shown as another
    call; only a whole answer counts ("abort" is not "a")."""
    import cli.approval
    hidden = "ls notes\x9d; rm -rf ~/projects \x9c\u202e"
    typed, prompts = iter(["abort", "n"]), []
    monkeypatch.setattr(cli.approval, "answer", lambda prompt, prefill="": prompts.append(prompt) or next(typed))
    ask = cli.approval.terminal_asker(type("Display", (), {"close": lambda self: None})())
    agent = TinyReAct(ScriptedModel([f'Action: remove("{hidden}")', "Answer: no"]), tools=[remove],
                      approval=Approval(ask=ask))
    agent.query("Tidy up")
    said = capsys.readouterr().err
    assert '"ls notes\\u009d; rm -rf ~/projects \\u009c\\u202e"' in said and len(prompts) == 2  # asked again
    assert events(agent, "approval")[0]["arguments"] == '{"path": "ls notes\\u009d; rm -rf ~/projects \\u009c\\u202e"}'

    def shred(paths) -> str:
        """Shred files."""
        return "shredded"
    shred.mcp = {"server": "s", "name": "shred", "schema": {}, "destructive": "its MCP server marks it destructive"}
    agent = TinyReAct(ScriptedModel(['Action: shred({"/home", "/etc"})', "Answer: no"]), tools=[shred])
    agent.query("?")  # a set: no JSON, and no traceback
    assert events(agent, "approval")[0]["arguments"] in ('''{"paths": "{'/home', '/etc'}"}''',
                                                         '''{"paths": "{'/etc', '/home'}"}''')

    def run(*args, **kwargs) -> str:
        """Run a command."""
        return f"ran {args} {kwargs}"
    run.mcp = {"server": "s", "name": "run", "schema": {}, "destructive": "its MCP server marks it destructive"}
    agent = TinyReAct(ScriptedModel(['Action: run("rm", "-rf", "/", args="--help")', "Answer: no"]), tools=[run],
                      approval=Approval(yes=True))
    agent.query("?")
    [observation] = [event["text"] for event in events(agent, "observation")]
    assert "named like its parameter 'args' cannot be shown" in observation and not events(agent, "approval")


def test_confirm_on_in_a_chat_started_with_yes_asks_again(monkeypatch, capsys):
    import io
    model = ScriptedModel(["Action: add_numbers(2, 3)", "Answer: 5", "Action: add_numbers(2, 3)", "Answer: no"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("/confirm on\n2+3?\n"))
    monkeypatch.setenv("TINYREACT_YES", "1")
    assert cli.main(["--chat", "-q"], model=model) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "declined by no one to ask (no terminal)" in err  # --yes no longer answers for the person


class Notes:
    """A stand-in MCP server for tools.mcp_functions.mcp_tool: it keeps what each call sent."""
    label, deadline = "notes", 5.0

    def __init__(self):
        self.sent = []

    def call(self, name, arguments, seconds=None):
        self.sent.append(arguments)
        return f"wrote {arguments}"


class Listed:
    """A tool as a server lists it: unmarked, so it asks; `text` a string, `size` a number."""
    name, description, annotations = "write", "Write a note.", None
    input_schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 20},
                                                     "size": {"type": "number"}}, "required": ["text"]}


def write_tool():
    from tools.mcp_functions import mcp_tool

    server = Notes()
    return server, mcp_tool(server, Listed(), "write")


def test_a_call_that_does_not_fit_the_schema_is_told_to_the_model_without_asking_anyone():
    server, write = write_tool()
    asked = []
    agent = TinyReAct(ScriptedModel([f'Action: write("{"x" * 21}")', "Answer: no"]), tools=[write],
                      approval=Approval(ask=lambda *question: asked.append(question) or ("y", None)))
    agent.query("Note it")
    [told] = [event["text"] for event in events(agent, "observation")]
    assert told.startswith("Error: write(): the arguments do not fit the tool's input schema at text: ")
    assert asked == [] and server.sent == [] and events(agent, "approval") == []


def test_a_call_the_person_declined_is_not_asked_about_again_in_the_question():
    server, write = write_tool()
    asked = []
    again = 'Action: write("x")'
    agent = TinyReAct(ScriptedModel([again, again, again, "Answer: asked"]),
                      tools=[write], approval=Approval(ask=lambda *question: asked.append(question) or ("n", None)))
    agent.query("Note it")
    told = [event["text"] for event in events(agent, "observation")]
    assert len(asked) == 1 and server.sent == [] and len(told) == 2
    assert told[1].startswith("Declined: write(text='x', size=None) was declined already in this question")
    agent.query("Note it, please")  # a new question: the person is asked again
    assert len(asked) == 2


def test_a_call_declined_twice_stops_the_run_as_stuck():
    """Declined by the person, then asked for again (declined without asking), or declined twice for want of anyone
    to ask: the model is stuck on it, and the run stops before the TTL; the trace says why each was refused."""
    from agent import StopReason

    again = 'Action: remove("/home")'
    for approval in (Approval(ask=lambda *question: ("n", None)), Approval()):
        model = ScriptedModel([again] * 8)
        result = TinyReAct(model, tools=[remove], approval=approval).query("Tidy up")
        assert (result.answer, result.stop_reason, result.model_calls) == (None, StopReason.STUCK, 2)
        told = [event for event in result.trace if event["type"] == "observation"]
        assert [(e["call"], e["refused"]) for e in told] == [("remove(path='/home')", "declined")] * 2
        assert result.trace[-1]["reason"] == "stuck"


def test_an_edit_is_checked_as_written_and_the_trace_records_what_ran():
    server, write = write_tool()
    approval, problems = answering([("e", '{"text": 5}'), ("e", '{"text": "hello", "size": 3}')])
    agent = TinyReAct(ScriptedModel(['Action: write("x")', "Answer: done"]), tools=[write], approval=approval)
    agent.query("Note it")
    assert "do not fit the tool's input schema at text: 5 is not of type 'string'" in problems[1]
    assert server.sent == [{"text": "hello", "size": 3.0}]  # the size as the signature converts it
    [approval] = events(agent, "approval")
    assert json.loads(approval["edited"]) == {"text": "hello", "size": 3.0}


def test_a_key_typed_before_the_question_is_shown_does_not_answer_it(openai, tmp_path):  # noqa: F811 (the fixture)
    """A `y` typed while the reply was still coming (here, before the run began) sat in the terminal's input and was
    taken as the answer: the destructive call ran with no one having seen it. The question discards it."""
    server = openai(['Thought: tidy\nAction: delete_note("groceries")', "Answer: kept"])
    trace, tag = tmp_path / "run.jsonl", uuid.uuid4().hex
    terminal = Terminal(["Tidy my notes", "--model", "openai:m", "--mcp", f"{SERVER} --tag {tag}", "--trace",
                         str(trace)], {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "k" * 8})
    choices = "y run it, n decline it, e edit its arguments, a allow this tool for the session? "
    try:
        terminal.type("y\r")  # typed ahead
        terminal.wait_for(choices)
        terminal.type("n\r")  # the answer to the question as shown
        terminal.wait_for("Answer: kept")
        assert terminal.exit_code() == 0
    finally:
        terminal.close()
    written = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    assert [(e["tool"], e["decision"]) for e in written if e["type"] == "approval"] == [("delete_note", "declined")]
