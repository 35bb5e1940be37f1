"""Saved key/value caches of a prompt's start, so that a new run of an embedded model does not work through its
instructions again.

Every run sends the same instructions first (the ReAct rules and the tools' documentation, about 1,300 tokens),
and working through them is most of the first call's time: about 8 s of the quick-start question's 13 s on two
cores. The first run keeps the keys and values of those tokens in the model's cache folder; a later run whose
prompt starts with the same tokens loads them (about 20 MB for 900 tokens, a few tens of milliseconds) and goes on
from there. The keys and values are the ones the forward pass computed for those tokens, as the cache within a run
reuses them from call to call (a forward pass over a longer batch may differ from them in the last bits of a float).

A saved start is trusted only as it was written: its file's SHA-256 is in its name's record, and a file that does
not match, cannot be read, or holds arrays of another shape is removed and worked through again, never used. At
most KEEP starts are kept (the oldest go first): one per set of instructions (a policy with tools of its own has
other instructions).
"""
import hashlib
import json
from pathlib import Path

import numpy as np

from models.embedded.cache import sha256_of
from files import replacing, write_whole

KEEP = 8


class PrefixStore:
    """The saved starts of one model, in `folder` (the model's cache folder's `prefixes`)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.saved: set[tuple[int, ...]] = set()  # starts saved or loaded by this process: not written again

    def restore(self, network, ids: list[int]) -> int:
        """Load into `network` (whose cache is empty) the longest saved start that `ids` begins with, leaving at
        least its last token to be run; returns how many tokens it holds (0 for none)."""
        best = None
        for record in self._records():
            length = record["length"]
            if best is not None and length <= best["length"]:
                continue
            if length < len(ids) and record["digest_ids"] == _digest_ids(ids[:length]):
                best = record
        if best is None:
            return 0
        arrays = self._load(best, network)
        if arrays is None:
            return 0
        network.restore(ids[:best["length"]], arrays["keys"], arrays["values"])
        self.saved.add(tuple(ids[:best["length"]]))
        return best["length"]

    def save(self, network, ids: list[int]) -> None:
        """Keep the network's keys and values of the start `ids` (which its cache holds), once."""
        key = tuple(ids)
        if not ids or key in self.saved or len(network.cached) < len(ids) or network.cached[:len(ids)] != ids:
            return
        self.saved.add(key)
        keys, values = network.snapshot(len(ids))
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            name = _digest_ids(ids)[:24]
            with replacing(str(self.folder / f"{name}.npz")) as temporary:
                with open(temporary, "wb") as file:
                    np.savez(file, **{f"k{n}": k for n, k in enumerate(keys)},
                             **{f"v{n}": v for n, v in enumerate(values)})
                record = {"length": len(ids), "digest_ids": _digest_ids(ids), "sha256": sha256_of(Path(temporary)),
                          "layers": len(keys), "shape": list(keys[0].shape[1:])}
            write_whole(str(self.folder / f"{name}.json"), json.dumps(record).encode("utf-8"))
            self._prune()
        except OSError:  # a full or read-only disk: the next run works through the start itself, as before
            return

    def _records(self) -> list[dict]:
        records = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._remove(path.stem)
                continue
            if (isinstance(record, dict) and type(record.get("length")) is int
                    and isinstance(record.get("digest_ids"), str)):
                records.append({**record, "name": path.stem})
        return records

    def _load(self, record: dict, network) -> dict | None:
        """The arrays of a saved start, checked against its record and the network; None (and the files removed)
        for one that does not match."""
        path = self.folder / f"{record['name']}.npz"
        arch = network.arch
        try:
            if sha256_of(path) != record.get("sha256"):
                raise ValueError("its checksum differs")
            with np.load(path) as data:
                keys = [data[f"k{n}"] for n in range(arch.layers)]
                values = [data[f"v{n}"] for n in range(arch.layers)]
        except (OSError, ValueError, KeyError, EOFError):
            self._remove(record["name"])
            return None
        shape = (record["length"], arch.kv_heads, arch.head_size)
        if any(array.shape != shape or array.dtype != np.float32 or not np.isfinite(array).all()
               for array in keys + values):
            self._remove(record["name"])
            return None
        return {"keys": keys, "values": values}

    def _prune(self) -> None:
        saved = sorted(self.folder.glob("*.npz"), key=lambda path: path.stat().st_mtime)
        for path in saved[:-KEEP]:
            self._remove(path.stem)

    def _remove(self, name: str) -> None:
        for suffix in (".npz", ".json"):
            try:
                (self.folder / f"{name}{suffix}").unlink()
            except OSError:
                pass


def _digest_ids(ids: list[int]) -> str:
    return hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).hexdigest()
