"""Which accelerator a kernel is compiled for: ``resolve(backend)`` turns what the user passes
(an ``Accelerator``, a spec file, or a built ``backends/<name>``) into a ``Target``: the backend
binary, the oracle beside it, and an identity that changes whenever either does.

A generated backend lives at ``<base>/backends/<name>`` and its oracle at
``<base>/targets/<name>/oracle`` (what ``generate_backend`` and ``generate_oracle`` write).
An Accelerator or spec is generated on first use: when its oracle or backend is missing or the
oracle's ISA table differs from the spec's, both are generated again, with the generators'
own progress on the terminal.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from act_backend.spec import Accelerator
from act_backend.spec.load import load_spec


@dataclass(frozen=True)
class Target:
    """A built backend and its oracle. ``identity`` hashes the binary and the oracle's
    ``isa.json``: compiled kernels are cached under it."""

    name: str
    binary: Path
    oracle_dir: Path
    identity: str


def resolve(backend: Any, *, regenerate: bool = False) -> Target:
    """The target ``backend`` names: an ``Accelerator``, a spec file (``*.py``) or a backend
    binary (a ``Target`` is returned as it is). ``regenerate`` forces generation for an
    Accelerator or spec."""
    if isinstance(backend, Target):
        return backend
    if isinstance(backend, Accelerator):
        return from_accelerator(backend, regenerate=regenerate)
    if isinstance(backend, (str, os.PathLike)):
        path = Path(backend).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"backend {str(path)!r}: no such file (expected an "
                                    "Accelerator, a spec file or a built backends/<name>)")
        if path.suffix == ".py":
            return from_spec_file(path, regenerate=regenerate)
        return from_binary(path)
    raise TypeError("backend must be an Accelerator, a spec file or a backend binary, got "
                    f"{type(backend).__name__}")


def from_binary(binary: Path) -> Target:
    """A built ``backends/<name>``, with its oracle at ``../targets/<name>/oracle``."""
    binary = binary.resolve()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise ValueError(f"backend {binary}: not an executable file (expected a built "
                         "backends/<name>)")
    name = binary.name
    oracle_dir = binary.parent.parent / "targets" / name / "oracle"
    if not (oracle_dir / "isa.json").is_file():
        raise ValueError(f"backend {binary}: its oracle is missing (expected "
                         f"{oracle_dir}/isa.json, which generate_oracle writes beside the "
                         "backend)")
    return Target(name, binary, oracle_dir, identity(binary, oracle_dir / "isa.json"))


def from_accelerator(acc: Accelerator, *, regenerate: bool = False) -> Target:
    """The target of ``acc`` under its ``base_dir``, generated when missing or stale."""
    from act_backend.table import isa_table

    base = Path(acc.base_dir).absolute()
    binary = base / "backends" / acc.name
    oracle_dir = base / "targets" / acc.name / "oracle"
    wanted = json.loads(json.dumps(isa_table(acc)))
    if regenerate or not _current(binary, oracle_dir, wanted):
        _generate(acc)
    return from_binary(binary)


def from_spec_file(spec: Path, *, regenerate: bool = False) -> Target:
    """Runs a spec file (its own calls to the generators are held back) and resolves the one
    Accelerator it builds."""
    return from_accelerator(load_spec(spec.resolve()), regenerate=regenerate)


def identity(binary: Path, isa_json: Path) -> str:
    """A hash of the backend binary and of the oracle's ISA table."""
    digest = hashlib.sha256()
    for path in (binary, isa_json):
        digest.update(_file_hash(path).encode())
    return digest.hexdigest()


_hashes: dict[tuple[str, int, int], str] = {}


def _file_hash(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        _hashes[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _hashes[key]


def _current(binary: Path, oracle_dir: Path, wanted: dict) -> bool:
    """Whether the generated backend and oracle exist and the oracle holds ``wanted``."""
    isa_json = oracle_dir / "isa.json"
    if not binary.is_file() or not isa_json.is_file():
        return False
    try:
        return json.loads(isa_json.read_text(encoding="utf-8")) == wanted
    except (OSError, ValueError):
        return False


def _generate(acc: Accelerator) -> None:
    from act_backend.backend.generator import generate_backend
    from act_backend.oracle import generate_oracle

    print(f"act_backend.jax: generating the {acc.name} oracle and backend in {acc.base_dir} "
          "(first use; the backend build takes a few minutes on a cold cache)", file=sys.stderr)
    generate_oracle(acc)
    generate_backend(acc)
