"""Importing a generated oracle package (``targets/<name>/oracle``) into this process, and the
kernel an assembly program defines with it.

The runtime imports itself only relatively, so the package can live under any name: each
import gets a fresh one, which keeps the oracles of several accelerators (all named ``oracle``
on disk) apart in one process. Callers that want one copy per directory keep their own cache.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

_counter = itertools.count()


def import_oracle(oracle_dir: str | Path, prefix: str = "_act_oracle") -> ModuleType:
    """The oracle package in ``oracle_dir``, with its ``decorator`` and ``api`` modules loaded,
    imported under a new name starting with ``prefix``. Nothing is left in ``sys.modules``
    when the import fails."""
    oracle_dir = Path(oracle_dir).resolve()
    name = f"{prefix}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(
        name, oracle_dir / "__init__.py", submodule_search_locations=[str(oracle_dir)])
    if spec is None or spec.loader is None:
        raise ImportError(f"no oracle package in {oracle_dir}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        importlib.import_module(f"{name}.decorator")
        importlib.import_module(f"{name}.api")
    except BaseException:
        for loaded in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[loaded]
        raise
    return module


def load_kernel(oracle: ModuleType, assembly: str, filename: str = "<assembly>") -> Any:
    """The oracle kernel the assembly text defines (``filename`` names it in tracebacks)."""
    namespace: dict[str, Any] = {"__name__": "__act_backend_assembly__"}
    exec(compile(assembly, filename, "exec"), namespace)  # the assembly is Python by design
    defined = [value for value in namespace.values()
               if inspect.isfunction(value) and value.__module__ == namespace["__name__"]]
    if len(defined) != 1:
        names = ", ".join(f.__name__ for f in defined) or "none"
        raise ValueError(f"{filename}: expected one top-level function (the kernel), found "
                         f"{names}")
    decorator = sys.modules[f"{oracle.__name__}.decorator"]
    api = sys.modules[f"{oracle.__name__}.api"]
    return defined[0](decorator.kernel, api)
