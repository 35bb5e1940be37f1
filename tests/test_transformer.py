"""The shared transformer (models/embedded/transformer.py) on tiny random weights, against a plain reference.

The goldens in test_qwen.py and test_gemma.py check the real models against llama.cpp; these check, in
milliseconds, what the goldens cannot isolate: the key/value cache gives the same logits as running the
whole sequence, grouped-query attention and the sliding window attend where they should, and an interrupted
call leaves no stale cache behind.
"""
import numpy as np
import pytest

from models.embedded.transformer import Architecture, Transformer, gelu_tanh, rms_norm, rope, silu

QWEN_LIKE = Architecture(layers=2, width=16, heads=4, kv_heads=2, head_size=4, eps=1e-6, context=64,
                         rope_base=1e6, activation=silu, qkv_bias=True)
GEMMA_LIKE = Architecture(layers=3, width=16, heads=4, kv_heads=1, head_size=8, eps=1e-6, context=64,
                          rope_base=1e6, activation=gelu_tanh, embedding_scale=4.0, qk_norm=True, post_norms=True,
                          window=3, global_every=3, local_rope_base=1e4, tied_output=True)


def random_weights(a: Architecture, vocabulary: int = 50, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def matrix(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    w = {"token_embd.weight": matrix(vocabulary, a.width), "output_norm.weight": 1 + matrix(a.width)}
    if not a.tied_output:
        w["output.weight"] = matrix(vocabulary, a.width)
    for layer in range(a.layers):
        p = f"blk.{layer}."
        w |= {p + "attn_norm.weight": 1 + matrix(a.width), p + "ffn_norm.weight": 1 + matrix(a.width),
              p + "attn_q.weight": matrix(a.heads * a.head_size, a.width),
              p + "attn_k.weight": matrix(a.kv_heads * a.head_size, a.width),
              p + "attn_v.weight": matrix(a.kv_heads * a.head_size, a.width),
              p + "attn_output.weight": matrix(a.width, a.heads * a.head_size),
              p + "ffn_gate.weight": matrix(24, a.width), p + "ffn_up.weight": matrix(24, a.width),
              p + "ffn_down.weight": matrix(a.width, 24)}
        if a.qkv_bias:
            w |= {p + f"attn_{n}.bias": matrix(len(w[p + f"attn_{n}.weight"])) for n in "qkv"}
        if a.qk_norm:
            w |= {p + "attn_q_norm.weight": 1 + matrix(a.head_size), p + "attn_k_norm.weight": 1 + matrix(a.head_size)}
        if a.post_norms:
            w |= {p + "post_attention_norm.weight": 1 + matrix(a.width),
                  p + "post_ffw_norm.weight": 1 + matrix(a.width)}
    return w


def reference_logits(a: Architecture, w: dict, tokens: list[int]) -> np.ndarray:
    """The whole sequence at once, one query head at a time, with explicit loops over positions."""
    x = w["token_embd.weight"][tokens] * np.float32(a.embedding_scale)
    positions = np.arange(len(tokens), dtype=np.float64)
    for layer in range(a.layers):
        p = f"blk.{layer}."
        base = a.rope_base if a.is_global(layer) else a.local_rope_base
        h = rms_norm(x, w[p + "attn_norm.weight"], a.eps)
        q, k, v = (h @ w[p + f"attn_{n}.weight"].T + (w[p + f"attn_{n}.bias"] if a.qkv_bias else 0) for n in "qkv")
        q, k = q.reshape(len(tokens), a.heads, -1), k.reshape(len(tokens), a.kv_heads, -1)
        v = v.reshape(len(tokens), a.kv_heads, -1)
        if a.qk_norm:
            q, k = rms_norm(q, w[p + "attn_q_norm.weight"], a.eps), rms_norm(k, w[p + "attn_k_norm.weight"], a.eps)
        q, k = rope(q, positions, base), rope(k, positions, base)
        out = np.zeros_like(q)
        for head in range(a.heads):
            kv = head // (a.heads // a.kv_heads)  # consecutive query heads share a key/value head
            for t in range(len(tokens)):
                seen = [s for s in range(t + 1) if a.window is None or a.is_global(layer) or t - s < a.window]
                scores = np.array([q[t, head] @ k[s, kv] for s in seen]) / np.sqrt(a.head_size)
                weights = np.exp(scores - scores.max())
                out[t, head] = (weights / weights.sum()) @ v[seen, kv]
        attended = out.reshape(len(tokens), -1) @ w[p + "attn_output.weight"].T
        x = x + (rms_norm(attended, w[p + "post_attention_norm.weight"], a.eps) if a.post_norms else attended)
        h = rms_norm(x, w[p + "ffn_norm.weight"], a.eps)
        mlp = ((a.activation(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T))
               @ w[p + "ffn_down.weight"].T)
        x = x + (rms_norm(mlp, w[p + "post_ffw_norm.weight"], a.eps) if a.post_norms else mlp)
    output = w["token_embd.weight"] if a.tied_output else w["output.weight"]
    return output @ rms_norm(x[-1], w["output_norm.weight"], a.eps)


@pytest.mark.parametrize("arch", [QWEN_LIKE, GEMMA_LIKE], ids=["qwen-like", "gemma-like"])
def test_the_network_matches_the_reference_whole_and_token_by_token(arch):
    w = random_weights(arch)
    tokens = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7]
    expected = reference_logits(arch, w, tokens)
    whole = Transformer(arch, w)
    assert np.allclose(whole.forward(tokens, 0), expected, atol=1e-4)
    stepwise = Transformer(arch, w)
    stepwise.forward(tokens[:4], 0)
    for position in range(4, len(tokens)):  # the cached keys and values stand in for the earlier tokens
        logits = stepwise.forward([tokens[position]], position)
    assert np.allclose(logits, expected, atol=1e-4)


def test_the_sliding_window_is_honoured_and_matters():
    w = random_weights(GEMMA_LIKE)
    no_window = Architecture(**{**vars(GEMMA_LIKE), "window": None})
    tokens = list(range(1, 12))
    assert not np.allclose(reference_logits(no_window, w, tokens), reference_logits(GEMMA_LIKE, w, tokens), atol=1e-3)
    assert np.allclose(Transformer(no_window, w).forward(tokens, 0), reference_logits(no_window, w, tokens), atol=1e-4)


def test_greedy_reuses_the_cache_and_survives_an_interruption():
    w = random_weights(QWEN_LIKE)
    network = Transformer(QWEN_LIKE, w)
    first = list(network.greedy([1, 2, 3, 4, 5, 6], frozenset(), 5))
    assert network.timings["reused_tokens"] == 0
    again = list(network.greedy([1, 2, 3, 4, 5, 6], frozenset(), 5))
    assert again == first and network.timings["reused_tokens"] == 5  # all but the last prompt token

    class Interrupting(dict):
        def __getitem__(self, name):
            if name == "blk.1.attn_q.weight":
                raise KeyboardInterrupt  # Ctrl-C in the middle of a forward pass
            return super().__getitem__(name)
    network.w = Interrupting(w)
    with pytest.raises(KeyboardInterrupt):
        list(network.greedy([1, 2, 3, 9, 9, 9, 9], frozenset(), 5))
    network.w = w
    after = list(network.greedy([1, 2, 3, 4, 5, 6, 7], frozenset(), 5))
    assert after == list(Transformer(QWEN_LIKE, w).greedy([1, 2, 3, 4, 5, 6, 7], frozenset(), 5))


def reference_log_likelihood(arch: Architecture, w: dict, prompt: list[int], continuation: list[int]) -> float:
    """log p(continuation | prompt) from the reference's last-token logits, one prefix at a time."""
    total = 0.0
    for n, token in enumerate(continuation):
        logits = reference_logits(arch, w, prompt + continuation[:n]).astype(np.float64)
        total += logits[token] - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
    return total


@pytest.mark.parametrize("arch", [QWEN_LIKE, GEMMA_LIKE], ids=["qwen-like", "gemma-like"])
def test_a_continuation_is_scored_as_the_reference_scores_it_and_the_prompt_is_run_once(arch):
    w = random_weights(arch)
    network = Transformer(arch, w)
    prompt, gold, wrong = [3, 14, 15, 9, 26, 5], [35, 8], [9, 7, 11]
    assert network.log_likelihood(prompt, gold) == pytest.approx(reference_log_likelihood(arch, w, prompt, gold),
                                                                 abs=1e-4)
    assert network.timings["reused_tokens"] == 0
    # a second answer to the same prompt runs only its own tokens and the prompt's last
    assert network.log_likelihood(prompt, wrong) == pytest.approx(reference_log_likelihood(arch, w, prompt, wrong),
                                                                  abs=1e-4)
    assert network.timings["reused_tokens"] == len(prompt) - 1
    assert network.timings["prefill_tokens"] == len(wrong) + 1
    # the cache then serves greedy decoding as if it had run the prompt and that answer
    assert list(network.greedy(prompt + wrong, frozenset(), 3)) == list(
        Transformer(arch, w).greedy(prompt + wrong, frozenset(), 3))
    with pytest.raises(ValueError):
        network.log_likelihood(prompt, [])
