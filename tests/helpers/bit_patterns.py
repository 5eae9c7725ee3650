"""Inputs that hold every kind of bit pattern of their element type, for checking that the
oracle moves values bit for bit and that its strategies compute the same bits.

* ``specials(dtype)``: the patterns a computation may treat apart. For a float type: NaNs with
  payloads (quiet and signalling, both signs, the canonical quiet NaN, all ones), infinities,
  zeros of both signs, the least and greatest subnormals and the extreme normals; for an
  integer type: the least and greatest values, 0, 1 and -1 (the bits of all ones);
* ``every_pattern(shape, dtype, seed)``: uniformly random bit patterns of the type's width, with
  each special planted at a random position (random bits alone almost never give an infinity;
  an array too small for all of them holds as many as fit, drawn at random);
* ``with_specials(values, seed, count)``: ``values`` (finite numbers) with ``count`` elements
  (at most all of them) replaced by specials, so that arithmetic elsewhere stays on ordinary
  numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

# the unsigned integer type of each element width in bytes
_BITS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32)}


def bits_of(values: np.ndarray) -> np.ndarray:
    """The bit patterns of ``values`` as unsigned integers of their width."""
    array = np.ascontiguousarray(values)
    return array.view(_BITS[array.dtype.itemsize])


def specials(dtype: np.dtype) -> np.ndarray:
    """The special bit patterns of ``dtype`` (see the module docstring), as ``dtype`` values."""
    dtype = np.dtype(dtype)
    bits = _BITS[dtype.itemsize]
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.array(sorted({info.min, info.max, 0, 1} | ({-1} if info.min else set())),
                        dtype)
    mantissa = ml_dtypes.finfo(dtype).nmant
    width = 8 * dtype.itemsize
    sign = 1 << (width - 1)
    exponent = (sign - 1) & ~((1 << mantissa) - 1)
    quiet = 1 << (mantissa - 1)
    fraction = (1 << mantissa) - 1
    magnitudes = [
        exponent | 1,  # signalling NaN, least payload
        exponent | (quiet - 1),  # signalling NaN, every payload bit
        exponent | quiet,  # the canonical quiet NaN
        exponent | quiet | 1,  # quiet NaN with a payload
        exponent | fraction,  # all ones after the sign
        exponent,  # infinity
        0,  # zero
        1,  # the least subnormal
        fraction,  # the greatest subnormal
        1 << mantissa,  # the least normal
        exponent - 1,  # the greatest finite value
    ]
    patterns = [m | s for m in magnitudes for s in (0, sign)]
    return np.array(patterns, bits).view(dtype)


def every_pattern(shape: Sequence[int], dtype: np.dtype, seed: int) -> np.ndarray:
    """Random bit patterns of ``dtype`` in ``shape``, every special planted at a random place."""
    dtype = np.dtype(dtype)
    bits = _BITS[dtype.itemsize]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, np.iinfo(bits).max, tuple(shape), dtype=bits, endpoint=True)
    flat = raw.reshape(-1)
    planted = bits_of(specials(dtype))
    if flat.size < planted.size:
        planted = rng.choice(planted, flat.size, replace=False)
    flat[rng.choice(flat.size, planted.size, replace=False)] = planted
    return raw.view(dtype)


def with_specials(values: np.ndarray, seed: int, count: int) -> np.ndarray:
    """``values`` with ``count`` elements, at random places, replaced by specials of its type
    (drawn in turn from ``specials``, so that every one appears once ``count`` allows)."""
    rng = np.random.default_rng(seed)
    out = np.array(values)
    flat = bits_of(out).reshape(-1)
    planted = bits_of(specials(out.dtype))
    count = min(count, flat.size)
    at = rng.choice(flat.size, count, replace=False)
    flat[at] = planted[np.arange(count) % planted.size]
    return out
