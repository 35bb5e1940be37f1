"""anthropic-compact: Anthropic's server-side compaction (the `compact_20260112` context edit), replayed.

When a request's input passes the trigger, the API writes a summary of the whole conversation, puts it in a
compaction block, and drops every message before that block from later requests: nothing of the history stays
as it was. Here the summary covers every step before the call; the current question is shown after it (the API
summarises it too, but a context without the current question is not one this project sends). The summary is
written by the replay's summarizer (--summarizer) with this project's summary prompt, or with `instructions`,
which replace that prompt as they replace Anthropic's.

Not taken: `pause_after_compaction` (the API stops after the compaction block so the client can add to it; a
replay adds nothing, so it would change nothing sent). The API refuses a trigger under 50,000 tokens; the replay
takes any, so that a trigger scaled to a short conversation acts.
"""
from policies.base import written
from policies.compact import Summarising

# https://platform.claude.com/docs/en/build-with-claude/compaction (read 2026-12-07):
# trigger {"type": "input_tokens", "value": 150000} by default, at least 50,000
TRIGGER = 150_000


class AnthropicCompact(Summarising):
    name = "anthropic-compact"
    usage = "anthropic-compact[:trigger=TOKENS/instructions=TEXT]"
    trial_arguments = ("trigger=300", "trigger=1200", "trigger=50/instructions=Keep every number.")

    def __init__(self, trigger: int = TRIGGER, instructions: str = ""):
        if trigger < 1:
            raise ValueError("trigger needs at least 1 token")
        self.trigger, self.instructions = trigger, instructions
        self.name = written("anthropic-compact", self, trigger=trigger, instructions=instructions)

    def kept(self, conversation, unsummarised, count) -> int:
        # same page: "the API automatically drops all message blocks prior to the compaction block"
        return 0

    def prompt(self, transcript: str) -> str:
        # same page: `instructions` is a summarization prompt used in place of the default one (the copy read
        # names the parameter; the wording of the rule is not confirmed there)
        if self.instructions:
            return f"{self.instructions}\n\n# CONVERSATION\n{transcript}"
        return super().prompt(transcript)
