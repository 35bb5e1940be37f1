"""claude-code: Claude Code's context management, replayed: auto-compact, and old tool results cleared after an idle
hour.

Auto-compact: when the context reaches the model's window less the room kept for the summary (20,000 tokens) and a
buffer (13,000), the whole conversation is summarised and the summary replaces it; the current question is shown
after it. Time-based clearing: at a call made more than `idle_minutes` after the last reply (the prompt cache has
expired anyway, so rewriting the start costs nothing more), every tool result but the latest `keep_tool_results` is
replaced by a marker, and stays so. Its clock is the trace's: each reply's time and the time of the call after it.

Neither rule is in Claude Code's documentation: both are read from its shipped code, as reported by others (the
sources beside each rule). The summary is written by the replay's summarizer with this project's prompt, not
Claude Code's.
"""
from policies.base import written
from policies.compact import Summarising
from policies.rendering import call_after, step_parts

# github.com/anthropics/claude-code/issues/12004 (read 2026-12-07): the shipped cli.js sets the auto-compact threshold
# at the available input tokens less 13,000; the available input is the context window less min(the model's output
# limit, 20,000) kept for the summary (https://aaronmedina-dev.github.io/claude-code-leak/compaction.html, read
# 2026-12-07: 167,000 of a 200,000-token window). Not in the official docs.
WINDOW, SUMMARY_ROOM, BUFFER = 200_000, 20_000, 13_000
# https://aaronmedina-dev.github.io/claude-code-leak/compaction.html and https://gentic.news/article/how-claude-code-s-3-tier
# (read 2026-12-07): idle over 60 minutes, old tool results cleared but the 5 most recent, each replaced by
# "[Old tool result content cleared]". Not in the official docs.
IDLE_MINUTES, KEEP_TOOL_RESULTS = 60, 5
CLEARED = "Old tool result content cleared"


class ClaudeCode(Summarising):
    name = "claude-code"
    usage = "claude-code[:window=TOKENS/buffer=TOKENS/idle_minutes=N/keep_tool_results=N]"
    # no idle_minutes here: the property tests' loop runs on the wall clock, which would decide what is cleared
    trial_arguments = ("window=20400/buffer=100", "window=21000/buffer=100/keep_tool_results=1")

    def __init__(self, window: int = WINDOW, buffer: int = BUFFER, idle_minutes: float = IDLE_MINUTES,
                 keep_tool_results: int = KEEP_TOOL_RESULTS):
        if min(window, buffer, idle_minutes, keep_tool_results) < 0:
            raise ValueError("every value needs to be 0 or more")
        if SUMMARY_ROOM + buffer >= window:
            raise ValueError(f"buffer={buffer} is more than window={window} allows, with {SUMMARY_ROOM:,} tokens kept "
                             "for the summary")
        self.trigger = window - SUMMARY_ROOM - buffer
        self.idle, self.keep = idle_minutes * 60, keep_tool_results
        self.name = written("claude-code", self, window=window, buffer=buffer, idle_minutes=idle_minutes,
                            keep_tool_results=keep_tool_results)
        self._boundary = (None, 0)  # (the conversation as read, where its clearing ends): found once a render

    def due(self, events, count) -> bool:
        return self.size(events, count) >= self.trigger

    def kept(self, conversation, unsummarised, count) -> int:
        return 0  # the summary replaces the whole conversation

    def step_pieces(self, conversation, step) -> list:
        read = (id(conversation), len(conversation.steps), conversation.now)
        if self._boundary[0] != read:
            self._boundary = (read, self._cleared_before(conversation))
        if step.observations and step.index < self._boundary[1]:
            return step_parts(step, CLEARED)
        return step_parts(step)

    def _cleared_before(self, conversation) -> int:
        """The trace index before which every step's tool results are cleared (0: none): at the latest call made
        more than `idle` seconds after the reply before it, all but the latest `keep` results are cleared."""
        steps, boundary = conversation.steps, 0
        for number, step in enumerate(steps):
            at, before = call_after(conversation, number), step.reply.get("t")
            if not (isinstance(at, (int, float)) and isinstance(before, (int, float)) and at - before > self.idle):
                continue
            observed = [earlier for earlier in steps[:number + 1] if earlier.observations]
            if len(observed) > self.keep:
                boundary = observed[-self.keep].index if self.keep else step.index + 1
        return boundary
