"""What each HLO operator means, for hover text and completion details.

The set of operators a kernel may use is the type checker's
(``act_backend.hlo.infer.KNOWN_OPCODES``); TAIDL semantics use the subset in
``SEMANTICS_OPERATORS``. This table only explains them; it decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorDoc:
    signature: str
    meaning: str


def _unary(what: str) -> OperatorDoc:
    return OperatorDoc("op(x)", f"Elementwise {what}; the result has the operand's shape.")


def _binary(what: str) -> OperatorDoc:
    return OperatorDoc("op(x, y)", f"Elementwise {what} of two operands of the same shape and "
                       "element type.")


DOCS: dict[str, OperatorDoc] = {
    "parameter": OperatorDoc(
        "parameter(i)",
        "Input number i of the computation. In instruction semantics, parameter i is input "
        "slice i of the instruction, as a tensor of the buffer's element type."),
    "constant": OperatorDoc(
        "constant(value)",
        "A literal: a number for a scalar, or a nested brace list for a tensor."),
    "iota": OperatorDoc(
        "iota(), iota_dimension=d",
        "Counts 0, 1, 2... along dimension d, repeated along the others."),
    "reshape": OperatorDoc(
        "reshape(x)",
        "The same elements in row-major order, viewed with the declared shape; element counts "
        "must agree."),
    "bitcast_convert": OperatorDoc(
        "bitcast_convert(x)",
        "Reinterprets the bits of each element as the declared element type. A narrower type "
        "adds a trailing dimension (bf16[n] -> u8[n,2]); a wider one consumes it."),
    "convert": OperatorDoc(
        "convert(x)",
        "Converts each element to the declared element type (rounding to nearest even)."),
    "copy": OperatorDoc("copy(x)", "The operand, unchanged."),
    "transpose": OperatorDoc(
        "transpose(x), dimensions={p...}",
        "Permutes dimensions: result dimension i is operand dimension p[i]."),
    "slice": OperatorDoc(
        "slice(x), slice={[start:limit:stride], ...}",
        "The sub-tensor [start, limit) with the given stride along each dimension."),
    "concatenate": OperatorDoc(
        "concatenate(x, y, ...), dimensions={d}",
        "Joins the operands along dimension d; the other dimensions must agree."),
    "dot": OperatorDoc(
        "dot(lhs, rhs), lhs_contracting_dims={..}, rhs_contracting_dims={..}, "
        "lhs_batch_dims={..}, rhs_batch_dims={..}",
        "Generalised matrix product: sums over the contracting dimensions; the result has the "
        "batch dimensions, then lhs's free dimensions, then rhs's."),
    "broadcast": OperatorDoc(
        "broadcast(x), dimensions={d...}",
        "Replicates the operand into the declared shape: operand dimension i becomes result "
        "dimension d[i]; the other result dimensions are new."),
    "reduce": OperatorDoc(
        "reduce(x, init), dimensions={d...}, to_apply=computation",
        "Folds the operand along the listed dimensions with the reducer computation "
        "(add, max, min or mul), starting from init; those dimensions disappear."),
    "reduce_add": OperatorDoc(
        "reduce_add(x), dimensions={d...}",
        "Sums the operand along the listed dimensions (TAIDL shorthand for reduce with an add "
        "reducer and a zero start); those dimensions disappear."),
    "exponential": _unary("e^x"),
    "exponential-minus-one": _unary("e^x - 1"),
    "log": _unary("natural logarithm"),
    "log-plus-one": _unary("log(1 + x)"),
    "sqrt": _unary("square root"),
    "rsqrt": _unary("reciprocal square root"),
    "cbrt": _unary("cube root"),
    "tanh": _unary("hyperbolic tangent"),
    "logistic": _unary("logistic sigmoid 1 / (1 + e^-x)"),
    "floor": _unary("floor"),
    "ceil": _unary("ceiling"),
    "cosine": _unary("cosine"),
    "sine": _unary("sine"),
    "round-nearest-even": _unary("rounding to the nearest integer, ties to even"),
    "round-nearest-afz": _unary("rounding to the nearest integer, ties away from zero"),
    "negate": _unary("negation"),
    "abs": _unary("absolute value"),
    "sign": _unary("sign (-1, 0 or 1)"),
    "not": _unary("bitwise (or logical, for pred) not"),
    "add": _binary("sum"),
    "subtract": _binary("difference x - y"),
    "multiply": _binary("product"),
    "divide": _binary("quotient x / y"),
    "maximum": _binary("maximum"),
    "minimum": _binary("minimum"),
    "power": _binary("power x^y"),
    "remainder": _binary("remainder"),
    "atan2": _binary("two-argument arctangent"),
    "xor": _binary("bitwise exclusive or"),
    "and": _binary("bitwise and"),
    "or": _binary("bitwise or"),
    "compare": OperatorDoc(
        "compare(x, y), direction=EQ|NE|LT|LE|GT|GE",
        "Elementwise comparison; the result is a pred tensor of the operands' shape."),
    "select": OperatorDoc(
        "select(pred, on_true, on_false)",
        "Elementwise choice: on_true where pred holds, on_false elsewhere."),
    "select_lt": OperatorDoc(
        "select_lt(a, b, on_true, on_false)",
        "Elementwise a < b ? on_true : on_false."),
    "select_eq_var": OperatorDoc(
        "select_eq_var(a, b, on_true, on_false)",
        "Elementwise a == b ? on_true : on_false."),
    "dynamic_update_slice": OperatorDoc(
        "dynamic_update_slice(operand, update, i0, i1, ...)",
        "The operand with the update written at the start indices (scalar s32 operands)."),
    "dynamic_slice": OperatorDoc(
        "dynamic_slice(operand, i0, i1, ...), dynamic_slice_sizes={..}",
        "The sub-tensor of the given sizes at the start indices (scalar s32 operands)."),
}
# XLA spells some operators with hyphens and TAIDL with underscores; parsers accept both.
for _hyphen, _underscore in (("bitcast-convert", "bitcast_convert"),
                             ("dynamic-update-slice", "dynamic_update_slice"),
                             ("dynamic-slice", "dynamic_slice"),
                             ("exp", "exponential")):
    DOCS[_hyphen] = DOCS[_underscore]

# The operators of TAIDL v2 instruction semantics.
SEMANTICS_OPERATORS = (
    "parameter", "constant", "reshape", "bitcast_convert", "convert", "copy", "transpose",
    "slice", "concatenate", "dot", "broadcast", "reduce", "reduce_add", "exponential", "exp",
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "xor", "select_lt",
    "select_eq_var", "dynamic_update_slice",
)


def kernel_operators() -> tuple[str, ...]:
    """Every operator a kernel may use: the type checker's list, when it can be imported."""
    try:
        from act_backend.hlo.infer import KNOWN_OPCODES
    except ImportError:
        return tuple(sorted(DOCS))
    return tuple(sorted(KNOWN_OPCODES))


def hover_text(opcode: str) -> str | None:
    doc = DOCS.get(opcode)
    if doc is None:
        return None
    return f"**{opcode}** — `{doc.signature}`\n\n{doc.meaning}"
