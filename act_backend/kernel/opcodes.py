"""The kernel front end's view of the operator vocabulary (``act_backend.hlo.vocabulary``):
how printed opcodes are normalised, and which operators a kernel may use.

XLA prints some opcodes with hyphens (``dynamic-slice``) and TAIDL writes ``exp`` for
``exponential``; the IR always holds the normalised spelling.
"""

from __future__ import annotations

from act_backend.hlo.vocabulary import COMPARISON_DIRECTIONS, normalise_opcode, operators

ELEMENTWISE_UNARY = operators(family="unary", kernels=True)
ELEMENTWISE_BINARY = operators(family="binary", kernels=True)

# What the checker accepts and the reference evaluator implements.
SUPPORTED_OPCODES = operators(kernels=True)

# XLA operators the vocabulary lists but kernels may not use: refused by name.
REFUSED_OPCODES = operators(kernels=False)

# Operators whose result type is not a single array, or that need the whole module to type
# them; the checker types these itself instead of asking act_backend.hlo.infer.
STRUCTURAL_OPCODES = operators(family="structural")

__all__ = ["COMPARISON_DIRECTIONS", "ELEMENTWISE_BINARY", "ELEMENTWISE_UNARY",
           "REFUSED_OPCODES", "STRUCTURAL_OPCODES", "SUPPORTED_OPCODES", "normalise_opcode",
           "supported_list"]


def supported_list() -> str:
    """The supported opcodes as one sorted, comma-separated line for error messages."""
    return ", ".join(sorted(SUPPORTED_OPCODES))
