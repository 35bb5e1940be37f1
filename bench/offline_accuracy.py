"""How often do the embedded models get simple questions right through the real loop?

    python bench/offline_accuracy.py [--models qwen,gemma] [--limit N]

Thirty-two questions, each run through the real loop (TinyReAct's prompt, its tools, the default policy):
one, two and three steps, decimals, operator precedence, unit conversions, questions that need no tool, and
questions where a tool returns an error. The network tools point at a closed local port, so a question never
depends on the internet (a model that calls them gets an Error observation, as offline). An answer is right
when it contains the expected text, or one of its alternatives, as whole words (experiments.facts.matches). For each model it prints every answer,
the actions taken, the number of unrunnable actions (an unknown tool or arguments that do not parse or bind),
and the totals per kind of question, so the kind of mistake is visible, not only the count.
"""
import argparse
import os
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
MODELS = {"qwen": "local:qwen2.5-coder-0.5b", "gemma": "local:gemma-270m"}

ERROR = "zero|undefined|not defined|error|impossible|cannot"  # any honest refusal to give a number
QUESTIONS = [  # (kind, question, expected: alternatives separated by |)
    ("one step", "What is 15 + 27?", "42"),
    ("one step", "What is 3 * 14?", "42"),
    ("one step", "What is 81 / 9?", "9"),
    ("one step", "What is 1000 - 1?", "999"),
    ("one step", "What is 123 + 456?", "579"),
    ("two steps", "What is 7 * 6 + 5?", "47"),
    ("two steps", "What is 12 divided by 4, plus 10?", "13"),
    ("two steps", "What is 9 * 8 - 2?", "70"),
    ("two steps", "What is 100 - 37 + 5?", "68"),
    ("two steps", "What is 25 * 4 + 3?", "103"),
    ("two steps", "What is (6 + 4) * 3?", "30"),
    ("three steps", "What is 2 * 3 * 4 + 1?", "25"),
    ("three steps", "What is (10 + 5) * 2 - 7?", "23"),
    ("three steps", "What is 100 / 4 + 6 * 2?", "37"),
    ("three steps", "What is (8 - 3) * (2 + 4)?", "30"),
    ("decimals", "What is 2.5 + 4.25?", "6.75"),
    ("decimals", "What is 1.5 * 4?", "6"),
    ("decimals", "What is 7 divided by 2?", "3.5"),
    ("decimals", "What is 0.1 + 0.2?", "0.3"),
    ("precedence", "What is 50 - 8 * 2?", "34"),
    ("precedence", "What is 2 + 3 * 4?", "14"),
    ("precedence", "What is 20 - 12 / 4?", "17"),
    ("precedence", "What is 6 + 10 / 2 * 3?", "21"),
    ("units", "How many minutes are there in 3 hours?", "180"),
    ("units", "How many grams are there in 2.5 kilograms?", "2500"),
    ("units", "How many centimetres are there in 4.2 metres?", "420"),
    ("no tool", "What is the capital of France?", "Paris"),
    ("no tool", "What colour do you get by mixing blue and yellow?", "green"),
    ("no tool", "How many legs does a spider have?", "8|eight"),
    ("tool error", "What is 10 divided by 0?", ERROR),
    ("tool error", "What is 5 divided by 0, plus 1?", ERROR),
    ("tool error", "Divide 8 by the difference between 3 and 3.", ERROR),
]


def run(model_name: str, questions: list) -> None:
    from agent import TinyReAct
    from experiments.facts import matches
    from models import load_model
    from replies import ActionError, parse_action
    from tools import DEFAULT_TOOLS, bind_arguments

    tools = {tool.__name__: tool for tool in DEFAULT_TOOLS}
    started = time.perf_counter()
    model = load_model(MODELS[model_name])
    right, asked, unrunnable = Counter(), Counter(), 0
    for kind, question, expected in questions:
        result = TinyReAct(model).query(question)
        actions = [e["text"] for e in result.trace if e["type"] == "action"]
        for action in actions:  # unrunnable: the loop could not run it as written
            try:
                call = parse_action(action)
                bind_arguments(tools[call.name], call.args, call.kwargs)
            except (ActionError, KeyError, TypeError, ValueError):
                unrunnable += 1
        correct = any(matches(result.answer, choice) for choice in expected.split("|"))
        right[kind] += correct
        asked[kind] += 1
        print(f"  {'right' if correct else 'wrong'}  {question} expected {expected}: {result.answer!r} "
              f"({result.stop_reason.value}) {actions}", flush=True)
    kinds = ", ".join(f"{kind} {right[kind]}/{asked[kind]}" for kind in asked)
    print(f"{model.name}: {sum(right.values())}/{len(questions)} right ({kinds}); {unrunnable} unrunnable actions; "
          f"{time.perf_counter() - started:.0f} s\n", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen,gemma", help="which embedded models, comma-separated")
    parser.add_argument("--limit", type=int, default=len(QUESTIONS), help="only the first N questions")
    args = parser.parse_args()
    # The network tools fail at once, as offline: nothing here may depend on the internet.
    os.environ.update(WIKIPEDIA_API_URL="http://127.0.0.1:9/w/api.php", OPEN_METEO_URL="http://127.0.0.1:9/v1/forecast")
    for name in args.models.split(","):
        print(f"{MODELS[name]}:", flush=True)
        run(name, QUESTIONS[:args.limit])


if __name__ == "__main__":
    main()
