"""The kernel operator vocabulary: how printed opcodes are normalised, and which are supported.

XLA prints some opcodes with hyphens (``dynamic-slice``) and TAIDL writes ``exp`` for
``exponential``; the IR always holds the normalised spelling. ``SUPPORTED_OPCODES`` is the one
list the checker quotes and the reference evaluator implements.
"""

from __future__ import annotations

# Spellings that differ from the normalised opcode by more than hyphens.
_ALIASES = {
    "exp": "exponential",
}

ELEMENTWISE_UNARY = frozenset({
    "abs", "cbrt", "ceil", "copy", "cosine", "exponential", "exponential_minus_one", "floor",
    "log", "log_plus_one", "logistic", "negate", "not", "round_nearest_afz",
    "round_nearest_even", "rsqrt", "sign", "sine", "sqrt", "tanh",
})
ELEMENTWISE_BINARY = frozenset({
    "add", "and", "atan2", "divide", "maximum", "minimum", "multiply", "or", "power",
    "remainder", "subtract", "xor",
})

SUPPORTED_OPCODES = frozenset({
    "parameter", "constant", "iota",
    "reshape", "bitcast_convert", "convert", "transpose", "broadcast",
    "slice", "concatenate", "dynamic_slice", "dynamic_update_slice",
    "dot", "reduce", "reduce_add",
    "compare", "select", "select_lt", "select_eq_var",
    "tuple", "get_tuple_element", "call",
}) | ELEMENTWISE_UNARY | ELEMENTWISE_BINARY

# Operators whose result type is not a single array, or that need the whole module to type
# them; the checker types these itself instead of asking act_backend.hlo.infer.
STRUCTURAL_OPCODES = frozenset({"tuple", "get_tuple_element", "call"})

COMPARISON_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")


def normalise_opcode(printed: str) -> str:
    """The IR spelling of an opcode as printed: hyphens become underscores, aliases resolve."""
    name = printed.replace("-", "_")
    return _ALIASES.get(name, name)


def supported_list() -> str:
    """The supported opcodes as one sorted, comma-separated line for error messages."""
    return ", ".join(sorted(SUPPORTED_OPCODES))
