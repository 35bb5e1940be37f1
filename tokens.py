"""Local token counts, for the context breakdown: they cost no API call.

Until an embedded tokenizer is part of the project this is an estimate of one token per four characters,
close to what Gemini's tokenizer gives for English prose and code. Billed totals never come from here:
they are the API's own usage numbers.
"""
COUNTER = "estimate (1 token per 4 characters)"


def count_tokens(text: str) -> int:
    return (len(text) + 3) // 4
