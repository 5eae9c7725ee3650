"""What both JAX examples do once their function and inputs are ready: compile for the
accelerator, simulate on its oracle, show what was compiled, and compare with JAX on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import act_backend.jax


def compile_and_check(fn: Callable, *args: Any, backend: str | Path) -> None:
    """Compiles ``fn`` for ``backend`` with ``args`` as its example arguments, simulates it on
    them and prints the instructions, the result's type and the simulation time; then prints
    ``act_backend.jax.check``: JAX on the CPU against the accelerator, in one line."""
    kernel = act_backend.jax.compile(fn, *args, backend=backend)
    out, run_ms = kernel.simulate(*args)
    source = "the cache" if kernel.cached else "the backend"
    print(f"{kernel.name}: {len(kernel.instructions)} instructions, cost {kernel.cost}, "
          f"from {source}; assembly in {kernel.assembly.path}")
    for call in kernel.instructions:
        print(f"    {call}")
    print(f"out: {out.dtype}{list(out.shape)}, simulated in {run_ms:.2f} ms")
    print(act_backend.jax.check(fn, *args, backend=backend))
