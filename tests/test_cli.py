"""The command line as a user meets it: output, exit codes, --json, the trace file, and the end-to-end seed question."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

import cli as agent
from cli.arguments import parse_args
from cli.loading import ENV_BESIDE_AGENT
from cli.modes import conflict
from traces import Trace, read_trace, read_trace_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SUPER_BOWL_QUESTION = ("What is the current temperature, in degrees Fahrenheit, "
                       "at the stadium where Super Bowl LIX was played?")
SUPER_BOWL_REPLIES = [
    'Thought1: I need to find out where Super Bowl LIX was played.\nAction1: search_wikipedia_page("Super Bowl LIX")',
    'Thought2: The page exists; its summary should name the stadium.\nAction2: wikipedia_summary("Super Bowl LIX", 2)',
    ('Thought3: It was played at the Caesars Superdome. I need its coordinates.\n'
     'Action3: wikipedia_coordinates("Caesars Superdome")'),
    "Thought4: Now the current temperature there.\nAction4: get_temperature(29.9508, -90.0811)",
    "Thought5: 15.5 °C; to convert to Fahrenheit, multiply by 1.8 first.\nAction5: multiply_numbers(15.5, 1.8)",
    "Thought6: Then add 32.\nAction6: add_numbers(27.9, 32)\nObservation6: 60 (the model must not write this)",
    "Thought7: I have the final result.\nAnswer: It is 59.9 °F (15.5 °C) at the Caesars Superdome in New Orleans.",
]
def cli(*args, env=None, cwd=None):
    """Run agent.py in a fresh interpreter, as a user would."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    environment.update(env or {})
    return subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), *args], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=120, stdin=subprocess.DEVNULL)


def test_super_bowl_question_end_to_end(world, tmp_path, capsys):
    gemini = world(SUPER_BOWL_REPLIES)
    trace_file = tmp_path / "superbowl.jsonl"
    code = agent.main([SUPER_BOWL_QUESTION, "--json", "--trace", str(trace_file)])
    out = capsys.readouterr().out
    result = json.loads(out)  # stdout holds exactly one JSON object
    assert code == 0
    assert result["answer"] == "It is 59.9 °F (15.5 °C) at the Caesars Superdome in New Orleans."
    assert (result["stop_reason"], result["steps"], result["model_calls"]) == ("answer", 6, 7)
    assert result["usage"] == {"input_tokens": 700, "output_tokens": 70, "cached_input_tokens": 0}
    # Priced as the model that answered the alias (models/prices.json): 700 × $0.75 + 70 × $3.75 per million.
    assert result["cost"] == {"usd": 0.0007875, "priced_as": "gemini-3.8-flash", "prices_read": "2026-10-07",
                              "source": "https://ai.google.dev/gemini-api/docs/pricing"}
    observations = [e["text"] for e in result["trace"] if e["type"] == "observation"]
    assert observations == [
        "Super Bowl LIX",
        "Super Bowl LIX was an American football game played to determine the champion of the NFL for the 2024 "
        "season. The game was played on February 9, 2025, at the Caesars Superdome in New Orleans, Louisiana.",
        "latitude 29.9508, longitude -90.0811 (Caesars Superdome)",
        "15.5 °C at 2026-11-29T23:45 (latitude 29.95, longitude -90.08)",
        "27.9",
        "59.9",
    ]
    last_contents = gemini.bodies[-1]["contents"]
    assert last_contents[-1]["parts"][0]["text"] == "Observation6: 59.9"
    assert not any("Observation6: 60" in c["parts"][0]["text"] for c in last_contents)
    assert [e["type"] for e in read_trace(str(trace_file))] == [e["type"] for e in result["trace"]]
    assert gemini.key not in out and gemini.key not in trace_file.read_text()


def test_live_display_shows_each_step_and_a_closing_line(world, capsys):
    world(["Thought1: multiply\nAction1: multiply_numbers(7, 6)", "Thought2: add\nAction2: add_numbers(42, 5)",
           "Thought3: done\nAnswer: 47"])
    assert agent.main(["What is 7 * 6 + 5?"]) == 0
    out = capsys.readouterr().out
    for line in ["Question: What is 7 * 6 + 5?", "Thought1: multiply", "Action1: multiply_numbers(7, 6)",
                 "Observation1: 42", "Answer: 47", "2 steps · 3 model calls · 300 tokens in / 30 out"]:
        assert line in out


def test_quiet_prints_only_the_answer(world, capsys):
    world(["Answer: 47"])
    assert agent.main(["What is 7 * 6 + 5?", "-q"]) == 0
    assert capsys.readouterr().out == "47\n"


def test_ttl_without_answer_exits_1(world, capsys):
    world(["Action: add_numbers(1, 1)", "Action: add_numbers(2, 2)"])
    assert agent.main(["Count.", "--ttl", "2", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["stop_reason"] == "ttl" and result["model_calls"] == 2 and result["answer"] is None


def test_an_answer_that_only_repeats_a_tool_error_exits_1_and_says_so(world, capsys):
    world(["Action: sqrt(16)", "Answer: Error: there is no tool named 'sqrt'."])
    assert agent.main(["What is the square root of 16?", "-q"]) == 1
    out, err = capsys.readouterr()
    assert "only repeats a tool's error" in err
    world(["Action: add_numbers(2, 2)", "Answer: 4"])
    assert agent.main(["What is 2 + 2?", "-q"]) == 0


@pytest.mark.parametrize("answer, code", [
    # the calculator's refusal behind words of the model's own (the 0.5B model's answer on the test set)
    ("It is undefined: a word, not a number: write the calculation with numbers and operators only, after turning "
     "any units into numbers yourself.", 1),
    ("It is undefined: a question that is not arithmetic needs no calculator.", 1),
    ("Cold: 'hot' is a word, and its opposite is cold.", 0),  # a few words in common are an answer
])
def test_an_answer_that_repeats_a_tool_error_behind_words_of_its_own_exits_1(world, capsys, answer, code):
    world(['Action: calculate("hot")', f"Answer: {answer}"])
    assert agent.main(["What is the opposite of the word 'hot'?", "-q"]) == code
    assert ("only repeats a tool's error" in capsys.readouterr().err) == (code == 1)


def test_an_answer_after_an_error_it_recovered_from_or_that_quotes_its_own_call_is_an_answer(world, capsys):
    words = "5310000 people in the largest city of Australia in 2020"
    recovered = [f'Action: calculate("{words}")', 'Action: calculate("5310000 / 1")',
                 f"Answer: There were {words}, the largest city of Australia in 2020."]
    quoted = [f'Action: calculate("({words}")', f"Answer: There were {words}."]  # unbalanced: quoted back
    for replies in (recovered, quoted):
        world(replies)
        assert agent.main(["How many people lived in Sydney in 2020?", "-q"]) == 0
        assert "only repeats" not in capsys.readouterr().err


def test_finish_flag_asks_once_more(world, capsys):
    world(["Action: add_numbers(1, 1)", "Answer: 2"])
    assert agent.main(["1 + 1?", "--ttl", "1", "--finish", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["answer"], result["stop_reason"], result["model_calls"]) == ("2", "ttl", 2)


def test_rejected_key_exits_2_with_one_line_and_keeps_the_trace(world, tmp_path, capsys, monkeypatch):
    world(["Answer: 47"])
    monkeypatch.setenv("GEMINI_API_KEY", "sk-wrong-SECRET")
    trace_file = tmp_path / "t.jsonl"
    assert agent.main(["What is 7 * 6 + 5?", "-q", "--trace", str(trace_file)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: Gemini rejected the API key") and captured.err.count("\n") == 1
    assert "sk-wrong-SECRET" not in captured.err + trace_file.read_text()
    assert [e["type"] for e in read_trace(str(trace_file))] == ["instructions", "question", "context", "error", "stop"]


def test_help_is_fast_and_imports_no_sdk():
    started = time.monotonic()
    done = cli("--help")
    assert done.returncode == 0 and "--show-prompt" in done.stdout and "GEMINI_API_KEY" in done.stdout
    assert time.monotonic() - started < 5
    probe = subprocess.run([sys.executable, "-c", "import sys; sys.argv=['agent.py','--help']; import cli as agent\n"
                            "try:\n    agent.main()\nexcept SystemExit: pass\n"
                            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                            "('google', 'wikipedia', 'rich', 'requests')))"],
                           capture_output=True, text=True, cwd=ROOT)
    assert probe.stdout.strip().endswith("[]")


def test_the_readme_set_up_shows_tools_and_it_lists_the_tools_the_readme_names(agent_py):
    """"What can it do?": the README's set up answers with --tools, which lists the ten tools the README's recorded
    run offers (tests/test_readme_run.py reads the same list), and any a user has added to the defaults since
    (docs/extending.md: a new entry leaves every test as it was)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    set_up = readme[readme.index("## Set up"):readme.index("\n## ", readme.index("## Set up") + 1)]
    assert "\npython agent.py --tools " in set_up
    named = re.findall(r"`(\w+)`", re.search(r"own output, made with these tools: (.*?);", readme, re.DOTALL)[1])
    done = agent_py("--tools")
    listed = [line.split()[0] for line in done.stdout.splitlines()]
    assert done.returncode == 0 and [name for name in listed if name in named] == named
    assert "The tools are the ten the run above lists" in readme and len(named) == 10


def test_show_prompt_prints_the_instructions_without_a_key(agent_py):
    """--show-prompt prints the instructions the default model is given, whole and alone. The template's own text is
    held under 3,000 characters; the tools' documentation beside it grows with the defaults, which a new tool may join
    without failing a test (docs/extending.md): the whole was held under 6,000 until convert's joined the nine."""
    import prompts
    from tools import DEFAULT_TOOLS

    done = agent_py("--show-prompt")
    assert done.returncode == 0
    assert done.stdout.startswith("You answer the user's question")
    assert "wikipedia_summary(query: str, sentences: int = 10) -> str" in done.stdout
    assert done.stdout == prompts.render_instructions(DEFAULT_TOOLS, "qwen2.5-coder-0.5b") + "\n"
    assert len(done.stdout) - len(prompts.tool_docs(DEFAULT_TOOLS)) < 3000


def test_missing_key_for_a_gemini_model_is_one_line_exit_2(agent_py):
    done = agent_py("What is 7 * 6 + 5?", "--model", "gemini-flash-latest")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("error: no Gemini API key: set GEMINI_API_KEY in the environment or in .env "
                           "(see .env.example)\n")


def test_key_is_read_from_dotenv_in_the_working_folder(tmp_path, world):
    gemini = world(["Answer: 47"])
    (tmp_path / ".env").write_text(f"GEMINI_API_KEY={gemini.key}\n")
    env = {"GOOGLE_GEMINI_BASE_URL": gemini.url, "NO_COLOR": "1"}
    done = cli("What is 7 * 6 + 5?", "-q", env=env, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "47\n", "")


def test_the_other_dotenv_read_is_the_one_beside_agent_py():
    """The command line lives in cli/, a folder below agent.py: the .env it reads besides ./.env is agent.py's."""
    assert str(ENV_BESIDE_AGENT) == os.path.join(os.path.realpath(ROOT), ".env")


@pytest.mark.parametrize("args, message", [
    (["--ttl", "0", "hi"], "must be between 1 and 1000"),
    (["--ttl", "many", "hi"], "expected a whole number"),
    (["--policy", "nope", "hi"], "unknown policy 'nope'"),
    ([], "no question"),
    (["   "], "no question"),
])
def test_bad_usage_exits_2_without_traceback(args, message, agent_py, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    done = agent_py(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_unwritable_trace_file_exits_2(agent_py, monkeypatch, tmp_path):
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    done = agent_py("hi", "--trace", str(tmp_path / "no" / "such" / "dir" / "t.jsonl"))
    assert done.returncode == 2 and done.stderr.startswith("error: cannot write the trace file")


def test_piped_output_is_plain_text(world, capsys):
    gemini = world(["Thought: easy\nAction: add_numbers(40, 2)", "Answer: 42"])
    assert agent.main(["40 + 2?"]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out
    assert "Thought1: easy\nAction1: add_numbers(40, 2)\nObservation1: 42\nAnswer: 42\n" in captured.out
    assert gemini.key not in captured.out + captured.err


def test_no_color_keeps_styles_but_drops_colours_on_a_terminal(world, capsys, monkeypatch):
    gemini = world(["Thought: easy\nAction: add_numbers(40, 2)", "Answer: 42"])
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert agent.main(["40 + 2?"]) == 0
    coloured = capsys.readouterr().out
    gemini.replies = ["Thought: easy\nAction: add_numbers(40, 2)", "Answer: 42"]
    monkeypatch.setenv("NO_COLOR", "1")
    assert agent.main(["40 + 2?"]) == 0
    plain = capsys.readouterr().out
    colour_code = re.compile(r"\x1b\[[0-9;]*(3[0-7]|9[0-7])m")
    assert colour_code.search(coloured) and not colour_code.search(plain)


def test_ctrl_c_exits_130_and_keeps_the_trace(world, tmp_path, sigint_reaches_children):
    gemini = world(["Action: add_numbers(1, 1)", "Answer: 2"])
    gemini.delay = 30  # the model "thinks" long enough to be interrupted
    trace_file = tmp_path / "t.jsonl"
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    environment.update(GEMINI_API_KEY=gemini.key, GOOGLE_GEMINI_BASE_URL=gemini.url)
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"),
                                "1 + 1?", "-q", "--trace", str(trace_file)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment, cwd=tmp_path)
    deadline = time.monotonic() + 60  # the command line starts in a second, or in many on a busy machine
    while not gemini.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gemini.requests  # interrupted while the model thinks, not while the command line starts
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err
    assert err == f"interrupted; the trace so far is in {trace_file}\n"
    events = read_trace(str(trace_file))
    assert [e["type"] for e in events] == ["instructions", "question", "context", "error"]
    assert events[-1]["message"] == "interrupted"


def test_chat_keeps_one_conversation_and_its_commands_work(world, agent_py, tmp_path):
    gemini = world(["Answer: Hello Ada.", "Thought: add\nAction: add_numbers(2, 2)", "Answer: 4",
                    "Answer: I do not know."])
    trace_file = tmp_path / "chat.jsonl"
    lines = ["My name is Ada.", "What is 2 + 2?", "/context", "/policy window:0", "/policy bogus", "/reset",
             "/frobnicate", "What is my name?"]
    done = agent_py("--chat", "--trace", str(trace_file), stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Answer: Hello Ada." in out and "Answer: 4" in out and "Answer: I do not know." in out
    assert "[user · question · " in out and "[system · instructions · " in out  # /context
    assert "policy: window:0" in out and "error: unknown policy 'bogus'" in out
    assert "a new conversation" in out and "unknown command /frobnicate" in out
    second_call = [c["parts"][0]["text"] for c in gemini.bodies[1]["contents"]]
    assert second_call[0] == "Question: My name is Ada." and second_call[-1] == "Question: What is 2 + 2?"
    last_call = "\n".join(p["text"] for c in gemini.bodies[-1]["contents"] for p in c["parts"])
    assert "Ada" not in last_call  # after /reset the model starts afresh
    types = [e["type"] for e in read_trace(str(trace_file))]
    assert types.count("question") == 3 and "reset" in types


def test_chat_policy_alone_names_the_policy_in_use_and_the_others(gemini, agent_py):
    gemini([])
    done = agent_py("--chat", "--policy", "window:2", stdin="/policy\n/policy elide:1\n/policy\n")
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # as read, whatever the width the lines were wrapped at
    listed = "/policy NAME switches to full, window:N, user-only:N, elide:K, pinned[:top|end], compact:T"
    assert f"policy: window:2 · {listed}" in out and f"policy: elide:1 · {listed}" in out
    assert "policy: elide:1" in out.replace(f"policy: elide:1 · {listed}", "")  # said when switched, too
    assert "unknown policy" not in out


def test_show_context_prints_every_call_with_labels_and_sizes(world, capsys):
    world(["Thought: add\nAction: add_numbers(40, 2)", "Answer: 42"])
    assert agent.main(["40 + 2?", "--show-context", "--policy", "elide:1"]) == 0
    out = capsys.readouterr().out
    assert out.count("context · policy elide:1 · ") == 2
    assert "[model · reply · " in out and "[user · observation · " in out
    assert "context shown, summed over calls: instructions" in out and "Gemma 3 tokenizer, local" in out
    assert "billed, from the API" in out


def test_show_context_with_json_goes_to_stderr(world, capsys):
    world(["Answer: 42"])
    assert agent.main(["40 + 2?", "--show-context", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["context"]["peak"] > 0
    assert "[system · instructions · " in captured.err


def test_show_prompt_includes_the_policy_tools(agent_py):
    done = agent_py("--show-prompt", "--policy", "pinned")
    assert "pin_note(text: str) -> str" in done.stdout and "unpin_note(index: int) -> str" in done.stdout


@pytest.mark.parametrize("policy", ["full", "window:2", "user-only:2", "elide:1", "pinned:end", "compact:500"])
def test_every_policy_answers_from_the_command_line(world, capsys, policy):
    # With compact:500 the fourth call is the summary; for the others it is a reply with no Action, then the answer.
    world(["Action: multiply_numbers(7, 6)", "Action: add_numbers(42, 5)", "Action: add_numbers(47, 0)",
           "Summary: 7 * 6 + 5 = 47.", "Answer: 47"])
    code = agent.main(["What is 7 * 6 + 5?", "--policy", policy, "--json"])
    result = json.loads(capsys.readouterr().out)
    assert (code, result["answer"], result["stop_reason"]) == (0, "47", "answer")
    assert result["summary_calls"] == (1 if policy.startswith("compact") else 0)
    assert result["context"]["counter"] == "Gemma 3 tokenizer, local"


@pytest.mark.parametrize("args, message", [
    (["hi", "--expect", "47"], "--expect only works with --compare"),
    (["hi", "--repeat", "2"], "--repeat only works with --compare"),
    (["hi", "--policies", "full"], "--policies only works with --replay"),
    (["hi", "--probe"], "--probe only works with --replay"),
    (["hi", "--plot", "p.svg"], "--plot only works with --replay"),
    (["hi", "--csv", "p.csv"], "--csv only works with --replay"),
    (["hi", "--compare", "full", "-q"], "--compare does not go with -q"),
    (["hi", "--compare", "full", "--show-context"], "--compare does not go with --show-context"),
    (["hi", "--compare", "full", "--policy", "window:2"], "--compare does not go with --policy"),
    (["--replay", "t.jsonl", "hi"], "--replay does not go with a question"),
    (["--replay", "t.jsonl", "--trace", "t2.jsonl"], "--replay does not go with --trace"),
    (["--replay", "t.jsonl", "--policies", "full", "--model", "gemma-3-270m"], "--model with --replay is for --probe"),
    (["--replay", "t.jsonl", "--jobs", "2"], "--jobs only works with --probe"),
    (["--replay", "t.jsonl", "--probe", "--jobs", "2", "--model", "gemma-3-270m"],
     "an embedded model answers one at a time"),
    (["hi", "--repeat", "2"], "--repeat only works with --compare or --probe"),
    (["hi", "--facts", "f.json"], "--facts only works with --replay"),
    (["hi", "--record", "s.json"], "--record does not go with a question"),
    (["--chat", "--json"], "--chat does not go with --json"),
    (["hi", "--show-prompt"], "--show-prompt prints the prompt and exits"),
    (["hi", "--compare", " , "], "no policies given"),
    (["--models", "--record", "s.json"], "--models lists the models and exits; it does not go with --record"),
    (["--verify-cache", "--show-prompt"], "--verify-cache checks the model cache and exits"),
    (["--show-prompt", "--ttl", "3"], "--show-prompt prints the prompt and exits; it does not go with --ttl"),
    (["--models", "-q"], "--models lists the models and exits; it does not go with --quiet"),
    (["--record", "s.json", "--html", "s.html"], "--record does not go with --html"),
    (["--html", "p.html", "--from", "t.jsonl", "--model", "x:y"], "--from does not go with --model"),
    (["hi", "-q", "--json"], "--json does not go with -q"),
    (["--record", "s.json", "--trace", "./s.json"],
     "--record and --trace name the same file: --trace would overwrite it"),
    (["--replay", "t.jsonl", "--csv", "t.jsonl"], "--replay and --csv name the same file: --csv would overwrite it"),
    (["hi", "--trace", "t.html", "--html", "t.html"],
     "--trace and --html name the same file: --html would overwrite it"),
    (["hi", "--compare", "full", "--trace", "runs/"], "--trace names a file, not a folder"),
    (["hi", "--compare", "full,window:1", "--trace", "runs.jsonl", "--html", "runs.full.jsonl"],
     "--html names one of the trace files --compare writes"),
    (["hi", "--compare", "bogus,full"], "unknown policy 'bogus'"),
])
def test_options_that_cannot_work_together_are_refused_in_one_line(args, message, capsys):
    assert agent.main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"error: {captured.err[7:]}" and message in captured.err
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize("option", ["--trace", "--model", "--policy", "--compare", "--expect", "--replay", "--csv",
                                    "--html", "--answers"])
def test_an_empty_value_is_refused_not_taken_as_no_option(option, capsys):
    """`--trace "$FILE"` with FILE unset: the run must not go ahead without the trace it was asked to write."""
    with pytest.raises(SystemExit) as stop:
        agent.main(["hi", option, ""])
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"error: argument {option}: needs a value, got an empty one (see --help)\n"


def test_outputs_that_only_look_alike_or_are_devices_are_not_refused(capsys):
    superbowl = os.path.join(ROOT, "conversations", "superbowl.jsonl")
    assert agent.main(["--replay", superbowl, "--policies", "full", "--plot", "/dev/null", "--csv", "/dev/null"]) == 0
    assert conflict(parse_args(["hi", "--compare", "full", "--trace", "runs.jsonl", "--html", "runs.jsonl"])) is None


def test_a_model_given_to_main_is_the_one_each_mode_runs_and_model_beside_it_is_refused(capsys):
    """cli.main(argv, model=...), the seam a program that embeds the command line (and a test) gives its model
    through: it runs in place of the model --model names, and --show-prompt shows its prompt."""
    from models.scripted import ScriptedModel

    model = ScriptedModel(["Thought: add\nAction: add_numbers(2, 2)", "Answer: 4"])
    assert agent.main(["2 + 2?", "-q"], model=model) == 0
    assert capsys.readouterr().out == "4\n" and model.calls[1][-1].text == "Observation1: 4"
    assert agent.main(["--show-prompt"], model=ScriptedModel([])) == 0
    given = capsys.readouterr().out
    assert agent.main(["--show-prompt", "--model", "gemini-flash-latest"]) == 0
    assert capsys.readouterr().out == given  # the prompt of any model but the small Qwen...
    assert agent.main(["--show-prompt"]) == 0
    assert capsys.readouterr().out != given  # ...which, with no key, the command line would load
    short = os.path.join(ROOT, "conversations", "short.jsonl")
    assert agent.main(["--replay", short, "--probe", "--policies", "full", "--json"], model=ScriptedModel([])) == 0
    assert json.loads(capsys.readouterr().out)["setup"]["probe"]["model"] == "scripted"
    assert agent.main(["2 + 2?", "--model", "gemini-flash-latest"], model=ScriptedModel([])) == 2
    assert capsys.readouterr().err == "error: --model does not go with the model main() was given\n"


def test_a_usage_error_is_one_line_pointing_to_help(capsys):
    with pytest.raises(SystemExit) as stop:
        agent.main(["--ttl"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err == "error: argument --ttl: expected one argument (see --help)\n"


def test_compare_with_trace_writes_one_replayable_file_per_run(world, tmp_path, capsys):
    world(["Answer: 47", "Answer: 47", "Answer: 46", "Answer: 47"])
    trace = tmp_path / "t.jsonl"
    code = agent.main(["What is 7 * 6 + 5?", "--compare", "full,window:2", "--repeat", "2", "--json",
                       "--trace", str(trace)])
    assert code == 0
    files = sorted(path.name for path in tmp_path.glob("t.*.jsonl"))
    assert files == ["t.full.run1.jsonl", "t.full.run2.jsonl", "t.window-2.run1.jsonl", "t.window-2.run2.jsonl"]
    header, events = read_trace_file(str(tmp_path / "t.window-2.run2.jsonl"))
    assert header["policy"] == "window:2" and header["model"] == "gemini-flash-latest"
    assert [e["text"] for e in events if e["type"] == "answer"] == ["47"]
    capsys.readouterr()
    assert agent.main(["--replay", str(tmp_path / "t.full.run1.jsonl"), "--policies", "full", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 1


def test_show_context_changes_prints_only_what_each_call_added(world, capsys):
    world(["Thought: multiply\nAction: multiply_numbers(7, 6)", "Thought: add\nAction: add_numbers(42, 5)",
           "Answer: 47"])
    assert agent.main(["What is 7 * 6 + 5?", "--show-context=changes", "--policy", "window:1"]) == 0
    out = capsys.readouterr().out
    assert out.count("[system · instructions · ") == 1  # shown once, on the first call
    assert out.count("+ [model · reply · ") == 2 and "parts as before" in out
    assert "− dropped [model · reply · " in out and "Thought: multiply" in out  # window:1 let the first step go
    assert out.count("+ [user · observation · ") == 2


def test_show_context_piped_shows_the_instructions_once_then_only_what_changed(capsys):
    """As the README says, piped (into less, a file) as on a terminal: a second call repeats none of the first."""
    from models.scripted import ScriptedModel

    model = ScriptedModel(['Thought: one expression\nAction: calculate("7 * 6 + 5")', "Answer: 47"])
    assert agent.main(["What is 7 * 6 + 5?", "--show-context"], model=model) == 0
    out = capsys.readouterr().out
    assert out.count("context · policy full · ") == 2
    assert out.count("[system · instructions · ") == 1 and out.count("[user · question · ") == 1
    assert "= 2 parts as before" in out and out.count("+ [model · reply · ") == 1
    assert agent.main(["What is 7 * 6 + 5?", "--show-context=full"], model=ScriptedModel(
        ['Thought: one expression\nAction: calculate("7 * 6 + 5")', "Answer: 47"])) == 0
    assert capsys.readouterr().out.count("[system · instructions · ") == 2  # every part of every call, when asked


def test_show_context_before_the_question_says_how_to_fix_it(capsys):
    with pytest.raises(SystemExit):
        agent.main(["--show-context", "What is 7 * 6 + 5?"])
    assert "write the question before --show-context" in capsys.readouterr().err


def test_html_pages_from_a_run_a_comparison_a_replay_and_a_saved_trace(world, tmp_path, capsys):
    world(["Thought: add\nAction: add_numbers(40, 2)", "Answer: 42", "Answer: 42", "Answer: 41"])
    run, trace = tmp_path / "run.html", tmp_path / "t.jsonl"
    assert agent.main(["40 + 2?", "-q", "--html", str(run), "--trace", str(trace)]) == 0
    assert "Observation1: 42" in run.read_text() and "<html" in run.read_text()
    compared = tmp_path / "compare.html"
    assert agent.main(["40 + 2?", "--compare", "full,window:1", "--expect", "42", "--json",
                       "--html", str(compared)]) == 0
    assert compared.read_text().count("window:1") >= 1 and "full" in compared.read_text()
    replayed = tmp_path / "replay.html"
    assert agent.main(["--replay", str(trace), "--policies", "full,window:1", "--json", "--html", str(replayed)]) == 0
    assert "<svg" in replayed.read_text()
    again = tmp_path / "again.html"
    capsys.readouterr()
    assert agent.main(["--html", str(again), "--from", str(trace)]) == 0
    assert "Observation1: 42" in again.read_text()
    out, err = capsys.readouterr()
    # said, on stderr: stdout stays clean
    assert (out, err) == ("", f"wrote {again} ({again.stat().st_size:,} bytes)\n")
    titled = tmp_path / "titled.html"
    shipped = os.path.join(ROOT, "conversations", "superbowl.jsonl")
    assert agent.main(["--html", str(titled), "--from", shipped]) == 0
    assert f"<h1>The Super Bowl LIX temperature question: 6 steps — {shipped}</h1>" in titled.read_text()
    capsys.readouterr()
    assert agent.main(["--from", str(trace)]) == 2
    assert capsys.readouterr().err == "error: --from only works with --html or --otel or --fork\n"


def test_a_streamed_reply_is_shown_once_as_it_comes_and_the_trace_is_unchanged(capsys):
    from views.display import LiveDisplay
    from models.scripted import ScriptedModel
    from agent import TinyReAct

    replies = ["Thought: multiply first\nAction: multiply_numbers(7, 6)\nObservation: 40", "Thought: done\nAnswer: 42"]
    display = LiveDisplay()
    streamed = TinyReAct(ScriptedModel(replies), trace=Trace(on_event=display.show), on_text=display.stream)
    assert streamed.query("7 * 6?").answer == "42"
    out = capsys.readouterr().out
    assert out.count("multiply first") == 1 and out.count("Answer: 42") == 1  # shown as it came, not again after
    assert "Observation: 40" not in out and "Observation1: 42" in out  # the model's own Observation never shown
    # A server that honours the stop sequence sends nothing past it, streamed or not: then the traces are the same.
    honoured = [reply.split("\nObservation")[0] for reply in replies]
    traces = []
    for on_text in (display.stream, None):
        agent = TinyReAct(ScriptedModel(honoured), on_text=on_text)
        agent.query("7 * 6?")
        traces.append([{k: v for k, v in e.items() if k != "t"} for e in agent.trace.events])
    assert traces[0] == traces[1]
