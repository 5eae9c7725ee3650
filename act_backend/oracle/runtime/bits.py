"""Floating values moved as their bits.

XLA's CPU computes some operators that only move bf16 values (dynamic-update-slice,
concatenate, select, broadcast) in f32 and converts the result back, which quiets signalling
NaNs and drops NaN payloads; whether it does depends on the operator and on what XLA fuses it
with, so a program compiled whole and one compiled step by step could differ. The oracle moves
every floating value as the unsigned integers of its width instead: the state holds a floating
buffer's bits (``storage``), and an operator that moves values moves their bits (``moved``).
Arithmetic keeps its types: what it makes of a NaN is the operator's own semantics.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

# The unsigned integer type of each element width in bytes.
UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32)}


def storage(dtype: np.dtype) -> np.dtype:
    """What values of ``dtype`` are held as: the unsigned integer of its width for a floating
    type, else ``dtype`` itself."""
    dtype = np.dtype(dtype)
    return UNSIGNED[dtype.itemsize] if jnp.issubdtype(dtype, jnp.floating) else dtype


def to_bits(value: jax.Array) -> jax.Array:
    """``value`` as ``storage`` holds it."""
    held = storage(value.dtype)
    return value if held == value.dtype else lax.bitcast_convert_type(value, held)


def from_bits(value: jax.Array, dtype: np.dtype) -> jax.Array:
    """The ``dtype`` values whose bits ``value`` (of ``storage(dtype)``) holds."""
    dtype = np.dtype(dtype)
    return value if value.dtype == dtype else lax.bitcast_convert_type(value, dtype)


def moved(move: Callable[..., jax.Array], *values: jax.Array) -> jax.Array:
    """``move`` (an operator that only moves elements) applied to the bits of ``values``, all
    of one element type, and the result read back as that type."""
    return from_bits(move(*(to_bits(v) for v in values)), values[0].dtype)
