"""Running assembly on an accelerator's oracle: loading the generated oracle package and the
kernel an assembly file defines, and simulating it.

An oracle is a package (``targets/<name>/oracle``: the runtime beside ``isa.json``) imported
here under a name of its own, once per directory and table, so oracles of several
accelerators live side by side in one process. An assembly file defines one function
``name(kernel, api)`` returning the kernel built with the oracle's decorator and api.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

_counter = itertools.count()
_oracles: dict[tuple[Path, str], ModuleType] = {}


def load_oracle(oracle_dir: Path, identity: str) -> ModuleType:
    """The oracle package in ``oracle_dir``, imported once per ``identity`` (which changes
    with its ISA table)."""
    oracle_dir = oracle_dir.resolve()
    known = _oracles.get((oracle_dir, identity))
    if known is not None:
        return known
    # The runtime imports itself only relatively, so any package name works.
    name = f"_act_backend_jax_oracle_{next(_counter)}"
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
    _oracles[(oracle_dir, identity)] = module
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


def run(kernel: Any, inputs: Sequence[Any]) -> tuple[list[Any], float]:
    """Simulates ``kernel`` on ``inputs``: its outputs (JAX arrays) and the run time in
    milliseconds (compiling the simulation is not counted)."""
    outputs, run_ms = kernel("fsim")(*inputs)
    return list(outputs), run_ms
