"""Simulating assembly kernels on generated oracles, for any test that needs to.

* ``load_bf16(path, shape)``: a raw little-endian bf16 matrix (``examples/*/data/*.dat``);
* ``bf16_tolerance(v)``: two bf16 ulps of the largest magnitude in ``v``;
* ``load_oracle(oracle_dir)``: import a generated oracle package (each call a fresh copy, so
  oracles of several accelerators live side by side in one process);
* ``load_kernel(oracle, asm_path)``: the kernel object of an assembly file;
* ``run_assembly(oracle_dir, asm_path, inputs)``: simulate and return the outputs as NumPy;
* ``generate_example_oracle(spec_path, work_dir)``: run an example spec in ``work_dir`` with
  only its oracle generated (``generate_backend`` becomes a no-op).
"""

from __future__ import annotations

import contextlib
import math
import runpy
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np

from act_backend.oracle.loading import import_oracle
from act_backend.oracle.loading import load_kernel as load_assembly

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples"
ASSEMBLY_DIR = ROOT / "tests" / "assembly"


def load_bf16(path: str | Path, shape: Sequence[int]) -> np.ndarray:
    """A raw little-endian bf16 array of ``shape`` read from ``path``."""
    raw = np.frombuffer(Path(path).read_bytes(), dtype="<u2")
    expected = math.prod(shape)
    if raw.size != expected:
        raise ValueError(f"{path}: holds {raw.size} bf16 values, shape {tuple(shape)} needs "
                         f"{expected}")
    return raw.astype(np.uint16).view(ml_dtypes.bfloat16).reshape(shape)


def bf16_ulp(x: float) -> float:
    """The spacing of bf16 values at ``x``: ``2**(floor(log2|x|) - 7)`` (8 significant bits)."""
    magnitude = abs(float(x))
    if magnitude == 0.0:
        return 0.0
    return 2.0 ** (math.floor(math.log2(magnitude)) - 7)


def bf16_tolerance(v: Any) -> float:
    """Two bf16 ulps of the largest magnitude in ``v``."""
    largest = float(np.max(np.abs(np.asarray(v, dtype=np.float32))))
    return 2.0 * bf16_ulp(largest)


def load_oracle(oracle_dir: str | Path) -> ModuleType:
    """Imports the oracle package in ``oracle_dir`` under a name of its own: a fresh copy per
    call keeps two accelerators' oracles (both named ``oracle`` on disk) apart."""
    return import_oracle(oracle_dir)


def load_kernel(oracle: ModuleType, asm_path: str | Path) -> Any:
    """The kernel an assembly file defines, built with ``oracle``'s decorator and api."""
    return load_assembly(oracle, Path(asm_path).read_text(), str(asm_path))


def run_assembly(oracle_dir: str | Path, asm_path: str | Path, inputs: Sequence[Any],
                 backend: str = "CPU") -> list[np.ndarray]:
    """Compiles and simulates ``asm_path`` on the oracle in ``oracle_dir``; NumPy outputs."""
    oracle = load_oracle(oracle_dir)
    sys.modules[f"{oracle.__name__}.decorator"].set_simulation_backend(backend)
    kernel = load_kernel(oracle, asm_path)
    kernel("fsim-compile")()
    outputs, _ = kernel("fsim")(*inputs)
    return [np.asarray(out) for out in outputs]


@contextlib.contextmanager
def _backend_disabled() -> Iterator[None]:
    import act_backend

    # act_backend imports its generators lazily (module __getattr__): only an attribute set
    # on the module itself is to be put back, so that the lazy import works again after.
    namespace = vars(act_backend)
    saved = namespace.get("generate_backend")
    act_backend.generate_backend = lambda *args, **kwargs: None
    try:
        yield
    finally:
        if saved is None:
            del act_backend.generate_backend
        else:
            act_backend.generate_backend = saved


def generate_example_oracle(spec_path: str | Path, work_dir: str | Path) -> Path:
    """Copies a spec into ``work_dir``, runs it there with ``generate_backend`` a no-op and
    returns the oracle directory it generated (``work_dir/targets/<name>/oracle``)."""
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    copy = work_dir / Path(spec_path).name
    shutil.copyfile(spec_path, copy)
    with _backend_disabled():
        namespace = runpy.run_path(str(copy), run_name="__main__")
    from act_backend.spec import Accelerator

    accs = [v for v in namespace.values() if isinstance(v, Accelerator)]
    if len(accs) != 1:
        raise ValueError(f"{spec_path}: expected one Accelerator, found {len(accs)}")
    return work_dir / "targets" / accs[0].name / "oracle"
