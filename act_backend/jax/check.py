"""Checking a kernel against JAX: ``check(fn, *args, backend=...)`` runs ``fn`` with JAX on
the CPU and the compiled kernel on the accelerator's oracle, and reports, for each result, the
largest difference in units in the last place of the result's element type (for integers and
booleans, the largest absolute difference: zero exactly when they are equal).

Ulps are counted on the number line of representable values: two floats are ``n`` ulps apart
when ``n - 1`` values of the type lie strictly between them (so ``0.0`` and ``-0.0`` are 0 ulps
apart; a NaN against a number is infinitely many, two NaNs none).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ResultDifference:
    """How far the accelerator's result ``index`` is from JAX's."""

    index: int
    dtype: np.dtype
    shape: tuple[int, ...]
    max_ulps: float
    # The largest absolute difference of values (as float64), wherever it is, and the same
    # in ulps of the largest magnitude JAX computed: the measure that does not blow up where
    # results near zero differ in sign.
    max_abs: float
    max_abs_ulps_of_largest: float
    # Where the largest difference is (an index into the result), None when they are equal.
    where: tuple[int, ...] | None
    expected: Any
    actual: Any

    def __str__(self) -> str:
        floating = is_float(self.dtype)
        unit = "ulps" if floating else "(integer difference)"
        text = (f"result {self.index} ({self.dtype}{list(self.shape)}): "
                f"max {_num(self.max_ulps)} {unit}")
        if self.where is not None:
            text += (f" at {list(self.where)} (JAX {self.expected[self.where]}, accelerator "
                     f"{self.actual[self.where]})")
        if floating:
            text += (f"; max |difference| {self.max_abs:g} = "
                     f"{_num(self.max_abs_ulps_of_largest)} ulps of the largest magnitude")
        return text


@dataclass(frozen=True)
class CheckReport:
    """The comparison of one function run by JAX and by the accelerator."""

    results: list[ResultDifference]
    run_ms: float

    @property
    def max_ulps(self) -> float:
        """The largest difference over every result."""
        return max((r.max_ulps for r in self.results), default=0.0)

    def __str__(self) -> str:
        lines = [f"largest difference in ulps: {_num(self.max_ulps)} "
                 f"(simulated in {self.run_ms:.1f} ms)"]
        lines += [f"  {r}" for r in self.results]
        return "\n".join(lines)


def check(fn: Callable[..., Any], *args: Any, backend: Any, **options: Any) -> CheckReport:
    """Compiles ``fn`` for ``backend``, runs it on ``args`` there and with JAX on the CPU,
    and compares the results. ``options`` go on to ``compile``."""
    from act_backend.jax.api import compile as compile_kernel

    cpu = jax.devices("cpu")[0]
    expected = jax.jit(fn)(*jax.device_put(args, cpu))
    kernel = compile_kernel(fn, *args, backend=backend, **options)
    actual, run_ms = kernel.simulate(*args)
    expected_leaves = jax.tree_util.tree_leaves(expected)
    actual_leaves = jax.tree_util.tree_leaves(actual)
    if len(expected_leaves) != len(actual_leaves):
        raise ValueError(f"JAX returns {len(expected_leaves)} results, the accelerator "
                         f"{len(actual_leaves)}")
    return CheckReport([difference(i, np.asarray(e), np.asarray(a))
                        for i, (e, a) in enumerate(zip(expected_leaves, actual_leaves,
                                                       strict=True))], run_ms)


def difference(index: int, expected: np.ndarray, actual: np.ndarray) -> ResultDifference:
    """The largest difference between two results of the same type and shape."""
    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        raise ValueError(f"result {index}: JAX gives {expected.dtype}{list(expected.shape)}, "
                         f"the accelerator {actual.dtype}{list(actual.shape)}")
    distance = distances(expected, actual)
    with np.errstate(invalid="ignore"):
        absolute = np.abs(expected.astype(np.float64) - actual.astype(np.float64))
    max_abs = float(np.nanmax(absolute)) if absolute.size and not np.all(np.isnan(absolute)) \
        else 0.0
    scaled = (max_abs / ulp_of_largest(expected) if is_float(expected.dtype) and max_abs
              else max_abs)
    if distance.size == 0 or not np.any(distance):
        return ResultDifference(index, expected.dtype, expected.shape, 0.0, max_abs, scaled,
                                None, expected, actual)
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(distance)), distance.shape))
    return ResultDifference(index, expected.dtype, expected.shape, float(distance[where]),
                            max_abs, scaled, where, expected, actual)


def distances(expected: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Elementwise difference of two arrays of one type and shape (float64): ulps for floats,
    the absolute difference for integers and booleans."""
    if is_float(expected.dtype):
        return np.asarray(ulp_distance(expected, actual), dtype=float)
    return np.asarray(np.abs(expected.astype(object) - actual.astype(object)), dtype=float)


def ulp_of_largest(values: np.ndarray) -> float:
    """The spacing of the dtype's values at the largest finite magnitude in ``values`` (the
    smallest subnormal when they are all zero)."""
    info = ml_dtypes.finfo(values.dtype)
    magnitudes = np.abs(values.astype(np.float64))
    finite = magnitudes[np.isfinite(magnitudes)]
    largest = float(finite.max()) if finite.size else 0.0
    tiny = float(info.smallest_subnormal)
    if largest < float(info.smallest_normal):
        return tiny
    return max(2.0 ** (math.floor(math.log2(largest)) - int(info.nmant)), tiny)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise distance in ulps between two float arrays of one dtype (float64 result)."""
    bits = np.dtype(f"u{a.dtype.itemsize}")
    width = 8 * a.dtype.itemsize
    ordered_a = _ordered(a.view(bits), width)
    ordered_b = _ordered(b.view(bits), width)
    distance = np.abs(ordered_a - ordered_b).astype(float)
    nan_a, nan_b = np.isnan(a.astype(np.float64)), np.isnan(b.astype(np.float64))
    distance[nan_a & nan_b] = 0.0
    distance[nan_a ^ nan_b] = math.inf
    return distance


def _ordered(bits: np.ndarray, width: int) -> np.ndarray:
    """Sign-magnitude float bits as integers in the order of the values they encode."""
    wide = bits.astype(object) if width > 32 else bits.astype(np.int64)
    sign = 1 << (width - 1)
    magnitude = wide & (sign - 1)
    return np.where((wide & sign) != 0, -magnitude, magnitude)


def is_float(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a floating-point type, NumPy's or ml_dtypes' (bf16, fp8...)."""
    if np.issubdtype(dtype, np.floating):
        return True
    try:
        ml_dtypes.finfo(dtype)
    except ValueError:
        return False
    return True


def _num(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:g}"
