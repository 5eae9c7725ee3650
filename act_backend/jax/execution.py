"""Running assembly on an accelerator's oracle: loading the generated oracle package and the
kernel an assembly file defines, and simulating it.

An oracle is a package (``targets/<name>/oracle``: the runtime beside ``isa.json``) imported
here under a name of its own, once per directory and table, so oracles of several
accelerators live side by side in one process. An assembly file defines one function
``name(kernel, api)`` returning the kernel built with the oracle's decorator and api.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from act_backend.oracle.loading import import_oracle

_oracles: dict[tuple[Path, str], ModuleType] = {}


def load_oracle(oracle_dir: Path, identity: str) -> ModuleType:
    """The oracle package in ``oracle_dir``, imported once per ``identity`` (which changes
    with its ISA table)."""
    oracle_dir = oracle_dir.resolve()
    known = _oracles.get((oracle_dir, identity))
    if known is None:
        known = import_oracle(oracle_dir, "_act_backend_jax_oracle")
        _oracles[(oracle_dir, identity)] = known
    return known


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
