"""The one vocabulary of HLO operators and element types that every part of act-backend reads.

Each operator is one row: its normalised name, other spellings, family, attributes, whether
TAIDL semantics may use it, whether the kernel front ends accept it, and what it means. Each
element type is one row: name, width, kind, and its NumPy and ``jax.numpy`` names. The
semantics parser, the kernel checker, type inference, the NumPy reference, the language server
and the Rust crate (through ``src/vocabulary.rs``, generated from these rows by
``act_backend.hlo.vocabulary_rust``) all derive their lists from here: to add an operator, add
a row, regenerate the crate module, and the tests name what still lacks a rule for it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Operator families: how many operands, and what type rule shapes the result.
FAMILIES = (
    "leaf",         # no operands: parameter, constant, iota
    "conversion",   # elementwise change of element type
    "unary",        # elementwise, one operand, result of the operand's type
    "binary",       # elementwise, two operands of one type, result of that type
    "compare",      # elementwise comparison, pred result
    "select",       # elementwise choice
    "clamp",        # elementwise clamp(lo, x, hi); lo and hi may be scalars
    "classify",     # elementwise test of a float operand, pred result: is_finite
    "layout",       # moves elements without arithmetic: reshape, transpose, slice...
    "contraction",  # dot, convolution
    "reduction",    # reduce, reduce_add
    "structural",   # tuples and calls (kernels only)
    "other",        # XLA operators act-backend does not compile (kernels refuse them)
)

# Which element types an elementwise operator takes.
OPERAND_CLASSES = ("any", "float", "bits", "integer")  # bits: integers and pred; integer: not pred


@dataclass(frozen=True)
class Operator:
    """One HLO operator as act-backend knows it."""

    name: str                       # normalised spelling: underscores, ``exponential`` not ``exp``
    family: str                     # one of FAMILIES
    signature: str                  # how it is written, for hover text
    doc: str                        # one line: what it computes
    attributes: tuple[str, ...] = ()         # attributes with a meaning, in both front ends
    required: tuple[str, ...] = ()           # attributes without which it means nothing
    kernel_attributes: tuple[str, ...] = ()  # further attributes kernels may carry
    aliases: tuple[str, ...] = ()            # other spellings (hyphenated ones are implied)
    operands: str = "any"           # element types an elementwise operator takes
    semantics: bool = False         # TAIDL instruction semantics may use it
    kernels: bool = True            # the kernel front ends accept it


@dataclass(frozen=True)
class ElementType:
    """One HLO element type."""

    name: str
    bits: int
    kind: str                       # "pred" | "signed" | "unsigned" | "float"
    numpy: str                      # NumPy dtype name (bfloat16 comes from ml_dtypes)
    jax: str                        # attribute of jax.numpy
    spec: bool = False              # TAIDL data models and semantics may use it
    significand_bits: int = 0       # floats: significand bits including the implicit one
    exponent_bits: int = 0          # floats

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)


def _unary(name: str, what: str, operands: str = "float", **more) -> Operator:
    return Operator(name, "unary", "op(x)",
                    f"Elementwise {what}; the result has the operand's type.",
                    operands=operands, **more)


def _binary(name: str, what: str, operands: str = "any", **more) -> Operator:
    return Operator(name, "binary", "op(x, y)",
                    f"Elementwise {what} of two operands of one type.", operands=operands,
                    **more)


_DIMS = ("dimensions",)
_DOT_DIMS = ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims")

OPERATORS: tuple[Operator, ...] = (
    Operator("parameter", "leaf", "parameter(i)",
             "Input number i of the computation; in instruction semantics, input slice i.",
             semantics=True),
    Operator("constant", "leaf", "constant(value)",
             "A literal: a number for a scalar, or a nested brace list for a tensor.",
             semantics=True),
    Operator("iota", "leaf", "iota(), iota_dimension=d",
             "Counts 0, 1, 2... along dimension d, repeated along the others.",
             attributes=("iota_dimension",), required=("iota_dimension",)),
    Operator("convert", "conversion", "convert(x)",
             "Converts each element to the declared element type (round to nearest even).",
             semantics=True),
    Operator("bitcast_convert", "conversion", "bitcast_convert(x)",
             "Reinterprets each element's bits as the declared type; a narrower type adds a "
             "trailing dimension (bf16[n] -> u8[n,2]), a wider one consumes it.",
             semantics=True),
    _unary("exponential", "e^x", aliases=("exp",), semantics=True),
    _unary("exponential_minus_one", "e^x - 1"),
    _unary("log", "natural logarithm"),
    _unary("log_plus_one", "log(1 + x)"),
    _unary("sqrt", "square root"),
    _unary("rsqrt", "reciprocal square root"),
    _unary("cbrt", "cube root"),
    _unary("tanh", "hyperbolic tangent"),
    _unary("logistic", "logistic sigmoid 1 / (1 + e^-x)"),
    _unary("floor", "floor"),
    _unary("ceil", "ceiling"),
    _unary("cosine", "cosine"),
    _unary("sine", "sine"),
    _unary("round_nearest_even", "rounding to the nearest integer, ties to even"),
    _unary("round_nearest_afz", "rounding to the nearest integer, ties away from zero"),
    _unary("copy", "copy (the operand unchanged)", operands="any", semantics=True),
    _unary("negate", "negation", operands="any"),
    _unary("abs", "absolute value", operands="any"),
    _unary("sign", "sign (-1, 0 or 1)", operands="any"),
    _unary("not", "bitwise (logical, for pred) not", operands="bits"),
    _unary("erf", "error function"),
    _unary("tan", "tangent"),
    _unary("popcnt", "population count (the number of set bits)", operands="integer"),
    _unary("count_leading_zeros", "count of leading zero bits", operands="integer"),
    Operator("reduce_precision", "unary",
             "reduce_precision(x), exponent_bits=e, mantissa_bits=m",
             "Elementwise rounding to a float of e exponent and m mantissa bits (to nearest "
             "even, overflow to infinity, NaN kept), in the operand's type.",
             attributes=("exponent_bits", "mantissa_bits"),
             required=("exponent_bits", "mantissa_bits"), operands="float"),
    Operator("is_finite", "classify", "is_finite(x)",
             "Elementwise test that x is neither infinite nor NaN; a pred tensor of x's shape.",
             operands="float"),
    _binary("add", "sum", semantics=True),
    _binary("subtract", "difference x - y", semantics=True),
    _binary("multiply", "product", semantics=True),
    _binary("divide", "quotient x / y", semantics=True),
    _binary("maximum", "maximum", semantics=True),
    _binary("minimum", "minimum", semantics=True),
    _binary("power", "power x^y"),
    _binary("remainder", "remainder"),
    _binary("atan2", "two-argument arctangent"),
    _binary("xor", "bitwise exclusive or", operands="bits", semantics=True),
    _binary("and", "bitwise and", operands="bits"),
    _binary("or", "bitwise or", operands="bits"),
    _binary("shift_left", "left shift x << y (0 once y reaches the width)",
            operands="integer"),
    _binary("shift_right_arithmetic", "arithmetic right shift x >> y (sign-filled)",
            operands="integer"),
    _binary("shift_right_logical", "logical right shift x >> y (zero-filled)",
            operands="integer"),
    Operator("compare", "compare", "compare(x, y), direction=EQ|NE|LT|LE|GT|GE",
             "Elementwise comparison; the result is a pred tensor of the operands' shape.",
             attributes=("direction",), required=("direction",), kernel_attributes=("type",)),
    Operator("select", "select", "select(pred, on_true, on_false)",
             "Elementwise choice: on_true where pred holds, on_false elsewhere."),
    Operator("select_lt", "select", "select_lt(a, b, on_true, on_false)",
             "Elementwise a < b ? on_true : on_false.", semantics=True),
    Operator("select_eq_var", "select", "select_eq_var(a, b, on_true, on_false)",
             "Elementwise a == b ? on_true : on_false.", semantics=True),
    Operator("clamp", "clamp", "clamp(lo, x, hi)",
             "Elementwise min(max(x, lo), hi); lo and hi are scalars or of x's shape.",
             operands="any"),
    Operator("reshape", "layout", "reshape(x)",
             "The same elements in row-major order, viewed with the declared shape.",
             semantics=True),
    Operator("transpose", "layout", "transpose(x), dimensions={p...}",
             "Permutes dimensions: result dimension i is operand dimension p[i].",
             attributes=_DIMS, required=_DIMS, semantics=True),
    Operator("broadcast", "layout", "broadcast(x), dimensions={d...}",
             "Replicates the operand into the declared shape: operand dimension i becomes "
             "result dimension d[i]; the other result dimensions are new.",
             attributes=_DIMS, required=_DIMS, semantics=True),
    Operator("slice", "layout", "slice(x), slice={[start:limit:stride], ...}",
             "The sub-tensor [start, limit) with the given stride along each dimension.",
             attributes=("slice",), required=("slice",), semantics=True),
    Operator("concatenate", "layout", "concatenate(x, y, ...), dimensions={d}",
             "Joins the operands along dimension d; the other dimensions must agree.",
             attributes=_DIMS, required=_DIMS, semantics=True),
    Operator("reverse", "layout", "reverse(x), dimensions={d...}",
             "Reverses the order of the elements along each listed dimension.",
             attributes=_DIMS, required=_DIMS),
    Operator("pad", "layout", "pad(x, value), padding=lo_hi_in x ...",
             "Pads each dimension with lo elements before, hi after and in between every two "
             "elements (a negative lo or hi removes elements), all of the scalar value.",
             attributes=("padding",), required=("padding",)),
    Operator("dynamic_slice", "layout",
             "dynamic_slice(operand, i0, i1, ...), dynamic_slice_sizes={..}",
             "The sub-tensor of the given sizes at the start indices (scalar s32 operands).",
             attributes=("dynamic_slice_sizes",), required=("dynamic_slice_sizes",)),
    Operator("dynamic_update_slice", "layout", "dynamic_update_slice(operand, update, i0, ...)",
             "The operand with the update written at the start indices (scalar s32 operands).",
             semantics=True),
    Operator("dot", "contraction",
             "dot(lhs, rhs), lhs_contracting_dims={..}, rhs_contracting_dims={..}, "
             "lhs_batch_dims={..}, rhs_batch_dims={..}",
             "Generalised matrix product: sums over the contracting dimensions; the result has "
             "the batch dimensions, then lhs's free dimensions, then rhs's.",
             attributes=_DOT_DIMS, required=_DOT_DIMS[:2],
             kernel_attributes=("operand_precision",), semantics=True),
    Operator("convolution", "contraction",
             "convolution(lhs, rhs), window={size=.. stride=.. pad=.. lhs_dilate=.. "
             "rhs_dilate=..}, dim_labels=b01f_01io->b01f, feature_group_count=n, "
             "batch_group_count=n",
             "Slides the kernel (rhs) over the input (lhs): each result element is the sum of "
             "products of a window of the input with the kernel; dim_labels name the batch, "
             "feature and spatial dimensions of each operand and of the result.",
             attributes=("window", "dim_labels", "feature_group_count", "batch_group_count"),
             required=("dim_labels",), kernel_attributes=("operand_precision",)),
    Operator("reduce", "reduction", "reduce(x, init), dimensions={d...}, to_apply=computation",
             "Folds the operand along the listed dimensions with the reducer (add, max, min or "
             "mul), starting from init; those dimensions disappear. Semantics may leave init "
             "out (TAIDL-TO's reduce(x)): it is then the reducer's identity.",
             attributes=("dimensions", "to_apply"), required=("dimensions", "to_apply"),
             semantics=True),
    Operator("reduce_window", "reduction",
             "reduce-window(x, init), window={size=.. stride=.. pad=.. lhs_dilate=.. "
             "rhs_dilate=..}, to_apply=computation",
             "Folds each window of the operand with the reducer, starting from init, in the "
             "order of the window's positions; positions in the padding or between dilated "
             "elements are left out. Pooling (a maximum or a sum over a spatial window) and "
             "cumulative sums are written so.",
             attributes=("window", "to_apply"), required=("window", "to_apply")),
    Operator("reduce_add", "reduction", "reduce_add(x), dimensions={d...}",
             "Sums the operand along the listed dimensions (TAIDL's reduce with an add reducer "
             "and a zero start); those dimensions disappear.",
             attributes=_DIMS, required=_DIMS, semantics=True),
    Operator("tuple", "structural", "tuple(x, y, ...)", "A tuple of its operands."),
    Operator("get_tuple_element", "structural", "get_tuple_element(t), index=i",
             "Element i of a tuple.", attributes=("index",), required=("index",)),
    Operator("call", "structural", "call(x, ...), to_apply=computation",
             "The named computation applied to the operands.",
             attributes=("to_apply",), required=("to_apply",)),
)


def _other(name: str, what: str) -> Operator:
    return Operator(name, "other", f"{name.replace('_', '-')}(...)",
                    f"XLA's {what}; act-backend does not compile it yet.", kernels=False)


# XLA operators a kernel may print that act-backend has no type rule or meaning for: both front
# ends refuse them by name instead of calling them unknown: gather, scatter, sort, random
# numbers and the rest are not elementwise, reduction or layout work, and no TAIDL semantics can
# state an instruction that computes them.
OPERATORS += tuple(_other(name, what) for name, what in (
    ("stochastic_convert", "stochastic rounding conversion"), ("bitcast", "layout bitcast"),
    ("real", "real part"), ("imag", "imaginary part"), ("complex", "complex construction"),
    ("gather", "gather"), ("scatter", "scatter"),
    ("select_and_scatter", "select-and-scatter"),
    ("sort", "sort"), ("top_k", "top-k"), ("rng", "random numbers"),
    ("rng_bit_generator", "random bits"), ("cholesky", "Cholesky factorisation"),
    ("triangular_solve", "triangular solve"), ("fft", "fast Fourier transform"),
    ("map", "map over a computation"), ("while", "loop"), ("conditional", "conditional"),
    ("custom_call", "custom call"), ("fusion", "fusion"), ("dynamic_reshape", "dynamic reshape"),
    ("get_dimension_size", "dimension size"), ("set_dimension_size", "dimension size change"),
    ("batch_norm_grad", "batch-norm gradient"), ("batch_norm_inference", "batch-norm inference"),
    ("batch_norm_training", "batch-norm training"), ("optimization_barrier", "barrier"),
    ("add_dependency", "dependency"), ("after_all", "token join"), ("domain", "domain"),
    ("infeed", "infeed"), ("outfeed", "outfeed"), ("send", "send"), ("send_done", "send-done"),
    ("recv", "receive"), ("recv_done", "receive-done"), ("copy_start", "async copy start"),
    ("copy_done", "async copy done"), ("all_gather", "all-gather"),
    ("all_reduce", "all-reduce"), ("all_to_all", "all-to-all"),
    ("reduce_scatter", "reduce-scatter"), ("collective_permute", "collective permute"),
    ("partition_id", "partition id"), ("replica_id", "replica id"),
))

ELEMENT_TYPES: tuple[ElementType, ...] = (
    ElementType("pred", 8, "pred", "bool", "bool_"),
    ElementType("s8", 8, "signed", "int8", "int8", spec=True),
    ElementType("s16", 16, "signed", "int16", "int16"),
    ElementType("s32", 32, "signed", "int32", "int32", spec=True),
    ElementType("s64", 64, "signed", "int64", "int64"),
    ElementType("u8", 8, "unsigned", "uint8", "uint8", spec=True),
    ElementType("u16", 16, "unsigned", "uint16", "uint16"),
    ElementType("u32", 32, "unsigned", "uint32", "uint32", spec=True),
    ElementType("u64", 64, "unsigned", "uint64", "uint64"),
    ElementType("f16", 16, "float", "float16", "float16", spec=True, significand_bits=11,
                exponent_bits=5),
    ElementType("bf16", 16, "float", "bfloat16", "bfloat16", spec=True, significand_bits=8,
                exponent_bits=8),
    ElementType("f32", 32, "float", "float32", "float32", spec=True, significand_bits=24,
                exponent_bits=8),
    ElementType("f64", 64, "float", "float64", "float64", significand_bits=53,
                exponent_bits=11),
)

# Attributes any kernel instruction may carry that never change what it computes: the ones
# XLA's parser accepts on every instruction (and statistics_viz, an older spelling).
GENERIC_KERNEL_ATTRIBUTES = ("metadata", "sharding", "frontend_attributes", "backend_config",
                             "statistics", "statistics_viz", "control-predecessors", "origin",
                             "parameter_replication")

COMPARISON_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")

_BY_NAME: dict[str, Operator] = {op.name: op for op in OPERATORS}
_SPELLINGS: dict[str, str] = {}
for _op in OPERATORS:
    for _spelling in (_op.name, *_op.aliases):
        _SPELLINGS[_spelling] = _op.name
        _SPELLINGS[_spelling.replace("_", "-")] = _op.name
_TYPES: dict[str, ElementType] = {t.name: t for t in ELEMENT_TYPES}


def normalise_opcode(printed: str) -> str:
    """The vocabulary's spelling of an opcode as printed (``exp`` and ``bitcast-convert`` ->
    ``exponential`` and ``bitcast_convert``); an unknown name comes back with underscores."""
    return _SPELLINGS.get(printed, printed.replace("-", "_"))


def operator(name: str) -> Operator | None:
    """The operator of a normalised name, or None."""
    return _BY_NAME.get(name)


def operators(*, family: str | None = None, operands: str | None = None,
              semantics: bool | None = None, kernels: bool | None = None) -> frozenset[str]:
    """Names of the operators that have every property given."""
    return frozenset(
        op.name for op in OPERATORS
        if (family is None or op.family == family)
        and (operands is None or op.operands == operands)
        and (semantics is None or op.semantics == semantics)
        and (kernels is None or op.kernels == kernels))


def semantics_attributes(name: str) -> tuple[str, ...]:
    """Attributes an operator takes in TAIDL semantics."""
    op = _BY_NAME.get(name)
    return op.attributes if op else ()


def kernel_attributes(name: str) -> frozenset[str]:
    """Attributes an operator may carry in a kernel: its own and the generic ones."""
    op = _BY_NAME.get(name)
    own = (op.attributes + op.kernel_attributes) if op else ()
    return frozenset(own) | frozenset(GENERIC_KERNEL_ATTRIBUTES)


def element_type(name: str) -> ElementType | None:
    return _TYPES.get(name)


def element_types(*, kind: str | None = None, spec: bool | None = None) -> tuple[str, ...]:
    """Names of the element types with the properties given, in the table's order."""
    return tuple(t.name for t in ELEMENT_TYPES
                 if (kind is None or t.kind == kind) and (spec is None or t.spec == spec))


def spellings(name: str) -> tuple[str, ...]:
    """Every spelling of an operator that the parsers accept, the normalised one first."""
    return (name, *sorted(s for s, n in _SPELLINGS.items() if n == name and s != name))
