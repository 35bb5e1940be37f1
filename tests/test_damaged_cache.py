"""Damaged files in a model cache that numpy would still load: each is found when the model loads, or at the first
step it would go wrong, and is one line naming the cache folder and the repair; never a traceback, a flood of
warnings or a confident answer from damaged weights.

The model is a tiny Qwen-shaped network (test_transformer.py's random weights) with a byte-level vocabulary, written
into a model cache in tmp_path as a first run writes the real one, so loading it takes milliseconds, and working
through the instructions (a few thousand tokens of one byte each) a fraction of a second.
"""
import dataclasses
import json
import re
import shutil
import warnings

import numpy as np
import pytest

from models.embedded import gemma, qwen
from models.embedded.cache import CacheError, ModelCache, cache_root
from models.embedded.gguf_file import SEPARATOR, ensure_vocabulary
from models.embedded.local import StopRule
from models.embedded.qwen_tokenizer import CONTROL, NORMAL, USER_DEFINED, byte_alphabet
from test_transformer import QWEN_LIKE, random_weights

TINY = dataclasses.replace(QWEN_LIKE, layers=1, heads=2, kv_heads=1, head_size=8, context=32768)
SETTINGS = {"block_count": TINY.layers, "context_length": TINY.context, "embedding_length": TINY.width,
            "feed_forward_length": 24, "attention.head_count": TINY.heads, "attention.head_count_kv": TINY.kv_heads,
            "rope.freq_base": TINY.rope_base, "attention.layer_norm_rms_epsilon": TINY.eps}
TOKENS = list(byte_alphabet().values()) + ["<tool_call>", "<|im_end|>"]  # a byte's token id is the byte
TYPES = [NORMAL] * 256 + [USER_DEFINED, CONTROL]
USERS_CACHE_ROOT = cache_root()  # read before any test points TINYREACT_CACHE_DIR at its own folder


def strings(texts: list[str]) -> np.ndarray:
    """A list of strings as the cache holds it (gguf_file.unpack_vocabulary)."""
    return np.frombuffer(SEPARATOR.join(texts).encode("utf-8"), np.uint8)


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> ModelCache:
    """The Qwen model's cache folder under a TINYREACT_CACHE_DIR of the test's own, holding the tiny model."""
    monkeypatch.setenv("TINYREACT_CACHE_DIR", str(tmp_path / "cache"))
    cache = qwen.model_cache()

    def vocabulary(cache):
        cache.write_bytes("config.json", json.dumps(SETTINGS).encode())
        cache.write_array("tokens.npy", strings(TOKENS))
        cache.write_array("merges.npy", strings([]))  # no merges: every byte its own token
        cache.write_array("token_types.npy", np.array(TYPES, np.int8))

    def weights(cache):
        for name, weight in random_weights(TINY, vocabulary=len(TOKENS)).items():
            cache.write_array(f"{name}.npy", weight)

    cache.ensure("tokenizer", vocabulary)
    cache.ensure("weights", weights)
    return cache


def unrecorded(cache: ModelCache) -> None:
    """Make `cache` one unpacked before the manifest recorded each array's dtype and shape."""
    path = cache.folder / "manifest.json"
    manifest = json.loads(path.read_text())
    for files in manifest["parts"].values():
        for entry in files.values():
            entry.pop("dtype", None)
            entry.pop("shape", None)
    path.write_text(json.dumps(manifest))


def edit_header(path, old: str, new: str) -> None:
    """Replace `old` by `new` (of the same length) in the .npy header of `path`: the file keeps its size."""
    data = path.read_bytes()
    header = data[:128]  # every array of the tiny model has a header of 128 bytes
    assert len(old) == len(new) and old.encode() in header
    path.write_bytes(header.replace(old.encode(), new.encode()) + data[128:])


def overwrite_data(path, data: bytes) -> None:
    """Overwrite what follows the .npy header of `path`, keeping the header and the size."""
    head = path.read_bytes()[:128]
    assert len(data) == path.stat().st_size - 128
    path.write_bytes(head + data)


def one_line_naming_the_repair(failure, cache: ModelCache) -> str:
    message = str(failure.value)
    assert isinstance(failure.value, CacheError) and "\n" not in message
    assert str(cache.folder) in message and "python agent.py --verify-cache" in message
    assert f"rm -rf {cache.folder}" in message
    return message


def test_the_tiny_model_loads_and_runs(tiny):
    model = qwen.QwenModel()
    assert model.network.arch == TINY
    assert model.complete(model.tokenizer.encode("2 + 2 ="), StopRule([]), max_new_tokens=3)[1] == 3


@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "older-cache"])
@pytest.mark.parametrize("old, new, said", [
    ("'<f4'", "'<i4'", "<i4|int32"),  # the reported case: the quick-start question answered 13 instead of 48
    ("(16, 24)", "(24, 16)", "(24, 16)"),  # a matrix read transposed
    ("(16, 24)", "(16, 12)", "describes 896 bytes, the file has 1,664"),  # half the file: numpy maps it, unsaid
    ("False", "True ", "Fortran"),  # a matrix read transposed, another way
], ids=["int32", "transposed", "shorter", "fortran-order"])
def test_a_header_edited_to_another_dtype_or_shape_is_refused_at_load(tiny, recorded, old, new, said):
    edit_header(tiny.folder / "blk.0.ffn_down.weight.npy", old, new)
    if not recorded:
        unrecorded(tiny)
    with pytest.raises(CacheError) as failure:
        qwen.QwenModel()
    message = one_line_naming_the_repair(failure, tiny)
    assert "blk.0.ffn_down.weight" in message and re.search(said, message)


@pytest.mark.parametrize("damage", ["random bytes, three files", "cut dict", "bytes dtype"])
def test_a_header_that_does_not_parse_is_one_line(tiny, damage):
    rng = np.random.default_rng(1)
    if damage == "random bytes, three files":  # as reported: three weight files overwritten, each keeping its size
        for name in ("blk.0.attn_q.weight.npy", "blk.0.ffn_up.weight.npy", "output.weight.npy"):
            path = tiny.folder / name
            path.write_bytes(rng.bytes(path.stat().st_size))
    elif damage == "cut dict":  # numpy's parser raises tokenize's TokenError
        edit_header(tiny.folder / "blk.0.attn_q.weight.npy", "}", " ")
    else:  # numpy's parser raises TypeError
        edit_header(tiny.folder / "blk.0.attn_q.weight.npy", "'<f4'", "b'<f'")
    with pytest.raises(CacheError) as failure:
        qwen.QwenModel()
    assert ".weight.npy is damaged: its header does not parse" in one_line_naming_the_repair(failure, tiny)


@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "older-cache"])
def test_a_norm_filled_with_nan_is_refused_at_load(tiny, recorded):
    overwrite_data(tiny.folder / "blk.0.ffn_norm.weight.npy", np.full(TINY.width, np.nan, np.float32).tobytes())
    if not recorded:
        unrecorded(tiny)
    with pytest.raises(CacheError) as failure:
        qwen.QwenModel()
    assert "blk.0.ffn_norm.weight holds values that are not finite" in one_line_naming_the_repair(failure, tiny)


@pytest.fixture
def counter_vocabulary(tiny):
    """The token counter's vocabulary in the test's cache root, copied from the user's cache (which is only read), so
    that a run here starts no helper process to read it from its package; read here from the package if the user's
    cache does not have it yet."""
    folder = gemma.model_cache().folder
    users = ModelCache(USERS_CACHE_ROOT / folder.name)
    if not users.has("tokenizer"):
        ensure_vocabulary(ModelCache(folder), gemma.WEIGHTS, "gemma3")
        return
    part = json.loads((users.folder / "manifest.json").read_text())["parts"]["tokenizer"]
    folder.mkdir()
    for name in part:
        shutil.copyfile(users.folder / name, folder / name)
    (folder / "manifest.json").write_text(json.dumps({"version": 1, "parts": {"tokenizer": part}}))


def test_a_matrix_of_random_bytes_stops_the_first_step_in_one_line(tiny, counter_vocabulary, capsys):
    """Random bytes after an intact header: the network's output is not finite. The run stops at its first step with
    one line and exit 2 (the reported run took every NaN for a token for 87 s, printing numpy's warnings)."""
    import cli

    path = tiny.folder / "blk.0.attn_q.weight.npy"
    overwrite_data(path, np.random.default_rng(2).bytes(path.stat().st_size - 128))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = cli.main(["-q", "--model", "local:qwen", "--ttl", "2", "What is 7 * 6 + 5?"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the network's output is not finite" in errors[0]
    assert str(tiny.folder) in errors[0] and "--verify-cache" in errors[0] and f"rm -rf {tiny.folder}" in errors[0]
    assert not [warning for warning in caught if issubclass(warning.category, RuntimeWarning)]


@pytest.mark.parametrize("name, damage, said", [
    ("tokens.npy", "not utf-8", r"tokens.npy is damaged: byte 29\d is not UTF-8"),  # as reported, at byte 1,288,690
    ("token_types.npy", "unknown types", "token_types.npy is damaged"),
    ("token_types.npy", "uint8", "token_types.npy is damaged"),
    ("config.json", "random bytes", "config.json is damaged"),
    ("config.json", "a setting missing", "config.json is damaged: the setting .* is missing"),
], ids=["tokens-not-utf8", "unknown-types", "types-uint8", "config-random", "config-missing"])
def test_a_damaged_vocabulary_is_one_line(tiny, name, damage, said):
    path = tiny.folder / name
    if damage == "not utf-8":
        data = bytearray(path.read_bytes())
        data[128 + 300] = 0xFF
        path.write_bytes(bytes(data))
    elif damage == "unknown types":
        overwrite_data(path, np.full(len(TOKENS), 0x7F, np.int8).tobytes())
    elif damage == "a setting missing":  # valid JSON of the same size: only the settings themselves can tell
        settings = json.loads(path.read_text())
        settings.pop(next(iter(settings)))
        text = json.dumps(settings)
        path.write_text(text + " " * (path.stat().st_size - len(text)))
    elif damage == "uint8":
        edit_header(path, "'|i1'", "'|u1'")
        unrecorded(tiny)  # left to the vocabulary's own check
    else:
        path.write_bytes(np.random.default_rng(3).bytes(path.stat().st_size))
    with pytest.raises(CacheError) as failure:
        qwen.QwenModel()
    assert re.search(said, one_line_naming_the_repair(failure, tiny))


@pytest.mark.parametrize("change, said", [
    (lambda parts: parts["weights"].update({"output.weight.npy": 5}),
     "the entry of output.weight.npy is not an object"),
    (lambda parts: parts.update({"weights": "all of them"}), "the part 'weights' lists no files"),
    (lambda parts: parts["weights"]["output.weight.npy"].update(size="544,538,752"), "no size"),  # was a ValueError
    (lambda parts: parts["weights"]["output.weight.npy"].update(size=True), "no size"),
    (lambda parts: parts["weights"]["output.weight.npy"].update(sha256=None), "no sha256"),
    (lambda parts: parts["weights"]["output.weight.npy"].update(shape=["50", 16]), "a shape that is not whole numbers"),
    (lambda parts: parts["tokenizer"].update({"../../config.json": {"size": 1, "sha256": ""}}), "is not a file name"),
], ids=["entry-a-number", "part-a-string", "size-a-string", "size-true", "sha256-null", "shape-of-text", "a-path"])
def test_a_manifest_of_the_wrong_shape_is_one_line(tiny, change, said):
    path = tiny.folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest["parts"])
    path.write_text(json.dumps(manifest))
    with pytest.raises(CacheError) as failure:
        qwen.QwenModel()
    message = one_line_naming_the_repair(failure, tiny)
    assert "manifest.json is not a manifest" in message and said in message
