"""Byte-pair merging, the one algorithm both embedded tokenizers share; they differ only in how a pair is ranked.

Gemma's SentencePiece BPE ranks a pair by the score of the token it would make; Qwen's GPT-2 style BPE by the
pair's place in the merge list. Either way the best-ranked pair anywhere in the text merges first (the leftmost
at equal rank), again and again, until no neighbouring pair can merge.
"""
import heapq
from typing import Callable


def merge(symbols: list[str], rank: Callable[[str, str], float | None]) -> list[str]:
    """The pieces `symbols` merge into, best rank (lowest) first. `rank(left, right)` is None for a pair that
    never merges. A linked list of symbols and a heap of candidate pairs keep it near n log n."""
    symbols = list(symbols)
    following = list(range(1, len(symbols))) + [-1]
    preceding = list(range(-1, len(symbols) - 1))
    heap = []

    def consider(left: int, right: int) -> None:
        if left >= 0 and right >= 0:
            priority = rank(symbols[left], symbols[right])
            if priority is not None:
                heapq.heappush(heap, (priority, left, right, symbols[left] + symbols[right]))

    for i in range(len(symbols) - 1):
        consider(i, i + 1)
    while heap:
        _, left, right, merged = heapq.heappop(heap)
        if following[left] != right or symbols[left] + symbols[right] != merged:
            continue  # one side has merged with something else since this pair was queued
        symbols[left], symbols[right] = merged, ""
        following[left] = following[right]
        if following[right] >= 0:
            preceding[following[right]] = left
        consider(preceding[left], left)
        consider(left, following[left])
    pieces, i = [], 0
    while i >= 0 and symbols:
        pieces.append(symbols[i])
        i = following[i]
    return pieces
