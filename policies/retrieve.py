"""retrieve:K: the last 4 steps, plus the K earlier steps most relevant to the current question, marked.

Relevance is BM25 over words (policies/relevance.py): a step's question, reply and observation against the
current question. Each step brought back is shown in its place with its question and a marker saying it was
brought back; the rest is left out with the usual marker. Pick it for long sessions where questions come back
to earlier topics in their own words; it finds what shares words with the question, not what it means.
"""
from dataclasses import replace

from policies.base import Policy
from policies.relevance import scores
from policies.rendering import NOT_SHOWN, Conversation, View
from policies.window import hide_all_but_recent

RECENT_STEPS = 4


class Retrieve(Policy):
    name = "retrieve"
    usage = "retrieve:K"
    trial_arguments = range(0, 5)

    def __init__(self, k: int = 3):
        if k < 0:
            raise ValueError("retrieve:K needs K >= 0")
        self.k = k
        self.name = f"retrieve:{k}"

    def choose(self, conversation: Conversation, view: View) -> View:
        view = hide_all_but_recent(conversation, view, RECENT_STEPS)
        candidates = {step.index for step in conversation.steps if view.why_hidden(step.index) == NOT_SHOWN}
        relevance = scores(conversation, candidates)
        ranked = sorted((index for index, score in relevance.items() if score > 0), key=lambda i: (-relevance[i], -i))
        chosen = set(ranked[: self.k])
        hidden = {index: why for index, why in view.hidden.items() if index not in chosen}
        return replace(view, hidden=hidden, retrieved=view.retrieved | chosen)
