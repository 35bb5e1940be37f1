"""compact:T: everything, until the context would pass T tokens; then older steps are replaced by a summary.

The summary is written by the model on request: an extra call, made by the loop when `summary_request`
asks for it, recorded in the trace as a `summary` event and counted in the run's usage. Later renders
show that summary in place of the steps it covers, so a saved trace replays exactly. Pick it for long
sessions whose details you cannot predict, if you can pay for the summary calls and accept the model's
choice of what to keep.
"""
from typing import Callable, Sequence

from models import Message, Part
from policies.base import Policy
from policies.rendering import assemble, pending_parts, question_part, step_parts
from prompts import load

KEEP_STEPS = 2  # the most recent steps are never summarised


class CompactHistory(Policy):
    name = "compact"
    usage = "compact:T"
    trial_arguments = range(50, 3001)
    needs_summaries = True
    composable = False

    def __init__(self, tokens: int = 8000):
        if tokens < 1:
            raise ValueError("compact:T needs T >= 1 tokens")
        self.tokens = tokens
        self.name = f"compact:{tokens}"

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = self._read(events)
        return assemble(conversation, self._pieces(conversation, self._covered(conversation)))

    def summary_request(self, events: Sequence[dict], count: Callable[[str], int]) -> tuple[int, list[Message]] | None:
        """When the context is over budget and there are older steps to fold in: the index the new summary
        will cover up to, and the messages asking the model to write it. Otherwise None."""
        if sum(count(m.text) for m in self.render(events)) <= self.tokens:
            return None
        conversation = self._read(events)
        covered = self._covered(conversation)
        unsummarised = [step for step in conversation.steps if step.index >= covered]
        if len(unsummarised) <= KEEP_STEPS:
            return None
        upto = unsummarised[-KEEP_STEPS].index if KEEP_STEPS else len(events)
        old = self._pieces(conversation, covered, before=upto, current_question=False)
        transcript = "\n\n".join(part.text for _, part in old)
        prompt = load("summary.txt").substitute(conversation=transcript)
        return upto, [Message.of("user", prompt, "request")]

    @staticmethod
    def _covered(conversation) -> int:
        return conversation.summary["upto"] if conversation.summary else 0

    @staticmethod
    def _pieces(conversation, covered: int, before: int | None = None, current_question: bool = True):
        """The summary so far, then every question and step from `covered` on (and before `before`)."""
        pieces = []
        if conversation.summary:
            pieces.append(("user", Part("summary",
                                        "Summary of the earlier conversation:\n" + conversation.summary["text"])))
        for number, turn in enumerate(conversation.turns):
            if before is not None and turn.index >= before:
                break
            current = current_question and number == len(conversation.turns) - 1
            if turn.index >= covered or current:
                pieces.append(question_part(turn))
            for step in turn.steps:
                if covered <= step.index and (before is None or step.index < before):
                    pieces += step_parts(step)
            if before is None and number == len(conversation.turns) - 1:  # not an earlier turn's, left unanswered
                pieces += pending_parts(turn)
        return pieces
