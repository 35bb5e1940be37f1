"""Probe: ask each fact's phrasings at each probe point against each policy's context and two controls (closed
book: no history; facts only: a short prompt holding just the facts stated so far), keep every answer and
classify it (correct, distractor, stale, refusal, other)."""
import math
import re
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Sequence

from agent import CUT_SHORT
from experiments.batch import BatchFailed
from experiments.facts import Fact, ProbePoint, matches, question_event, stated
from experiments.replay import Summaries, Summarised, summarised
from models import Message, Model, ModelReply
from policies import make_policy
from policies.full import FullHistory
from replies import STOP_SEQUENCES, cut_at_observation, parse_reply
from tokens import TokenCounter, local_counter
from traces import as_text


# An answer is scored on its Answer line alone: a reply without one (an Action, nothing readable) is "no answer",
# and counts as not correct, whatever values its tool calls hold.
VERDICTS = ["correct", "distractor", "stale", "refusal", "other", "no answer"]
REFUSAL = re.compile(r"\b(?:don'?t know|do not know|not sure|cannot|can'?t|unable|no information|not (?:been )?"
                     r"(?:mentioned|provided|given|stated|specified)|does ?n[o']t (?:say|mention)|unknown|"
                     r"i (?:do not|don'?t) have|not available|no record)\b", re.IGNORECASE)
CONTROLS = ["closed book", "facts only"]


@dataclass
class ProbeAnswer:
    """One probe question asked once, and what came back."""
    condition: str  # a policy's name, or a control: "closed book" (no history), "facts only" (just the facts)
    point: str  # the probe point's label
    fact: str
    phrasing: int  # 1-based, in the fact's list
    repeat: int  # 1-based
    question: str
    answer: str  # the Answer line when there is one, else the whole reply (to show what came back)
    verdict: str  # correct, distractor, stale, refusal or other (see classify), or no answer: no Answer line
    context_tokens: int  # local count of what was sent


def classify(answer: str, fact: Fact) -> str:
    """correct when the answer holds the gold value (whole words, normalised); else distractor or stale when it holds
    one of those known wrong values; else refusal when it says it does not know; else other."""
    if matches(answer, fact.gold or ""):
        return "correct"
    if any(matches(answer, value) for value in fact.distractors):
        return "distractor"
    if any(matches(answer, value) for value in fact.stale):
        return "stale"
    return "refusal" if REFUSAL.search(answer) else "other"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval for k successes in n trials (95% with the default z); (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def tally(answers: Sequence[ProbeAnswer], by: str) -> dict:
    """{condition: {point or fact: {"k", "n", "low", "high", and a count per verdict}}}, in the order first seen."""
    table: dict = {}
    for answer in answers:
        cell = table.setdefault(answer.condition, {}).setdefault(getattr(answer, by), dict.fromkeys(VERDICTS, 0))
        cell[answer.verdict] += 1
    for row in table.values():
        for cell in row.values():
            cell["n"] = sum(cell[v] for v in VERDICTS)
            cell["k"] = cell["correct"]
            cell["low"], cell["high"] = (round(x, 3) for x in wilson(cell["k"], cell["n"]))
    return table


def probe(events: Sequence[dict], specs: Sequence[str], model: Model, facts: list[Fact], points: list[ProbePoint],
          phrasings: int | None = None, repeat: int = 1, jobs: int = 1, summaries: Summaries | None = None,
          counter: TokenCounter | None = None, progress: Callable[[str], None] = lambda text: None,
          answers: list | None = None) -> list[ProbeAnswer]:
    """Ask each fact's first `phrasings` phrasings (all by default), `repeat` times, at every probe point where the
    fact has been stated, against each policy's context and the two controls. `jobs` calls run at once (for network
    backends; each keeps its own retry rules). Answers are appended to `answers` as they come, so that a caller
    interrupted midway keeps them; returned sorted. Raises ValueError, before any call, for a trace with no
    instructions (one cut short before its first model call): the probes are asked under its instructions."""
    plan = planned(events, specs, facts, points, phrasings, repeat, summaries, counter)
    return asked(model, plan, jobs, progress, answers)


@dataclass
class Plan:
    """Every probe question to ask, in the order asked: (answer to fill, context, fact) each; and the order of the
    conditions, in which the answers are sorted."""
    tasks: list[tuple]
    order: dict[str, int]


def planned(events: Sequence[dict], specs: Sequence[str], facts: list[Fact], points: list[ProbePoint],
            phrasings: int | None = None, repeat: int = 1, summaries: Summaries | None = None,
            counter: TokenCounter | None = None) -> Plan:
    """The questions `probe` asks, built before any is asked (so that their calls can be counted and priced first);
    ValueError for a trace with no instructions."""
    counter = counter or local_counter()
    instructions, sessions = prepared(events, specs, counter, summaries)
    order = {condition: n for n, condition in enumerate([*CONTROLS, *sessions])}
    # Asked point by point and, at each point, condition by condition: the calls of one condition at one point share
    # their context up to the question, so a model that keeps the last prompt's keys and values (the embedded models)
    # works through only the question; and a probe stopped midway has asked every condition at the points it reached.
    tasks = [task for point in points
             for task in sorted(_tasks(events, instructions, sessions, facts, point, phrasings, repeat, counter),
                                key=lambda task: order[task[0].condition])]  # a stable sort: else as built
    return Plan(tasks, order)


def asked(model: Model, plan: Plan, jobs: int = 1, progress: Callable[[str], None] = lambda text: None,
          answers: list | None = None, sender: Callable | None = None) -> list[ProbeAnswer]:
    """The plan's questions asked of `model`, `jobs` at a time, each answer appended to `answers` as it comes; or,
    with `sender` (experiments/batch.py), all at once: `sender(requests)` takes every (messages, stop) pair and
    returns their replies in the same order, or raises BatchFailed, whose replies that came are kept as answers
    before it is raised again. Returned sorted, conditions in the plan's order."""
    answers, stopped = answers if answers is not None else [], None
    if sender is None:
        _ask_all(model, plan.tasks, jobs, progress, answers)
    else:
        try:
            replies = sender([(messages, STOP_SEQUENCES) for _, messages, _ in plan.tasks])
        except BatchFailed as failed:  # the replies that came are answers; the failure is said after
            replies, stopped = failed.replies, failed
        answers.extend(_read(answer, reply, fact) for (answer, _, fact), reply in zip(plan.tasks, replies)
                       if reply is not None)
    answers.sort(key=lambda a: (plan.order.get(a.condition, 99), a.point, a.fact, a.phrasing, a.repeat))
    if stopped is not None:
        raise stopped
    return answers


def prepared(events: Sequence[dict], specs: Sequence[str], counter: TokenCounter,
             summaries: Summaries | None) -> tuple[dict, dict]:
    """The instructions the probes are asked under, and each policy's session (_sessions); ValueError for a trace
    with no instructions (one cut short before its first model call)."""
    instructions = next((e for e in events if e["type"] == "instructions"), None)
    if instructions is None:
        raise ValueError("the trace has no instructions to probe with: it holds no instructions event "
                         "(a trace cut short before its first model call has none)")
    return instructions, _sessions(events, specs, counter, summaries)


def _sessions(events: Sequence[dict], specs: Sequence[str], counter: TokenCounter,
              summaries: Summaries | None) -> dict:
    """{policy name: (policy, the events it renders from, where each recorded event now is)}; a policy replay
    could not measure (no summaries for compact) is left out, and so not asked either."""
    sessions = {}
    for spec in specs:
        policy = make_policy(spec)
        made = summarised(policy, events, counter.count, summaries) if policy.needs_summaries else \
            Summarised(list(events), list(range(len(events) + 1)), [])
        if made.events is not None:
            sessions[policy.name] = (policy, made.events, made.position)
    return sessions


def _tasks(events: Sequence[dict], instructions: dict, sessions: dict, facts: list[Fact], point: ProbePoint,
           phrasings: int | None, repeat: int, counter: TokenCounter) -> list[tuple]:
    """(answer to fill, context, fact) for every question asked at one probe point: each stated fact with a gold
    value, each phrasing, each repeat, under each policy and the two controls."""
    tasks = []
    for condition, fact, number, question, messages in contexts(events, instructions, sessions, facts, point,
                                                                 phrasings):
        for attempt in range(1, repeat + 1):
            tasks.append((ProbeAnswer(condition, point.label, fact.id, number, attempt, question, "", "",
                                      sum(counter.count(m.text) for m in messages)), messages, fact))
    return tasks


def contexts(events: Sequence[dict], instructions: dict, sessions: dict, facts: list[Fact], point: ProbePoint,
             phrasings: int | None, controls: Sequence[str] = CONTROLS) -> list[tuple]:
    """(condition, fact, phrasing number, question, the messages asking it) for every probe question at one probe
    point: each stated fact with a gold value, each of its first `phrasings` phrasings, under `controls` and each
    policy of `sessions` (see _sessions)."""
    prefix = events[:point.index]
    known = [fact for fact in facts if fact.keep and stated(fact, prefix)]
    asked_all = []
    for fact in (fact for fact in known if fact.gold):
        for number, question in enumerate(fact.phrasings[:phrasings], 1):
            asked = question_event(question)
            facts_only = "Facts from earlier in the conversation:\n" + "\n".join(f"- {f.statement}" for f in known)
            made = {"closed book": lambda: FullHistory().render([instructions, asked]),
                    "facts only": lambda: [Message.of("system", instructions["text"], "instructions"),
                                           Message.of("user", facts_only + f"\n\nQuestion: {question}", "question")]}
            asked_all += [(control, fact, number, question, made[control]()) for control in controls]
            asked_all += [(name, fact, number, question, policy.render([*session[:position[point.index]], asked]))
                          for name, (policy, session, position) in sessions.items()]
    return asked_all


def _asked(model: Model, task: tuple) -> ProbeAnswer:
    """One probe asked, its answer read from its Answer line and classified."""
    answer, messages, fact = task
    return _read(answer, model.generate(messages, STOP_SEQUENCES), fact)


def _read(answer: ProbeAnswer, reply: ModelReply, fact: Fact) -> ProbeAnswer:
    """A probe's reply read into its answer: the Answer line, classified."""
    text = as_text(cut_at_observation(reply.text))
    said = parse_reply(text).answer
    answer.answer = said if said is not None else text
    answer.verdict = classify(said, fact) if said is not None else "no answer"
    if said is not None and reply.finish in CUT_SHORT:  # the loop's rule: a cut answer is not an answer
        answer.answer, answer.verdict = f"{said} [{CUT_SHORT[reply.finish][1]}]", "no answer"
    return answer


def _ask_all(model: Model, tasks: list[tuple], jobs: int, progress: Callable[[str], None], answers: list) -> None:
    """Every task asked, `jobs` at a time, each answer appended as it comes."""
    if jobs <= 1:
        for number, task in enumerate(tasks, 1):
            progress(f"probe {number} of {len(tasks)} · {task[0].condition} · {task[0].fact} at {task[0].point}")
            answers.append(_asked(model, task))
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_asked, model, task) for task in tasks]
        try:
            for number, future in enumerate(as_completed(futures), 1):
                progress(f"probe {number} of {len(tasks)}, {jobs} at a time")
                answers.append(future.result())
        except BaseException:  # Ctrl-C or a failed call: the calls not started are dropped, the answers kept
            for future in futures:
                future.cancel()
            raise
