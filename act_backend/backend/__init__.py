"""The backend's sources, shipped inside the package and copied into every generated backend:
the generic Rust crate (``crate/``), the C++ allocator (``allocator/``) and the default cost
model (``cost/default_cost.c``). The functions here say where they are."""

from __future__ import annotations

from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent


def crate_dir() -> Path:
    """The generic Rust crate (its ``Cargo.toml``, ``build.rs``, ``src/``)."""
    return SOURCE_DIR / "crate"


def allocator_dir() -> Path:
    """The C++ allocator, a CMake project."""
    return SOURCE_DIR / "allocator"


def default_cost_source() -> Path:
    """The cost model linked when the user gives none."""
    return SOURCE_DIR / "cost" / "default_cost.c"
