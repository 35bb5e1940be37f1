"""The README's accuracy table is the saved evaluation of today's default prompt, not figures typed once and left.

`bench/evaluate.py --set test` saves every answer in bench/results/test-react-small.json; the README quotes its
totals per kind. When the prompt, the tools' documentation or the matcher changes, these fail until the evaluation
is run again and the README pasted from it."""
import hashlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
RESULT = os.path.join(ROOT, "bench", "results", "test-react-small.json")
DEFAULT = "qwen2.5-coder-0.5b"


def saved_run() -> dict:
    from evaluate import rescored

    with open(RESULT, encoding="utf-8") as file:
        saved = json.load(file)
    assert saved["set"] == "test"
    return rescored(next(run for run in saved["runs"] if run["spec"] == f"local:{DEFAULT}"))


def readme_table() -> dict[str, str]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    cells = re.findall(r"\| \**([a-z ]+?)\** \| \**(\d+/\d+ \(\d+–\d+%\))\** ", readme)
    return dict(cells)


def test_the_readme_quotes_every_kind_of_the_saved_test_run_with_its_interval():
    from evaluate import cell

    run = saved_run()
    assert readme_table() == {kind: cell(row) for kind, row in run["kinds"].items()}


def test_the_saved_test_run_is_of_the_default_models_prompt_as_it_is_today():
    import prompts
    from tokens import count_tokens
    from tools import DEFAULT_TOOLS

    run = saved_run()
    assert os.path.basename(run["prompt"]) == prompts.template_for(DEFAULT)
    assert run.get("layout", "transcript") == "transcript"  # runs saved before --layout existed had only this one
    assert len(run["answers"]) == 39
    instructions = prompts.render_instructions(DEFAULT_TOOLS, DEFAULT)
    assert run["instructions_sha256"] == hashlib.sha256(instructions.encode("utf-8")).hexdigest()
    assert run["instruction_tokens"] == count_tokens(instructions)


def test_the_readmes_sentences_about_accuracy_say_what_the_saved_runs_say():
    import prompts
    from evaluate import rescored
    from tools import DEFAULT_TOOLS

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    total = saved_run()["kinds"]["all"]
    said = re.search(r"it\s+answers\s+(\d+)\s+right\s+\((\d+)%\)", readme)
    assert said and (int(said[1]), int(said[2])) == (total["k"], round(100 * total["k"] / total["n"]))

    with open(os.path.join(ROOT, "bench", "results", "test-1.5b-numpy-react-small.json"), encoding="utf-8") as file:
        larger = rescored(json.load(file)["runs"][0])
    instructions = prompts.render_instructions(DEFAULT_TOOLS, "qwen2.5-coder-1.5b")
    assert larger["spec"] == "local:qwen2.5-coder-1.5b" and len(larger["answers"]) == 39
    assert larger["instructions_sha256"] == hashlib.sha256(instructions.encode("utf-8")).hexdigest()
    said = re.search(r"--model local:qwen2\.5-coder-1\.5b +# (\d+)/(\d+) right", readme)
    assert said and (int(said[1]), int(said[2])) == (larger["kinds"]["all"]["k"], larger["kinds"]["all"]["n"])
