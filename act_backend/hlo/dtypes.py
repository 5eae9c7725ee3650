"""Element types as NumPy sees them: byte sizes and dtypes (bf16 through ml_dtypes), from the
rows of ``act_backend.hlo.vocabulary``."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from act_backend.hlo.vocabulary import ELEMENT_TYPES, element_types


def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name) if name == "bfloat16" else name)


_NUMPY = {t.name: _numpy_dtype(t.numpy) for t in ELEMENT_TYPES}

FLOAT_DTYPES = frozenset(element_types(kind="float"))
INT_DTYPES = frozenset(element_types(kind="signed") + element_types(kind="unsigned"))


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
