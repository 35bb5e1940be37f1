"""What asking probe calls in order of their shared context saves an embedded model: the same calls, timed in the
order a probe used to ask them (each question against every condition in turn) and in the order it asks them now
(condition by condition, so that one call's context is the next one's up to the question).

    python bench/probe_order.py [--model local:qwen2.5-coder-0.5b] [--policies full,window:2,user-only:4]

The calls: conversations/short.script.json recorded through the loop, its facts (conversations/short.facts.json)
asked after the session, two phrasings each, under each policy and the closed book. The embedded model keeps the
keys and values of its last prompt and reuses the longest start the next prompt shares with it
(models/embedded/transformer.py); the first order changes the context at every call, the second only the question.
Each order starts from an empty cache, the instructions' saved prefix aside (both orders restore it). The answers
must be the same in both orders (greedy decoding): the script exits 1 if they are not. A benchmark, not a test.
"""
import argparse
import os
import sys
import tempfile
import time

from repository import ROOT  # importing it puts ROOT on the import path


def calls(trace: str, facts_file: str, policies: list[str]) -> list[tuple[str, str, list]]:
    """(condition, question, messages) of every call, in the order a probe asked them before: question by
    question, each against every condition."""
    from experiments.facts import load_facts, question_event
    from policies import make_policy
    from policies.full import FullHistory
    from traces import read_trace_file

    header, events = read_trace_file(trace)
    facts, _ = load_facts(header, facts_file)
    instructions = next(event for event in events if event["type"] == "instructions")
    made = [make_policy(spec) for spec in policies]
    out = []
    for fact in facts:
        for question in fact.phrasings[:2]:
            asked = question_event(question)
            out.append(("closed book", question, FullHistory().render([instructions, asked])))
            out += [(policy.name, question, policy.render([*events, asked])) for policy in made]
    return out


def timed(model, ordered: list[tuple[str, str, list]]) -> tuple[float, dict]:
    from replies import STOP_SEQUENCES

    model.network.cached = []  # an empty cache: the instructions are restored from the saved prefix
    answers, start = {}, time.perf_counter()
    for condition, question, messages in ordered:
        answers[condition, question] = model.generate(messages, STOP_SEQUENCES).text
    return time.perf_counter() - start, answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local:qwen2.5-coder-0.5b")
    parser.add_argument("--policies", default="full,window:2,user-only:4")
    args = parser.parse_args()
    import cli
    from models import load_model

    conversations = os.path.join(ROOT, "conversations")
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "short.jsonl")
        if cli.main(["--record", os.path.join(conversations, "short.script.json"), "--trace", trace]):
            return 2
        before = calls(trace, os.path.join(conversations, "short.facts.json"), args.policies.split(","))
    conditions = list(dict.fromkeys(condition for condition, _, _ in before))
    after = sorted(before, key=lambda call: conditions.index(call[0]))  # a stable sort: as experiments/probe.py
    model = load_model(args.model)
    model.generate(before[0][2], ["\nObservation:"])  # loaded, and the instructions' prefix saved, before timing
    seconds_before, answers_before = timed(model, before)
    seconds_after, answers_after = timed(model, after)
    print(f"{args.model}: {len(before)} calls; question by question {seconds_before / len(before):.2f} s a call, "
          f"condition by condition {seconds_after / len(after):.2f} s a call "
          f"({1 - seconds_after / seconds_before:.0%} less)")
    if answers_before != answers_after:
        print("the answers differ between the two orders", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
