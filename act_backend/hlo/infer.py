"""Type inference and checking for every HLO operator either front end produces.

``infer_type(instr, operand_types)`` computes the type an instruction's operator produces from
its operands and attributes, checks it against the declared type, and raises ``HloTypeError``
naming what is wrong and where (a key into ``Instruction.spans``). Dimensions may be plain
integers (kernels) or expressions over ``@c.*`` attributes (TAIDL semantics); with symbolic
dimensions an error is raised only when the two sides can never agree
(``act_backend.hlo.expr.compare``).

Attribute encodings read here (both parsers produce them):
``dimensions``/``*_dims``/``dynamic_slice_sizes``: list of int; ``slice``: list of
``(start, limit, stride)`` dims; ``padding`` (pad): list of ``(low, high, interior)`` dims;
``index`` (parameter), ``iota_dimension``, ``exponent_bits`` and ``mantissa_bits``: int; ``value``
(constant): a number or a nested list; ``to_apply``: the reducer's name; ``direction``
(compare): ``EQ NE LT LE GT GE``; ``dim_labels`` (convolution): ``(lhs, rhs, out)`` label
strings such as ``("b01f", "01io", "b01f")``; ``window`` (convolution): a dict of the fields
written, ``size``/``stride``/``lhs_dilate``/``rhs_dilate``/``rhs_reversal`` lists of int and
``pad`` a list of ``(low, high)``, one entry per spatial dimension (absent fields take XLA's
defaults: stride 1, pad 0_0, dilations 1, no reversal); ``feature_group_count`` and
``batch_group_count``: int. Attributes not read here (``metadata``...) are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from act_backend.hlo import expr as ex
from act_backend.hlo.dtypes import FLOAT_DTYPES, INT_DTYPES, byte_size, is_known
from act_backend.hlo.ir import Instruction, TensorType
from act_backend.hlo.vocabulary import COMPARISON_DIRECTIONS, operator, operators

Dim = ex.Dim


class HloTypeError(ValueError):
    """A type error in one instruction; ``where`` is ``operand:<i>``, ``attr:<name>``,
    ``type`` or ``opcode`` (keys of ``Instruction.spans``); ``code`` is a stable kebab-case
    name of the kind of error."""

    def __init__(self, message: str, where: str, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.code = code or _default_code(where)


def _default_code(where: str) -> str:
    if where.startswith("operand:"):
        return "operand-type-mismatch"
    if where.startswith("attr:"):
        return "bad-attribute"
    if where == "type":
        return "declared-type-mismatch"
    return "operator-error"


# Operators by family. Names are XLA's as the parsers normalise them: hyphens become
# underscores (``dynamic-slice`` -> ``dynamic_slice``) and ``exp`` becomes ``exponential``.
# The families come from the vocabulary (act_backend.hlo.vocabulary).
UNARY = operators(family="unary")
BINARY = operators(family="binary")
SELECT_CMP = operators(family="select") - {"select"}
COMPARE_DIRECTIONS = COMPARISON_DIRECTIONS


def _fmt_dims(shape: Sequence[Dim]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


class _Checker:
    """Inference for one instruction; holds the context every message starts with."""

    def __init__(self, instr: Instruction, operand_types: Sequence[TensorType]):
        self.instr = instr
        self.ops = list(operand_types)
        self.prefix = f"{instr.opcode} '{instr.name}'"

    # -- errors -------------------------------------------------------------------------------

    def fail(self, where: str, message: str, code: str | None = None) -> HloTypeError:
        return HloTypeError(f"{self.prefix}: {message}", where, code)

    # -- operand helpers ----------------------------------------------------------------------

    def arity(self, expected: int | tuple[int, ...] | None, at_least: int | None = None) -> None:
        count = len(self.ops)
        if at_least is not None:
            if count < at_least:
                raise self.fail(f"operand:{max(count - 1, 0)}" if count else "opcode",
                                f"takes at least {at_least} operands, found {count}",
                                "operand-count")
            return
        allowed = expected if isinstance(expected, tuple) else (expected,)
        if count not in allowed:
            words = " or ".join(str(a) for a in allowed)
            noun = "operand" if allowed == (1,) else "operands"
            where = f"operand:{allowed[-1]}" if count > allowed[-1] else "opcode"
            raise self.fail(where, f"takes {words} {noun}, found {count}", "operand-count")

    def same_dtype(self, i: int, j: int) -> None:
        a, b = self.ops[i], self.ops[j]
        if a.dtype != b.dtype:
            raise self.fail(f"operand:{j}", f"operand {j} has element type {b.dtype} but "
                            f"operand {i} has {a.dtype}; they must be the same")

    def same_shape(self, i: int, j: int) -> None:
        a, b = self.ops[i].shape, self.ops[j].shape
        if len(a) != len(b):
            raise self.fail(f"operand:{j}", f"operand {j} has shape {_fmt_dims(b)} (rank "
                            f"{len(b)}) but operand {i} has {_fmt_dims(a)} (rank {len(a)})")
        k = ex.first_conflict(zip(a, b, strict=True))
        if k is not None:
            raise self.fail(f"operand:{j}", f"operand {j} has shape {_fmt_dims(b)} but "
                            f"operand {i} has {_fmt_dims(a)}: dimension {k} differs "
                            f"({b[k]} vs {a[k]})")

    def operand_class(self, i: int) -> None:
        """Operand ``i`` has an element type of the operator's operand class."""
        row = operator(self.instr.opcode)
        allowed = _OPERAND_CLASSES.get(row.operands) if row else None
        if allowed is not None:
            self.dtype_in(i, allowed, self.instr.opcode)

    def dtype_in(self, i: int, allowed: frozenset[str], what: str) -> None:
        dtype = self.ops[i].dtype
        if dtype not in allowed:
            raise self.fail(f"operand:{i}", f"operand {i} has element type {dtype}; {what} "
                            f"needs one of {', '.join(sorted(allowed))}")

    def scalar_int(self, i: int, role: str) -> None:
        t = self.ops[i]
        if t.shape or t.dtype not in INT_DTYPES:
            raise self.fail(f"operand:{i}", f"{role} (operand {i}) must be an integer scalar, "
                            f"found {t}")

    # -- attribute helpers --------------------------------------------------------------------

    def attr(self, name: str, default=None, required: bool = False):
        if name in self.instr.attrs:
            return self.instr.attrs[name]
        if required:
            raise self.fail("opcode", f"needs the attribute {name}=", "missing-attribute")
        return default

    def int_list(self, name: str, required: bool = True, default: list[int] | None = None
                 ) -> list[int]:
        value = self.attr(name, default if default is not None else [], required)
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.fail(f"attr:{name}", f"{name} must be a list of integers such as "
                            f"{{0, 1}}, found {value!r}")
        return list(value)

    def dims_in_range(self, name: str, dims: list[int], rank: int, what: str) -> None:
        for d in dims:
            if not 0 <= d < rank:
                raise self.fail(f"attr:{name}", f"{name} has {d}, which is not a dimension "
                                f"of the {what} (rank {rank}: 0..{rank - 1})")
        if len(set(dims)) != len(dims):
            raise self.fail(f"attr:{name}", f"{name}={{{', '.join(map(str, dims))}}} names "
                            "a dimension twice")

    # -- declared type ------------------------------------------------------------------------

    def declared(self) -> TensorType:
        return self.instr.type

    def check_declared(self, inferred: TensorType) -> TensorType:
        decl = self.instr.type
        if decl.dtype != inferred.dtype:
            raise self.fail("type", f"declared element type {decl.dtype} but the operator "
                            f"produces {inferred.dtype} (inferred type {inferred})")
        if len(decl.shape) != len(inferred.shape):
            raise self.fail("type", f"declared shape {_fmt_dims(decl.shape)} (rank "
                            f"{len(decl.shape)}) but the operator produces "
                            f"{_fmt_dims(inferred.shape)} (rank {len(inferred.shape)})")
        k = ex.first_conflict(zip(decl.shape, inferred.shape, strict=True))
        if k is not None:
            raise self.fail("type", f"declared shape {_fmt_dims(decl.shape)} but the "
                            f"operator produces {_fmt_dims(inferred.shape)}: dimension {k} "
                            f"is {decl.shape[k]}, expected {inferred.shape[k]}")
        return inferred


# ---------------------------------------------------------------------------------------------
# Rules, one per operator family. Each returns the inferred type (before the declared check).


def _parameter(c: _Checker) -> TensorType:
    c.arity(0)
    index = c.attr("index", required=True)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise c.fail("attr:index", f"the parameter index must be a non-negative integer, "
                     f"found {index!r}")
    return c.declared()


def _constant(c: _Checker) -> TensorType:
    c.arity(0)
    value = c.attr("value", required=True)
    decl = c.declared()
    if isinstance(value, (list, tuple)):
        found = _nested_shape(value)
        if found is None:
            raise c.fail("attr:value", "the constant's nested lists are ragged")
        if len(found) != len(decl.shape) or any(
                ex.compare(f, d) is ex.Agreement.NEVER
                for f, d in zip(found, decl.shape, strict=False)):
            raise c.fail("attr:value", f"the literal has shape {_fmt_dims(found)} but the "
                         f"declared shape is {_fmt_dims(decl.shape)}")
    elif not isinstance(value, (int, float, ex.Expr)):  # ex.Expr: TAIDL's `@c.scale`
        raise c.fail("attr:value", f"a constant's value must be a number or nested list, "
                     f"found {value!r}")
    # A scalar literal with a non-scalar declared shape fills that shape.
    return decl


def _nested_shape(value) -> list[int] | None:
    if not isinstance(value, (list, tuple)):
        return []
    inner = [_nested_shape(v) for v in value]
    if any(s is None for s in inner) or any(s != inner[0] for s in inner):
        return None
    return [len(value), *(inner[0] if inner else [])]


def _iota(c: _Checker) -> TensorType:
    c.arity(0)
    decl = c.declared()
    dim = c.attr("iota_dimension", required=True)
    if not isinstance(dim, int) or not 0 <= dim < len(decl.shape):
        raise c.fail("attr:iota_dimension", f"iota_dimension must be a dimension of "
                     f"{decl} (0..{len(decl.shape) - 1}), found {dim!r}")
    return decl


# The element types of each operand class of the vocabulary (``any``: no restriction).
_OPERAND_CLASSES = {"float": FLOAT_DTYPES, "bits": INT_DTYPES | {"pred"}, "integer": INT_DTYPES}


def _unary(c: _Checker) -> TensorType:
    c.arity(1)
    c.operand_class(0)
    if c.instr.opcode == "reduce_precision":
        for name, least in (("exponent_bits", 1), ("mantissa_bits", 0)):
            bits = c.attr(name, required=True)
            if not isinstance(bits, int) or isinstance(bits, bool) or bits < least:
                raise c.fail(f"attr:{name}", f"{name} must be an integer of at least {least}, "
                             f"found {bits!r}")
    return c.ops[0]


def _binary(c: _Checker) -> TensorType:
    c.arity(2)
    c.same_dtype(0, 1)
    c.same_shape(0, 1)
    c.operand_class(0)
    return c.ops[0]


def _classify(c: _Checker) -> TensorType:
    c.arity(1)
    c.operand_class(0)
    return TensorType("pred", c.ops[0].shape)


def _clamp(c: _Checker) -> TensorType:
    """XLA's clamp(lo, x, hi): lo and hi are scalars or of x's shape, all of x's type."""
    c.arity(3)
    for j in (0, 2):
        c.same_dtype(1, j)
        if c.ops[j].shape:
            c.same_shape(1, j)
    return c.ops[1]


def _reverse(c: _Checker) -> TensorType:
    c.arity(1)
    src = c.ops[0]
    c.dims_in_range("dimensions", c.int_list("dimensions"), len(src.shape), f"operand {src}")
    return src


def _pad(c: _Checker) -> TensorType:
    """XLA's pad: dimension k becomes low + high + size + max(size - 1, 0) * interior, where
    low and high may be negative (they cut) and interior may not."""
    c.arity(2)
    src, value = c.ops
    if value.shape:
        raise c.fail("operand:1", f"the padding value (operand 1) must be a scalar, found "
                     f"{value}")
    c.same_dtype(0, 1)
    config = c.attr("padding", required=True)
    if not isinstance(config, (list, tuple)) or len(config) != len(src.shape):
        count = len(config) if isinstance(config, (list, tuple)) else "no"
        raise c.fail("attr:padding", f"padding has {count} dimensions but the operand {src} "
                     f"has rank {len(src.shape)}: give one low_high_interior per dimension")
    out = []
    for k, ((low, high, interior), size) in enumerate(zip(config, src.shape, strict=True)):
        if interior < 0:
            raise c.fail("attr:padding", f"padding dimension {k}: the interior padding "
                         f"{interior} is negative")
        empty = ex.compare(size, 0) is ex.Agreement.ALWAYS
        gaps = ex.mul(ex.sub(size, 1), interior) if interior and not empty else 0
        extent = ex.add(ex.add(size, gaps), low + high)
        if ex.always_positive(ex.sub(0, extent)):
            raise c.fail("attr:padding", f"padding dimension {k}: {low}_{high}_{interior} "
                         f"leaves {extent} elements of the operand's {size}")
        out.append(extent)
    return TensorType(src.dtype, tuple(out))


def _compare(c: _Checker) -> TensorType:
    c.arity(2)
    c.same_dtype(0, 1)
    c.same_shape(0, 1)
    direction = c.attr("direction", required=True)
    if direction not in COMPARE_DIRECTIONS:
        raise c.fail("attr:direction", f"direction must be one of "
                     f"{', '.join(COMPARE_DIRECTIONS)}, found {direction!r}")
    return TensorType("pred", c.ops[0].shape)


def _select(c: _Checker) -> TensorType:
    c.arity(3)
    if c.ops[0].dtype != "pred":
        raise c.fail("operand:0", f"the predicate (operand 0) must have element type pred, "
                     f"found {c.ops[0]}")
    c.same_dtype(1, 2)
    c.same_shape(1, 2)
    if c.ops[0].shape:
        c.same_shape(1, 0)
    return c.ops[1]


def _select_cmp(c: _Checker) -> TensorType:
    c.arity(4)
    c.same_dtype(0, 1)
    c.same_dtype(2, 3)
    for j in (1, 2, 3):
        c.same_shape(0, j)
    return c.ops[2]


def _convert(c: _Checker) -> TensorType:
    c.arity(1)
    return TensorType(c.declared().dtype, c.ops[0].shape)


def _bitcast_convert(c: _Checker) -> TensorType:
    c.arity(1)
    src = c.ops[0]
    dst = c.declared().dtype
    if not is_known(dst):
        raise c.fail("type", f"unknown element type {dst}")
    a, b = byte_size(src.dtype), byte_size(dst)
    if a == b:
        return TensorType(dst, src.shape)
    if a > b:
        # XLA: converting to a narrower type appends a dimension of the size ratio.
        return TensorType(dst, (*src.shape, a // b))
    ratio = b // a
    if not src.shape or ex.compare(src.shape[-1], ratio) is ex.Agreement.NEVER:
        raise c.fail("operand:0", f"converting {src} to the wider {dst} needs a last "
                     f"dimension of {ratio} ({b} bytes / {a} bytes), found "
                     f"{src.shape[-1] if src.shape else 'a scalar'}")
    return TensorType(dst, src.shape[:-1])


def _reshape(c: _Checker) -> TensorType:
    c.arity(1)
    src, decl = c.ops[0], c.declared()
    have, want = ex.product(src.shape), ex.product(decl.shape)
    if ex.compare(have, want) is ex.Agreement.NEVER:
        raise c.fail("type", f"reshape cannot change the element count: the operand {src} "
                     f"has {have} elements, the declared {decl} has {want}")
    return TensorType(src.dtype, decl.shape)


def _transpose(c: _Checker) -> TensorType:
    c.arity(1)
    src = c.ops[0]
    perm = c.int_list("dimensions")
    if sorted(perm) != list(range(len(src.shape))):
        raise c.fail("attr:dimensions", f"dimensions={{{', '.join(map(str, perm))}}} is not "
                     f"a permutation of 0..{len(src.shape) - 1} (the operand {src} has rank "
                     f"{len(src.shape)})")
    return TensorType(src.dtype, tuple(src.shape[p] for p in perm))


def _broadcast(c: _Checker) -> TensorType:
    c.arity(1)
    src, decl = c.ops[0], c.declared()
    dims = c.int_list("dimensions")
    if len(dims) != len(src.shape):
        raise c.fail("attr:dimensions", f"dimensions has {len(dims)} entries but the operand "
                     f"{src} has rank {len(src.shape)}: one result dimension per operand "
                     "dimension")
    c.dims_in_range("dimensions", dims, len(decl.shape), f"result {decl}")
    if dims != sorted(dims):
        raise c.fail("attr:dimensions", f"dimensions={{{', '.join(map(str, dims))}}} must be "
                     "increasing")
    for i, d in enumerate(dims):
        size = src.shape[i]
        if ex.compare(size, 1) is ex.Agreement.ALWAYS:
            continue  # a dimension of size 1 broadcasts to any size (XLA)
        if ex.compare(size, decl.shape[d]) is ex.Agreement.NEVER:
            raise c.fail("attr:dimensions", f"operand dimension {i} (size {size}) maps to "
                         f"result dimension {d} of size {decl.shape[d]}; sizes must match")
    return TensorType(src.dtype, decl.shape)


def _reduced(c: _Checker, src: TensorType) -> TensorType:
    dims = c.int_list("dimensions")
    c.dims_in_range("dimensions", dims, len(src.shape), f"operand {src}")
    kept = tuple(d for k, d in enumerate(src.shape) if k not in dims)
    return TensorType(src.dtype, kept)


def _reduce(c: _Checker) -> TensorType:
    if len(c.ops) > 2 and len(c.ops) % 2 == 0:
        raise c.fail(f"operand:{len(c.ops) - 1}", f"a variadic reduce of {len(c.ops) // 2} "
                     "tensors is not supported; reduce one operand with one init value")
    c.arity(2)
    init = c.ops[1]
    if init.shape:
        raise c.fail("operand:1", f"the init value (operand 1) must be a scalar, found {init}")
    c.same_dtype(0, 1)
    reducer = c.attr("to_apply", required=True)
    if not isinstance(reducer, str) or not reducer:
        raise c.fail("attr:to_apply", f"to_apply must name a computation, found {reducer!r}")
    return _reduced(c, c.ops[0])


def _reduce_add(c: _Checker) -> TensorType:
    c.arity(1)
    return _reduced(c, c.ops[0])


def _slice(c: _Checker) -> TensorType:
    c.arity(1)
    src = c.ops[0]
    ranges = c.attr("slice", required=True)
    if not isinstance(ranges, (list, tuple)) or len(ranges) != len(src.shape):
        count = len(ranges) if isinstance(ranges, (list, tuple)) else "no"
        raise c.fail("attr:slice", f"slice has {count} ranges but the operand {src} has rank "
                     f"{len(src.shape)}: give one [start:limit] per dimension")
    out = []
    for k, (bounds, size) in enumerate(zip(ranges, src.shape, strict=True)):
        start, limit, stride = bounds
        where = "attr:slice"
        if not isinstance(stride, int) or stride < 1:
            raise c.fail(where, f"slice dimension {k}: the stride must be a positive "
                         f"integer, found {stride}")
        if ex.always_positive(ex.sub(0, start)):
            raise c.fail(where, f"slice dimension {k}: start {start} is negative")
        if ex.always_positive(ex.sub(start, limit)):
            raise c.fail(where, f"slice dimension {k}: start {start} is past limit {limit}")
        if ex.always_positive(ex.sub(limit, size)):
            raise c.fail(where, f"slice dimension {k}: limit {limit} is past the operand's "
                         f"size {size}")
        extent = ex.sub(limit, start)
        out.append(extent if stride == 1 else ex.floordiv(ex.add(extent, stride - 1), stride))
    return TensorType(src.dtype, tuple(out))


def _concatenate(c: _Checker) -> TensorType:
    c.arity(None, at_least=1)
    dims = c.int_list("dimensions")
    if len(dims) != 1:
        raise c.fail("attr:dimensions", f"concatenate takes one dimension, found "
                     f"{len(dims)}")
    (dim,) = dims
    first = c.ops[0]
    c.dims_in_range("dimensions", dims, len(first.shape), f"operand {first}")
    for j in range(1, len(c.ops)):
        c.same_dtype(0, j)
        other = c.ops[j]
        if len(other.shape) != len(first.shape):
            raise c.fail(f"operand:{j}", f"operand {j} {other} has rank {len(other.shape)} "
                         f"but operand 0 {first} has rank {len(first.shape)}")
        for k, (a, b) in enumerate(zip(first.shape, other.shape, strict=True)):
            if k != dim and ex.compare(a, b) is ex.Agreement.NEVER:
                raise c.fail(f"operand:{j}", f"operand {j} {other} differs from operand 0 "
                             f"{first} in dimension {k}, which is not the concatenated one "
                             f"({dim})")
    size = ex.total(t.shape[dim] for t in c.ops)
    return TensorType(first.dtype, (*first.shape[:dim], size, *first.shape[dim + 1:]))


def _dot(c: _Checker) -> TensorType:
    c.arity(2)
    lhs, rhs = c.ops
    if (lhs.dtype in FLOAT_DTYPES) != (rhs.dtype in FLOAT_DTYPES):
        raise c.fail("operand:1", f"cannot multiply {lhs.dtype} by {rhs.dtype}: both operands "
                     "must be floating point or both integer")
    lc = c.int_list("lhs_contracting_dims", required=False)
    rc = c.int_list("rhs_contracting_dims", required=False)
    lb = c.int_list("lhs_batch_dims", required=False)
    rb = c.int_list("rhs_batch_dims", required=False)
    c.dims_in_range("lhs_contracting_dims", lc, len(lhs.shape), f"lhs {lhs}")
    c.dims_in_range("rhs_contracting_dims", rc, len(rhs.shape), f"rhs {rhs}")
    c.dims_in_range("lhs_batch_dims", lb, len(lhs.shape), f"lhs {lhs}")
    c.dims_in_range("rhs_batch_dims", rb, len(rhs.shape), f"rhs {rhs}")
    if len(lc) != len(rc):
        raise c.fail("attr:rhs_contracting_dims", f"{len(lc)} lhs contracting dimensions but "
                     f"{len(rc)} rhs contracting dimensions")
    if len(lb) != len(rb):
        raise c.fail("attr:rhs_batch_dims", f"{len(lb)} lhs batch dimensions but {len(rb)} "
                     "rhs batch dimensions")
    for side, batch, contracting in (("lhs", lb, lc), ("rhs", rb, rc)):
        both = set(batch) & set(contracting)
        if both:
            raise c.fail(f"attr:{side}_batch_dims", f"{side} dimension {min(both)} is both a "
                         "batch and a contracting dimension")
    for kind, ls, rs in (("contracting", lc, rc), ("batch", lb, rb)):
        for a, b in zip(ls, rs, strict=True):
            if ex.compare(lhs.shape[a], rhs.shape[b]) is ex.Agreement.NEVER:
                raise c.fail(f"attr:rhs_{kind}_dims", f"lhs {kind} dimension {a} has size "
                             f"{lhs.shape[a]} but rhs {kind} dimension {b} has size "
                             f"{rhs.shape[b]}", f"dot-{kind}-mismatch")
    batch = [lhs.shape[a] for a in lb]
    lfree = [d for k, d in enumerate(lhs.shape) if k not in lb and k not in lc]
    rfree = [d for k, d in enumerate(rhs.shape) if k not in rb and k not in rc]
    # The result element type is the declared one (XLA's preferred_element_type).
    return TensorType(c.declared().dtype, tuple(batch + lfree + rfree))


# XLA's convolution window fields, and the value of each where the window leaves it out.
WINDOW_DEFAULTS = {"size": None, "stride": 1, "pad": (0, 0), "lhs_dilate": 1, "rhs_dilate": 1,
                   "rhs_reversal": 0}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _conv_labels(c: _Checker, lhs: TensorType, rhs: TensorType) -> tuple[str, str, str]:
    """dim_labels: b and f (batch, feature) of the lhs and the result, i and o (input and
    output feature) of the rhs, and the spatial digits 0..n-1 of each, every one once."""
    labels = c.attr("dim_labels", required=True)
    if not (isinstance(labels, (list, tuple)) and len(labels) == 3
            and all(isinstance(part, str) for part in labels)):
        raise c.fail("attr:dim_labels", "dim_labels must be lhs_rhs->out labels such as "
                     f"b01f_01io->b01f, found {labels!r}")
    lhs_l, rhs_l, out_l = labels
    written = f"dim_labels={lhs_l}_{rhs_l}->{out_l}"
    if not len(lhs_l) == len(rhs_l) == len(out_l):
        raise c.fail("attr:dim_labels", f"{written}: the lhs, rhs and result labels must name "
                     f"as many dimensions each, found {len(lhs_l)}, {len(rhs_l)} and "
                     f"{len(out_l)}")
    n = len(lhs_l) - 2
    spatial = [str(d) for d in range(n)]
    for side, text, letters in (("lhs", lhs_l, "bf"), ("rhs", rhs_l, "io"),
                                ("result", out_l, "bf")):
        if sorted(text) != sorted([*letters, *spatial]):
            wanted = (f"{letters[0]}, {letters[1]} and the spatial dimensions "
                      f"{', '.join(spatial)}" if spatial else f"{letters[0]} and {letters[1]}")
            raise c.fail("attr:dim_labels", f"{written}: the {side} labels '{text}' must be "
                         f"{wanted}, each once")
    for side, text, operand in (("lhs", lhs_l, lhs), ("rhs", rhs_l, rhs)):
        if len(text) != len(operand.shape):
            raise c.fail("attr:dim_labels", f"{written}: the {side} labels '{text}' name "
                         f"{len(text)} dimensions but the {side} {operand} has rank "
                         f"{len(operand.shape)}")
    return lhs_l, rhs_l, out_l


def _conv_window(c: _Checker, n: int, rhs: TensorType, rhs_l: str) -> dict[str, list]:
    """The window with XLA's defaults filled in, one entry per spatial dimension, each size
    the kernel's."""
    if c.attr("window") is None and n:
        raise c.fail("opcode", f"a convolution with {n} spatial dimensions needs "
                     "window={size=...}", "bad-attribute")
    full = _window(c, n, "the convolution", "spatial dimension")
    for d, size in enumerate(full["size"]):
        kernel = rhs.shape[rhs_l.index(str(d))]
        if ex.compare(size, kernel) is ex.Agreement.NEVER:
            raise c.fail("attr:window", f"the window's size {size} for spatial dimension {d} "
                         f"differs from the rhs {rhs}, whose dimension {d} has size {kernel}")
    return full


def _window(c: _Checker, n: int, owner: str, what: str) -> dict[str, list]:
    """The ``window`` attribute over the ``n`` dimensions of ``owner`` (``what`` names them in
    messages) with XLA's defaults filled in: every field of ``n`` entries, the size given,
    sizes, strides and dilations positive, reversals 0 or 1."""
    window = c.attr("window", {})
    if not isinstance(window, dict) or not set(window) <= set(WINDOW_DEFAULTS):
        raise c.fail("attr:window", "window must be {size=.. stride=.. pad=.. lhs_dilate=.. "
                     f"rhs_dilate=.. rhs_reversal=..}}, found {window!r}")
    for key, values in window.items():
        pairs = key == "pad"
        if not isinstance(values, (list, tuple)) or not all(
                (isinstance(e, (list, tuple)) and len(e) == 2 and all(map(_is_int, e)))
                if pairs else _is_int(e) for e in values):
            raise c.fail("attr:window", f"the window's {key} must be "
                         f"{'low_high pairs' if pairs else 'integers'}, found {values!r}")
        if len(values) != n:
            raise c.fail("attr:window", f"the window's {key} has {len(values)} entries but "
                         f"{owner} has {n} {what}s")
    if n and "size" not in window:
        raise c.fail("attr:window", f"the window has no size; give size= with one entry for "
                     f"each of the {n} {what}s")
    for key, least in (("size", 1), ("stride", 1), ("lhs_dilate", 1), ("rhs_dilate", 1)):
        for d, value in enumerate(window.get(key, ())):
            if value < least:
                raise c.fail("attr:window", f"the window's {key} must be at least {least}, "
                             f"found {value} for {what} {d}")
    for d, value in enumerate(window.get("rhs_reversal", ())):
        if value not in (0, 1):
            raise c.fail("attr:window", f"the window's rhs_reversal must be 0 or 1, found "
                         f"{value} for {what} {d}")
    return {key: list(window.get(key, [default] * n)) for key, default in
            WINDOW_DEFAULTS.items()}


def _reduce_window(c: _Checker) -> TensorType:
    """XLA's reduce-window: each output element folds one window of the operand, so each
    dimension's size is the number of window positions over it (as a convolution's spatial
    ones)."""
    c.arity(2)
    operand, init = c.ops
    if init.shape:
        raise c.fail("operand:1", f"the init value (operand 1) must be a scalar, found {init}")
    c.same_dtype(0, 1)
    if c.attr("window") is None:
        raise c.fail("opcode", "needs the attribute window=", "missing-attribute")
    window = _window(c, len(operand.shape), "the operand", "dimension")
    if any(window["rhs_reversal"]):
        raise c.fail("attr:window", "a reduce-window's window is not reversed (rhs_reversal)")
    reducer = c.attr("to_apply", required=True)
    if not isinstance(reducer, str) or not reducer:
        raise c.fail("attr:to_apply", f"to_apply must name a computation, found {reducer!r}")
    return TensorType(operand.dtype, tuple(
        _conv_output_size(size, window["size"][d], window["stride"][d], window["pad"][d],
                          window["lhs_dilate"][d], window["rhs_dilate"][d])
        for d, size in enumerate(operand.shape)))


def _group_count(c: _Checker, name: str) -> int:
    count = c.attr(name, 1)
    if not _is_int(count) or count < 1:
        raise c.fail(f"attr:{name}", f"{name} must be a positive integer, found {count!r}")
    return count


def _convolution(c: _Checker) -> TensorType:
    """XLA's convolution: the rhs (kernel) slides over the lhs (input) as the window says.
    Feature groups split the lhs features and the rhs output features into as many groups,
    each output group computed from its input group; batch groups split the lhs batch so,
    each output feature group computed from its batch group (the result's batch shrinks)."""
    c.arity(2)
    lhs, rhs = c.ops
    if (lhs.dtype in FLOAT_DTYPES) != (rhs.dtype in FLOAT_DTYPES):
        raise c.fail("operand:1", f"cannot convolve {lhs.dtype} with {rhs.dtype}: both "
                     "operands must be floating point or both integer")
    lhs_l, rhs_l, out_l = _conv_labels(c, lhs, rhs)
    n = len(lhs_l) - 2
    window = _conv_window(c, n, rhs, rhs_l)
    groups = _group_count(c, "feature_group_count")
    batch_groups = _group_count(c, "batch_group_count")
    if groups > 1 and batch_groups > 1:
        raise c.fail("attr:batch_group_count", f"feature_group_count={groups} and "
                     f"batch_group_count={batch_groups}: at most one of them may exceed 1")

    def size(operand: TensorType, labels: str, label: str) -> Dim:
        return operand.shape[labels.index(label)]

    batch, features = size(lhs, lhs_l, "b"), size(lhs, lhs_l, "f")
    inputs, outputs = size(rhs, rhs_l, "i"), size(rhs, rhs_l, "o")
    if features != inputs * groups:
        grouped = f" times feature_group_count {groups}" if groups > 1 else ""
        raise c.fail("operand:1", f"the lhs {lhs} has {features} features but the rhs {rhs} "
                     f"takes {inputs} input features{grouped}")
    for name, count in (("feature_group_count", groups), ("batch_group_count", batch_groups)):
        if outputs % count:
            raise c.fail("operand:1", f"the rhs {rhs} has {outputs} output features, not a "
                         f"multiple of {name} {count}")
    if batch % batch_groups:
        raise c.fail("operand:0", f"the lhs {lhs} has batch {batch}, not a multiple of "
                     f"batch_group_count {batch_groups}")
    out: list[Dim] = []
    for label in out_l:
        if label == "b":
            out.append(batch // batch_groups)
        elif label == "f":
            out.append(outputs)
        else:
            d = int(label)
            out.append(_conv_output_size(
                size(lhs, lhs_l, label), window["size"][d], window["stride"][d],
                window["pad"][d], window["lhs_dilate"][d], window["rhs_dilate"][d]))
    # The result element type is the declared one (XLA's preferred_element_type).
    return TensorType(c.declared().dtype, tuple(out))


def _conv_output_size(size: int, kernel: int, stride: int, pad: Sequence[int],
                      lhs_dilate: int, rhs_dilate: int) -> int:
    """XLA's window arithmetic: the input dilated and padded, the kernel dilated, and the
    number of strided positions of the one inside the other (none when it does not fit).
    An empty dimension stays empty when dilated (XLA's DilatedBound)."""
    padded = (size - 1) * lhs_dilate + 1 + pad[0] + pad[1] if size else pad[0] + pad[1]
    extent = (kernel - 1) * rhs_dilate + 1
    return 0 if padded < extent else (padded - extent) // stride + 1


def _dynamic_update_slice(c: _Checker) -> TensorType:
    c.arity(None, at_least=2)
    operand, update = c.ops[0], c.ops[1]
    c.same_dtype(0, 1)
    if len(update.shape) != len(operand.shape):
        raise c.fail("operand:1", f"the update {update} must have the rank of the operand "
                     f"{operand} ({len(operand.shape)})")
    for k, (u, o) in enumerate(zip(update.shape, operand.shape, strict=True)):
        if ex.always_positive(ex.sub(u, o)):
            raise c.fail("operand:1", f"the update {update} is larger than the operand "
                         f"{operand} in dimension {k}")
    _start_indices(c, 2, len(operand.shape))
    return operand


def _dynamic_slice(c: _Checker) -> TensorType:
    c.arity(None, at_least=1)
    operand = c.ops[0]
    sizes = c.int_list("dynamic_slice_sizes")
    if len(sizes) != len(operand.shape):
        raise c.fail("attr:dynamic_slice_sizes", f"dynamic_slice_sizes has {len(sizes)} "
                     f"entries but the operand {operand} has rank {len(operand.shape)}")
    for k, (s, o) in enumerate(zip(sizes, operand.shape, strict=True)):
        if s < 0 or ex.always_positive(ex.sub(s, o)):
            raise c.fail("attr:dynamic_slice_sizes", f"size {s} of dimension {k} does not "
                         f"fit the operand {operand}")
    _start_indices(c, 1, len(operand.shape))
    return TensorType(operand.dtype, tuple(sizes))


def _start_indices(c: _Checker, first: int, rank: int) -> None:
    count = len(c.ops) - first
    if count != rank:
        where = f"operand:{len(c.ops) - 1}" if count > rank else "opcode"
        raise c.fail(where, f"takes {rank} start indices (one per operand dimension), found "
                     f"{count}", "operand-count")
    for j in range(first, len(c.ops)):
        c.scalar_int(j, f"start index {j - first}")


_RULES: dict[str, Callable[[_Checker], TensorType]] = {
    "parameter": _parameter,
    "constant": _constant,
    "iota": _iota,
    "compare": _compare,
    "select": _select,
    "clamp": _clamp,
    "is_finite": _classify,
    "reverse": _reverse,
    "pad": _pad,
    "convert": _convert,
    "bitcast_convert": _bitcast_convert,
    "reshape": _reshape,
    "transpose": _transpose,
    "broadcast": _broadcast,
    "reduce": _reduce,
    "reduce_add": _reduce_add,
    "reduce_window": _reduce_window,
    "slice": _slice,
    "concatenate": _concatenate,
    "dot": _dot,
    "convolution": _convolution,
    "dynamic_update_slice": _dynamic_update_slice,
    "dynamic_slice": _dynamic_slice,
}
for _op in UNARY:
    _RULES[_op] = _unary
for _op in BINARY:
    _RULES[_op] = _binary
for _op in SELECT_CMP:
    _RULES[_op] = _select_cmp

KNOWN_OPCODES = frozenset(_RULES)


def infer_type(instr: Instruction, operand_types: list[TensorType]) -> TensorType:
    """The type ``instr`` produces from operands of ``operand_types``.

    Raises ``HloTypeError`` for a wrong operand count, ill-formed or inconsistent attributes,
    operands that do not fit together, or a declared type that can never be the result. The
    returned type carries the inferred dimensions; where the operator's result shape is not a
    function of its operands (reshape, broadcast, constant, parameter, iota) it is the
    declared one, and the element type of convert, dot and convolution is the declared one.
    """
    rule = _RULES.get(instr.opcode)
    if rule is None:
        known = ", ".join(sorted(KNOWN_OPCODES))
        raise HloTypeError(f"{instr.opcode} '{instr.name}': unknown operator "
                           f"'{instr.opcode}' (known: {known})", "opcode", "unknown-operator")
    checker = _Checker(instr, operand_types)
    for i, t in enumerate(checker.ops):
        if not is_known(t.dtype):
            raise checker.fail(f"operand:{i}", f"operand {i} has unknown element type "
                               f"{t.dtype}")
    if not is_known(instr.type.dtype):
        raise checker.fail("type", f"unknown element type {instr.type.dtype}")
    return checker.check_declared(rule(checker))
