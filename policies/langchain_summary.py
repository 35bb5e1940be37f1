"""langchain-summary: LangChain's `SummarizationMiddleware`, replayed.

Before a model call, when the conversation's messages pass a trigger (in tokens or in messages; given both, either
one), the messages before the last `keep_messages` are replaced by a summary, the summary asked from at most their
last `trim_tokens_to_summarize` tokens. LangChain counts the agent's messages, not its system prompt, and never
splits a tool call from its result: here a message is a question, a reply or an observation, the instructions are
not counted, and the cut falls between steps. With no trigger (the default) it never summarises.

Not taken: triggers and keeps given as a fraction of the model's window, and keep in tokens.
"""
from policies.base import written
from policies.compact import Summarising

# https://reference.langchain.com/python/langchain/agents/middleware/summarization/SummarizationMiddleware
# (read 2026-12-07): trigger None by default (never); keep ("messages", 20); trim_tokens_to_summarize 4000.
# A trigger is met at its value: "tokens" >= N, "messages" >= N (langchain_v1 agents/middleware/summarization.py).
KEEP_MESSAGES = 20
TRIM_TOKENS = 4000


class LangChainSummary(Summarising):
    name = "langchain-summary"
    usage = "langchain-summary[:trigger_tokens=N/trigger_messages=N/keep_messages=N/trim_tokens_to_summarize=N]"
    trial_arguments = ("trigger_tokens=300/keep_messages=2", "trigger_messages=6/keep_messages=2",
                       "trigger_tokens=800/trim_tokens_to_summarize=100")

    def __init__(self, trigger_tokens: int = 0, trigger_messages: int = 0, keep_messages: int = KEEP_MESSAGES,
                 trim_tokens_to_summarize: int = TRIM_TOKENS):
        if min(trigger_tokens, trigger_messages, keep_messages, trim_tokens_to_summarize) < 0:
            raise ValueError("every value needs to be 0 or more (a trigger of 0 is none)")
        if trigger_messages and keep_messages >= trigger_messages:
            raise ValueError(f"keep_messages={keep_messages} is more than trigger_messages={trigger_messages} "
                             "allows: nothing would be summarised")
        self.tokens, self.messages, self.keep, self.trim = (trigger_tokens, trigger_messages, keep_messages,
                                                            trim_tokens_to_summarize)
        self.name = written("langchain-summary", self, trigger_tokens=trigger_tokens, trigger_messages=trigger_messages,
                            keep_messages=keep_messages, trim_tokens_to_summarize=trim_tokens_to_summarize)

    def due(self, events, count) -> bool:
        parts = [part for message in self.render(events)[1:] for part in message.parts]  # not the instructions
        return bool((self.tokens and sum(count(part.text) for part in parts) >= self.tokens)
                    or (self.messages and len(parts) >= self.messages))

    def kept(self, conversation, unsummarised, count) -> int:
        """The most of the latest steps whose messages, with the questions shown among them, are keep_messages
        at most."""
        kept = 0
        while kept < len(unsummarised):
            shown = self._pieces(conversation, unsummarised[-(kept + 1)].index)
            if sum(part.kind != "summary" for _, part in shown) > self.keep:
                break
            kept += 1
        return kept

    def transcript(self, conversation, pieces, count) -> str:
        if not self.trim:
            return super().transcript(conversation, pieces, count)
        kept, tokens = [], 0  # the latest messages that fit, whole (trim_messages, strategy "last")
        for role, part in reversed(pieces):
            tokens += count(part.text)
            if tokens > self.trim:
                break
            kept.insert(0, (role, part))
        return super().transcript(conversation, kept, count)
