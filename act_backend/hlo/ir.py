"""The HLO intermediate representation shared by instruction semantics and kernels.

Both front ends produce these plain dataclasses: the TAIDL semantics parser (where a
dimension may be a symbolic expression over ``@c.*`` attributes) and the XLA kernel
parser (where every dimension is an ``int``). Everything downstream (validation, the
NumPy reference, the ISA table) reads them and never the parse trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from act_backend.hlo.vocabulary import element_types

# A dimension is a concrete integer or a symbolic expression (act_backend.hlo.expr.Expr).
Dim = Union[int, "Expr"]  # noqa: F821 - Expr lives in act_backend.hlo.expr

# Element types kernels may use, and the subset of the TAIDL v2 grammar.
DTYPES = element_types()
SPEC_DTYPES = element_types(spec=True)


@dataclass(frozen=True)
class Span:
    """Where a piece of text came from: 1-based line and column, end exclusive."""

    file: str | None
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.file or '<string>'}:{self.line}:{self.column}"


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple[Dim, ...]

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class TupleType:
    """A tuple of types: what XLA kernels use for multi-output roots and variadic reduces
    (TAIDL semantics never have one)."""

    elements: tuple[HloType, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"


HloType = TensorType | TupleType


@dataclass
class Instruction:
    """One SSA instruction: ``[ROOT] name = type opcode(operands), attr=value, ...``.

    ``opcode`` is normalised (``exp`` -> ``exponential``); ``attrs`` holds the parsed
    attribute values keyed by attribute name (``dimensions``, ``lhs_contracting_dims``,
    ``slice``, ``to_apply``, ``index`` for parameters, ``value`` for constants...).
    ``spans`` maps ``"name"``, ``"opcode"``, ``"type"``, ``"operand:<i>"`` and
    ``"attr:<name>"`` to where each was written, for precise diagnostics.
    """

    name: str
    opcode: str
    type: HloType
    operands: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    is_root: bool = False
    span: Span | None = None
    spans: dict[str, Span] = field(default_factory=dict)


@dataclass
class Computation:
    name: str
    instructions: list[Instruction]
    is_entry: bool = False
    span: Span | None = None

    @property
    def root(self) -> Instruction:
        for instr in self.instructions:
            if instr.is_root:
                return instr
        return self.instructions[-1]

    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.attrs["index"])

    def by_name(self) -> dict[str, Instruction]:
        return {i.name: i for i in self.instructions}


@dataclass
class Module:
    name: str
    computations: list[Computation]
    source: str | None = None

    @property
    def entry(self) -> Computation:
        for comp in self.computations:
            if comp.is_entry:
                return comp
        return self.computations[-1]

    def computation(self, name: str) -> Computation:
        for comp in self.computations:
            if comp.name == name:
                return comp
        raise KeyError(name)
