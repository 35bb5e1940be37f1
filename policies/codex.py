"""codex: OpenAI Codex CLI's automatic compaction, replayed.

When the context reaches `model_auto_compact_token_limit`, Codex asks the model for a handoff summary and starts
again from the instructions, the user's own recent messages (the newest first, while they fit in 20,000 tokens)
and the summary: every reply and tool result before it is gone. Here the summary covers every step before the
call, the questions that fit in the budget stay beside it as they were asked, and the current question is shown.
A question that does not fit whole is left out; Codex keeps the part of it that fits.
"""
from policies.base import written
from policies.compact import Summarising
from tokens import local_counter

# https://developers.openai.com/codex/config-reference (read 2026-12-07): model_auto_compact_token_limit, "token
# threshold that triggers automatic history compaction (unset uses model defaults)". The default, in
# github.com/openai/codex codex-rs/protocol/src/openai_models.rs (read 2026-12-07): 90% of the model's context
# window; 272,000 tokens for the gpt-5 Codex models in its catalog, so 244,800.
LIMIT = 272_000 * 9 // 10
# github.com/openai/codex codex-rs/core/src/compact.rs (read 2026-12-07): COMPACT_USER_MESSAGE_MAX_TOKENS, the
# budget of the user's messages kept after compaction, newest first
USER_MESSAGES = 20_000


class Codex(Summarising):
    name = "codex"
    usage = "codex[:model_auto_compact_token_limit=TOKENS]"
    trial_arguments = ("model_auto_compact_token_limit=300", "model_auto_compact_token_limit=1200")

    def __init__(self, model_auto_compact_token_limit: int = LIMIT):
        if model_auto_compact_token_limit < 1:
            raise ValueError("model_auto_compact_token_limit needs at least 1 token")
        self.trigger = model_auto_compact_token_limit
        self.name = written("codex", self, model_auto_compact_token_limit=model_auto_compact_token_limit)

    def due(self, events, count) -> bool:
        return self.size(events, count) >= self.trigger  # the context "reaches" the limit

    def kept(self, conversation, unsummarised, count) -> int:
        return 0  # only the user's messages and the summary are carried over

    def earlier_questions(self, conversation, covered: int) -> set[int]:
        """The questions before the summary's end that fit in USER_MESSAGES tokens, the newest first."""
        count, room, kept = local_counter().count, USER_MESSAGES, set()
        for turn in reversed(conversation.turns[:-1]):
            if turn.index >= covered:
                continue
            tokens = count(turn.question["text"])
            if tokens > room:
                break
            room -= tokens
            kept.add(turn.index)
        return kept
