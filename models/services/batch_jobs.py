"""What a provider's batch engine answers, in the words experiments/batch.py reads whatever the provider: a batch's
state (Polled) and each call's outcome (Outcome). OpenAI's Batch API (openai_batch.py) ends a batch completed,
failed, expired or cancelled, and Gemini's batch mode (gemini_batch.py) is read into the same words."""
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from models import ModelError
from models.services import retry

ENDED = ("completed", "failed", "expired", "cancelled")
T = TypeVar("T")


@dataclass
class Polled:
    """A batch's state as the service gave it."""
    status: str
    done: int  # calls answered or failed so far
    total: int
    files: dict = field(default_factory=dict)  # "output", "error": the ids of its files, once it has them
    problem: str = ""  # why a failed batch failed, in the service's words
    inline: list = field(default_factory=list)  # the Outcomes of a batch that carries them in itself (Gemini's)

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@dataclass
class Outcome:
    """One line of a batch's output or error file: the call's response body, or why it has none."""
    id: str
    answer: dict | None
    error: str | None
    refused: tuple[str, ...] = ()  # the settings the error says the model does not take (stop, temperature), in order


class Lost(Exception):
    """A try at making a batch that failed as another try might not (a timeout, a 5xx): the service may have made it
    before its answer was lost."""

    def __init__(self, failure: retry.Retryable):
        super().__init__(str(failure))
        self.failure = failure


def once(attempt: Callable[[retry.Channel], T]) -> Callable[[retry.Channel], T]:
    """`attempt` for retry.run, not tried again by it: a failure another try might fix is raised as Lost."""
    def tried(channel: retry.Channel) -> T:
        try:
            return attempt(channel)
        except retry.Retryable as failure:
            raise Lost(failure) from None
    return tried


def created(create: Callable[[], T], found: Callable[[], T | None], where: str) -> T:
    """What `create` makes (a batch), tried again after a Lost try only once `found` says that try did not make it
    after all: a batch made twice would pay for every call twice."""
    for number in range(1, retry.ATTEMPTS + 1):
        made = found() if number > 1 else None
        if made is not None:
            return made
        try:
            return create()
        except Lost as lost:
            if number == retry.ATTEMPTS:
                raise ModelError(f"{where} failed: {lost.failure} — gave up after {number} attempts") from None
            retry.sleep(retry.backoff(number))
    raise AssertionError("unreachable: the last try returns or raises")
