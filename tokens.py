"""Local token counts, for the context breakdown and for the offline model's usage: they cost no API call.

The counter is the tokenizer of the embedded Gemma 3 model (models/gemma_tokenizer.py), which shares its
vocabulary family with Gemini, loaded on first use. If the model package is not installed, or its vocabulary
cannot be read, counts fall back to an estimate of one token per four characters, and `counter()` says so.
Billed totals never come from here: they are the API's own usage numbers.
"""
GEMMA = "Gemma 3 tokenizer, local"
ESTIMATE = "estimate, 1 token per 4 characters"
_tokenizer = None
_loaded = False


def count_tokens(text: str) -> int:
    tokenizer = _load()
    return tokenizer.count(text) if tokenizer else (len(text) + 3) // 4


def counter() -> str:
    """Which counter produced the counts: name it wherever a count is shown."""
    return GEMMA if _load() else ESTIMATE


def _load():
    global _tokenizer, _loaded
    if not _loaded:
        _loaded = True
        try:
            from models.gemma import load_tokenizer
            _tokenizer = load_tokenizer()
        except Exception:  # no package, no disk, a damaged cache: counting must still work
            _tokenizer = None
    return _tokenizer
