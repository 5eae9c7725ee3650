"""Running assembly on an accelerator's oracle: the generated oracle package imported once per
directory and table (``act_backend.oracle.loading`` imports it), and simulation.
"""

from __future__ import annotations

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


def run(kernel: Any, inputs: Sequence[Any]) -> tuple[list[Any], float]:
    """Simulates ``kernel`` on ``inputs``: its outputs (JAX arrays) and the run time in
    milliseconds (compiling the simulation is not counted)."""
    outputs, run_ms = kernel("fsim")(*inputs)
    return list(outputs), run_ms
