"""The `local:` backend: the models embedded in this project, run in numpy (models/qwen.py, models/gemma.py).

Which ones there are is models.LOCAL_MODELS; each module is imported only when its model is chosen.
"""
import importlib
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
