"""Element types: their byte sizes and NumPy equivalents (bf16 through ml_dtypes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

_NUMPY = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8),
    "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32),
    "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}

FLOAT_DTYPES = frozenset({"f16", "bf16", "f32", "f64"})
INT_DTYPES = frozenset({"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"})


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of an HLO element type; KeyError for an unknown name."""
    return _NUMPY[name]


def byte_size(name: str) -> int:
    """Bytes per element (pred counts as one byte, as XLA stores it)."""
    return _NUMPY[name].itemsize


def is_known(name: str) -> bool:
    return name in _NUMPY


def from_numpy(dtype: np.dtype) -> str:
    """The HLO element type name of a NumPy dtype."""
    for name, candidate in _NUMPY.items():
        if candidate == np.dtype(dtype):
            return name
    raise KeyError(f"no HLO element type for NumPy dtype {dtype}")
