"""Which attributes a kernel instruction may carry: the ones its operator takes, and the ones
XLA's parser lets any instruction carry.

An attribute outside both is refused (``unknown-attribute``), never ignored: it may change
what the instruction computes. The per-operator sets follow XLA's HLO parser, restricted to
the operators the kernel front end supports; ``accepted_kernel_attributes`` is the one
question the checker asks, so that the table can move into the shared operator vocabulary
without touching the checker. The crate's ``kernel_checks.rs`` holds the same table.
"""

from __future__ import annotations

# Attributes XLA's parser accepts on every instruction; none changes the computed values.
GENERIC_ATTRIBUTES = frozenset({
    "metadata", "sharding", "frontend_attributes", "backend_config", "statistics",
    "control-predecessors", "parameter_replication", "origin",
})

_DOT = frozenset({"lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims",
                  "rhs_contracting_dims", "operand_precision", "algorithm"})

_BY_OPERATOR: dict[str, frozenset[str]] = {
    "iota": frozenset({"iota_dimension"}),
    "reshape": frozenset({"inferred_dimension"}),
    "transpose": frozenset({"dimensions"}),
    "broadcast": frozenset({"dimensions"}),
    "concatenate": frozenset({"dimensions"}),
    "reduce_add": frozenset({"dimensions"}),
    "reduce": frozenset({"dimensions", "to_apply"}),
    "slice": frozenset({"slice"}),
    "dynamic_slice": frozenset({"dynamic_slice_sizes"}),
    "dot": _DOT,
    "compare": frozenset({"direction", "type"}),
    "get_tuple_element": frozenset({"index"}),
    "call": frozenset({"to_apply"}),
}


def accepted_kernel_attributes(opcode: str) -> frozenset[str]:
    """The attributes the (normalised) operator takes besides ``GENERIC_ATTRIBUTES``."""
    return _BY_OPERATOR.get(opcode, frozenset())


def accepted_listing(opcode: str) -> str:
    """The attributes ``opcode`` takes, for messages: its own first, then the generic ones."""
    own = sorted(accepted_kernel_attributes(opcode))
    generic = ", ".join(sorted(GENERIC_ATTRIBUTES))
    return (f"{', '.join(own)}; and on any instruction: {generic}" if own
            else f"none of its own; on any instruction: {generic}")
