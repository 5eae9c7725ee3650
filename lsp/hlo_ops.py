"""What each HLO operator means, for hover text and completion details: the signatures and
one-line docs of the operator vocabulary (``act_backend.hlo.vocabulary``), under every
spelling the parsers accept. This module only explains operators; it decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from act_backend.hlo import vocabulary


@dataclass(frozen=True)
class OperatorDoc:
    signature: str
    meaning: str


DOCS: dict[str, OperatorDoc] = {
    spelling: OperatorDoc(op.signature, op.doc)
    for op in vocabulary.OPERATORS
    for spelling in vocabulary.spellings(op.name)
}

# The operators of TAIDL v2 instruction semantics, with their aliases (``exp``).
SEMANTICS_OPERATORS = tuple(
    spelling
    for op in vocabulary.OPERATORS if op.semantics
    for spelling in (op.name, *op.aliases)
)


def kernel_operators() -> tuple[str, ...]:
    """Every operator a kernel may use."""
    return tuple(sorted(vocabulary.operators(kernels=True)))


def hover_text(opcode: str) -> str | None:
    doc = DOCS.get(opcode)
    if doc is None:
        return None
    return f"**{opcode}** — `{doc.signature}`\n\n{doc.meaning}"
