"""What a provider's batch engine answers, in the words experiments/batch.py reads whatever the provider: a batch's
state (Polled) and each call's outcome (Outcome). OpenAI's Batch API (openai_batch.py) ends a batch completed,
failed, expired or cancelled, and Gemini's batch mode (gemini_batch.py) is read into the same words."""
from dataclasses import dataclass, field

ENDED = ("completed", "failed", "expired", "cancelled")


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
