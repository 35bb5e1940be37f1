"""The decoder-only transformer both embedded models run, in numpy, with what differs between them as data.

One block, for both: x + attention(norm(x)), then x + feed_forward(norm(x)), with RMSNorm, rotary positions
(NeoX layout) and grouped-query attention over a key/value cache. What an `Architecture` sets:

                       Gemma 3 270M                        Qwen2.5-Coder 0.5B
  embedding scale      √width                              1
  q/k/v biases         no                                  yes
  q and k normalised   yes (RMSNorm per head)              no
  norms after          attention and feed-forward          none
  feed-forward         GeGLU (tanh GELU)                   SwiGLU (SiLU)
  sliding window       512 on five layers in six           none
  RoPE base            10,000 local, 1,000,000 global      1,000,000
  output layer         the embedding, transposed           its own matrix

Weights are float32 arrays named as in the GGUF file (blk.N.attn_q.weight, ...), matrices as (out, in).
Damaged weights are refused rather than run: weights of the wrong dtype or shape, or norms and biases that are
not finite, when the network is made; output that is not finite, at the step that makes it.
"""
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from models import ModelError

QUERY_CHUNK = 256  # queries attended at once in a long prefill, to bound memory


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def rope(x: np.ndarray, positions: np.ndarray, base: float) -> np.ndarray:
    """Rotary position embedding, NeoX layout: the two halves of each head are the pairs rotated together.
    `x` is (tokens, heads, size)."""
    half = x.shape[-1] // 2
    angles = positions[:, None] * base ** (-np.arange(half, dtype=np.float64) / half)
    cos, sin = np.cos(angles).astype(np.float32)[:, None, :], np.sin(angles).astype(np.float32)[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


@dataclass(frozen=True)
class Architecture:
    layers: int
    width: int
    heads: int
    kv_heads: int
    head_size: int
    eps: float
    context: int  # the longest sequence the model was trained for
    rope_base: float
    activation: Callable[[np.ndarray], np.ndarray]
    embedding_scale: float = 1.0
    qkv_bias: bool = False
    qk_norm: bool = False
    post_norms: bool = False  # RMSNorm on the attention and feed-forward outputs, before they are added
    window: int | None = None  # sliding-window attention on the layers that are not global
    global_every: int = 1  # every n-th layer attends to everything (and uses rope_base); 1: all of them
    local_rope_base: float | None = None
    tied_output: bool = False  # the output layer is the embedding, transposed

    def is_global(self, layer: int) -> bool:
        return (layer + 1) % self.global_every == 0


def weight_shapes(arch: Architecture, vocabulary: int, feed_forward: int) -> dict[str, tuple[int, ...]]:
    """The shape of each weight the forward pass reads, matrices as (out, in), for a vocabulary and a feed-forward
    width (the two sizes the architecture leaves to the weights)."""
    width, queries, keys = arch.width, arch.heads * arch.head_size, arch.kv_heads * arch.head_size
    shapes = {"token_embd.weight": (vocabulary, width), "output_norm.weight": (width,)}
    if not arch.tied_output:
        shapes["output.weight"] = (vocabulary, width)
    block = {"attn_norm.weight": (width,), "attn_q.weight": (queries, width), "attn_k.weight": (keys, width),
             "attn_v.weight": (keys, width), "attn_output.weight": (width, queries), "ffn_norm.weight": (width,),
             "ffn_gate.weight": (feed_forward, width), "ffn_up.weight": (feed_forward, width),
             "ffn_down.weight": (width, feed_forward)}
    if arch.qkv_bias:
        block |= {"attn_q.bias": (queries,), "attn_k.bias": (keys,), "attn_v.bias": (keys,)}
    if arch.qk_norm:
        block |= {"attn_q_norm.weight": (arch.head_size,), "attn_k_norm.weight": (arch.head_size,)}
    if arch.post_norms:
        block |= {"post_attention_norm.weight": (width,), "post_ffw_norm.weight": (width,)}
    for layer in range(arch.layers):
        shapes |= {f"blk.{layer}.{name}": shape for name, shape in block.items()}
    return shapes


def misfit(arch: Architecture, weights: dict[str, np.ndarray]) -> str | None:
    """What makes `weights` unfit to run as `arch`, or None: each weight the forward pass reads must be there,
    float32 and of its shape, and each vector (the norms and biases, a few hundred kilobytes in all) finite. The
    vocabulary and the feed-forward width are taken from the embedding and the first block. For memory-mapped
    matrices only their headers are looked at, so this costs milliseconds."""
    vocabulary = _rows(weights.get("token_embd.weight"))
    feed_forward = _rows(weights.get("blk.0.ffn_gate.weight"))
    for name, shape in weight_shapes(arch, vocabulary, feed_forward).items():
        weight = weights.get(name)
        if weight is None:
            return f"the weight {name} is missing"
        if weight.dtype != np.float32 or weight.shape != shape:
            return f"the weight {name} is {weight.dtype} of shape {weight.shape}, not float32 of shape {shape}"
        if weight.ndim == 1 and not np.isfinite(weight).all():
            return f"the weight {name} holds values that are not finite (NaN or infinity)"
    return None


def _rows(weight: np.ndarray | None) -> int:
    return weight.shape[0] if weight is not None and weight.ndim else 0


class Transformer:
    """The forward pass with a key/value cache that later calls reuse when their prompt extends the cached one."""

    def __init__(self, arch: Architecture, weights: dict[str, np.ndarray],
                 error: Callable[[str], Exception] = ModelError):
        """`error` makes the exception raised for damaged weights, from a one-line problem: a model cache's own
        (`ModelCache.error`) names its folder and how to clear it."""
        problem = misfit(arch, weights)
        if problem:
            raise error(problem)
        self.arch, self.w, self.error = arch, weights, error
        self.output = weights["token_embd.weight" if arch.tied_output else "output.weight"]
        self.cached: list[int] = []  # the tokens whose keys and values are in the cache, in order
        self.timings: dict = {}
        # Keys and values per layer, (positions, kv_heads, size), in buffers that double when full;
        # rows past len(self.cached) are stale.
        shape = (1024, arch.kv_heads, arch.head_size)
        self.keys = [np.zeros(shape, np.float32) for _ in range(arch.layers)]
        self.values = [np.zeros(shape, np.float32) for _ in range(arch.layers)]

    def forward(self, tokens: list[int], start: int, rows: int = 0) -> np.ndarray:
        """Run `tokens` at positions start, start+1, ...; the cache must hold exactly the first `start` tokens.
        Returns the logits for the last token; with `rows`, those of the last `rows` tokens, one row each."""
        a, w, count = self.arch, self.w, len(tokens)
        x = np.asarray(w["token_embd.weight"][tokens], dtype=np.float32) * np.float32(a.embedding_scale)
        positions = np.arange(start, start + count, dtype=np.float64)
        for layer in range(a.layers):
            p = f"blk.{layer}."
            base = a.rope_base if a.is_global(layer) else a.local_rope_base
            h = rms_norm(x, w[p + "attn_norm.weight"], a.eps)
            q, k, v = (h @ w[p + f"attn_{name}.weight"].T for name in "qkv")
            if a.qkv_bias:
                q, k, v = q + w[p + "attn_q.bias"], k + w[p + "attn_k.bias"], v + w[p + "attn_v.bias"]
            q = q.reshape(count, a.heads, a.head_size)
            k = k.reshape(count, a.kv_heads, a.head_size)
            if a.qk_norm:
                q, k = rms_norm(q, w[p + "attn_q_norm.weight"], a.eps), rms_norm(k, w[p + "attn_k_norm.weight"], a.eps)
            self._store(layer, start, rope(k, positions, base), v.reshape(count, a.kv_heads, a.head_size))
            attended = self._attend(rope(q, positions, base), layer, start) @ w[p + "attn_output.weight"].T
            x = x + (rms_norm(attended, w[p + "post_attention_norm.weight"], a.eps) if a.post_norms else attended)
            h = rms_norm(x, w[p + "ffn_norm.weight"], a.eps)
            gate, up = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
            mlp = (a.activation(gate) * up) @ w[p + "ffn_down.weight"].T
            x = x + (rms_norm(mlp, w[p + "post_ffw_norm.weight"], a.eps) if a.post_norms else mlp)
        if rows:
            return rms_norm(x[-rows:], w["output_norm.weight"], a.eps) @ self.output.T
        return self.output @ rms_norm(x[-1], w["output_norm.weight"], a.eps)

    def snapshot(self, count: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Copies of the keys and values of the first `count` cached positions, layer by layer."""
        return [k[:count].copy() for k in self.keys], [v[:count].copy() for v in self.values]

    def restore(self, tokens: list[int], keys: list[np.ndarray], values: list[np.ndarray]) -> None:
        """Make the cache hold `tokens`, with these keys and values (a snapshot of the same network's)."""
        self.cached = []  # first, so that a restore cut short leaves no stale claim
        for layer in range(self.arch.layers):
            self._store(layer, 0, keys[layer], values[layer])
        self.cached = list(tokens)

    def _store(self, layer: int, start: int, k: np.ndarray, v: np.ndarray) -> None:
        end = start + len(k)
        if end > len(self.keys[layer]):
            grown = max(end, 2 * len(self.keys[layer]))
            for buffers in (self.keys, self.values):
                bigger = np.zeros((grown,) + buffers[layer].shape[1:], np.float32)
                bigger[:start] = buffers[layer][:start]
                buffers[layer] = bigger
        self.keys[layer][start:end] = k
        self.values[layer][start:end] = v

    def _attend(self, q: np.ndarray, layer: int, start: int) -> np.ndarray:
        """Causal attention of the new queries over the cached keys (within the window on local layers).
        Each key/value head serves a group of heads // kv_heads query heads."""
        a = self.arch
        count, group = q.shape[0], a.heads // a.kv_heads
        windowed = a.window is not None and not a.is_global(layer)
        out = np.empty((count, a.heads * a.head_size), np.float32)
        for first in range(0, count, QUERY_CHUNK):
            queries = q[first:first + QUERY_CHUNK]
            rows = len(queries)
            end = start + first + rows  # keys up to the last of these queries
            low = max(0, start + first - a.window + 1) if windowed else 0
            # Matrix products per key/value head (numpy hands them to BLAS): (group * rows, size) @ (size, keys).
            grouped = queries.reshape(rows, a.kv_heads, group, a.head_size).transpose(1, 2, 0, 3)
            keys = self.keys[layer][low:end].transpose(1, 2, 0)
            values = self.values[layer][low:end].transpose(1, 0, 2)
            scores = (grouped.reshape(a.kv_heads, group * rows, a.head_size) @ keys) / np.float32(np.sqrt(a.head_size))
            scores = scores.reshape(a.kv_heads, group, rows, end - low)
            query_pos = np.arange(start + first, end)[:, None]
            key_pos = np.arange(low, end)[None, :]
            hidden = key_pos > query_pos
            if windowed:
                hidden |= query_pos - key_pos >= a.window
            scores += np.where(hidden, np.float32(-np.inf), np.float32(0))  # faster than assigning through a mask
            scores -= scores.max(axis=-1, keepdims=True)  # softmax, in place: these are the largest arrays here
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = scores.reshape(a.kv_heads, group * rows, end - low) @ values
            out[first:first + rows] = (attended.reshape(a.kv_heads, group, rows, a.head_size)
                                       .transpose(2, 0, 1, 3).reshape(rows, -1))
        return out

    def greedy(self, prompt: list[int], end_tokens: frozenset[int], limit: int) -> Iterator[int]:
        """Greedy decoding: yields each next token until an end token, `limit` tokens, or a full context.
        The cache is reused for the longest common start with the previous prompt (at least the last prompt
        token is run, for its logits). `self.timings` says how the time went."""
        logits = self._prefill(prompt, len(prompt) - 1)
        for count in range(1, min(limit, self.arch.context - len(prompt)) + 1):
            token = int(np.argmax(logits))
            if token in end_tokens:
                return
            yield token
            if count == limit:
                return
            started = time.perf_counter()
            logits = self._checked_forward([token], len(self.cached))
            self.cached.append(token)
            self.timings["decode_seconds"] += time.perf_counter() - started

    def log_likelihood(self, prompt: list[int], continuation: list[int]) -> float:
        """log p(continuation | prompt) in nats: the sum, over the continuation's tokens, of the log-softmax of the
        logits before each. Nothing is sampled. The cache is reused for the longest common start with what it
        holds, up to the prompt's last token (whose logits score the first continuation token), and holds the
        prompt and the continuation after: the next continuation of the same prompt runs only its own tokens."""
        if not prompt or not continuation:
            raise ValueError("a likelihood needs a prompt and a continuation, each of one token or more")
        rows = self._prefill(prompt + continuation, len(prompt) - 1, rows=len(continuation) + 1)
        logits = rows[:-1].astype(np.float64)  # the last row scores what would follow the continuation
        top = logits.max(axis=-1)
        normaliser = top + np.log(np.exp(logits - top[:, None]).sum(axis=-1))
        return float((logits[np.arange(len(continuation)), continuation] - normaliser).sum())

    def _prefill(self, ids: list[int], most: int, rows: int = 0) -> np.ndarray:
        """Run `ids`, reusing the cache for their longest common start with what it holds, at most `most` tokens
        of it; the logits of the last token (or of the last `rows`). The cache then holds `ids`, and
        `self.timings` says how the time went."""
        reuse = 0
        while reuse < min(len(self.cached), most) and self.cached[reuse] == ids[reuse]:
            reuse += 1
        started = time.perf_counter()
        self.cached = self.cached[:reuse]  # first, so that an interrupted forward pass leaves no stale claim
        logits = self._checked_forward(ids[reuse:], reuse, rows)
        self.cached = list(ids)
        self.timings = {"prefill_tokens": len(ids) - reuse, "reused_tokens": reuse,
                        "prefill_seconds": time.perf_counter() - started, "decode_seconds": 0.0}
        return logits

    def _checked_forward(self, tokens: list[int], start: int, rows: int = 0) -> np.ndarray:
        """`forward`, stopped by logits that are not all finite: a damaged weight makes them, and greedy decoding
        would otherwise take NaN for the best token again and again. Numpy's warnings about overflow and invalid
        values are silenced for the pass: a damaged weight makes thousands, and this check says it once."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            logits = self.forward(tokens, start, rows)
        if not np.isfinite(logits).all():
            raise self.error("the network's output is not finite (NaN or infinity): a weight file is damaged")
        return logits
