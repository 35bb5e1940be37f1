"""openai-compact: OpenAI's server-side compaction in the Responses API (`context_management` with
`compact_threshold`), replayed.

When the rendered input crosses the threshold, the server compacts the conversation into one compaction item and
the items before it can be dropped from later requests: the item alone carries what came before. The item is
opaque (encrypted): neither its text nor its size can be read. The replay stands in for it with a readable summary
of the steps before the call, asked to be about `item_tokens` tokens long, written by the replay's summarizer
(--summarizer). So its size is a choice of the replay (1,000 tokens unless given, not a documented number), and
what it keeps is the summarizer's, not OpenAI's: the replay says so beside its results.
"""
from policies.base import written
from policies.compact import Summarising

# https://developers.openai.com/api/docs/guides/compaction (read 2026-12-07): "When the rendered token count crosses
# the configured threshold, the server runs server-side compaction"; items before the latest compaction item may be
# dropped. No default threshold is documented: 200,000 is the value the examples use
# (https://openrouter.ai/docs/api_reference/responses/compaction, read 2026-12-07). Our choice.
THRESHOLD = 200_000
ITEM_TOKENS = 1000  # the stand-in's size: undocumented (the item is "opaque"); our choice


class OpenAICompact(Summarising):
    name = "openai-compact"
    usage = "openai-compact[:compact_threshold=TOKENS/item_tokens=TOKENS]"
    trial_arguments = ("compact_threshold=300/item_tokens=50", "compact_threshold=1200/item_tokens=200")

    def __init__(self, compact_threshold: int = THRESHOLD, item_tokens: int = ITEM_TOKENS):
        if compact_threshold < 1 or item_tokens < 1:
            raise ValueError("compact_threshold and item_tokens need at least 1 token")
        if item_tokens >= compact_threshold:
            raise ValueError(f"item_tokens={item_tokens} is more than compact_threshold={compact_threshold} allows")
        self.trigger, self.item_tokens = compact_threshold, item_tokens
        self.name = written("openai-compact", self, compact_threshold=compact_threshold, item_tokens=item_tokens)

    def kept(self, conversation, unsummarised, count) -> int:
        return 0  # the compaction item carries everything before it

    def prompt(self, transcript: str) -> str:
        return f"{super().prompt(transcript)}\n\n# LENGTH\nAt most about {self.item_tokens} tokens."

    def replay_caveat(self, events) -> str:
        return (f"where it compacts, OpenAI's item is opaque (encrypted): the replay shows in its place a readable "
                f"summary asked to be about {self.item_tokens:,} tokens, written by the replay's summarizer")
