"""One kernel on one point, through the project's pipeline: the kernel's program (HLO text,
or a JAX function lowered by ``act_backend.jax``), compiled by the point's backend into the
point's compiled-kernel cache, simulated on the point's oracle and compared with the
reference: the NumPy evaluation of the HLO (``act_backend.kernel.evaluate``) for an HLO
kernel, JAX on the CPU for a JAX function. The comparison is ``act_backend.jax.check``'s.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from act_backend.jax.target import Target
from act_backend.sweep.inputs import kernel_inputs
from act_backend.sweep.messages import one_line
from act_backend.sweep.model import Inputs, KernelRow, KernelSource, KernelTiming
from act_backend.sweep.user_code import load_function


def run_kernel(kernel: KernelSource, target: Target, *, point: int, cache: Path,
               inputs: Inputs, tolerance_ulps: float, time_limit: float | None
               ) -> tuple[KernelRow, KernelTiming]:
    """The row and timings of ``kernel`` on ``target``. Never raises for the kernel's sake:
    a refusal or a failure is the row's status and message (its whole story goes to the
    point's log, which is this process's output while the job runs)."""
    from act_backend.jax.compiler import compile_program
    from act_backend.jax.errors import CompileError
    from act_backend.jax.kernel import CompiledKernel

    try:
        program, types, reference = _prepare(kernel)
    except Exception as e:
        traceback.print_exc()
        return (KernelRow(point, kernel.name, "error",
                          message=f"cannot prepare the kernel: {one_line(e)}"),
                KernelTiming(point, kernel.name))
    started = time.perf_counter()
    try:
        entry, cached = compile_program(program, target, time_limit=time_limit, root=cache)
    except CompileError as e:
        compile_ms = _ms(started)
        print(f"{kernel.name}: the backend refused the kernel:\n{e.stderr.rstrip()}")
        return (KernelRow(point, kernel.name, "refused", message=refusal(e)),
                KernelTiming(point, kernel.name, compile_ms=compile_ms))
    except Exception as e:
        traceback.print_exc()
        return (KernelRow(point, kernel.name, "error",
                          message=f"running the backend failed: {one_line(e)}"),
                KernelTiming(point, kernel.name, compile_ms=_ms(started)))
    compile_ms = _ms(started)
    compiled = CompiledKernel(program, target, entry, cached)
    cost = float(compiled.cost)
    count = len(compiled.instructions)
    backend_ms = (compiled.report.get("timings_ms") or {}).get("total")
    timing = KernelTiming(point, kernel.name, compile_ms=compile_ms, backend_ms=backend_ms,
                          cached=cached)
    started = time.perf_counter()
    try:
        arrays = kernel_inputs(kernel.name, types, inputs)
        expected = [np.asarray(x) for x in reference(arrays)]
        actual, _ = compiled.simulate(*arrays)
        actual = [np.asarray(x) for x in (actual if isinstance(actual, (tuple, list))
                                          else [actual])]
        error_ulps, max_abs, exact, within = compare(expected, actual, tolerance_ulps)
    except Exception as e:
        traceback.print_exc()
        return (KernelRow(point, kernel.name, "error", cost=cost, instructions=count,
                          message=f"simulating the kernel failed: {one_line(e)}"),
                _with(timing, simulate_ms=_ms(started)))
    timing = _with(timing, simulate_ms=_ms(started))
    status = "ok" if within else "mismatch"
    message = "" if within else (f"{error_ulps:g} ulps of the largest magnitude from the "
                                 f"reference (tolerance {tolerance_ulps:g})")
    return (KernelRow(point, kernel.name, status, cost=cost, instructions=count,
                      error_ulps=error_ulps, max_abs_error=max_abs, exact=exact,
                      message=message), timing)


def refusal(error: Any) -> str:
    """The backend's refusal as one line: its message, and when the message introduces a
    list (every candidate's reason for a kernel that could not be placed), the first item
    and how many more there are (all of them are in the point's log)."""
    message = one_line(error.backend_message)
    if not message.endswith(":"):
        return message
    lines = error.stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("error:")), len(lines))
    details = [line.strip() for line in lines[start + 1:]
               if line.startswith((" ", "\t")) and line.strip()]
    if not details:
        return message.rstrip(":")
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return f"{message} {details[0]}{more}"


def _prepare(kernel: KernelSource) -> tuple[Any, list[tuple[str, tuple[int, ...]]],
                                             Callable[[list[np.ndarray]], list[Any]]]:
    """The program to compile, its inputs' types and the reference computation."""
    from act_backend.jax.lowering import program_of

    if not kernel.is_jax:
        from act_backend.kernel import evaluate, parse_hlo

        module = parse_hlo(kernel.hlo, kernel.path or kernel.name)
        types = [(p.type.dtype, tuple(p.type.shape)) for p in module.entry.parameters()]

        def numpy_reference(arrays: list[np.ndarray]) -> list[Any]:
            value = evaluate(module, arrays)
            return list(value) if isinstance(value, tuple) else [value]

        return program_of(kernel.hlo), types, numpy_reference

    import jax

    from act_backend.hlo.dtypes import numpy_dtype

    fn = load_function(kernel.function, file=kernel.file, module=kernel.module)
    types = [(a.dtype, a.shape) for a in kernel.args]
    structs = [jax.ShapeDtypeStruct(shape, numpy_dtype(dtype)) for dtype, shape in types]

    def jax_reference(arrays: list[np.ndarray]) -> list[Any]:
        cpu = jax.devices("cpu")[0]
        return jax.tree_util.tree_leaves(jax.jit(fn)(*jax.device_put(arrays, cpu)))

    return program_of(fn, *structs), types, jax_reference


def compare(expected: list[np.ndarray], actual: list[np.ndarray], tolerance_ulps: float
             ) -> tuple[float, float, bool, bool]:
    """The largest difference in ulps of the reference's largest magnitude (integers: the
    largest absolute difference), the largest absolute difference, whether every result is
    equal, and whether every result is within tolerance (integers: equal)."""
    from act_backend.hlo.dtypes import FLOAT_DTYPES, from_numpy
    from act_backend.jax.check import difference

    if len(expected) != len(actual):
        raise ValueError(f"the reference gives {len(expected)} results, the accelerator "
                         f"{len(actual)}")
    error_ulps = max_abs = 0.0
    exact = within = True
    for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
        d = difference(index, e, a)
        scaled = d.max_abs_ulps_of_largest if not math.isnan(d.max_abs_ulps_of_largest) \
            else math.inf
        error_ulps = max(error_ulps, scaled if d.max_ulps else 0.0)
        max_abs = max(max_abs, d.max_abs)
        exact = exact and d.max_ulps == 0
        if from_numpy(e.dtype) in FLOAT_DTYPES:
            within = within and scaled <= tolerance_ulps and not math.isinf(d.max_ulps)
        else:
            within = within and d.max_ulps == 0
    return error_ulps, max_abs, exact, within


def _with(timing: KernelTiming, **changes: Any) -> KernelTiming:
    return replace(timing, **changes)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1e3

