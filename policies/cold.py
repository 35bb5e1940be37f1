"""cold[:T]: stable's context, rewritten only when rewriting is free. A prompt cache keeps a prefix a few minutes after
its last use (Anthropic's default is 5 minutes); a call made later reads nothing from it, and pays to write its whole
prompt again, whatever the policy. So while the cache is warm this policy only appends, as full history does, and at a
call whose cache has expired anyway (more than LIFETIME seconds after the call before, by the trace's clock) it
rewrites: the latest steps that fit in half of T, with their questions, the instructions, and the key facts of the
steps left out in a block after the instructions (as stable:T rebuilds). Past T tokens it rewrites as stable does.

OpenClaw prunes old tool results on the same rule (its `cache-ttl` mode). Pick it for conversations with pauses
longer than the cache keeps a prefix: a person's questions minutes or hours apart.
"""
from policies.stable import KEEP, Stable

LIFETIME = 300  # seconds: the shortest lifetime a provider documents (Anthropic's 5-minute cache, models/prices.json)
DEFAULT_TOKENS = 10000


class ColdRewrite(Stable):
    name = "cold"
    usage = "cold[:T] (appends while the prompt cache is warm, rewrites when it has expired or past T tokens)"
    trial_arguments = (1, 500, 3000)

    def __init__(self, tokens: int = DEFAULT_TOKENS):
        if tokens < 1:
            raise ValueError("cold:T needs T >= 1 tokens")
        super().__init__(tokens)
        self.name = "cold" if tokens == DEFAULT_TOKENS else f"cold:{tokens}"

    def rebuilds(self, size: int, added: int, before: float | None, at: float | None) -> bool:
        expired = before is not None and at is not None and at - before > LIFETIME
        return (expired and added >= 1) or (size > self.tokens and added > KEEP)
