"""The Gemma 3 tokenizer in pure Python, from the GGUF file's vocabulary: SentencePiece BPE by scores.

How text becomes tokens (the same steps as llama.cpp's SPM tokenizer, so the ids match):
1. User-defined tokens (runs of newlines, spaces or tabs, a few HTML tags) are split out first, longest first.
   Control tokens such as <end_of_turn> are never read from text: text is data, not instructions.
2. In the rest, spaces become "▁" and the text is split into characters.
3. Neighbouring pieces are merged, best vocabulary score first, while the merged piece is in the vocabulary.
4. A piece that is not in the vocabulary falls back to its UTF-8 bytes, <0x00> to <0xFF>.
"""
import re
from functools import lru_cache
from itertools import compress

import numpy as np

from models.embedded.bpe import merge

NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6
BOS, EOS, END_OF_TURN = 2, 1, 106


class GemmaTokenizer:
    def __init__(self, tokens: list[str], scores: np.ndarray, types: np.ndarray):
        """`scores` and `types` are arrays, one entry per token: the masks below are array operations, and the
        dictionary is built without a Python loop, because every process that counts tokens builds it."""
        self.tokens, self.scores, self.types = tokens, scores.tolist(), types.tolist()
        readable = ((types == NORMAL) | (types == USER_DEFINED)).tolist()
        self.ids = dict(zip(compress(tokens, readable), compress(range(len(tokens)), readable)))
        self.byte_ids = {int(tokens[i][3:5], 16): i for i in np.flatnonzero(types == BYTE).tolist()}
        user_defined = sorted((tokens[i] for i in np.flatnonzero(types == USER_DEFINED).tolist()),
                              key=len, reverse=True)
        self._split = re.compile("(" + "|".join(map(re.escape, user_defined)) + ")")
        self._cached = lru_cache(maxsize=65536)(self._encode)

    def encode(self, text: str) -> list[int]:
        """Token ids for `text`, without the BOS (the model puts it first)."""
        return list(self._cached(text))

    def count(self, text: str) -> int:
        return len(self._cached(text))

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`; control tokens (BOS, EOS, <end_of_turn>) print nothing."""
        out = bytearray()
        for i in ids:
            kind = self.types[i]
            if kind == BYTE:
                out.append(int(self.tokens[i][3:5], 16))
            elif kind != CONTROL:
                out += self.tokens[i].replace("▁", " ").encode("utf-8")
        return out.decode("utf-8", errors="replace")

    def _encode(self, text: str) -> tuple[int, ...]:
        ids = []
        for piece in self._split.split(text):
            if piece in self.ids and self.types[self.ids[piece]] == USER_DEFINED:
                ids.append(self.ids[piece])
            elif piece:
                ids += self._merge(piece.replace(" ", "▁"))
        return tuple(ids)

    def _merge(self, text: str) -> list[int]:
        """BPE by score over the characters of `text`; a piece not in the vocabulary falls back to its bytes."""
        def rank(left: str, right: str) -> float | None:
            token = self.ids.get(left + right)
            return None if token is None else -self.scores[token]

        ids = []
        for piece in merge(list(text), rank):
            ids += [self.ids[piece]] if piece in self.ids else [self.byte_ids[b] for b in piece.encode("utf-8")]
        return ids
