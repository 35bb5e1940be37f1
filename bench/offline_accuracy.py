"""How often does the embedded Gemma 3 270M get a simple two-step question right?

    python bench/offline_accuracy.py

Ten arithmetic questions, each run through the real loop (TinyReAct's prompt, the real tools, the default
policy) with the offline model, and for comparison through the seed's own prompt
(tests/fixtures/gemma_react_prompt.txt, its question swapped), continued step by step by the same model.
An answer is right when it contains the expected number as a whole word. It prints every answer and the
actions taken, so the kind of mistake is visible, not just the count.
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

QUESTIONS = [("What is 7 * 6 + 5?", "47"), ("What is 12 divided by 4, plus 10?", "13"), ("What is 9 * 8 - 2?", "70"),
             ("What is 100 - 37 + 5?", "68"), ("What is 15 + 27?", "42"), ("What is 3 * 14?", "42"),
             ("What is 81 / 9?", "9"), ("What is 25 * 4 + 3?", "103"), ("What is 50 - 8 * 2?", "34"),
             ("What is (6 + 4) * 3?", "30")]


def seed_prompt_answer(model, question: str) -> tuple[str | None, list[str]]:
    """Continue the seed's prompt with `question`, running each action with the real tools, for up to 4 steps."""
    from models.gemma import stop_rule
    from replies import ActionError, parse_action, parse_reply
    from tools import DEFAULT_TOOLS, bind_arguments

    tools = {tool.__name__: tool for tool in DEFAULT_TOOLS}
    with open(os.path.join(ROOT, "tests", "fixtures", "gemma_react_prompt.txt"), encoding="utf-8") as file:
        prompt = file.read().replace("Query: What is 7 * 6 + 5?", f"Query: {question}")
    actions = []
    for step in range(1, 5):
        ids = model.tokenizer.tokenize(prompt, bos=True)
        text, _, _ = model.network.generate(ids, stop_rule(["Observation"], ""), model.tokenizer.detokenize)
        reply = parse_reply(f"Thought{step}:" + text if step == 1 else text)
        if reply.answer is not None or reply.action is None:
            return reply.answer, actions
        actions.append(reply.action)
        try:
            call = parse_action(reply.action)
            observation = tools[call.name](**bind_arguments(tools[call.name], call.args, call.kwargs))
        except (ActionError, KeyError, TypeError) as problem:
            observation = f"Error: {problem}"
        prompt += text.rstrip("\n") + f"\nObservation{step}: {observation}\n\nThought{step + 1}:"
    return None, actions


def main() -> None:
    from agent import TinyReAct
    from compare import matches
    from models.gemma import GemmaModel

    model = GemmaModel()
    scores = {"TinyReAct prompt, real loop": 0, "seed prompt": 0}
    started = time.perf_counter()
    for question, expected in QUESTIONS:
        result = TinyReAct(model).query(question)
        actions = [e["text"] for e in result.trace if e["type"] == "action"]
        scores["TinyReAct prompt, real loop"] += matches(result.answer, expected)
        print(f"{question} expected {expected}")
        print(f"  TinyReAct prompt: {result.answer!r:8} {'right' if matches(result.answer, expected) else 'wrong'}  {actions}")
        answer, actions = seed_prompt_answer(model, question)
        scores["seed prompt"] += matches(answer, expected)
        print(f"  seed prompt:      {answer!r:8} {'right' if matches(answer, expected) else 'wrong'}  {actions}")
    print(f"\n{', '.join(f'{name}: {right}/{len(QUESTIONS)}' for name, right in scores.items())} "
          f"({time.perf_counter() - started:.0f} s, model {model.name})")


if __name__ == "__main__":
    main()
