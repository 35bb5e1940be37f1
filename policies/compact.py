"""compact:T: everything, until the context would pass T tokens; then older steps are replaced by a summary.

The summary is written by the model on request: an extra call, made by the loop when `summary_request`
asks for it, recorded in the trace as a `summary` event and counted in the run's usage. Later renders
show that summary in place of the steps it covers, so a saved trace replays exactly. Pick it for long
sessions whose details you cannot predict, if you can pay for the summary calls and accept the model's
choice of what to keep.

`Summarising` is the seam every summarising policy is written in (the vendors' compaction managers beside it):
when a summary is due (`due`, by default past `trigger` tokens), how many of the latest steps stay as they are
(`kept`), what the summary is asked from (`transcript`, `prompt`), which earlier questions stay beside it
(`earlier_questions`), and how a step not summarised is shown (`step_pieces`). Each hook has the default compact:T uses.
"""
from typing import Callable, Sequence

from models import Message, Part
from policies.base import Policy
from policies.rendering import assemble, pending_parts, question_part, step_parts
from prompts import load

KEEP_STEPS = 2  # the most recent steps are never summarised
SUMMARY_HEADER = "Summary of the earlier conversation:\n"


class Summarising(Policy):
    """Everything, until a summary is due; then the steps it covers are shown as the summary."""
    needs_summaries = True
    composable = False
    trigger = 0  # tokens of context past which a summary is due (the default `due`)

    def render(self, events: Sequence[dict]) -> list[Message]:
        conversation = self._read(events)
        return assemble(conversation, self._pieces(conversation, self._covered(conversation)))

    def summary_request(self, events: Sequence[dict], count: Callable[[str], int]) -> tuple[int, list[Message]] | None:
        """When a summary is due and there are older steps to fold in: the index the new summary will cover up to,
        and the messages asking the model to write it. Otherwise None."""
        if not self.due(events, count):
            return None
        conversation = self._read(events)
        covered = self._covered(conversation)
        unsummarised = [step for step in conversation.steps if step.index >= covered]
        keep = self.kept(conversation, unsummarised, count)
        if len(unsummarised) <= keep:
            return None
        upto = unsummarised[-keep].index if keep else len(events)
        old = self._pieces(conversation, covered, before=upto, current_question=False)
        return upto, [Message.of("user", self.prompt(self.transcript(conversation, old, count)), "request")]

    def due(self, events: Sequence[dict], count: Callable[[str], int]) -> bool:
        """Whether a summary is due before the call made right after `events`: when the context would pass
        `trigger` tokens."""
        return self.size(events, count) > self.trigger

    def size(self, events: Sequence[dict], count: Callable[[str], int]) -> int:
        """Tokens of the context this policy would send right after `events`."""
        return sum(count(message.text) for message in self.render(events))

    def kept(self, conversation, unsummarised: list, count: Callable[[str], int]) -> int:
        """How many of the latest steps not yet summarised stay as they are."""
        return KEEP_STEPS

    def transcript(self, conversation, pieces: list, count: Callable[[str], int]) -> str:
        """The text the summary is asked from: the pieces it will replace (the summary so far first)."""
        return "\n\n".join(part.text for _, part in pieces)

    def prompt(self, transcript: str) -> str:
        """The request for a summary of `transcript`."""
        return load("summary.txt").substitute(conversation=transcript)

    def earlier_questions(self, conversation, covered: int) -> set[int]:
        """The questions (by trace index) of turns the summary covers that are shown beside it: none."""
        return set()

    def step_pieces(self, conversation, step) -> list[tuple[str, Part]]:
        """A step not summarised, as shown: as it happened."""
        return step_parts(step)

    @staticmethod
    def _covered(conversation) -> int:
        return conversation.summary["upto"] if conversation.summary else 0

    def summary_parts(self, conversation) -> list[tuple[str, Part]]:
        """The summary shown in place of what it covers: the latest one."""
        if not conversation.summary:
            return []
        return [("user", Part("summary", SUMMARY_HEADER + conversation.summary["text"]))]

    def _pieces(self, conversation, covered: int, before: int | None = None, current_question: bool = True):
        """The summary so far, then every question and step from `covered` on (and before `before`)."""
        pieces = list(self.summary_parts(conversation))
        kept = self.earlier_questions(conversation, covered) if current_question else set()
        for number, turn in enumerate(conversation.turns):
            if before is not None and turn.index >= before:
                break
            current = current_question and number == len(conversation.turns) - 1
            if turn.index >= covered or current or turn.index in kept:
                pieces.append(question_part(turn))
            for step in turn.steps:
                if covered <= step.index and (before is None or step.index < before):
                    pieces += self.step_pieces(conversation, step)
            if before is None and number == len(conversation.turns) - 1:  # not an earlier turn's, left unanswered
                pieces += pending_parts(turn)
        return pieces


class CompactHistory(Summarising):
    name = "compact"
    usage = "compact:T"
    trial_arguments = range(50, 3001)

    def __init__(self, tokens: int = 8000):
        if tokens < 1:
            raise ValueError("compact:T needs T >= 1 tokens")
        self.tokens = self.trigger = tokens
        self.name = f"compact:{tokens}"
