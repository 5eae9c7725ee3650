"""How a recorded program runs on a device: compiled whole, or compiled step by step.

* ``whole``: the program is one XLA function from the HBM bytes it reads (and the state, where a
  read needs a buffer's array) to the values it writes to HBM. A run is one dispatch, but XLA's
  compile time grows with every call (about 1.3 ms a call of a tiled int8 Gemmini product on
  this project's 2-core machine, about 3.4 ms a call of bf16 attention heads).
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

# ``auto`` compiles whole while a kernel has at most this many calls per signature, stepwise
# beyond: a whole compile grows with the calls (about 1.2 ms a call of an int8 Gemmini product,
# 2 to 3.5 ms of bf16 attention), a stepwise one with the signatures (60 to 110 ms each on 2
# cores). fsim-compile plus the first run, whole / stepwise, medians of 3 fresh processes on
# this project's 2-core machine (tests/benchmarks/oracle_bench.py --growth; the README's table):
#   Gemmini products, 4 signatures: 10 calls 0.15 / 0.31 s, 52 calls 0.26 / 0.38 s, 90 calls
#   0.20 / 0.33 s, 208 calls 0.43 / 0.42 s, 1,078 calls 1.2 / 0.38 s, 5,328 calls 6.3 / 0.53 s;
#   bf16 attention heads, 8 signatures: 30 calls 0.65 / 0.56 s, 90 calls 0.75 / 0.79 s, 300
#   calls 1.15 / 0.78 s;
#   the backend's tiled kernels, 2 to 10 calls a signature: Gemmini 40x40x40 (48 calls, 21
#   signatures) 0.51 / 1.55 s, 64x64x64 (100, 10) 0.47 / 0.52 s, QKV softmax of 512 rows (41,
#   5) 0.23 / 0.45 s.
# Over several such runs products broke even at 25 to 50 calls a signature, bf16 attention at 10
# to 20 (109 calls: 1.02 / 0.96 s; 180 calls: 1.46 / 1.17 s): 16 lost at most about 0.2 s on
# either, where 2 lost up to 1 s on the backend's kernels. Attention (9 calls of 6 signatures)
# stays whole.
WHOLE_MAX_CALLS_PER_SIGNATURE = 16

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


class Run(NamedTuple):
    """What one run leaves: ``pending``, the device arrays to wait for before the run is done;
    ``hbm()``, the final HBM (NumPy bytes); ``state()``, every final buffer, HBM first as in
    the state, computed on demand."""

    pending: list[jax.Array]
    hbm: Callable[[], np.ndarray]
    state: Callable[[], list[jax.Array]]


class Executable:
    """A compiled program. ``arguments(state, device)`` places what a run takes, given the
    initial state (the HBM image, then each on-chip buffer, as NumPy arrays); ``run`` runs."""

    strategy: str

    def arguments(self, state: Sequence[np.ndarray], device: jax.Device) -> list[jax.Array]:
        return [jax.device_put(array, device) for array in state]

    def run(self, arguments: list[jax.Array]) -> Run:
        raise NotImplementedError


class WholeProgram(Executable):
    """The whole program as one XLA function.

    The function takes the state and, beside it, the bytes of each HBM region the program
    reads before any call writes there (sliced from the initial HBM on the host); it returns
    the value of each HBM write, which a run lays over the initial HBM on the host. A read of a
    region an earlier call wrote whole takes the value written (``TracedState``), so XLA keeps
    a buffer's array only where a read needs it (a region partly written, contents never
    written): attention's whole program holds no buffer at all, and its loads of Q and V are
    one compiled kernel. A second function, returning every final buffer, is compiled the first
    time a run's final on-chip state is asked for.
    """

    strategy = "whole"

    def __init__(self, program: Program, device: jax.Device):
        index = _state.state_index(program.table)
        self._calls = [(c, [index[r.buffer.name] for r in c.inputs],
                        index[c.output.buffer.name]) for c in program.calls]
        sharding = jax.sharding.SingleDeviceSharding(device)
        structs = _state.state_structs(program.table, program.hbm, sharding)
        self._arrays = len(structs)
        self._initial = _initial_hbm_reads(self._calls, self._arrays)
        self._structs = structs + [jax.ShapeDtypeStruct(r.shape, np.uint8, sharding=sharding)
                                   for r in self._initial]
        self._writes = [call.output for call, _, target in self._calls if target == 0]
        self._hbm = jax.jit(self._step(every=False)).lower(*self._structs).compile()
        self._every: Any = None

    def _step(self, every: bool) -> Callable[..., Any]:
        def step(*arrays: jax.Array) -> Any:
            initial = {(r.start, r.size): a
                       for r, a in zip(self._initial, arrays[self._arrays:], strict=True)}
            current = _state.TracedState(arrays[:self._arrays], initial)
            for call, sources, target in self._calls:
                values = [current.read(s, r) for s, r in zip(sources, call.inputs, strict=True)]
                current.write(target, call.output, call.lowered.fn(values))
            return tuple(current.arrays) if every else tuple(current.hbm_writes)

        return step

    def arguments(self, state: Sequence[np.ndarray], device: jax.Device) -> list[jax.Array]:
        image = state[0]
        regions = [image[r.start[0]:r.start[0] + r.size[0]] for r in self._initial]
        return [jax.device_put(array, device) for array in [*state, *regions]]

    def run(self, arguments: list[jax.Array]) -> Run:
        writes = self._hbm(*arguments)

        def hbm() -> np.ndarray:
            image = np.array(arguments[0])
            for region, value in zip(self._writes, writes, strict=True):
                image[region.start[0]:region.start[0] + region.size[0]] = np.asarray(value)
            return image

        def every() -> list[jax.Array]:
            if self._every is None:
                self._every = jax.jit(self._step(every=True)).lower(*self._structs).compile()
            return list(self._every(*arguments))

        return Run(list(writes), hbm, every)


def _initial_hbm_reads(calls: Sequence[tuple[Call, list[int], int]],
                       arrays: int) -> list[_state.Region]:
    """The HBM regions calls read while no earlier call has written any of their bytes, each
    once, in the order they are first read."""
    state = _state.TracedState([None] * arrays)
    regions: dict[tuple[tuple[int, ...], tuple[int, ...]], _state.Region] = {}
    for call, sources, target in calls:
        for source, region in zip(sources, call.inputs, strict=True):
            if source == 0 and state.find(0, region)[0] == _state.INITIAL:
                regions.setdefault((region.start, region.size), region)
        state.write(target, call.output, None)
    return list(regions.values())


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

    def run(self, arguments: list[jax.Array]) -> Run:
        # Each step donates the array it replaces, so the state is updated in place.
        current = list(arguments)
        for step in self._steps:
            current[step.target] = step.compiled(*(current[i] for i in step.sources),
                                                 step.starts)
        return Run([current[0]], lambda: np.asarray(current[0]), lambda: current)


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
