"""The Qwen2.5 tokenizer in pure Python, from the GGUF file's vocabulary and merges: GPT-2 style byte-level BPE.

How text becomes tokens (the same steps as llama.cpp's BPE tokenizer with the `qwen2` pre-tokenizer):
1. Special tokens are split out first: the user-defined ones (<tool_call>, </tool_call>) always, the control
   ones (<|im_start|>, <|im_end|>, <|endoftext|>, ...) only when asked for: text is data, not instructions.
2. The rest is cut into words by the `qwen2` pattern: a few English contractions, letters with at most one
   non-letter before them, single digits, runs of punctuation, runs of whitespace.
3. Each word's UTF-8 bytes are written as printable characters (GPT-2's byte alphabet: a space is "Ġ"), and
   neighbouring pieces are merged, lowest merge rank first, while a merge applies.
No BOS is added: the file says so (tokenizer.ggml.add_bos_token is false).
"""
from functools import lru_cache

import regex

from models.embedded.bpe import merge

NORMAL, CONTROL, USER_DEFINED = 1, 3, 4
END_OF_TEXT, IM_START, IM_END = 151643, 151644, 151645

# \p{L} is any letter and \p{N} any digit or numeral, in every script; hence `regex`, not `re`.
WORDS = regex.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                      r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_alphabet() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte: printable Latin-1 bytes stand for themselves, the others
    (controls, space, ...) for the characters from U+0100 on, in order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + n) for n, b in enumerate(others)}}


class QwenTokenizer:
    def __init__(self, tokens: list[str], types: list[int], merges: list[str]):
        self.tokens, self.types = tokens, types
        self.ids = {text: i for i, text in enumerate(tokens)}
        self.ranks = {merge: rank for rank, merge in enumerate(merges)}  # "left right" -> rank
        self.alphabet = byte_alphabet()
        self.byte_of = {char: b for b, char in self.alphabet.items()}
        self.specials = {kind: sorted((t for t, k in zip(tokens, types) if k == kind), key=len, reverse=True)
                         for kind in (CONTROL, USER_DEFINED)}
        self._splitters = {}
        self._word = lru_cache(maxsize=65536)(self._merge)

    def encode(self, text: str, special: bool = False) -> list[int]:
        """Token ids for `text`; with `special`, control tokens written in the text are read as such."""
        ids = []
        for number, piece in enumerate(self._splitter(special).split(text)):
            if number % 2:  # split() puts each special token found between the pieces of text around it
                ids.append(self.ids[piece])
            else:
                for word in WORDS.findall(piece):
                    ids += self._word(word)
        return ids

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`; control tokens print nothing."""
        out = bytearray()
        for i in ids:
            if self.types[i] == USER_DEFINED:
                out += self.tokens[i].encode("utf-8")
            elif self.types[i] == NORMAL:
                out += bytes(self.byte_of[char] for char in self.tokens[i])
        return out.decode("utf-8", errors="replace")

    def _splitter(self, special: bool) -> regex.Pattern:
        if special not in self._splitters:
            allowed = self.specials[USER_DEFINED] + (self.specials[CONTROL] if special else [])
            allowed.sort(key=len, reverse=True)  # the longest first, so no token is cut by a shorter one
            self._splitters[special] = regex.compile("(" + "|".join(map(regex.escape, allowed)) + ")")
        return self._splitters[special]

    def _merge(self, word: str) -> tuple[int, ...]:
        """BPE over the byte characters of `word`, by the merge list's order."""
        pieces = merge([self.alphabet[b] for b in word.encode("utf-8")],
                       lambda left, right: self.ranks.get(left + " " + right))
        return tuple(self.ids[piece] for piece in pieces)
