"""The likelihood reader: whether a policy's context helps a model to the right answer, read from the model's own
probabilities rather than from an answer it writes. For each probe question, the embedded model scores the gold
answer (and each distractor) as the Answer line after the context and the question; the lift is that log-probability
less the one after the instructions and the question alone (closed book), in nats. Nothing is sampled, parsed or
judged, so a small model that cannot yet write a good answer still shows whether the context holds one it can use.

Asked condition by condition, then probe point by probe point: a context that only grows from one point to the next
(full history) is worked through once in all, and each question after a context runs only its own tokens and the
answers' (the network reuses the longest start it still holds, models/embedded/transformer.py)."""
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from experiments.facts import Fact, ProbePoint
from experiments.probe import contexts, prepared
from experiments.replay import Summaries
from models import ContextOverflow, Model
from tokens import TokenCounter, local_counter

READER_CONTROLS = ["facts only"]  # an upper bound beside the policies; closed book is what each lift is taken from
RESAMPLES = 2_000  # bootstrap draws for each interval
SCORERS = ("local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b", "local:gemma-3-270m")


@dataclass
class Scored:
    """One answer scored after one context: log p(answer | context, question), and after the question alone."""
    condition: str  # a policy's name, or "facts only"
    point: str
    fact: str
    phrasing: int  # 1-based
    answer: str
    gold: bool  # the fact's gold answer; False: one of its distractors
    log_p: float  # nats
    closed_book: float  # nats: the same answer after the instructions and the question, no conversation

    @property
    def lift(self) -> float:
        return self.log_p - self.closed_book


def cannot_score(model: Model) -> str | None:
    """Why `model` cannot be the reader, in one line: only an embedded model, whose every logit is at hand, scores
    text it did not write; None when it can."""
    if callable(getattr(model, "log_likelihood", None)):
        return None
    return (f"--reader likelihood scores the gold answer with the model's own probabilities, which {model.name} "
            f"does not give here: use an embedded model ({', '.join(SCORERS)})")


def empty_gold(facts: list[Fact]) -> str | None:
    """The facts whose gold answer is given but empty, in one line (the reader scores the gold); None if none."""
    empty = [fact.id for fact in facts if fact.gold is not None and not fact.gold.strip()]
    return f"the gold answer of {', '.join(empty)} is empty: the likelihood reader scores it" if empty else None


def score(events: Sequence[dict], specs: Sequence[str], model: Model, facts: list[Fact], points: list[ProbePoint],
          phrasings: int | None = None, summaries: Summaries | None = None, counter: TokenCounter | None = None,
          progress: Callable[[str], None] = lambda text: None, scored: list | None = None) -> list[Scored]:
    """Score each stated fact's gold answer and distractors, for its first `phrasings` phrasings, at every probe
    point, after each policy's context and the facts-only control; each also after the question alone, once.
    Scores are appended to `scored` as they come, so that a caller interrupted midway keeps them. ValueError
    for a fact whose gold answer is empty; ContextOverflow naming the context that does not fit."""
    if empty_gold(facts):
        raise ValueError(empty_gold(facts))
    counter = counter or local_counter()
    scored = scored if scored is not None else []
    instructions, sessions = prepared(events, specs, counter, summaries)
    tasks = {}  # condition -> [(point, fact, phrasing, question, messages)], each condition's points in order
    for point in points:
        for condition, fact, number, question, messages in contexts(events, instructions, sessions, facts, point,
                                                                    phrasings, ["closed book", *READER_CONTROLS]):
            tasks.setdefault(condition, []).append((point, fact, number, question, messages))
    closed = {}
    for point, fact, number, question, messages in tasks.pop("closed book", []):
        for answer in [fact.gold, *fact.distractors]:
            if (fact.id, number, answer) not in closed:
                closed[fact.id, number, answer] = _scored(model, messages, answer, "closed book", point, fact)
    total, done = sum(len(asked) for asked in tasks.values()), 0
    for condition, asked in tasks.items():
        for point, fact, number, question, messages in asked:
            done += 1
            progress(f"likelihood {done} of {total} · {condition} · {fact.id} at {point.label}")
            for answer in [fact.gold, *fact.distractors]:
                log_p = _scored(model, messages, answer, condition, point, fact)
                scored.append(Scored(condition, point.label, fact.id, number, answer, answer == fact.gold, log_p,
                                     closed[fact.id, number, answer]))
    return scored


def _scored(model: Model, messages: list, answer: str, condition: str, point: ProbePoint, fact: Fact) -> float:
    try:
        return model.log_likelihood(messages, answer)
    except ContextOverflow as overflow:
        raise ContextOverflow(f"{condition}'s context at {point.label}, asking about {fact.id}: {overflow}") from None


def lifts(scored: Sequence[Scored], seed: int = 0) -> dict:
    """{condition: {"likelihood": {fact: {point: {"lift", "low", "high", "distractor_lift"}}},
    "likelihood_by_point": {point: {"lift", "low", "high"}}}}: the gold answer's mean lift over phrasings with a
    95% bootstrap interval over phrasings, and over the facts stated by each point (facts drawn, then phrasings
    within them); a distractor's lift is the mean over phrasings and distractors (None when the fact names none)."""
    rng = np.random.default_rng(seed)
    table: dict = {}
    for item in scored:
        cell = table.setdefault(item.condition, {}).setdefault(item.point, {}).setdefault(item.fact, ({}, []))
        if item.gold:
            cell[0][item.phrasing] = item.lift
        else:
            cell[1].append(item.lift)
    result = {}
    for condition, by_point in table.items():
        per_fact, per_point = {}, {}
        for point, by_fact in by_point.items():
            groups = []
            for fact, (gold, distractors) in by_fact.items():
                values = np.array(list(gold.values()))
                groups.append(values)
                low, high = interval(rng, [values])
                per_fact.setdefault(fact, {})[point] = {
                    "lift": _round(values.mean()), "low": low, "high": high,
                    "distractor_lift": _round(np.mean(distractors)) if distractors else None}
            low, high = interval(rng, groups)
            per_point[point] = {"lift": _round(np.mean([g.mean() for g in groups])), "low": low, "high": high}
        result[condition] = {"likelihood": per_fact, "likelihood_by_point": per_point}
    return result


def interval(rng: np.random.Generator, groups: list[np.ndarray]) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of group means, groups drawn with replacement and then the
    values within each drawn group (each draw of a group its own)."""
    chosen = rng.integers(0, len(groups), size=(RESAMPLES, len(groups)))
    means = np.empty(chosen.shape)
    for number, values in enumerate(groups):
        drawn = chosen == number
        picks = rng.integers(0, len(values), size=(int(drawn.sum()), len(values)))
        means[drawn] = values[picks].mean(axis=1)
    totals = means.mean(axis=1)
    return _round(np.percentile(totals, 2.5)), _round(np.percentile(totals, 97.5))


def _round(value) -> float:
    return round(float(value), 3)
