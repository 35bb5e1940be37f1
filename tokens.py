"""Local token counts, for the context breakdown and for the offline model's usage: they cost no API call.

The counter is the tokenizer of the embedded Gemma 3 model (models/gemma_tokenizer.py), which shares its
vocabulary family with Gemini. `local_counter()` loads it once per process and hands out the one counter
object; the loop, the policies that measure and the reports are given that object, and each distinct text
is tokenised once and remembered. If the vocabulary cannot be loaded (no model package, a damaged cache),
the counter says so once on stderr and counts an estimate of four characters a token instead,
under a name that says it is an estimate, wherever a count is shown. Billed totals never come from here:
they are the API's own usage numbers.
"""
import sys
from functools import lru_cache
from typing import Callable

GEMMA = "Gemma 3 tokenizer, local"
ESTIMATE = "estimate, 1 token per 4 characters"
MEMO_LIMIT = 200_000  # distinct texts remembered before the memo starts over


class TokenCounter:
    """Counts tokens of text with one tokenizer, remembering every text it has counted."""

    def __init__(self, tokenize: Callable[[str], int] | None = None, name: str = ESTIMATE):
        self._tokenize = tokenize or _estimate
        self.name = name
        self._memo: dict[str, int] = {}

    def count(self, text: str) -> int:
        tokens = self._memo.get(text)
        if tokens is None:
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            tokens = self._memo[text] = self._tokenize(text)
        return tokens


@lru_cache(maxsize=1)
def local_counter() -> TokenCounter:
    """The process's counter: the Gemma 3 tokenizer, or the estimate without it (said once, on stderr)."""
    try:
        from models.gemma import load_tokenizer  # numpy and the vocabulary: loaded only when counting is wanted
        tokenizer = load_tokenizer()
    except Exception as problem:  # no package, no disk, a damaged cache: counting must still work, and say how
        message = f"token counts are estimates (4 characters a token): the Gemma 3 vocabulary could not be loaded: {problem}"
        print(f"warning: {message}", file=sys.stderr)
        return TokenCounter(_estimate, ESTIMATE)
    return TokenCounter(tokenizer.count, GEMMA)


def count_tokens(text: str) -> int:
    """A local count of `text`, with the process's counter."""
    return local_counter().count(text)


def _estimate(text: str) -> int:
    return (len(text) + 3) // 4
