"""Forking a saved trace at a model call (`--from TRACE --fork N`, cli/fork.py): the calls before N are copied from
the trace, and the loop goes on live from N (agent.TinyReAct.resume). Unedited, with a model that answers as before,
the fork's events are its parent's, times aside: checked on the shipped conversations at several calls, through the
command line on a run, and (slow) on a run of the embedded model. Under another policy, what is sent changes only
from call N on. Bad input is one line and leaves the parent as it was."""
import hashlib
import json
import os
import re

import pytest

import cli
from agent import TinyReAct
from experiments.fork import fork_plan, run as _run
from experiments.recording import _stand_in
from models import ModelReply
from models.scripted import ScriptedModel
from policies import make_policy
from tools import shipped_by_name
from traces import Trace, load_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONVERSATIONS = os.path.join(ROOT, "conversations")


def untimed(events) -> list[dict]:
    return [{name: value for name, value in event.items() if name != "t"} for event in events]


def replayed(parent, cut: int):
    """A scripted model that replies as the parent did from the event `cut` on (plain text, so that its usage is
    estimated from what it is sent, as when the parent was recorded), and tools that answer as the parent's did there:
    each tool's results in order, the shipped tools' documentation or the recording's stand-ins'."""
    later = parent.events[cut:]
    model = ScriptedModel([event["raw"] for event in later if event["type"] == "reply"])
    results: dict[str, list] = {}
    for event in later:
        if event["type"] == "observation" and "call" in event and "refused" not in event:
            results.setdefault(event["call"].split("(", 1)[0], []).append(event["text"])
    plan_tools = fork_plan(parent.events, 1)["tools"]
    known = shipped_by_name()

    def taped(name):
        tool = known.get(name) or _stand_in(name)

        def answer(*args, **kwargs):
            return results[name].pop(0)
        answer.__name__, answer.__doc__, answer.__wrapped__ = name, tool.__doc__, tool
        return answer
    return model, [taped(name) for name in plan_tools]


@pytest.mark.parametrize("name, calls", [("short", [1, 2, 6, 11]), ("renovation", [3, 25, 47]),
                                         ("support", [2, 30, 57]), ("superbowl", [1, 4, 7]),
                                         ("long", [5, 84])])
def test_an_unedited_fork_of_a_shipped_conversation_is_its_parent(name, calls):
    parent = load_trace(os.path.join(CONVERSATIONS, f"{name}.jsonl"))
    for n in calls:
        plan = fork_plan(parent.events, n)
        model, tools = replayed(parent, len(plan["copied"]))
        trace = Trace()
        trace.copy(plan["copied"])
        agent = TinyReAct(model, tools, ttl=plan["ttl"], policy=make_policy(plan["policy"]), trace=trace)
        _run(agent, plan)
        assert untimed(agent.trace.events) == untimed(parent.events), (name, n)
        assert model.unused == []  # every call from N on was made, and none before it


def scripted_run(tmp_path, replies: list[str], question: str = "What is (2 + 3) * 4 - 1?", *extra):
    path = tmp_path / "parent.jsonl"
    assert cli.main([question, "--trace", str(path), "--json", *extra], model=ScriptedModel(replies)) == 0
    return path


REPLIES = ["Thought: add first\nAction: add_numbers(2, 3)", "Thought: then multiply\nAction: multiply_numbers(5, 4)",
           "Thought: then subtract\nAction: subtract_numbers(20, 1)", "Thought: done\nAnswer: 19"]


def test_a_fork_through_the_command_line_copies_the_calls_before_n_and_runs_the_rest(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    before = parent.read_bytes()
    capsys.readouterr()
    child = tmp_path / "child.jsonl"
    model = ScriptedModel(REPLIES[2:])  # asked only from call 3 on
    assert cli.main(["--from", str(parent), "--fork", "3", "--trace", str(child), "--json"], model=model) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answer"] == "19" and out["fork"]["call"] == 3 and model.unused == []
    assert len(model.calls) == 2  # calls 3 and 4
    forked = load_trace(str(child))
    assert untimed(forked.events) == untimed(load_trace(str(parent)).events)
    assert forked.header["parent"] == hashlib.sha256(before).hexdigest() and forked.header["fork"] == 3
    assert parent.read_bytes() == before  # only read


def test_a_fork_under_another_policy_changes_what_is_sent_only_from_call_n(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    child = tmp_path / "child.jsonl"
    assert cli.main(["--from", str(parent), "--fork", "3", "--policy", "window:0", "--trace", str(child), "-q"],
                    model=ScriptedModel(REPLIES[2:])) == 0
    assert capsys.readouterr().out.strip() == "19"
    contexts = [[e for e in load_trace(str(path)).events if e["type"] == "context"] for path in (parent, child)]
    assert untimed(contexts[0][:2]) == untimed(contexts[1][:2])  # calls 1 and 2: copied, as they were
    assert all(c["policy"] == "window:0" for c in contexts[1][2:])
    assert all(sum(c["tokens"].values()) < sum(p["tokens"].values()) for p, c in zip(contexts[0][2:], contexts[1][2:]))


def test_a_fork_of_a_chat_asks_its_later_questions_again(tmp_path, capsys):
    parent = tmp_path / "chat.jsonl"
    replies = ["Thought: add\nAction: add_numbers(2, 3)", "Answer: 5", "Thought: again\nAction: add_numbers(5, 5)",
               "Answer: 10"]
    trace = Trace(str(parent))
    agent = TinyReAct(ScriptedModel(replies), trace=trace)
    for question in ["What is 2 + 3?", "And that plus 5?"]:
        agent.query(question)
    trace.close()
    child = tmp_path / "child.jsonl"
    model = ScriptedModel(replies[1:])
    assert cli.main(["--from", str(parent), "--fork", "2", "--trace", str(child), "-q"], model=model) == 0
    assert capsys.readouterr().out.strip() == "10" and model.unused == []
    assert untimed(load_trace(str(child)).events) == untimed(load_trace(str(parent)).events)


@pytest.mark.parametrize("argv, said", [
    (["--fork", "9"], "--fork 9: the trace has 4 model calls, numbered 1 to 4"),
    (["--fork", "2", "--trace", "PARENT"], "--from and --trace name the same file"),
])
def test_bad_input_is_one_line_and_leaves_the_parent(tmp_path, capsys, argv, said):
    parent = scripted_run(tmp_path, REPLIES)
    before = parent.read_bytes()
    capsys.readouterr()
    argv = [str(parent) if word == "PARENT" else word for word in argv]
    assert cli.main(["--from", str(parent), *argv], model=ScriptedModel(REPLIES)) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err
    assert parent.read_bytes() == before


def test_a_trace_whose_tools_are_gone_names_them(tmp_path, capsys):
    recorded = tmp_path / "example.jsonl"
    assert cli.main(["--record", os.path.join(CONVERSATIONS, "example.script.json"), "--trace", str(recorded)]) == 0
    capsys.readouterr()
    assert cli.main(["--from", str(recorded), "--fork", "2"], model=ScriptedModel(["Answer: x"])) == 2
    err = capsys.readouterr().err
    assert "the trace's tools lookup_order are not among this TinyReAct's" in err and err.count("\n") == 1


def test_a_trace_that_fails_its_checks_is_one_line(tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"format": "tinyreact-trace", "version": 2}\n{"type": "reply", "step": "one"}\n')
    assert cli.main(["--from", str(broken), "--fork", "1"], model=ScriptedModel(["Answer: x"])) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and err.count("\n") == 1


@pytest.mark.parametrize("event, field, value, said", [
    ("context", "policy", "bogus:zz", "--fork 2: call 2 ran under the policy 'bogus:zz', which this TinyReAct does "
                                      "not have: name one with --policy"),
    ("instructions", "protocol", "bogus", "--fork 2: call 2 ran under the protocol 'bogus', which this TinyReAct "
                                          "does not have: name one with --protocol"),
    ("header", "backend", ["x"], "which cannot be loaded: give --model"),
])
def test_a_trace_naming_what_this_version_does_not_have_is_one_line(tmp_path, capsys, event, field, value, said):
    """A trace from a newer TinyReAct, or edited by hand: a policy or a protocol this one lacks, a backend that is
    no name."""
    parent = scripted_run(tmp_path, REPLIES)
    records = [json.loads(line) for line in parent.read_text().splitlines()]
    changed = next(record for record in records[1:] if record["type"] == event) if event != "header" else records[0]
    changed[field] = value
    if event == "context":  # call 2's
        [record for record in records[1:] if record["type"] == "context"][1][field] = value
    parent.write_text("".join(json.dumps(record) + "\n" for record in records))
    capsys.readouterr()
    model = ScriptedModel(REPLIES) if event != "header" else None
    assert cli.main(["--from", str(parent), "--fork", "2"], model=model) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_policy_or_protocol_the_trace_names_and_this_version_lacks_is_replaced_by_the_one_given(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    records = [json.loads(line) for line in parent.read_text().splitlines()]
    next(record for record in records if record.get("type") == "instructions")["protocol"] = "json"
    for record in records:
        if record.get("type") == "context":
            record["policy"] = "unnamed"  # what a reader fills in for a context event that names none
    parent.write_text("".join(json.dumps(record) + "\n" for record in records))
    child, model = tmp_path / "child.jsonl", ScriptedModel(REPLIES[1:])
    capsys.readouterr()
    assert cli.main(["--from", str(parent), "--fork", "2", "--policy", "full", "--protocol", "text", "--trace",
                     str(child), "-q"], model=model) == 0
    assert capsys.readouterr().err == "" and model.calls  # asked again from call 2, under the ones given
    assert [event["policy"] for event in load_trace(str(child)).events if event["type"] == "context"][-1] == "full"


def test_a_model_that_cannot_be_loaded_again_asks_for_model(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    assert cli.main(["--from", str(parent), "--fork", "2"]) == 2
    assert "was made by scripted (scripted), which cannot be loaded: give --model" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("model", ["local:qwen2.5-coder-0.5b", "local:gemma-3-270m"])
def test_an_unedited_fork_of_an_embedded_model_s_run_is_its_parent(tmp_path, capsys, model):
    parent = tmp_path / "parent.jsonl"
    cli.main(["What is 7 * 6 + 5?", "--model", model, "--ttl", "3", "--trace", str(parent), "-q"])  # answered or not
    calls = sum(event["type"] == "context" for event in load_trace(str(parent)).events)
    assert calls >= 2
    child = tmp_path / "child.jsonl"
    cli.main(["--from", str(parent), "--fork", "2", "--trace", str(child), "-q"])
    capsys.readouterr()
    assert untimed(load_trace(str(child)).events) == untimed(load_trace(str(parent)).events)


def test_a_resumed_conversation_s_first_request_carries_it(tmp_path, capsys):
    parent = scripted_run(tmp_path, ["Thought: add\nAction: add_numbers(2, 3)", "Answer: 5"], "What is 2 + 3?")
    before = parent.read_bytes()
    capsys.readouterr()
    model, child = ScriptedModel(["Answer: 10"]), tmp_path / "child.jsonl"
    assert cli.main(["And that plus 5?", "--resume", str(parent), "--trace", str(child), "-q"], model=model) == 0
    assert capsys.readouterr().out.strip() == "10"
    sent = "\n".join(message.text for message in model.calls[0])
    assert "What is 2 + 3?" in sent and "Answer: 5" in sent and "And that plus 5?" in sent
    events = load_trace(str(child)).events
    assert untimed(events[:len(load_trace(str(parent)).events)]) == untimed(load_trace(str(parent)).events)
    assert parent.read_bytes() == before


@pytest.mark.parametrize("argv, said", [
    (["q?", "--resume", "PARENT", "--trace", "PARENT"], "--resume and --trace name the same file"),
    (["q?", "--resume", "EMPTY"], "it holds no question to go on from"),
])
def test_a_resume_that_cannot_go_on_is_one_line(tmp_path, capsys, argv, said):
    parent = scripted_run(tmp_path, REPLIES)
    empty = tmp_path / "empty.jsonl"
    Trace(str(empty)).close()
    capsys.readouterr()
    argv = [{"PARENT": str(parent), "EMPTY": str(empty)}.get(word, word) for word in argv]
    assert cli.main(argv, model=ScriptedModel(["Answer: x"])) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_a_resumed_chat_goes_on_from_the_saved_one(tmp_path, capsys, monkeypatch):
    import io

    parent = scripted_run(tmp_path, ["Thought: add\nAction: add_numbers(2, 3)", "Answer: 5"], "What is 2 + 3?")
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("And that plus 5?\n"))
    model = ScriptedModel(["Answer: 10"])
    assert cli.main(["--chat", "--resume", str(parent), "--no-stream"], model=model) == 0
    assert "What is 2 + 3?" in "\n".join(message.text for message in model.calls[0])
    assert "resumed" in capsys.readouterr().out


def test_an_edited_tool_result_is_what_the_forked_calls_see(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    child, model = tmp_path / "child.jsonl", ScriptedModel(REPLIES[1:])
    assert cli.main(["--from", str(parent), "--fork", "2", "--set-observation", "1", "6", "--trace", str(child),
                     "-q"], model=model) == 0
    sent = "\n".join(message.text for message in model.calls[0])
    assert "Observation1: 6" in sent and "Observation1: 5" not in sent
    events = load_trace(str(child)).events
    assert {"type": "edit", "what": "observation", "call": 1, "text": "6"} in untimed(events)
    assert [e["text"] for e in events if e["type"] == "observation"][0] == "6"


def test_an_edited_reply_is_taken_and_the_model_answers_after_it(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    model = ScriptedModel([])
    assert cli.main(["--from", str(parent), "--fork", "2", "--set-reply", "Thought: I know\nAnswer: 42", "-q"],
                    model=model) == 0
    assert capsys.readouterr().out.strip() == "42" and model.calls == []


def test_edited_instructions_are_sent_from_the_fork_on(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    prompt = tmp_path / "prompt.txt"
    prompt.write_bytes(b"Be brief. Tools:\r\n$tools\r\n")  # a file from Windows: read as text mode reads it
    model, child = ScriptedModel(REPLIES[1:]), tmp_path / "child.jsonl"
    assert cli.main(["--from", str(parent), "--fork", "2", "--instructions", str(prompt), "--trace", str(child),
                     "-q"], model=model) == 0
    assert model.calls[0][0].text.startswith("Be brief. Tools:\nadd_numbers(")
    kinds = [event["type"] for event in load_trace(str(child)).events]
    assert kinds.count("instructions") == 2 and "edit" in kinds


@pytest.mark.parametrize("argv, said", [
    (["--set-observation", "3", "x"], "--set-observation 3: only calls 1 to 1 come before the fork at call 2"),
    (["--set-observation", "one", "x"], "--set-observation takes a call's number, then the text"),
    (["--instructions", "/no/such/prompt.txt"], "--instructions /no/such/prompt.txt: No such file"),
    (["--set-observation", "²", "x"], "--set-observation takes a call's number, then the text"),  # isdigit() says yes
    (["--set-observation", "9" * 5000, "x"], "--set-observation takes a call's number, then the text"),
    (["--instructions", "/dev/zero"], "--instructions /dev/zero is not instructions: it is a device"),  # never ends
    (["--set-reply", "x"], None),
])
def test_an_edit_that_cannot_be_made_is_one_line(tmp_path, capsys, argv, said):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    code = cli.main(["--from", str(parent), "--fork", "2", *argv, "-q"], model=ScriptedModel(REPLIES[2:]))
    err = capsys.readouterr().err
    if said is None:  # a reply with no Action or Answer is told so, as any: the model goes on
        assert code == 0 and err == ""
    else:
        assert code == 2 and said in err and err.count("\n") == 1


STEP_RESULT = re.compile(r"Observation\d")


class Counting:
    """Answers with how many Observations it was shown: a model whose answer depends on the context."""
    name, backend, usage_source, temperature, window, native_tools = "counting", "counting", "none", None, None, False

    def generate(self, messages, stop, **options):
        shown = sum(len(STEP_RESULT.findall(message.text)) for message in messages[1:])  # past the instructions
        return ModelReply(f"Answer: {shown}")


def test_branches_under_several_policies_are_one_table_counted_from_call_n(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    page, trace = tmp_path / "forks.html", tmp_path / "fork.jsonl"
    assert cli.main(["--from", str(parent), "--fork", "3", "--policies", "full,window:0", "--json", "--trace",
                     str(trace), "--html", str(page)], model=Counting()) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {row["policy"]: row for row in data["rows"]}
    assert rows["full"]["answers"] == ["2"] and rows["window:0"]["answers"] == ["0"]  # what each was shown
    assert rows["full"]["model_calls"]["median"] == 1  # call 3 alone: calls 1 and 2 are the parent's
    assert rows["full"]["peak_context"]["median"] > rows["window:0"]["peak_context"]["median"]
    assert (tmp_path / "fork.full.jsonl").exists() and (tmp_path / "fork.window-0.jsonl").exists()
    assert data["first_difference"] == 3  # the contexts part at the fork
    assert "window:0" in page.read_text(encoding="utf-8") and "first differ at call 3" in page.read_text()


def test_branches_take_no_edits(tmp_path, capsys):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    assert cli.main(["--from", str(parent), "--fork", "3", "--policies", "full,window:0", "--set-reply", "x"],
                    model=Counting()) == 2
    assert "edits go with a single --fork" in capsys.readouterr().err


def test_branches_on_several_models_run_each_model_from_call_n(tmp_path, capsys, monkeypatch):
    from model_servers import OpenAIStandIn

    parent = scripted_run(tmp_path, REPLIES)
    before = parent.read_bytes()
    capsys.readouterr()
    # the first branch (model m) answers at once; the second (model n) subtracts, then answers otherwise
    replies = ["Thought: known\nAnswer: 19", "Action: subtract_numbers(20, 1)", "Answer: nineteen"]
    with OpenAIStandIn(replies, models=("m", "n")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123")
        page, trace = tmp_path / "forks.html", tmp_path / "fork.jsonl"
        assert cli.main(["--from", str(parent), "--fork", "3", "--model", "openai:m,openai:n", "--json",
                         "--trace", str(trace), "--html", str(page)]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {row["policy"]: row for row in data["rows"]}
    assert rows["m"]["answers"] == ["19"] and rows["n"]["answers"] == ["nineteen"]
    assert rows["m"]["model_calls"]["median"] == 1 and rows["n"]["model_calls"]["median"] == 2
    assert [body["model"] for body in server.bodies] == ["m", "n", "n"]  # calls 1 and 2 are the parent's
    assert len(server.bodies[0]["messages"]) == len(server.bodies[1]["messages"])  # both shown the same call 3
    assert load_trace(str(tmp_path / "fork.m.jsonl")).header["model"] == "m"
    assert load_trace(str(tmp_path / "fork.n.jsonl")).header["fork"] == 3
    assert data["model"] == "m, n" and parent.read_bytes() == before
    shown = page.read_text(encoding="utf-8")
    assert "full · m" in shown and "full · n" in shown


@pytest.mark.parametrize("argv, message", [
    (["--model", "openai:m,openai:m"], "--model names openai:m twice"),
    (["--model", "openai:m,openai:n", "--policies", "full,window:0"], "branches differ in one thing")])
def test_model_branches_refuse_what_they_cannot_run(tmp_path, capsys, argv, message):
    parent = scripted_run(tmp_path, REPLIES)
    capsys.readouterr()
    assert cli.main(["--from", str(parent), "--fork", "3", *argv]) == 2
    assert message in capsys.readouterr().err


def test_fork_inside_a_chat_goes_on_from_that_call_as_the_flag_does(tmp_path, capsys, monkeypatch):
    import io

    chat = tmp_path / "chat.jsonl"
    lines = "What is (2 + 3) * 4 - 1?\n/policy window:0\n/fork 3\n/fork 9\nAnd plus 1?\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    # the chat's four calls; from its call 3 again under window:0; then the next question, in the fork
    model = ScriptedModel(REPLIES + ["Thought: again\nAction: subtract_numbers(20, 1)", "Answer: 19", "Answer: 20"])
    assert cli.main(["--chat", "--trace", str(chat), "--no-stream"], model=model) == 0
    out = " ".join(capsys.readouterr().out.split())  # as said, the terminal's line breaks aside
    assert "forked at call 3 under window:0" in out and "error: /fork 9: the trace has 4 model calls" in out
    fork = load_trace(str(tmp_path / "chat.fork-3.jsonl"))
    parent = load_trace(str(chat)).events
    assert fork.header["parent"] == hashlib.sha256(chat.read_bytes()).hexdigest() and fork.header["fork"] == 3
    calls = [index for index, event in enumerate(parent) if event["type"] == "context"]
    assert untimed(fork.events[:calls[2]]) == untimed(parent[:calls[2]])  # calls 1 and 2 are the chat's
    assert [e["text"] for e in fork.events if e["type"] == "question"][-1] == "And plus 1?"
    assert not any(e["type"] == "question" and e["text"] == "And plus 1?" for e in parent)  # the chat's is as it was
    def shown(call):  # what a call showed past the instructions
        return "\n".join(message.text for message in model.calls[call][1:])
    assert "Observation2: 20" in shown(2) and "Observation2: 20" not in shown(4)  # the chat's call 3, the fork's
