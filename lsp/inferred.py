"""The type each HLO value has, as the toolchain infers it (``act_backend.hlo.infer``), for
inlay hints and hover: in a semantics string, symbolic in the computational attributes
(``bf16[@c.n, 64]``); in a kernel, concrete.

The inference is run as the checks run it: each instruction typed from the declared types of
its operands, a semantics string first read as the validation reads it (``read_splats``). A
value the inference refuses (the check reports why) or does not type (``tuple``,
``get-tuple-element`` and ``call``, which the kernel checker types itself) has no entry.
"""

from __future__ import annotations

from act_backend.hlo import vocabulary
from act_backend.hlo.infer import HloTypeError, infer_type
from act_backend.hlo.ir import HloType, Module, TensorType, TupleType

_STRUCTURAL = vocabulary.operators(family="structural")


def semantics_types(module: Module) -> dict[tuple[str, str], HloType]:
    """The inferred type of each value of a parsed semantics string, by (computation,
    value); ``module`` is changed as the validation changes it (splats made explicit)."""
    from act_backend.spec.semantics import read_splats

    read_splats(module)
    return kernel_types(module)


def kernel_types(module: Module) -> dict[tuple[str, str], HloType]:
    """The inferred type of each value of every computation of ``module``."""
    found: dict[tuple[str, str], HloType] = {}
    for comp in module.computations:
        declared: dict[str, HloType] = {}
        for instr in comp.instructions:
            declared.setdefault(instr.name, instr.type)
        for instr in comp.instructions:
            if instr.opcode in _STRUCTURAL or isinstance(instr.type, TupleType):
                continue
            operands = [declared.get(name) for name in instr.operands]
            if any(not isinstance(t, TensorType) for t in operands):
                continue
            try:
                found[(comp.name, instr.name)] = infer_type(instr, operands)
            except HloTypeError:
                continue
    return found


def type_text(kind: HloType) -> str:
    """A type as hints show it: ``bf16[@c.n, 64]``, ``(f32[2], s32[])``."""
    if isinstance(kind, TupleType):
        return "(" + ", ".join(type_text(e) for e in kind.elements) + ")"
    return f"{kind.dtype}[{', '.join(str(d) for d in kind.shape)}]"
