"""The ``@kernel`` decorator: tracing, compiling and simulating one assembly kernel.

``k = kernel(hbm=..., input=[...], output=[...], constant=[...])(body)`` is called with a mode:

* ``k('fsim-compile')()`` traces the body's api calls into a program, compiles it with XLA and
  returns ``(input_specs, compile_ms)``. ``k('fsim-compile')(strategy=...)`` chooses how
  (``executable``): ``'whole'``, one function from the HBM bytes the program reads to the
  values it writes to HBM; ``'stepwise'``, one function per distinct instruction signature, run call
  after call; ``'auto'`` (the default), whole while the program has at most 16 calls per
  signature, stepwise beyond (a long kernel repeats a few signatures). Both give the same bits;
* ``k('fsim')(*inputs)`` writes the constants and inputs into a fresh zeroed HBM, runs the
  program and returns ``(outputs, run_ms)``, each output a JAX array read back from HBM. Called
  before ``fsim-compile``, it compiles first (``run_ms`` never includes compilation);
* ``k('cost')()`` returns the sum of the instructions' costs (the table's cost expression of
  each call, 1 where the spec gives none).

After a run, ``k.last_state`` maps each buffer name (``d0`` first) to its final contents, for
inspecting what a kernel left on chip (a kernel compiled whole computes them when first asked,
by a second function that returns every buffer); after a compile, ``k.strategy`` says which strategy
compiled it (``'whole'`` or ``'stepwise'``).

``set_simulation_backend('CPU' | 'GPU')`` chooses the device later compilations and runs use.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from . import executable as _executable
from . import state as _state
from . import table as _table
from . import tracing as _tracing
from .semantics import type_text
from .table import OracleError

MODES = ("fsim-compile", "fsim", "cost")

if sys.byteorder != "little":
    # HBM holds values as XLA's bitcast_convert lays them out, which is little-endian.
    raise ImportError("the oracle runtime needs a little-endian host")

_platform = "cpu"


def set_simulation_backend(backend: str) -> None:
    """Simulate on the CPU (the default) or on the first GPU JAX finds."""
    global _platform
    wanted = str(backend).lower()
    if wanted not in ("cpu", "gpu"):
        raise ValueError(f"set_simulation_backend: unknown backend {backend!r} "
                         "(accepted: 'CPU', 'GPU')")
    try:
        jax.devices(wanted)
    except RuntimeError:
        present = sorted({d.platform for d in jax.devices()})
        raise RuntimeError(f"set_simulation_backend({backend!r}): JAX finds no {wanted.upper()} "
                           f"here (platforms present: {', '.join(present)}); install a jaxlib "
                           "with GPU support or simulate on 'CPU'") from None
    _platform = wanted


def _device() -> jax.Device:
    return jax.devices(_platform)[0]


@dataclass(frozen=True)
class Tensor:
    """A kernel input, output or constant: ``shape`` of ``dtype`` at HBM byte ``addr``."""

    addr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    value: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def text(self) -> str:
        return type_text(self.dtype, self.shape)


def kernel(hbm: int, input: Sequence[Mapping], output: Sequence[Mapping],
           constant: Sequence[Mapping] = ()) -> Callable[[Callable[[], Any]], Kernel]:
    """Declares a kernel: its HBM size in bytes and where its tensors lie in HBM."""

    def decorate(body: Callable[[], Any]) -> Kernel:
        return Kernel(body, hbm, input, output, constant)

    return decorate


class Kernel:
    def __init__(self, body: Callable[[], Any], hbm: int, inputs: Sequence[Mapping],
                 outputs: Sequence[Mapping], constants: Sequence[Mapping]):
        self.name = getattr(body, "__name__", "kernel")
        self._body = body
        if isinstance(hbm, bool) or not isinstance(hbm, int) or hbm <= 0:
            raise OracleError(f"kernel {self.name}: hbm must be a positive number of bytes, "
                              f"got {hbm!r}")
        self.hbm = hbm
        self.inputs = [self._tensor(s, "input", i, False) for i, s in enumerate(inputs)]
        self._input_specs = [dict(spec) for spec in inputs]
        self.outputs = [self._tensor(s, "output", i, False) for i, s in enumerate(outputs)]
        self.constants = [self._tensor(s, "constant", i, True) for i, s in enumerate(constants)]
        self._program: _tracing.Program | None = None
        self._executables: dict[tuple[jax.Device, str], _executable.Executable] = {}
        self._strategy = "auto"  # as asked; what it resolved to is in _chosen
        self._chosen: dict[str, str] = {}
        self._signatures: list[_executable.Signature] | None = None
        self.strategy: str | None = None
        # The last run's final buffers, computed when last_state first asks for them.
        self._last_run: Callable[[], list[jax.Array]] | None = None
        self._last_state: dict[str, np.ndarray] | None = None

    def __call__(self, mode: str) -> Callable[..., Any]:
        if mode == "fsim-compile":
            return self._fsim_compile
        if mode == "fsim":
            return self._fsim
        if mode == "cost":
            return self._cost
        raise ValueError(f"kernel {self.name}: unknown mode {mode!r} "
                         f"(modes: {', '.join(MODES)})")

    def __repr__(self) -> str:
        return f"<kernel {self.name}: hbm={self.hbm}, {len(self.inputs)} inputs>"

    # -- modes ------------------------------------------------------------------------------

    def _fsim_compile(self, *inputs: Any, strategy: str = "auto") -> tuple[list[dict], float]:
        _executable.check_strategy(strategy, self.name)
        if inputs:
            self._check_inputs(inputs)
        self._strategy = strategy
        start = time.perf_counter()
        self._compile()
        compile_ms = (time.perf_counter() - start) * 1000.0
        return [dict(spec) for spec in self._input_specs], compile_ms

    def _fsim(self, *inputs: Any) -> tuple[list[jax.Array], float]:
        arrays = self._check_inputs(inputs)
        executable = self._compile()
        device = _device()
        image = self._image()
        for tensor, array in zip(self.inputs, arrays, strict=True):
            image[tensor.addr:tensor.addr + tensor.nbytes] = _bytes(array)
        program = self.program()
        on_chip = _state.state_structs(program.table, self.hbm)[1:]
        initial = [image] + [np.zeros(s.shape, s.dtype) for s in on_chip]
        placed = executable.arguments(initial, device)
        jax.block_until_ready(placed)
        start = time.perf_counter()
        run = executable.run(placed)
        jax.block_until_ready(run.pending)
        run_ms = (time.perf_counter() - start) * 1000.0
        hbm = run.hbm()
        self._last_run, self._last_state = run.state, None
        outputs = [
            jax.device_put(hbm[t.addr:t.addr + t.nbytes].view(t.dtype).reshape(t.shape), device)
            for t in self.outputs]
        return outputs, run_ms

    @property
    def last_state(self) -> dict[str, np.ndarray] | None:
        """Each buffer's contents after the last run (``d0`` first), or None before one."""
        if self._last_state is None and self._last_run is not None:
            self._last_state = _state.contents(self.program().table, self._last_run())
        return self._last_state

    def _cost(self) -> int:
        return sum(call.cost for call in self.program().calls)

    # -- tracing and compiling --------------------------------------------------------------

    def program(self) -> _tracing.Program:
        """The recorded program (the body runs once; later modes reuse the recording)."""
        if self._program is None:
            program = _tracing.Program(_table.current(), self.hbm, self.name)
            with _tracing.recording(program):
                self._body()
            self._program = program
        return self._program

    def _compile(self) -> _executable.Executable:
        with _collection_paused():
            return self._compile_now()

    def _compile_now(self) -> _executable.Executable:
        device = _device()
        program = self.program()
        if self._signatures is None:
            self._signatures = _executable.signatures(program)
        if self._strategy not in self._chosen:
            self._chosen[self._strategy] = _executable.choose(self._strategy, self._signatures)
        strategy = self._chosen[self._strategy]
        key = (device, strategy)
        if key not in self._executables:
            self._executables[key] = _executable.compile_program(program, self._signatures,
                                                                 device, strategy)
        self.strategy = strategy
        return self._executables[key]

    def _image(self) -> np.ndarray:
        """A zeroed HBM holding the constants."""
        image = np.zeros(self.hbm, np.uint8)
        for tensor in self.constants:
            image[tensor.addr:tensor.addr + tensor.nbytes] = _bytes(tensor.value)
        return image

    # -- checking what the user gives -------------------------------------------------------

    def _tensor(self, spec: Mapping, kind: str, i: int, has_value: bool) -> Tensor:
        where = f"kernel {self.name}: {kind} {i}"
        if not isinstance(spec, Mapping):
            raise OracleError(f"{where}: expected a dict with addr, shape, dtype, got {spec!r}")
        keys = {"addr", "shape", "dtype"} | ({"value"} if has_value else set())
        unknown = sorted(set(spec) - keys)
        missing = sorted(keys - set(spec))
        if unknown:
            raise OracleError(f"{where}: unknown key(s) {', '.join(unknown)} "
                              f"(accepted: {', '.join(sorted(keys))})")
        if missing:
            raise OracleError(f"{where}: missing key(s) {', '.join(missing)}")
        addr, shape = spec["addr"], spec["shape"]
        if isinstance(addr, bool) or not isinstance(addr, int) or addr < 0:
            raise OracleError(f"{where}: addr must be a non-negative integer, got {addr!r}")
        if not isinstance(shape, (tuple, list)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise OracleError(f"{where}: shape must be a tuple of non-negative integers, "
                              f"got {shape!r}")
        name = _table.dtype_name(spec["dtype"])
        if name is None:
            raise OracleError(f"{where}: dtype {spec['dtype']!r} is not one the oracle "
                              "simulates")
        dtype = _table.numpy_dtype(name, where)
        value = None
        if has_value:
            value = np.asarray(spec["value"], dtype=dtype)
            if value.shape != tuple(shape):
                raise OracleError(f"{where}: value has shape {list(value.shape)}, the "
                                  f"constant is declared {type_text(dtype, shape)}")
        tensor = Tensor(addr, tuple(shape), dtype, value)
        if addr + tensor.nbytes > self.hbm:
            raise OracleError(f"{where}: {tensor.text()} at addr {addr} needs bytes "
                              f"[{addr}, {addr + tensor.nbytes}), beyond HBM of {self.hbm} "
                              "bytes")
        return tensor

    def _check_inputs(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        if len(inputs) != len(self.inputs):
            raise OracleError(f"kernel {self.name}: takes {len(self.inputs)} inputs, "
                              f"got {len(inputs)}")
        arrays = []
        for i, (tensor, value) in enumerate(zip(self.inputs, inputs, strict=True)):
            shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
            if shape is None or dtype is None:
                raise OracleError(f"kernel {self.name}: input {i} must be an array of "
                                  f"{tensor.text()}, got {type(value).__name__}")
            if tuple(shape) != tensor.shape or np.dtype(dtype) != tensor.dtype:
                raise OracleError(f"kernel {self.name}: input {i} must be {tensor.text()}, "
                                  f"got {type_text(np.dtype(dtype), tuple(shape))}")
            arrays.append(np.asarray(value))
        return arrays


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Holds off Python's cyclic garbage collector while a program is traced and compiled.

    Tracing and lowering allocate many objects, which triggers full collections over every
    object the process holds (JAX's own modules included): they took about a fifth of
    attention's first compile. The collector resumes afterwards as it was.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _bytes(array: np.ndarray) -> np.ndarray:
    """The little-endian bytes of ``array`` in row-major order."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)
