"""Local token counts, for the context breakdown and for the offline model's usage: they cost no API call.

The counter is the tokenizer of the embedded Gemma 3 model (models/embedded/gemma_tokenizer.py), which shares its
vocabulary family with Gemini. `local_counter()` loads it once per process and hands out the one counter
object; the loop, the policies that measure and the reports are given that object, and each distinct text
is tokenised once and remembered. If the vocabulary cannot be loaded (no model package, a damaged cache),
the counter says so once on stderr and counts an estimate of four characters a token instead,
under a name that says it is an estimate, wherever a count is shown. Billed totals never come from here:
they are the API's own usage numbers.
"""
import os
import subprocess
import sys
import threading
from functools import lru_cache
from typing import Callable

from traces import as_text

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
            tokens = self._memo[text] = self._tokenize(as_text(text))  # a lone surrogate cannot be encoded: U+FFFD
        return tokens


@lru_cache(maxsize=1)
def local_counter() -> TokenCounter:
    """The process's counter: the Gemma 3 tokenizer, or the estimate without it (said once, on stderr)."""
    try:
        # numpy and the vocabulary: loaded only when counting is wanted
        from models.embedded.gemma import load_tokenizer
        tokenizer = load_tokenizer()
    except Exception as problem:  # no package, no disk, a damaged cache: counting must still work, and say how
        message = ("token counts are estimates (4 characters a token): "
                   f"the Gemma 3 vocabulary could not be loaded: {problem}")
        print(f"warning: {message}", file=sys.stderr)
        return TokenCounter(_estimate, ESTIMATE)
    return TokenCounter(tokenizer.count, GEMMA)


def read_vocabulary_elsewhere() -> subprocess.Popen | None:
    """On the first run, start a helper process that reads the vocabulary from the weights package into the cache
    (about a quarter of a second), on the other core, while this process loads a model's SDK; None when the cache
    has it already. `local_counter` then finds it there: if the helper is still at it, the cache's lock has this
    process wait, and if the helper failed, this process reads it itself and says why. A thread would not help: the
    SDK's import and the reading both hold the GIL."""
    try:
        from models.embedded.gemma import model_cache  # numpy: the counter needs it soon anyway
        cache = model_cache()
        if cache.has("tokenizer"):
            return None
        project = os.path.dirname(os.path.abspath(__file__))
        command = (f"import sys; sys.path.insert(0, {project!r}); "
                   "from models.embedded.gemma import ensure_tokenizer; ensure_tokenizer()")
        helper = subprocess.Popen([sys.executable, "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, cwd=project,  # not the user's folder: `-c` imports from it
                                  env={**os.environ, "TINYREACT_CACHE_DIR": str(cache.folder.parent.absolute())})
    except Exception:  # no model package, an unreadable cache, no process to spare: local_counter will say what
        return None
    threading.Thread(target=helper.wait, daemon=True).start()  # reaped when it ends, without waiting for it here
    return helper


def count_tokens(text: str) -> int:
    """A local count of `text`, with the process's counter."""
    return local_counter().count(text)


def _estimate(text: str) -> int:
    return (len(text) + 3) // 4
