"""A compiled kernel: the assembly a backend produced for one JAX function, runnable on the
accelerator's oracle.

``k(*arrays)`` simulates and returns JAX arrays shaped like the function's results;
``k.simulate(*arrays)`` also returns the simulated run time. ``k.assembly`` (its ``text`` and
``path``), ``k.cost`` (the chosen candidate's cost), ``k.instructions`` (the instruction calls,
in order) and ``k.report`` (the backend's ``report.json``) describe what was compiled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from act_backend.jax import execution
from act_backend.jax.cache import Entry
from act_backend.jax.lowering import Program
from act_backend.jax.target import Target
from act_backend.oracle.loading import load_kernel


@dataclass(frozen=True)
class Assembly:
    """The assembly of a compiled kernel: a Python file calling the oracle's api."""

    path: Path
    text: str

    def __str__(self) -> str:
        return self.text


class CompiledKernel:
    """The result of ``act_backend.jax.compile``. ``cached`` says whether the assembly came
    from the cache rather than a compile just now; ``assembly`` and ``report`` (the backend's
    ``report.json``) are read when the kernel is made."""

    def __init__(self, program: Program, target: Target, entry: Entry, cached: bool):
        self.program = program
        self.target = target
        self.entry = entry
        self.cached = cached
        self._oracle_kernel: Any = None
        # Read now: the kernel keeps working when the cache is later moved or cleared.
        self.assembly = Assembly(entry.assembly, entry.assembly.read_text(encoding="utf-8"))
        self.report: dict[str, Any] = json.loads(entry.report.read_text(encoding="utf-8"))

    def __repr__(self) -> str:
        return (f"<CompiledKernel {self.program.name} for {self.target.name}: "
                f"{len(self.instructions)} instructions, cost {self.cost}>")

    # -- what was compiled ------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def hlo(self) -> str:
        """The HLO text the backend compiled."""
        return self.program.hlo

    @property
    def cost(self) -> float:
        """The cost of the emitted program under the backend's cost model (of all of it where
        it is made of several programs: blocks, bands, stages)."""
        return self.report.get("program_cost", self.report["chosen_cost"])

    @cached_property
    def instructions(self) -> list[str]:
        """The instruction calls of the assembly, in order, e.g. ``gemm(addr_1=0, ...)``."""
        calls = []
        for line in self.assembly.text.splitlines():
            text = line.strip()
            if text.startswith("api."):
                calls.append(text[len("api."):])
        return calls

    @property
    def warnings(self) -> list[str]:
        """What the backend printed on a successful compile."""
        return self.entry.warnings

    # -- running ----------------------------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        return self.simulate(*args)[0]

    def simulate(self, *args: Any) -> tuple[Any, float]:
        """The results of running the kernel on the oracle, and the run time in milliseconds
        (the simulation's own compilation excluded)."""
        inputs = [_array(leaf) for leaf in jax.tree_util.tree_leaves(args)]
        outputs, run_ms = execution.run(self._kernel(), inputs)
        return self._results(outputs), run_ms

    def _kernel(self) -> Any:
        if self._oracle_kernel is None:
            oracle = execution.load_oracle(self.target.oracle_dir, self.target.identity)
            self._oracle_kernel = load_kernel(oracle, self.assembly.text,
                                              str(self.assembly.path))
        return self._oracle_kernel

    def _results(self, outputs: list[Any]) -> Any:
        tree = self.program.out_tree
        if tree is None:
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        if tree.num_leaves != len(outputs):
            raise ValueError(f"kernel {self.name}: the function has {tree.num_leaves} "
                             f"results, the assembly writes {len(outputs)} outputs")
        return jax.tree_util.tree_unflatten(tree, outputs)


def _array(value: Any) -> Any:
    """An input as the oracle takes it: anything with ``shape`` and ``dtype`` (a Python number
    becomes the array JAX makes of it, as when the function was traced)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return value
    return jnp.asarray(value)
