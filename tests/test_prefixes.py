"""Saved starts of prompts (models/embedded/prefixes.py), on the tiny random transformer of test_transformer.py: a start
saved by one run and loaded by the next gives the next token the network gives working through it; a damaged,
cut or foreign file is removed and never used."""
import json

import numpy as np
import pytest

from models.embedded.prefixes import KEEP, PrefixStore
from models.embedded.transformer import Transformer
from test_transformer import QWEN_LIKE, random_weights

PROMPT = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3]
START = PROMPT[:8]


def network() -> Transformer:
    return Transformer(QWEN_LIKE, random_weights(QWEN_LIKE))


def saved(tmp_path) -> PrefixStore:
    first = network()
    first.forward(START + [1, 2], 0)  # an earlier run: its instructions, then its own question
    first.cached = START + [1, 2]
    store = PrefixStore(tmp_path)
    store.save(first, START)
    return store


def test_a_saved_start_gives_the_logits_working_through_it_gives(tmp_path):
    saved(tmp_path)
    fresh, restored = network(), network()
    expected = fresh.forward(PROMPT, 0)
    loaded = PrefixStore(tmp_path).restore(restored, PROMPT)
    assert loaded == len(START) and restored.cached == START
    logits = restored.forward(PROMPT[loaded:], loaded)
    assert np.allclose(logits, expected, atol=1e-5) and np.argmax(logits) == np.argmax(expected)


def test_a_prompt_that_does_not_begin_with_the_start_loads_nothing(tmp_path):
    saved(tmp_path)
    other = network()
    assert PrefixStore(tmp_path).restore(other, [4] + PROMPT[1:]) == 0 and other.cached == []
    assert PrefixStore(tmp_path).restore(other, START) == 0  # a whole prompt that is the start: its last token runs


@pytest.mark.parametrize("damage", ["bytes", "cut", "record", "shape"])
def test_a_damaged_saved_start_is_removed_and_never_used(tmp_path, damage):
    saved(tmp_path)
    [data] = tmp_path.glob("*.npz")
    [record] = tmp_path.glob("*.json")
    if damage == "bytes":
        raw = bytearray(data.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        data.write_bytes(bytes(raw))
    elif damage == "cut":
        data.write_bytes(data.read_bytes()[:100])
    elif damage == "record":
        record.write_text("{not json")
    else:  # arrays of another network, with a record that matches their file
        other = Transformer(QWEN_LIKE, random_weights(QWEN_LIKE))
        other.forward(START[:4], 0)
        other.cached = START[:4]
        PrefixStore(tmp_path / "other").save(other, START[:4])
        [foreign] = (tmp_path / "other").glob("*.npz")
        data.write_bytes(foreign.read_bytes())
        fields = json.loads(record.read_text())
        fields["sha256"] = json.loads(next((tmp_path / "other").glob("*.json")).read_text())["sha256"]
        record.write_text(json.dumps(fields))
    restored = network()
    assert PrefixStore(tmp_path).restore(restored, PROMPT) == 0 and restored.cached == []
    assert list(tmp_path.glob("*.npz")) == []  # removed: the next run works through the start and saves it again


def test_at_most_keep_starts_are_kept(tmp_path):
    store = PrefixStore(tmp_path)
    for first in range(KEEP + 3):
        net = network()
        start = [first + 1, 2, 3]
        net.forward(start, 0)
        net.cached = start
        store.save(net, start)
    assert len(list(tmp_path.glob("*.npz"))) == KEEP == len(list(tmp_path.glob("*.json")))
