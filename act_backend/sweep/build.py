"""A point's oracle and backend, generated from its ``Accelerator`` into the point's own
directory with the project's generators, sharing the backend build cache.

Cargo fingerprints a crate by where it lives: a crate generated under every point's directory
would recompile the whole compiler (a minute or more) per point. So the backend is generated
at one fixed build site under the cache directory (``$ACT_BACKEND_CACHE/sweep-site``), where
a new point changes only the ISA table and the build takes well under a second, and its
binary is copied into the point's ``backends/<name>``. One lock serialises the site between
the workers (and sweeps) that share the cache; a cost library change rebuilds the crate's
library there, as it does for ``generate_backend``. A point whose directory already holds
the backend and oracle of the same table, cost library and backend sources is not generated
again (``build.json`` records what they were made from).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from act_backend.backend.cargo import install_executable
from act_backend.jax.target import Target, from_binary

SITE = "sweep-site"
STAMP = "build.json"


def build_point(acc, directory: Path, cost: str | None = None) -> Target:
    """Generates ``acc``'s oracle and backend under ``directory`` (unless they are current)
    and returns the target. Raises ``ValueError`` for a spec the generators refuse and
    ``RuntimeError`` for a failed build."""
    from act_backend.backend import cargo
    from act_backend.backend.generator import generate_backend
    from act_backend.oracle import generate_oracle

    directory = directory.resolve()
    acc.base_dir = str(directory)
    binary = directory / "backends" / acc.name
    stamp = _stamp(acc, cost)
    if _current(directory, binary, stamp):
        return from_binary(binary)
    (directory / STAMP).unlink(missing_ok=True)
    generate_oracle(acc)
    site = cargo.cache_dir() / SITE
    with _locked(cargo.cache_dir() / f"{SITE}.lock"):
        acc.base_dir = str(site)
        try:
            built = generate_backend(acc, cost=cost)
        finally:
            acc.base_dir = str(directory)
        install_executable(built, binary)
    (directory / STAMP).write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n",
                                   encoding="utf-8")
    return from_binary(binary)


def _stamp(acc, cost: str | None) -> dict[str, str | None]:
    """What a point's backend is made of: its ISA table, the backend sources and the cost
    library (by content)."""
    from act_backend.backend.sources import backend_files
    from act_backend.table import dumps, isa_table

    table = dumps(isa_table(acc))
    sources = hashlib.sha256()
    for name, data in sorted(backend_files(table).items()):
        sources.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return {
        "name": acc.name,
        "isa_table": hashlib.sha256(table.encode()).hexdigest(),
        "backend_sources": sources.hexdigest(),
        "cost": cost,
        "cost_library": (hashlib.sha256(Path(cost).read_bytes()).hexdigest()
                         if cost is not None else None),
    }


def _current(directory: Path, binary: Path, stamp: dict) -> bool:
    try:
        recorded = json.loads((directory / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    oracle = directory / "targets" / stamp["name"] / "oracle" / "isa.json"
    return recorded == stamp and binary.is_file() and oracle.is_file()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
