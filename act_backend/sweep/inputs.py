"""Seeded random inputs for a kernel: the same kernel gets the same inputs on every point and
in every run (its generator is seeded by the sweep's seed and a hash of the kernel's name),
so that costs and errors compare across points.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from act_backend.hlo.dtypes import FLOAT_DTYPES, numpy_dtype
from act_backend.sweep.model import Inputs

# Integer inputs are small, so that sums and products of a few of them stay exact in the
# narrow types an accelerator computes in.
_SIGNED = (-8, 9)
_UNSIGNED = (0, 16)


def kernel_inputs(kernel: str, types: Sequence[tuple[str, tuple[int, ...]]],
                  inputs: Inputs) -> list[np.ndarray]:
    """One array per ``(element type, shape)``: normal values of standard deviation
    ``inputs.scale`` for floats, small integers for integers, random booleans for pred."""
    rng = np.random.default_rng([inputs.seed, zlib.crc32(kernel.encode("utf-8"))])
    arrays = []
    for dtype, shape in types:
        target = numpy_dtype(dtype)
        if dtype in FLOAT_DTYPES:
            arrays.append(rng.normal(0.0, inputs.scale, shape).astype(target))
        elif dtype == "pred":
            arrays.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            low, high = _UNSIGNED if dtype.startswith("u") else _SIGNED
            arrays.append(rng.integers(low, high, shape).astype(target))
    return arrays
