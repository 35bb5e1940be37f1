"""stable[:T]: a context made for the prompt cache. Its start stays the same from call to call and it grows only by
appending, as full history does; when it passes T tokens it is rebuilt once: it keeps the latest steps (at least KEEP)
that fit, with their questions, the instructions and the block below, in half of T; the steps before are left out
(one marker says how many), and the key facts found in them by rule (policies/facts.py) go in a block right after
the instructions, fixed until the next rebuild, holding the latest that fit in a quarter of T. So a rebuilt context
starts at most about half of T long, and the next rebuild is at least half of T of growth away: the cached prefix
breaks once a rebuild, not at every call as a moving window breaks it.

A service's cache reads what repeats the previous prompt's start at about a tenth of the input price, from a minimum
length (1,024 to 4,096 tokens by provider): full history is cheap with it until it grows long, a window is cheap
without it. This policy is the middle: it pays full price once a rebuild and the cached price in between. T should
be well above the provider's minimum, so that the calls of an epoch are long enough to be cached.
Pick it for long sessions on a service with prompt caching.
"""
from dataclasses import replace

from policies.base import Policy
from policies.facts import all_facts, by_kind, facts_block, latest
from policies.rendering import Conversation, View, call_after, observation_cut, question_part, step_parts
from tokens import local_counter

KEEP = 2  # steps kept at least when the context is rebuilt, so that the step under way keeps its recent past
KEEP_SHARE = 0.5  # and more of the latest steps, while all it shows fits in this share of T (bench/stable_sweep.py)
FACTS_SHARE = 0.25  # the facts block holds the latest facts that fit in this share of T
# and at most this many: bench/facts_cap.py's choice for stable, the largest cap it measures (on LoCoMo, from 15 to
# 960 facts, stable's tokens and evidence moved little and not in one direction: the share of T binds first)
MAX_FACTS = 960
DEFAULT_TOKENS = 10000


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
        self._found: dict[int, list[str]] = {}  # the facts block's lines of a rebuild, by its boundary
        self._counted, self._cut = None, None  # the conversation they were counted in, under this observation cut

    def choose(self, conversation: Conversation, view: View) -> View:
        boundary = self._boundary(conversation)
        if not boundary:
            return view
        facts = self._facts(conversation, boundary)
        blocks = view.blocks + ([("top", facts_block(facts))] if facts else [])
        return replace(view, hidden_before=max(view.hidden_before, boundary), blocks=blocks)

    def _boundary(self, conversation: Conversation) -> int:
        """The trace index of the first step shown since the last rebuild (0: none yet). Read from the start of the
        conversation every call (each settled step's size is kept), so that it is a function of the trace alone."""
        count = local_counter().count
        # another trace, this one read again from its start, or another cut of observations (a step's size changes)
        if conversation is not self._counted or observation_cut() != self._cut:
            self._costs, self._found, self._counted, self._cut = {}, {}, conversation, observation_cut()
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
            # rebuilt when rebuilds() says so for the call after this step: the latest steps that fit, with their
            # questions, the instructions and the facts, in a share of T, so that the next rebuild is far off
            if self.rebuilds(size, added, step.reply.get("t"), call_after(conversation, number)):
                first = max(0, number + 1 - KEEP)
                # the most the block can hold from here
                room = self.tokens * KEEP_SHARE - fixed - self._block_tokens(conversation, steps[first].index)

                def from_step(start):  # the tokens of steps[start:number + 1] with their questions
                    return sum(sizes[start:number + 1]) + sum(questions[index] for index in
                                                              {turn_of[s.index].index for s in steps[start:number + 1]})
                while first > 0 and from_step(first - 1) <= room:
                    first -= 1
                boundary = steps[first].index if first else 0  # all of it fits: nothing left out, no block
                shown, added = {turn_of[kept.index].index for kept in steps[first:number + 1]}, 0
                size = fixed + self._block_tokens(conversation, boundary) + from_step(first)
        return boundary

    def rebuilds(self, size: int, added: int, before: float | None, at: float | None) -> bool:
        """Whether the call made at time `at` rebuilds the context, `size` tokens long as it grew, `added` steps
        since the last rebuild, the call before made at `before`: past T tokens, once KEEP steps were added since
        the last time (a T too small to hold the instructions, the facts and KEEP steps would otherwise rebuild at
        every call)."""
        return size > self.tokens and added > KEEP

    def _facts(self, conversation: Conversation, boundary: int) -> list[str]:
        """The block's facts at a rebuild at `boundary`, kept once found (they depend on the trace before it alone)."""
        if boundary not in self._found:
            self._found[boundary] = facts_before(conversation, boundary, self.tokens * FACTS_SHARE)
        return self._found[boundary]

    def _block_tokens(self, conversation: Conversation, boundary: int) -> int:
        facts = self._facts(conversation, boundary)
        return local_counter().count(facts_block(facts).text) if facts else 0

    def _tokens(self, index: int, measure, settled: bool = True) -> int:
        """Tokens of the step or question at trace index `index`, kept once it can no longer change."""
        if index in self._costs:
            return self._costs[index]
        tokens = measure()
        if settled:
            self._costs[index] = tokens
        return tokens


def facts_before(conversation: Conversation, boundary: int, room: float) -> list[str]:
    """The key facts (policies/facts.py's rule) in the questions and the steps before trace index `boundary`: the
    standing instructions and the latest others, MAX_FACTS in all, and of them as many as fit in `room` tokens (the
    oldest others left out first)."""
    found = all_facts(conversation.turns, before=boundary)
    most, kinds = min(len(found), MAX_FACTS), by_kind(found)
    facts = latest(*kinds, most)
    count = local_counter().count
    while facts and count(facts_block(facts).text) > room:
        most -= len(facts) // 8 + 1  # the oldest eighth out at a time: a few counts, not one per fact
        facts = latest(*kinds, most)
    return facts
