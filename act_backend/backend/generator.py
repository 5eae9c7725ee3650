"""``generate_backend(acc, cost=None)``: from a TAIDL accelerator to ``backends/<name>``.

Order matters for what a failure leaves behind: the spec and the cost model are checked
before anything is written (``ValueError``); the previous ``backends/<name>`` is removed
before the build, so a failed build (``RuntimeError`` with the build's output) leaves none.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from act_backend.backend import cargo
from act_backend.backend.cost_model import resolve_cost
from act_backend.backend.sources import backend_files, sync_tree


def generate_backend(acc, cost: str | os.PathLike | None = None) -> Path:
    """Writes, builds and installs the compiler backend of ``acc``; returns its path.

    ``cost`` names an object file, static or shared library defining ``act_cost`` that
    replaces the default cost model (one per instruction).
    """
    from act_backend.table import dumps, table_of
    from act_backend.validation import analysis_of, raise_errors

    started = time.monotonic()
    analysis = analysis_of(acc)
    warnings = raise_errors(analysis)
    cost_lib = resolve_cost(cost, acc.base_dir)
    table = table_of(acc.name, analysis)
    # Absolute: cargo runs in the crate's directory, where a relative path means another place.
    base = Path(acc.base_dir).absolute()
    installed = base / "backends" / acc.name
    _remove(installed)
    crate = base / "targets" / acc.name / "backend"
    sync_tree(crate, backend_files(dumps(table)))
    for problem in warnings:
        print(f"warning: {problem.message}", file=sys.stderr)
    built = cargo.build(crate, cost_lib, acc.name, installed)
    for line in built.info:
        print(f"[{acc.name} backend] {line}", file=sys.stderr)
    elapsed = time.monotonic() - started
    print(f"backend for {acc.name} written to {installed} ({elapsed:.1f} s)")
    return installed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
