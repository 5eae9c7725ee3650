"""Importing the user's functions a sweep names: the parameterised spec and JAX kernels, from a
Python file (imported under a name of its own, its directory searched for its own imports) or
from an importable module. Each process imports a file once per modification time.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

_files: dict[tuple[str, int], ModuleType] = {}


def load_function(function: str, *, file: str | None = None, module: str | None = None
                  ) -> Any:
    """``function`` from ``file`` or ``module``. Raises ``ImportError`` (the file or module
    cannot be imported; the cause is chained), ``AttributeError`` (no such function) or
    ``TypeError`` (not callable)."""
    loaded = _import_file(Path(file)) if file is not None else _import_module(module)
    try:
        value = getattr(loaded, function)
    except AttributeError:
        where = file if file is not None else module
        raise AttributeError(f"{where} defines no {function!r}") from None
    if not callable(value):
        raise TypeError(f"{function!r} in {file or module} is not a function (it is of type "
                        f"{type(value).__name__})")
    return value


def _import_module(name: str | None) -> ModuleType:
    if not name:
        raise ImportError("neither a file nor a module was given")
    return importlib.import_module(name)


def _import_file(path: Path) -> ModuleType:
    path = path.resolve()
    if not path.is_file():
        raise ImportError(f"{path}: no such file")
    key = (str(path), path.stat().st_mtime_ns)
    known = _files.get(key)
    if known is not None:
        return known
    name = f"_act_sweep_{path.stem}_{len(_files)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    # The file's own directory first, so that it can import modules beside it.
    directory = str(path.parent)
    added = directory not in sys.path
    if added:
        sys.path.insert(0, directory)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:
        del sys.modules[name]
        if added:
            sys.path.remove(directory)
        if isinstance(e, Exception):
            raise ImportError(f"{path}: importing it raised {type(e).__name__}: {e}") from e
        raise
    _files[key] = module
    return module
