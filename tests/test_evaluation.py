"""The README's accuracy table is the saved evaluation of today's default prompt, not figures typed once and left.

`bench/evaluate.py --set test` saves every answer in bench/results/test-chosen-0.5b.json; the README quotes its
totals per kind. When the prompt, the documentation of the tools the run names or the matcher changes, these fail
until the evaluation is run again and the README pasted from it; a tool added to DEFAULT_TOOLS does not, as the saved
run says which tools it offered (bench/evaluate.py's run_tools)."""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
DEFAULT = "qwen2.5-coder-0.5b"


def saved_run(result: str, spec: str) -> dict:
    """The run of `spec` in bench/results/`result`, scored again with today's matcher."""
    from evaluate import rescored

    with open(os.path.join(ROOT, "bench", "results", result), encoding="utf-8") as file:
        saved = json.load(file)
    assert saved["set"] == "test"
    return rescored(next(run for run in saved["runs"] if run["spec"] == spec))


def readme() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        return file.read()


def instructions_of(run: dict, model: str) -> str:
    """The instructions `model` is given today with the tools the run offered, as bench/evaluate.py digests and counts
    them (the text protocol's, which sends no schemas: the README's runs are of it)."""
    from evaluate import offered_text, run_tools
    from protocols import TextProtocol
    from tools import tools_named

    assert run.get("protocol", "text") == "text"
    return offered_text(TextProtocol().offer(tools_named(run_tools(run)), model))


def assert_of_todays_prompt(run: dict, model: str) -> None:
    """The run was made with the instructions `model` is given today, with its tools, on the whole test set."""
    from evaluate import text_sha256

    assert len(run["answers"]) == 39
    assert run["instructions_sha256"] == text_sha256(instructions_of(run, model))


def test_the_readme_quotes_every_kind_of_the_saved_test_run_with_its_interval():
    from evaluate import cell

    run = saved_run("test-chosen-0.5b.json", f"local:{DEFAULT}")
    cells = re.findall(r"\| \**([a-z ]+?)\** \| \**(\d+/\d+ \(\d+–\d+%\))\** ", readme())
    assert dict(cells) == {kind: cell(row) for kind, row in run["kinds"].items()}


def test_the_saved_test_run_is_of_the_default_models_prompt_as_it_is_today():
    import prompts
    from tokens import count_tokens

    run = saved_run("test-chosen-0.5b.json", f"local:{DEFAULT}")
    assert os.path.basename(run["prompt"]) == prompts.template_for(DEFAULT)
    assert run.get("layout", "transcript") == "transcript"  # runs saved before --layout existed had only this one
    assert_of_todays_prompt(run, DEFAULT)
    assert run["instruction_tokens"] == count_tokens(instructions_of(run, DEFAULT))


def test_the_readmes_sentences_about_accuracy_say_what_the_saved_runs_say():
    text = readme()
    total = saved_run("test-chosen-0.5b.json", f"local:{DEFAULT}")["kinds"]["all"]
    said = re.search(r"it\s+answers\s+(\d+)\s+right\s+\((\d+)%\)", text)
    assert said and (int(said[1]), int(said[2])) == (total["k"], round(100 * total["k"] / total["n"]))

    larger = saved_run("test-chosen-1.5b.json", "local:qwen2.5-coder-1.5b")
    assert_of_todays_prompt(larger, "qwen2.5-coder-1.5b")
    said = re.search(r"--model local:qwen2\.5-coder-1\.5b +# (\d+)/(\d+) right", text)
    assert said and (int(said[1]), int(said[2])) == (larger["kinds"]["all"]["k"], larger["kinds"]["all"]["n"])


@pytest.mark.parametrize("content, says", [(None, "cannot read"), ("not json", "--out: not JSON"),
                                           ('{"runs": 5}', "its runs are not runs"), ('{"set": "test"}', "'runs'"),
                                           ('{"runs": [{"answers": []}]}', "no 'label' field where the comparison")])
def test_a_results_file_that_is_missing_or_no_results_file_is_one_line(tmp_path, content, says):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "evaluate.py"), "--compare", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and says in line


def test_an_unknown_tool_or_an_out_folder_that_does_not_exist_is_said_before_any_question(tmp_path):
    for arguments, says in ((["--tools", "add_numbers,nope"], "no tool named 'nope'"),
                            (["--out", str(tmp_path / "no" / "x.json")], "its folder does not exist")):
        done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "evaluate.py"), *arguments],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("arguments, says", [
    (["--models", "qwn"], "--models: no embedded model 'qwn': choose from qwen, gemma, qwen-1.5b, or none"),
    (["--prompt", "no-such-prompt.txt"], "--prompt no-such-prompt.txt: no such file"),
    (["--prompt", os.path.join(ROOT, "README.md")], "README.md: a $ begins no variable"),  # a template's $ is $$
    (["--limit", "-1"], "argument --limit: a whole number from 1, not '-1'"),
    (["--limit", "0"], "argument --limit: a whole number from 1, not '0'"),
    (["--only", "3,x"], "argument --only: a whole number from 1, not 'x'"),
    (["--only", "41", "--models", "none"], "--only: the tuning set has 40 questions, not 41"),
])
def test_bad_options_are_one_line_before_any_model_loads(arguments, says, tmp_path):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "evaluate.py"), *arguments], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert says in done.stderr.strip().splitlines()[-1]


def test_the_llama_server_check_starts_its_server_as_evaluate_defines_it(monkeypatch):
    """bench/llama_server.py, which the docs point to for the llama.cpp check, called evaluate.llama_server without
    the file and the name to serve: a TypeError before anything ran. Its call must bind to the signature."""
    import inspect

    import evaluate
    import llama_server
    from models.embedded.cache import ModelCache

    class Started(Exception):
        pass

    signature = inspect.signature(evaluate.llama_server)

    def bound(*args, **kwargs):
        raise Started(signature.bind(*args, **kwargs).arguments)

    monkeypatch.setenv("LLAMA_PYTHON", sys.executable)
    monkeypatch.setattr(evaluate, "llama_server", bound)
    monkeypatch.setattr(ModelCache, "join", lambda cache, weights: "qwen.gguf")  # not the 491 MB file
    with pytest.raises(Started) as started:
        llama_server.main()
    assert started.value.args[0]["path"] == "qwen.gguf" and started.value.args[0]["alias"] == "qwen2.5-coder-0.5b"


@pytest.mark.parametrize("refuse_stop", [False, True])
def test_first_calls_through_a_batch_answer_as_the_calls_do(tmp_path, refuse_stop):
    """--via batch: each question's first call goes in one batch, and a question that needs a tool goes on call by
    call from the reply it got there; the answers are those of the calls asked one at a time. A model that refuses
    `stop` has the batch's calls sent again without it, and its replies still answer the first calls once a later
    call has learned to leave `stop` out."""
    from model_servers import BatchStandIn, OpenAIStandIn

    firsts = ["Thought: easy\nAnswer: 4", "Thought: a tool\nAction: add_numbers(2, 2)", "Answer: 7", "Answer: 9"]
    then = ["Thought: done\nAnswer: 4"]
    argv = [sys.executable, os.path.join(ROOT, "bench", "evaluate.py"), "--models", "openai:m", "--limit", "4"]
    environment = {**os.environ, "OPENAI_API_KEY": "test-key-0123", "TINYREACT_BATCH_POLL": "0",
                   "NO_PROXY": "127.0.0.1,localhost"}
    with OpenAIStandIn([*firsts[:2], *then, *firsts[2:]], models=("m",)) as server:
        done = subprocess.run([*argv, "--out", str(tmp_path / "calls.json")], capture_output=True, text=True,
                              timeout=120, env={**environment, "OPENAI_BASE_URL": server.url + "/v1"})
        assert done.returncode == 0, done.stderr
    with BatchStandIn([*firsts, *then], key="test-key-0123", refuse_stop=refuse_stop) as server:
        done = subprocess.run([*argv, "--via", "batch", "--yes", "--out", str(tmp_path / "batch.json")],
                              capture_output=True, text=True, timeout=120,
                              env={**environment, "OPENAI_BASE_URL": server.url + "/v1"})
        assert done.returncode == 0, done.stderr
        chat = [r for r in server.requests if r["path"] == "/v1/chat/completions"]
    # the tool question's second call, asked itself (refused once with `stop`, then asked without it)
    assert len(server.uploaded) == 4 * (1 + refuse_stop) and len(chat) == 1 + refuse_stop
    assert [path.name[:12] for path in tmp_path.glob("*.batch-*.jsonl")] == ["batch.batch-"]  # beside --out
    read = lambda name: [{k: a[k] for k in ("question", "answer", "right", "actions", "model_calls")}  # noqa: E731
                         for a in json.load(open(tmp_path / name))["runs"][0]["answers"]]
    assert read("batch.json") == read("calls.json")
    assert [a["model_calls"] for a in read("batch.json")] == [1, 2, 1, 1]
    assert "--via batch: 4 calls to send to openai:m" in done.stderr + done.stdout


def test_a_network_model_without_its_key_is_one_line(tmp_path):
    environment = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "evaluate.py"), "--models", "openai:m",
                           "--limit", "1"], capture_output=True, text=True, timeout=120, env=environment, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == ["error: no OPENAI_API_KEY: set it in the environment or in .env for "
                                                "openai:m (the server at https://api.openai.com/v1)"]


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_max_cost_takes_dollars_alone(value):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "evaluate.py"), "--models", "openai:m",
                           "--via", "batch", "--max-cost", value], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(f"takes US dollars from 0 to 1,000,000, got {value!r}")


def test_a_model_with_no_server_stops_the_run_in_one_line_not_as_wrong_answers(tmp_path, monkeypatch, capsys):
    import evaluate

    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://127.0.0.1:9/v1")  # the discard port: nothing answers
    monkeypatch.setattr(sys, "argv", ["evaluate.py", "--models", "llamacpp:m", "--limit", "2", "--out",
                                      str(tmp_path / "r.json")])
    with pytest.raises(SystemExit) as stopped:
        evaluate.main()
    said = capsys.readouterr()
    assert stopped.value.code == 2 and said.err.strip().splitlines() == [
        "error: llamacpp:m: no server at http://127.0.0.1:9/v1 — is llama-server running? "
        "`llama-server -m MODEL.gguf --port 8080`"]
    assert "wrong" not in said.out and not (tmp_path / "r.json").exists()


def test_a_configuration_error_after_the_first_question_is_scored_and_the_run_is_kept(tmp_path, monkeypatch, capsys):
    """A server that goes away in the middle (a restart) fails that question, as before; only a failure at the
    first question, before any answer, stops the evaluation."""
    import evaluate
    import models
    from models import ModelConfigError
    from models.scripted import ScriptedModel

    class GoesAway(ScriptedModel):
        def generate(self, messages, stop, **options):
            if len(self.calls) >= 2:
                raise ModelConfigError("no server at http://127.0.0.1:8080/v1")
            return super().generate(messages, stop, **options)
    monkeypatch.setattr(models, "load_model", lambda spec: GoesAway(["Answer: 4"] * 10))
    monkeypatch.setattr(sys, "argv", ["evaluate.py", "--models", "llamacpp:m", "--limit", "4", "--out",
                                      str(tmp_path / "r.json")])
    evaluate.main()
    answers = json.loads((tmp_path / "r.json").read_text())["runs"][0]["answers"]
    assert [answer["stop_reason"] for answer in answers] == ["answer", "answer", "error", "error"]
