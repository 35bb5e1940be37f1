"""window:N: the instructions, the current question and the last N steps (each with its question).

Cheapest as a session grows: the context stops growing. It forgets everything older, including what
the user said at the start. Pick it for independent questions where old steps are noise.
"""
from dataclasses import replace

from policies.base import Policy
from policies.rendering import Conversation, View


class SlidingWindow(Policy):
    name = "window"
    usage = "window:N"
    trial_arguments = range(0, 7)
    all_questions = False  # user-only differs only here: it shows every question, not just the current one

    def __init__(self, steps: int = 4):
        kind = type(self).name
        if steps < 0:
            raise ValueError(f"{kind}:N needs N >= 0")
        self.steps = steps
        self.name = f"{kind}:{steps}"

    def choose(self, conversation: Conversation, view: View) -> View:
        return hide_all_but_recent(conversation, view, self.steps, all_questions=self.all_questions)


def hide_all_but_recent(conversation: Conversation, view: View, keep: int, all_questions: bool = False) -> View:
    """The view with every step but the last `keep` hidden (steps already hidden stay hidden, for their reason)."""
    steps, all_questions = conversation.steps, view.all_questions or all_questions
    if len(steps) <= keep:
        return replace(view, all_questions=all_questions)
    boundary = steps[-keep].index if keep else steps[-1].index + 1  # the first step kept, or past the last
    return replace(view, hidden_before=max(view.hidden_before, boundary), all_questions=all_questions,
                   retrieved={index for index in view.retrieved if index >= boundary})  # what it hides stays hidden
