"""`bench/locomo.py --probe --reader likelihood`: LoCoMo's questions read by the embedded model's likelihood of the
gold answer, judge-free: for a seeded sample, each policy's context with the question as the current turn, the
log-probability of LoCoMo's answer as the Answer line (and of the audit's corrected answer, where --corrections
gives one that differs), less the same after the instructions and the question alone (closed book). Beside each
policy's mean lift: the share of the same questions whose evidence its context keeps, and the lift where it keeps it
and where it does not, so that what a context holds and what the model can use from it are read side by side.

Asked policy by policy and, within one, conversation by conversation: the questions of one conversation share the
context up to the question, which the network keeps between scores (experiments/likelihood.py). The adversarial
category is left out (its gold is that the conversation does not say), and so is a question with no answer.
Not run by itself: bench/locomo.py parses the options and calls run()."""
import json
import random
import sys

import numpy as np

from locomo import ASK, CATEGORIES, Conversation, Question, evidence_state, needed, record


def run(args, conversations: list[Conversation], specs: list[str], folder: str) -> int:
    """The likelihood probe of `args.sample` questions (seed `args.seed`) under `specs`; the exit code."""
    from experiments.likelihood import cannot_score
    from models import ModelError, load_model

    try:
        model = load_model(args.model)
    except Exception as problem:  # a model that cannot be loaded: one line
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if cannot_score(model):
        print(f"error: {cannot_score(model)}", file=sys.stderr)
        return 2
    pool = [(conv, question) for conv in conversations for question in conv.questions
            if question.evidence and question.answer.strip() and CATEGORIES[question.category] != "adversarial"]
    size = min(args.sample, len(pool))
    chosen = [pool[n] for n in sorted(random.Random(args.seed).sample(range(len(pool)), size))]
    rows: list[dict] = []
    try:
        score_all(chosen, specs, model, folder, rows, progress=lambda text: print(text, file=sys.stderr))
    except KeyboardInterrupt:
        print("interrupted: the scores so far are below", file=sys.stderr)
    except ModelError as problem:  # a context past the window, named
        print(f"error: {problem}", file=sys.stderr)
        return 1
    finally:
        if args.answers:
            with open(args.answers, "w", encoding="utf-8") as file:
                file.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    summary = summarise(rows, specs)
    if args.json:
        print(json.dumps({"questions": size, "seed": args.seed, "model": args.model, "unit": "nats",
                          "policies": summary}, indent=1))
    else:
        print(table(summary, size, args))
    return 0


def score_all(chosen: list[tuple[Conversation, Question]], specs: list[str], model, folder: str, rows: list,
              progress=lambda text: None) -> None:
    """Append a row to `rows` for every policy, question and answer scored: its log-probability, closed book's, the
    lift, and the evidence's state in the context."""
    from experiments.facts import question_event
    from policies import make_policy
    from policies.full import FullHistory

    traces = {}
    for conv, _ in chosen:
        if conv.name not in traces:
            traces[conv.name] = record(conv, folder)[1]
    closed = {}
    for conv, question in chosen:
        instructions = next(event for event in traces[conv.name] if event["type"] == "instructions")
        asked = question_event(ASK.format(question=question.text))
        for kind, answer in answers(question):
            closed[conv.name, question.number, kind] = model.log_likelihood(
                FullHistory().render([instructions, asked]), answer)
    for spec in specs:
        policy = make_policy(spec)
        for number, (conv, question) in enumerate(chosen, 1):
            progress(f"{policy.name}: {number} of {len(chosen)} ({conv.name} q{question.number})")
            messages = policy.render([*traces[conv.name], question_event(ASK.format(question=question.text))])
            state = evidence_state("\n".join(m.text for m in messages), needed(conv, question, question.evidence))
            for kind, answer in answers(question):
                log_p = model.log_likelihood(messages, answer)
                base = closed[conv.name, question.number, kind]
                rows.append({"policy": policy.name, "conversation": conv.name, "question": question.number,
                             "category": CATEGORIES[question.category], "answer_kind": kind, "answer": answer,
                             "log_p": round(log_p, 4), "closed_book": round(base, 4),
                             "lift": round(log_p - base, 4), "evidence": state})


def answers(question: Question) -> list[tuple[str, str]]:
    """LoCoMo's answer, and the audit's where it corrects it to another."""
    corrected = getattr(question, "corrected_answer", None)
    return [("gold", question.answer)] + ([("corrected", corrected)] if corrected else [])


def summarise(rows: list[dict], specs: list[str]) -> dict:
    """Per policy: LoCoMo's answers' mean lift with a 95% bootstrap over questions, the evidence kept, the lift
    where it is kept and where it is gone; and on the questions the audit corrects, its answers' and LoCoMo's."""
    from experiments.likelihood import interval

    summary = {}
    for policy in dict.fromkeys(row["policy"] for row in rows):
        gold = [row for row in rows if row["policy"] == policy and row["answer_kind"] == "gold"]
        lifts = np.array([row["lift"] for row in gold])
        low, high = interval(np.random.default_rng(0), [lifts])
        corrected = [row for row in rows if row["policy"] == policy and row["answer_kind"] == "corrected"]
        fixed = {(row["conversation"], row["question"]) for row in corrected}
        summary[policy] = {
            "questions": len(gold), "lift": _mean(lifts), "low": low, "high": high,
            "evidence_kept": _mean([row["evidence"] == "kept" for row in gold]),
            "lift_where_kept": _mean([row["lift"] for row in gold if row["evidence"] == "kept"]),
            "lift_where_gone": _mean([row["lift"] for row in gold if row["evidence"] == "gone"]),
            "corrected_questions": len(corrected),
            "corrected_lift": _mean([row["lift"] for row in corrected]),
            "gold_lift_on_corrected": _mean([row["lift"] for row in gold
                                             if (row["conversation"], row["question"]) in fixed])}
    return summary


def _mean(values) -> float | None:
    values = list(values)
    return round(float(np.mean(values)), 3) if values else None


def table(summary: dict, size: int, args) -> str:
    lines = [f"{size} questions (seed {args.seed}), adversarial ones left out, scored by {args.model}'s likelihood "
             "of LoCoMo's answer: lift in nats over closed book, 95% bootstrap over questions",
             "| policy | lift | evidence kept | lift where kept | lift where gone | audit-corrected answers: lift "
             "(LoCoMo's on them) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for policy, cell in summary.items():
        corrected = (f"{_f(cell['corrected_lift'])} ({_f(cell['gold_lift_on_corrected'])}), "
                     f"n={cell['corrected_questions']}" if cell["corrected_questions"] else "–")
        lines.append(f"| {policy} | {_f(cell['lift'])} [{_f(cell['low'])}, {_f(cell['high'])}] | "
                     f"{_share(cell['evidence_kept'])} | {_f(cell['lift_where_kept'])} | "
                     f"{_f(cell['lift_where_gone'])} | {corrected} |")
    return "\n".join(lines)


def _f(value) -> str:
    return "–" if value is None else f"{value:+.2f}"


def _share(value) -> str:
    return "–" if value is None else f"{value:.0%}"
