"""Tokens of a conversation's questions and steps, each counted once it can no longer change.

The vendors' context managers act on the size of the prompt they are given (anthropic-clear's
trigger, strands-window's overflow): a policy keeps one `Sizes` and asks it at every call, so a
call counts only what is new since the one before, and the same trace always gives the same sizes.
"""
from policies.rendering import Conversation, Step, Turn, observation_cut, question_part, step_parts
from tokens import local_counter


class Sizes:
    def __init__(self):
        self._kept: dict[tuple, int] = {}
        self._conversation, self._cut = None, None  # what they were counted in, under which cut

    def prompt(self, conversation: Conversation) -> int:
        """Tokens of what full history sends: the instructions, every question and every step."""
        return (local_counter().count(conversation.instructions["text"])
                + sum(self.question(conversation, turn) for turn in conversation.turns)
                + sum(self.step(conversation, step) for step in conversation.steps))

    def question(self, conversation: Conversation, turn: Turn) -> int:
        return self._counted(conversation, ("question", turn.index), lambda: [question_part(turn)],
                             True)

    def step(self, conversation: Conversation, step: Step, stand_in: str | None = None,
             trim: tuple[int, int] | None = None, inputs: bool = True) -> int:
        """Tokens of a step as shown with a stand-in, a trim or without its calls' arguments."""
        settled = step is not conversation.steps[-1]  # the newest may still get its observation
        return self._counted(conversation, (step.index, stand_in, trim, inputs),
                             lambda: step_parts(step, stand_in, trim=trim, inputs=inputs), settled)

    def _counted(self, conversation: Conversation, key: tuple, pieces, settled: bool) -> int:
        """Tokens of the pieces `pieces()` makes, kept under `key` once `settled`."""
        if conversation is not self._conversation or observation_cut() != self._cut:
            self._kept, self._conversation, self._cut = {}, conversation, observation_cut()
        if key in self._kept:
            return self._kept[key]
        tokens = sum(local_counter().count(part.text) for _, part in pieces())
        if settled:
            self._kept[key] = tokens
        return tokens
