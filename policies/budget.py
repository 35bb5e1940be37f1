"""budget:T: the current turn whole, and as many earlier steps as fit in T tokens, the most relevant first,
arranged with the most relevant at the start and at the end of the context.

Relevance is BM25 against the current question (policies/relevance.py); sizes are local token counts
(tokens.py). Models attend best to the start and the end of a long context, so the earlier turns chosen are
laid out by relevance from both edges inward: the most relevant first, the second just before the current
question, the third second, and so on. A marker at the top says so; each step stays whole, with its question.
Pick it when the context must fit a fixed size, whatever the session's length.
"""
from dataclasses import replace

from policies.base import Policy
from policies.relevance import scores
from policies.rendering import NOT_SHOWN, Conversation, View, lay_out, question_part
from tokens import local_counter

ORDER_NOTE = ("earlier steps are chosen for their relevance to the current question and shown most relevant first "
              "and last, not in the order they happened")


class Budget(Policy):
    name = "budget"
    usage = "budget:T"
    trial_arguments = range(1, 3001)
    ordered = False

    def __init__(self, tokens: int = 4000):
        if tokens < 1:
            raise ValueError("budget:T needs T >= 1 tokens")
        self.tokens = self.budget = tokens
        self.name = f"budget:{tokens}"

    def choose(self, conversation: Conversation, view: View) -> View:
        count = local_counter().count
        if len(conversation.turns) < 2:
            return view
        *earlier, current = conversation.turns

        def cost(pieces):
            return sum(count(part.text) for _, part in pieces)

        shown = [step for step in current.steps if view.why_hidden(step.index) is None]
        left = self.tokens - count(conversation.instructions["text"]) - cost([question_part(current)]) \
            - sum(cost(view.parts(step)) for step in shown) \
            - sum(count(part.text) for _, part in view.blocks) - count(ORDER_NOTE)
        turn_of = {step.index: turn for turn in earlier for step in turn.steps
                   if view.why_hidden(step.index) is None}
        relevance = scores(conversation, set(turn_of))
        chosen, turns = set(), set()  # steps kept, and their turns
        for index in sorted(turn_of, key=lambda i: (-relevance[i], -i)):
            turn = turn_of[index]
            step = next(s for s in turn.steps if s.index == index)
            price = cost(view.parts(step))
            price += 0 if turn.index in turns else cost([question_part(turn)])
            if price <= left:
                left -= price
                chosen.add(index)
                turns.add(turn.index)
        by_relevance = sorted(chosen, key=lambda i: (-relevance[i], -i))
        while True:  # the markers for what is left out cost tokens too: measured as laid out, the least relevant go
            kept = set(by_relevance)
            best = {}
            for index in by_relevance:
                best.setdefault(turn_of[index].index, relevance[index])
            ranked = sorted(best, key=lambda t: (-best[t], -t))
            arrangement = ranked[0::2] + ranked[1::2][::-1]  # most relevant at both edges, the least in the middle
            hidden = view.hidden | {index: NOT_SHOWN for index in turn_of if index not in kept}
            chosen_view = replace(view, hidden=hidden, arrangement=arrangement,
                                  note=ORDER_NOTE if arrangement else view.note)
            shown_size = count(conversation.instructions["text"]) + cost(lay_out(conversation, chosen_view))
            if shown_size <= self.tokens or not by_relevance:
                return chosen_view
            by_relevance.pop()
