"""adk-compact: Google ADK's sliding-window compaction (`EventsCompactionConfig`), replayed.

ADK counts invocations, not tokens: an invocation is one user message and everything the agent did for it (here, a
question and its steps). Each time `compaction_interval` new invocations have completed, the events of those
invocations, with the last `overlap_size` invocations of the window before, are summarised, and the summary is
shown in their place from then on. Every summary stays, in order: with an interval of 3 and an overlap of 1 the
second summary covers invocations 3 to 6, and the context shows both summaries, then what came after. Nothing acts
within an invocation, however long it grows.

Not taken: the token-based compaction of newer ADK versions (`token_threshold`, `event_retention_size`).
"""
from models import Message, Part
from policies.base import written
from policies.compact import SUMMARY_HEADER, Summarising

# https://google.github.io/adk-docs/context/compaction (read 2026-12-07): "If you set compaction_interval to 3 and
# overlap_size to 1, the event data is compressed upon completion of events 3, 6, 9, and so on"; the overlap
# "increases size of the second summary compression, and each summary afterwards". The page gives no defaults; 3
# and 1 are its example's. Our choice.
INTERVAL, OVERLAP = 3, 1


class AdkCompact(Summarising):
    name = "adk-compact"
    usage = "adk-compact[:compaction_interval=N/overlap_size=N]"
    trial_arguments = ("compaction_interval=1/overlap_size=0", "compaction_interval=2/overlap_size=1")

    def __init__(self, compaction_interval: int = INTERVAL, overlap_size: int = OVERLAP):
        if compaction_interval < 1 or overlap_size < 0:
            raise ValueError("compaction_interval needs at least 1 invocation, overlap_size 0 or more")
        if overlap_size >= compaction_interval:
            raise ValueError(f"overlap_size={overlap_size} is more than compaction_interval={compaction_interval} "
                             "allows")
        self.interval, self.overlap = compaction_interval, overlap_size
        self.name = written("adk-compact", self, compaction_interval=compaction_interval, overlap_size=overlap_size)

    def summary_request(self, events, count):
        """Before the first call of an invocation, once `compaction_interval` invocations have completed since the
        last summary: a summary of them, and of the last `overlap_size` invocations before them."""
        conversation = self._read(events)
        covered = self._covered(conversation)
        done = [turn for turn in conversation.turns[:-1] if turn.index >= covered]
        if len(done) < self.interval or conversation.turns[-1].steps:
            return None
        upto = conversation.turns[-1].index  # the window ends where the new invocation begins
        before = [turn for turn in conversation.turns if turn.index < covered][-self.overlap:] if self.overlap else []
        window = self._pieces(conversation, before[0].index if before else covered, before=upto,
                              current_question=False)
        transcript = "\n\n".join(part.text for _, part in window if part.kind != "summary")
        return upto, [Message.of("user", self.prompt(transcript), "request")]

    def summary_parts(self, conversation) -> list:
        """Every summary since the last reset, in order: each stays in place of the invocations it covers."""
        return [("user", Part("summary", SUMMARY_HEADER + summary["text"])) for summary in conversation.summaries]
