"""How a recorded program runs on a device: compiled whole, or compiled step by step.

* ``whole``: the program is one XLA function from the state to the final HBM. A run is one
  dispatch, but XLA's compile time grows with every call (about 13 ms a call on a CPU core).
* ``stepwise``: one XLA function per distinct step signature (the instruction, its
  computational attribute values, the buffers and sizes of its operands), which takes the
  operands' starts as run-time values; a run dispatches the calls one after another. Compile
  time grows with the number of signatures, not of calls, and the compiled steps are kept for
  the life of the oracle, so later kernels reuse them.

Both evaluate each call with the same lowered semantics on the same typed state, so they
compute the same bits (tests compare every output and buffer byte for byte). ``auto``
compiles whole where that is quicker: programs with few calls per signature.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np

from . import state as _state
from .table import OracleError
from .tracing import Call, Program

STRATEGIES = ("auto", "whole", "stepwise")

# Compiling whole costs about a third of a compiled step per call (CPU time, 2-core CPU: 25-30
# ms a call of a tiled Gemmini product against 70-75 ms a step), while a run of the whole
# program is one dispatch; so ``auto`` compiles whole while a kernel has at most this many
# calls per signature (attention: 9 calls of 6 signatures), stepwise beyond.
WHOLE_MAX_CALLS_PER_SIGNATURE = 2

# Starts are int32 scalars inside a step (JAX computes in 32 bits): a buffer's extent must fit.
_INT32_MAX = 2**31 - 1


def check_strategy(strategy: object, kernel: str) -> str:
    """``strategy`` if it is one of ``STRATEGIES``; else a ValueError naming the kernel."""
    if strategy not in STRATEGIES:
        raise ValueError(f"kernel {kernel}: unknown strategy {strategy!r} "
                         f"(strategies: {', '.join(STRATEGIES)})")
    return str(strategy)


def choose(strategy: str, keys: Sequence[Signature]) -> str:
    """What ``strategy`` compiles a program of calls of signatures ``keys`` with: itself, or
    what ``auto`` picks."""
    if strategy != "auto":
        return strategy
    distinct = len(set(keys))
    return "whole" if len(keys) <= WHOLE_MAX_CALLS_PER_SIGNATURE * distinct else "stepwise"


def compile_program(program: Program, keys: Sequence[Signature], device: jax.Device,
                    strategy: str) -> Executable:
    """``program`` (whose calls have signatures ``keys``) compiled for ``device`` with
    ``strategy`` (``whole`` or ``stepwise``)."""
    if strategy == "whole":
        return WholeProgram(program, device)
    if strategy == "stepwise":
        return StepwiseProgram(program, keys, device)
    raise ValueError(f"kernel {program.kernel}: cannot compile with strategy {strategy!r}")


class Executable:
    """A compiled program. ``run(state)`` maps the initial state arrays to the final HBM and a
    function giving every final buffer (HBM first, as in the state), computed on demand."""

    strategy: str

    def run(self, state: Sequence[jax.Array]) -> tuple[jax.Array, Callable[[], list[jax.Array]]]:
        raise NotImplementedError


class WholeProgram(Executable):
    """The whole program as one XLA function of the state.

    The function returns the final HBM only, which spares XLA the final on-chip buffers
    (about a sixth of attention's compile time); a second function returning every buffer is
    compiled the first time a run's final on-chip state is asked for.
    """

    strategy = "whole"

    def __init__(self, program: Program, device: jax.Device):
        index = _state.state_index(program.table)
        self._calls = [(c, [index[r.buffer.name] for r in c.inputs],
                        index[c.output.buffer.name]) for c in program.calls]
        sharding = jax.sharding.SingleDeviceSharding(device)
        self._structs = _state.state_structs(program.table, program.hbm, sharding)
        self._hbm = jax.jit(self._step(every=False)).lower(*self._structs).compile()
        self._every: Any = None

    def _step(self, every: bool) -> Callable[..., Any]:
        def step(*arrays: jax.Array) -> Any:
            current = list(arrays)
            for call, sources, target in self._calls:
                values = [_state.read(current, s, r)
                          for s, r in zip(sources, call.inputs, strict=True)]
                _state.write(current, target, call.output, call.lowered.fn(values))
            return tuple(current) if every else current[0]

        return step

    def run(self, state: Sequence[jax.Array]) -> tuple[jax.Array, Callable[[], list[jax.Array]]]:
        state = list(state)

        def every() -> list[jax.Array]:
            if self._every is None:
                self._every = jax.jit(self._step(every=True)).lower(*self._structs).compile()
            return list(self._every(*state))

        return self._hbm(*state), every


class Signature(NamedTuple):
    """What a compiled step depends on: everything of a call but its operands' starts."""

    instr: str
    comp: tuple[tuple[str, int], ...]
    # (buffer, size along each access dim) of each input, then of the output
    operands: tuple[tuple[str, tuple[int, ...]], ...]
    # the kernel's HBM size where an operand lies in HBM (a step takes HBM whole), else None
    hbm: int | None


def signature(call: Call, hbm: int) -> Signature:
    regions = call.inputs + (call.output,)
    in_hbm = any(r.buffer.is_hbm for r in regions)
    return Signature(call.instr.name, tuple(call.comp.items()),
                     tuple((r.buffer.name, r.size) for r in regions), hbm if in_hbm else None)


def signatures(program: Program) -> list[Signature]:
    """The signature of each call of ``program``, in order."""
    return [signature(call, program.hbm) for call in program.calls]


@dataclass(frozen=True)
class _Step:
    """One call of a stepwise program: its compiled step, the state arrays it takes (by
    index), the one it replaces and its operands' starts."""

    compiled: Callable[..., jax.Array]
    sources: tuple[int, ...]
    target: int
    starts: np.ndarray


# Compiled steps of this oracle, by device and signature: the table never changes, and kernels
# of one accelerator repeat their instructions.
compiled_steps: dict[tuple[jax.Device, Signature], Callable[..., jax.Array]] = {}


class StepwiseProgram(Executable):
    """One compiled XLA step per distinct signature, run call after call."""

    strategy = "stepwise"

    def __init__(self, program: Program, keys: Sequence[Signature], device: jax.Device):
        index = _state.state_index(program.table)
        sharding = jax.sharding.SingleDeviceSharding(device)
        structs = _state.state_structs(program.table, program.hbm, sharding)
        firsts: dict[Signature, Call] = {}
        for key, call in zip(keys, program.calls, strict=True):
            firsts.setdefault(key, call)
        missing = [(key, call) for key, call in firsts.items()
                   if (device, key) not in compiled_steps]
        lowered = [_lower_step(call, index, structs, sharding) for _, call in missing]
        for (key, _), compiled in zip(missing, _compile_all(lowered), strict=True):
            compiled_steps[device, key] = compiled
        # Every call of a signature takes the same arrays: work them out once per signature.
        arrays = {key: _operand_arrays(call, index) for key, call in firsts.items()}
        self._steps = []
        for key, call in zip(keys, program.calls, strict=True):
            sources, target = arrays[key]
            starts = np.array([s for r in call.inputs + (call.output,) for s in r.start],
                              np.int32)
            self._steps.append(_Step(compiled_steps[device, key], sources, target, starts))

    def run(self, state: Sequence[jax.Array]) -> tuple[jax.Array, Callable[[], list[jax.Array]]]:
        # Each step donates the array it replaces, so the state is updated in place.
        current = list(state)
        for step in self._steps:
            current[step.target] = step.compiled(*(current[i] for i in step.sources),
                                                 step.starts)
        return current[0], lambda: current


def _operand_arrays(call: Call, index: dict[str, int]) -> tuple[tuple[int, ...], int]:
    """The state arrays a call's step takes (each once, in state order) and the one it writes."""
    regions = call.inputs + (call.output,)
    return tuple(sorted({index[r.buffer.name] for r in regions})), index[call.output.buffer.name]


def _lower_step(call: Call, index: dict[str, int], structs: list[jax.ShapeDtypeStruct],
                sharding: jax.sharding.Sharding) -> Any:
    """The step of ``call``'s signature, lowered: ``(arrays..., starts) -> written array``."""
    sources, target = _operand_arrays(call, index)
    for i in sources:
        if max(structs[i].shape) > _INT32_MAX:
            raise OracleError(f"{call.instr.name}: a buffer of shape {structs[i].shape} is "
                              "beyond the 32-bit starts a stepwise program passes; compile the "
                              "kernel whole")
    position = {i: p for p, i in enumerate(sources)}
    regions = call.inputs + (call.output,)
    offsets = np.cumsum([0] + [len(r.start) for r in regions]).tolist()

    def step(*args: jax.Array) -> jax.Array:
        *arrays, starts = args
        at = [[starts[k] for k in range(offsets[n], offsets[n + 1])]
              for n in range(len(regions))]
        values = [_state.read_at(arrays[position[index[r.buffer.name]]], r, s)
                  for r, s in zip(call.inputs, at, strict=False)]
        written = arrays[position[target]]
        return _state.write_at(written, call.output, at[-1], call.lowered.fn(values))

    args = [structs[i] for i in sources]
    args.append(jax.ShapeDtypeStruct((offsets[-1],), np.int32, sharding=sharding))
    return jax.jit(step, donate_argnums=position[target]).lower(*args)


def _compile_all(lowered: list[Any]) -> list[Callable[..., jax.Array]]:
    """Compiles lowered steps, several at once where there are cores (XLA releases the GIL)."""
    workers = min(len(lowered), os.cpu_count() or 1)
    if workers <= 1:
        return [step.compile() for step in lowered]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda step: step.compile(), lowered))
