"""Tuple types, which XLA kernels use for multi-output roots and variadic reduces.

Array types are ``act_backend.hlo.ir.TensorType``; a tuple-typed instruction (``tuple``,
a variadic ``reduce``, a ``call`` of a tuple-rooted computation) holds a ``TupleType``.
"""

from __future__ import annotations

from dataclasses import dataclass

from act_backend.hlo.ir import TensorType


@dataclass(frozen=True)
class TupleType:
    elements: tuple[HloType, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"


HloType = TensorType | TupleType
