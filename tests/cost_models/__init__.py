"""C cost models for the backend tests, and the helpers that build them and the specs.

``build_model(source, kind, out_dir, **defines)`` compiles one of the C files here into an
object file (``"o"``), a static library (``"a"``) or a shared library (``"so"``), the three
forms ``generate_backend(acc, cost=...)`` accepts. ``load_spec(path)`` (from
``act_backend.spec.load``) runs an example spec with both generators held back and returns its
accelerator; ``copy_example`` puts an example in a scratch directory so that generating writes
there.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from act_backend.spec.load import load_spec

__all__ = ["build_model", "copy_example", "load_spec"]

HERE = Path(__file__).resolve().parent
EXAMPLES_DIR = HERE.parents[1] / "examples"


def build_model(source: str, kind: str, out_dir: Path, **defines: str) -> Path:
    """Compiles ``HERE/<source>.c``; ``defines`` become ``-D<NAME>=<value>``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    flags = [f"-D{name}={value}" for name, value in sorted(defines.items())]
    src = HERE / f"{source}.c"
    obj = out_dir / f"{source}.o"
    _run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fPIC", *flags, "-c", str(src),
          "-o", str(obj)])
    if kind == "o":
        return obj
    if kind == "a":
        archive = out_dir / f"lib{source}.a"
        _run(["ar", "rcs", str(archive), str(obj)])
        return archive
    if kind == "so":
        shared = out_dir / f"lib{source}.so"
        _run(["cc", "-shared", "-fPIC", str(obj), "-o", str(shared)])
        return shared
    raise ValueError(f"kind must be 'o', 'a' or 'so', not {kind!r}")


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")


def copy_example(name: str, dst: Path) -> Path:
    """Copies ``examples/<name>`` (spec, kernels, data; no generated files) to ``dst/<name>``."""
    target = dst / name
    shutil.copytree(EXAMPLES_DIR / name, target,
                    ignore=shutil.ignore_patterns("targets", "backends", "__pycache__", "*.pyc"))
    return target


