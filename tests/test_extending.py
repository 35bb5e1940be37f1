"""docs/extending.md works as written: its tool, policy and backend, taken from the page, each added with the entry the
page gives, do what the page says. The page's code is this project's own documentation, run here as a test."""
import io
import os
import re
import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cli
import models
from agent import StopReason, TinyReAct
from models.scripted import ScriptedModel
from policies import POLICIES, make_policy
from policies.invariants import violations
from prompts import render_instructions
from tools import DEFAULT_TOOLS
from tools.arithmetic import add_numbers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "docs", "extending.md"), encoding="utf-8") as file:
    PAGE = file.read()
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE, re.DOTALL)
FILES = {block.split("\n", 1)[0][2:]: block for block in BLOCKS if block.startswith("# ") and ".py\n" in block[:40]}
ENTRIES = [block.strip() for block in BLOCKS if "\n" not in block.strip()]


def module(path: str) -> types.ModuleType:
    """The page's file for `path`, run as the module it would be in the project (models.human is imported by
    name when the backend is chosen, so it is put where the import finds it)."""
    name = path[:-3].replace("/", ".")
    loaded = types.ModuleType(name)
    exec(compile(FILES[path], f"docs/extending.md: {path}", "exec"), loaded.__dict__)
    sys.modules[name] = loaded
    return loaded


def set_by(changed: dict, registry: dict) -> dict:
    """What an entry set in a copy of a registry: the names it added, or gave a value of its own (so that the
    test holds in a copy of the project where the page's entries were already made)."""
    return {name: value for name, value in changed.items() if registry.get(name) is not value}


LAST_TURNS = module("policies/turns.py").LastTurns


def entry(registry_name: str, registry, names: dict, key: str = ""):
    """The page's one entry for a registry (the one for `key`, where it has several), applied to a copy of it: what
    it adds."""
    [line] = [line for line in ENTRIES if line.startswith(registry_name) and (not key or f'["{key}"]' in line)]
    copy = type(registry)(registry)
    exec(line, {registry_name: copy, **names})
    return copy


def test_the_page_has_one_file_and_one_entry_for_each():
    assert sorted(FILES) == ["models/human.py", "policies/turns.py", "tools/text.py"]
    registries = [line.split("[")[0].split(".")[0] for line in ENTRIES]
    assert registries == ["DEFAULT_TOOLS", "POLICIES", "BACKENDS", "BACKENDS"]


def test_the_tool_is_in_the_prompt_and_its_calls_are_checked():
    word_count = module("tools/text.py").word_count
    tools = entry("DEFAULT_TOOLS", DEFAULT_TOOLS, {"word_count": word_count})
    assert tools == DEFAULT_TOOLS + [word_count]
    assert "word_count(text: str) -> int\n    Count the words in a text" in render_instructions(tools)
    model = ScriptedModel(['Action: word_count("to be or not")', "Action: word_count()", "Answer: 4"])
    result = TinyReAct(model, tools=tools).query("How many words in 'to be or not'?")
    observations = [event["text"] for event in result.trace if event["type"] == "observation"]
    assert observations[0] == "4" and observations[1].startswith("Error: word_count(): ")
    assert result.answer == "4"


def test_the_tool_added_with_its_entry_leaves_every_recording_and_its_checks_as_they_were(tmp_path, capsys):
    """The page's entry applied to DEFAULT_TOOLS itself, then the fast tests that re-make or check what was recorded
    with a tool set (the shipped conversations, the golden prompt, the saved evaluation): each names its tools and is
    made or checked with them, so each still passes. (The slow ones, the README's run and the loop on the golden
    prompt, run the embedded model with the tools the README and the golden name, in the same way.)"""
    import test_compare
    import test_conversations
    import test_evaluation
    import test_qwen
    import test_tools

    word_count = module("tools/text.py").word_count
    before = list(DEFAULT_TOOLS)
    [line] = [line for line in ENTRIES if line.startswith("DEFAULT_TOOLS")]
    exec(line, {"DEFAULT_TOOLS": DEFAULT_TOOLS, "word_count": word_count})  # in place, as the project's file would
    try:
        assert DEFAULT_TOOLS == before + [word_count]
        for name in ["long.jsonl", "superbowl.jsonl"]:
            test_compare.test_shipped_conversations_are_what_the_builder_records(name, tmp_path)
        for name in ["support", "renovation"]:
            test_conversations.test_the_script_records_the_shipped_trace(name, tmp_path, capsys)
        test_conversations.test_the_short_script_records_the_shipped_trace_and_fits_the_offline_reader(tmp_path, capsys)
        test_qwen.test_the_loops_first_prompt_is_the_golden_one()
        test_evaluation.test_the_saved_test_run_is_of_the_default_models_prompt_as_it_is_today()
        test_evaluation.test_the_readmes_sentences_about_accuracy_say_what_the_saved_runs_say()
        test_tools.test_default_tools_have_the_seed_names_and_signatures()
    finally:
        DEFAULT_TOOLS[:] = before


def test_the_policy_keeps_the_last_turns_whole_and_every_mode_takes_it(monkeypatch, capsys):
    kind = LAST_TURNS
    added = entry("POLICIES", POLICIES, {"LastTurns": kind})
    assert set_by(added, POLICIES) == {"turns": kind}
    monkeypatch.setitem(POLICIES, "turns", kind)
    model = ScriptedModel(["Action: add_numbers(1, 1)", "Answer: 2", "Action: add_numbers(2, 2)", "Answer: 4",
                           "Answer: 8"])
    agent = TinyReAct(model, tools=[add_numbers], policy=make_policy("turns:1"))
    for question in ["one plus one?", "two plus two?", "and four plus four?"]:
        agent.query(question)
    shown = [part.text for part in model.calls[-1][1].parts] + [m.text for m in model.calls[-1][2:]]
    assert "Question: one plus one?" not in " ".join(shown)  # two questions back: left out, and said so
    assert "[1 earlier question and 2 earlier steps not shown]" in shown[0]
    assert any("Question: two plus two?" in text for text in shown)  # the question before: whole
    assert violations(model.calls[-1], agent.trace.events[:-4]) == []
    assert make_policy("turns:1+facts").name == "turns:1+facts"
    test_policies.test_every_registered_policy_builds_with_defaults()  # the registry test reads the registry
    trace = os.path.join(ROOT, "conversations", "superbowl.jsonl")
    assert cli.main(["--replay", trace, "--policies", "full,turns:0"]) == 0
    assert "turns:0" in capsys.readouterr().out


import test_policies  # noqa: E402  (its strategy and its checks, for the policy registered here)

TURNS = test_policies.written("turns", LAST_TURNS)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), spec=st.one_of(TURNS, st.tuples(TURNS, test_policies.COMPOSABLE).map("+".join)),
       questions=st.lists(st.sampled_from(["one?", "two?", "three?"]), min_size=1, max_size=4))
def test_the_policy_keeps_every_invariant_the_property_tests_check(data, spec, questions):
    """What tests/test_policies.py checks of every registered policy, run on this one (registered here by hand)."""
    POLICIES["turns"] = LAST_TURNS
    try:
        model = test_policies.DrawingModel(data)
        agent = TinyReAct(model, tools=[add_numbers, test_policies.fetch], policy=make_policy(spec))
        model.agent = agent
        for question in questions:
            agent.query(question)
        for length, messages in model.calls:
            test_policies.check_invariants(messages, agent.trace.events[:length], agent.policy.ordered)
            assert agent.policy.render(agent.trace.events[:length]) == messages
    finally:
        del POLICIES["turns"]


def test_the_backend_is_named_on_the_command_line_and_answers_from_stdin(monkeypatch, capsys):
    human = module("models/human.py")
    backends = entry("BACKENDS", models.BACKENDS, {"Backend": models.Backend}, "human")
    assert set(set_by(backends, models.BACKENDS)) == {"human"} and backends["human"].module == "models.human"
    monkeypatch.setitem(models.BACKENDS, "human", backends["human"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("Thought: add\nAction: add_numbers(2, 3)\n\nAnswer: 5\n\n"))
    assert cli.main(["What is 2 + 3?", "--model", "human:me", "-q"]) == 0
    out, err = capsys.readouterr()
    assert out == "5\n" and "--- user\nQuestion: What is 2 + 3?" in err and "Observation1: 5" in err
    assert cli.main(["--models"]) == 0
    assert "✓ human:NAME" in capsys.readouterr().out.splitlines()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    result = TinyReAct(human.make("human", "me")).query("Anyone there?")
    assert result.stop_reason is StopReason.ERROR and "no one left to answer" in str(result.error)
    with pytest.raises(models.ModelConfigError, match="unknown backend 'robot'"):
        models.parse_spec("robot:x")


def test_an_openai_compatible_server_is_one_entry_and_its_errors_are_one_line(monkeypatch, capsys, tmp_path):
    from model_servers import OpenAIStandIn, openai_error
    from models.services import retry

    backends = entry("BACKENDS", models.BACKENDS, {"Backend": models.Backend}, "vllm")
    assert set(set_by(backends, models.BACKENDS)) == {"vllm"}
    monkeypatch.setitem(models.BACKENDS, "vllm", backends["vllm"])
    monkeypatch.setattr(retry, "sleep", lambda seconds: None)
    failed = [openai_error(500, "engine died", type="server_error")] * retry.ATTEMPTS
    with OpenAIStandIn(["Answer: 5", *failed], models=("m",)) as server:
        monkeypatch.setenv("VLLM_BASE_URL", server.url + "/v1")
        trace = tmp_path / "run.jsonl"
        assert cli.main(["What is 2 + 3?", "--model", "vllm:m", "-q", "--trace", str(trace)]) == 0
        out, err = capsys.readouterr()
        assert out == "5\n" and err == ""
        assert cli.main(["--models"]) == 0
        assert "✓ vllm:m" in capsys.readouterr().out
        code = cli.main(["What is 2 + 3?", "--model", "vllm:m", "-q"])
        out, err = capsys.readouterr()
        assert code == 1 and out == "" and "Traceback" not in err
        [line] = [line for line in err.splitlines() if "engine died" in line]
        assert line.startswith("error: vLLM server (model m at http://127.0.0.1:")
        assert cli.main(["What is 2 + 3?", "--model", "vllm:other", "-q"]) != 0  # a model the server does not list
    out, err = capsys.readouterr()
    assert "Traceback" not in err and err.strip().startswith("error: vLLM server (model other at http://127.0.0.1:")
    assert "has no model 'other'; it has: m" in err and len(err.strip().splitlines()) == 1
