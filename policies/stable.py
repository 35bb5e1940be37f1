"""stable[:T]: a context made for the prompt cache. Its start stays the same from call to call and it grows only by
appending, as full history does; when it passes T tokens it is rebuilt once: the steps before the last KEEP are left
out (one marker says how many), and the key facts found in them by rule (policies/facts.py) go in a block right after
the instructions, fixed until the next rebuild. So the cached prefix breaks once a rebuild, not at every call as a
moving window breaks it.

A service's cache reads what repeats the previous prompt's start at about a tenth of the input price, from a minimum
length (1,024 to 4,096 tokens by provider): full history is cheap with it until it grows long, a window is cheap
without it. This policy is the middle: it pays full price once a rebuild and the cached price in between. T should
be well above the provider's minimum, so that the calls of an epoch are long enough to be cached.
Pick it for long sessions on a service with prompt caching.
"""
from dataclasses import replace

from models import Part
from policies.base import Policy
from policies.facts import MAX_FACTS, all_facts
from policies.invariants import KEY_FACTS
from policies.rendering import Conversation, View, question_part, step_parts
from tokens import local_counter

KEEP = 2  # steps kept at least when the context is rebuilt, so that the step under way keeps its recent past
KEEP_SHARE = 0.5  # and more of the latest steps, as long as they fit in this share of T (bench/stable_sweep.py)
DEFAULT_TOKENS = 8000


class Stable(Policy):
    name = "stable"
    usage = "stable[:T] (a prefix the prompt cache keeps, rebuilt past T tokens)"
    trial_arguments = (1, 500, 3000)

    def __init__(self, tokens: int = DEFAULT_TOKENS):
        if tokens < 1:
            raise ValueError("stable:T needs T >= 1 tokens")
        self.tokens = tokens
        self.name = "stable" if tokens == DEFAULT_TOKENS else f"stable:{tokens}"
        self._costs: dict[int, int] = {}  # a settled step's (or a question's) tokens, by trace index
        self._counted = None  # the conversation they were counted in

    def choose(self, conversation: Conversation, view: View) -> View:
        boundary = self._boundary(conversation)
        if not boundary:
            return view
        facts = facts_before(conversation, boundary)
        blocks = view.blocks + ([("top", facts_block(facts))] if facts else [])
        return replace(view, hidden_before=max(view.hidden_before, boundary), blocks=blocks)

    def _boundary(self, conversation: Conversation) -> int:
        """The trace index of the first step shown since the last rebuild (0: none yet). Read from the start of the
        conversation every call (each settled step's size is kept), so that it is a function of the trace alone."""
        count = local_counter().count
        if conversation is not self._counted:  # another trace, or this one read again from its start
            self._costs, self._counted = {}, conversation
        steps, fixed = conversation.steps, count(conversation.instructions["text"])
        turn_of = {step.index: turn for turn in conversation.turns for step in turn.steps}
        sizes = [self._tokens(step.index, lambda: sum(count(part.text) for _, part in step_parts(step)),
                              settled=step is not steps[-1]) for step in steps]
        questions = {turn.index: self._tokens(turn.index, lambda: count(question_part(turn)[1].text))
                     for turn in conversation.turns}
        boundary, size, shown, added = 0, fixed, set(), 0
        for number, step in enumerate(steps):
            turn = turn_of[step.index].index
            size, added = size + sizes[number] + (questions[turn] if turn not in shown else 0), added + 1
            shown.add(turn)
            # rebuilt, once KEEP steps were added since the last time (a T too small to hold the instructions, the
            # facts and KEEP steps would otherwise rebuild at every call): the latest steps that fit in a share of T
            if size > self.tokens and added > KEEP:
                first = number + 1 - KEEP
                while first > 0 and sum(sizes[first - 1:number + 1]) <= self.tokens * KEEP_SHARE:
                    first -= 1
                boundary = steps[first].index
                shown, added = {turn_of[kept.index].index for kept in steps[first:number + 1]}, 0
                facts = facts_before(conversation, boundary)
                size = (fixed + (count(facts_block(facts).text) if facts else 0) + sum(sizes[first:number + 1])
                        + sum(questions[turn] for turn in shown))
        return boundary

    def _tokens(self, index: int, measure, settled: bool = True) -> int:
        """Tokens of the step or question at trace index `index`, kept once it can no longer change."""
        if index in self._costs:
            return self._costs[index]
        tokens = measure()
        if settled:
            self._costs[index] = tokens
        return tokens


def facts_block(facts: list[str]) -> Part:
    return Part("notes", KEY_FACTS + "\n" + "\n".join(f"- {fact}" for fact in facts))


def facts_before(conversation: Conversation, boundary: int) -> list[str]:
    """The key facts (policies/facts.py's rule) in the questions and the steps before trace index `boundary`, the
    latest MAX_FACTS."""
    return all_facts(conversation.turns, before=boundary)[-MAX_FACTS:]
