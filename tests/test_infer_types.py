"""Type inference: what each operator produces, and the errors it raises and where."""

import pytest

from act_backend.hlo import expr as ex
from act_backend.hlo.infer import HloTypeError, infer_type
from act_backend.hlo.ir import Instruction, TensorType

N = ex.parse_expr("@c.n")


def T(dtype, *shape):
    return TensorType(dtype, tuple(shape))


def infer(opcode, declared, operands, **attrs):
    return infer_type(Instruction("x", opcode, declared, [], attrs), list(operands))


def refuse(opcode, declared, operands, **attrs):
    with pytest.raises(HloTypeError) as info:
        infer(opcode, declared, operands, **attrs)
    return info.value


DOT = {"lhs_contracting_dims": [1], "rhs_contracting_dims": [0]}


# -- what operators produce -------------------------------------------------------------------

@pytest.mark.parametrize("opcode, declared, operands, attrs, expected", [
    ("parameter", T("bf16", 64, 64), [], {"index": 0}, T("bf16", 64, 64)),
    ("constant", T("f32", 2, 2), [], {"value": [[1, 2], [3, 4]]}, T("f32", 2, 2)),
    ("constant", T("bf16"), [], {"value": 0}, T("bf16")),
    ("copy", T("bf16", N, 64), [T("bf16", N, 64)], {}, T("bf16", N, 64)),
    ("exponential", T("bf16", 4), [T("bf16", 4)], {}, T("bf16", 4)),
    ("negate", T("s32", 4), [T("s32", 4)], {}, T("s32", 4)),
    ("add", T("f32", 4, 8), [T("f32", 4, 8), T("f32", 4, 8)], {}, T("f32", 4, 8)),
    ("xor", T("u8", 4), [T("u8", 4), T("u8", 4)], {}, T("u8", 4)),
    ("convert", T("f32", N, 64), [T("bf16", N, 64)], {}, T("f32", N, 64)),
    ("bitcast_convert", T("bf16", N, 64), [T("u8", N, 64, 2)], {}, T("bf16", N, 64)),
    ("bitcast_convert", T("u8", N, 64, 2), [T("bf16", N, 64)], {}, T("u8", N, 64, 2)),
    ("bitcast_convert", T("s32", 8), [T("f32", 8)], {}, T("s32", 8)),
    ("reshape", T("u8", N, 64, 2), [T("u8", ex.parse_expr("@c.n * 128"))], {},
     T("u8", N, 64, 2)),
    ("transpose", T("bf16", 64, N), [T("bf16", N, 64)], {"dimensions": [1, 0]},
     T("bf16", 64, N)),
    ("broadcast", T("bf16", N, 64), [T("bf16", N)], {"dimensions": [0]}, T("bf16", N, 64)),
    ("broadcast", T("f32", 3, 5), [T("f32", 1)], {"dimensions": [1]}, T("f32", 3, 5)),
    ("reduce_add", T("bf16", N), [T("bf16", N, 64)], {"dimensions": [1]}, T("bf16", N)),
    ("reduce", T("bf16", 64), [T("bf16", 64, 64), T("bf16")],
     {"dimensions": [1], "to_apply": "add_bf16"}, T("bf16", 64)),
    ("slice", T("bf16", 32, 16), [T("bf16", 64, 64)],
     {"slice": [(0, 64, 2), (16, 32, 1)]}, T("bf16", 32, 16)),
    ("slice", T("bf16", 21), [T("bf16", 64)], {"slice": [(1, 64, 3)]}, T("bf16", 21)),
    ("concatenate", T("bf16", N, 128), [T("bf16", N, 64), T("bf16", N, 64)],
     {"dimensions": [1]}, T("bf16", N, 128)),
    ("dot", T("bf16", 64, 32), [T("bf16", 64, 16), T("bf16", 16, 32)], DOT,
     T("bf16", 64, 32)),
    ("dot", T("f32", 8, 4, 5), [T("bf16", 8, 4, 3), T("bf16", 8, 3, 5)],
     {"lhs_batch_dims": [0], "rhs_batch_dims": [0], "lhs_contracting_dims": [2],
      "rhs_contracting_dims": [1]}, T("f32", 8, 4, 5)),
    ("select_lt", T("f32", 4), [T("s32", 4), T("s32", 4), T("f32", 4), T("f32", 4)], {},
     T("f32", 4)),
    ("select", T("f32", 4), [T("pred", 4), T("f32", 4), T("f32", 4)], {}, T("f32", 4)),
    ("compare", T("pred", 4), [T("f32", 4), T("f32", 4)], {"direction": "LT"}, T("pred", 4)),
    ("dynamic_update_slice", T("f32", 8, 8), [T("f32", 8, 8), T("f32", 2, 8), T("s32"),
                                              T("s32")], {}, T("f32", 8, 8)),
    ("iota", T("s32", 4, 3), [], {"iota_dimension": 1}, T("s32", 4, 3)),
])
def test_infers_the_result_type(opcode, declared, operands, attrs, expected):
    assert infer(opcode, declared, operands, **attrs) == expected


def test_symbolic_declared_type_that_agrees_for_some_value_is_accepted():
    # bf16[64] is what the dot produces when n = 64: not an error.
    assert infer("copy", T("bf16", 64), [T("bf16", N)]) == T("bf16", N)


# -- what operators refuse --------------------------------------------------------------------

@pytest.mark.parametrize("opcode, declared, operands, attrs, where, words", [
    ("copy", T("bf16", 4), [], {}, "opcode", "takes 1 operand, found 0"),
    ("add", T("f32", 4), [T("f32", 4)] * 3, {}, "operand:2", "takes 2 operands, found 3"),
    ("add", T("f32", 4), [T("f32", 4), T("bf16", 4)], {}, "operand:1", "element type bf16"),
    ("add", T("f32", 4), [T("f32", 4), T("f32", 5)], {}, "operand:1", "dimension 0 differs"),
    ("add", T("f32", 4), [T("f32", 4), T("f32", 4, 1)], {}, "operand:1", "rank 2"),
    ("add", T("f32", 5), [T("f32", 4), T("f32", 4)], {}, "type", "dimension 0 is 5"),
    ("add", T("bf16", 4), [T("f32", 4), T("f32", 4)], {}, "type",
     "declared element type bf16"),
    ("exponential", T("s32", 4), [T("s32", 4)], {}, "operand:0", "exponential needs one of"),
    ("xor", T("f32", 4), [T("f32", 4), T("f32", 4)], {}, "operand:0", "xor needs one of"),
    ("dot", T("bf16", 64, 64), [T("bf16", 64, 32), T("bf16", 31, 64)], DOT,
     "attr:rhs_contracting_dims", "size 32 but rhs contracting dimension 0 has size 31"),
    ("dot", T("bf16", 64, 64), [T("bf16", 64, 32), T("bf16", 32, 64)],
     {"lhs_contracting_dims": [1], "rhs_contracting_dims": []},
     "attr:rhs_contracting_dims", "1 lhs contracting dimensions but 0"),
    ("dot", T("bf16", 64, 64), [T("bf16", 64, 32), T("bf16", 32, 64)],
     {"lhs_contracting_dims": [2], "rhs_contracting_dims": [0]},
     "attr:lhs_contracting_dims", "not a dimension of the lhs"),
    ("dot", T("bf16", 64, 32), [T("bf16", 64, 32), T("bf16", 32, 64)], DOT, "type",
     "dimension 1 is 32, expected 64"),
    ("dot", T("f32", 4, 4), [T("f32", 4, 4), T("s8", 4, 4)], DOT, "operand:1",
     "both operands must be floating point"),
    ("transpose", T("bf16", 4, 4), [T("bf16", 4, 4)], {"dimensions": [0, 0]},
     "attr:dimensions", "not a permutation of 0..1"),
    ("transpose", T("bf16", 4, 4), [T("bf16", 4, 4)], {"dimensions": [1, 0, 2]},
     "attr:dimensions", "not a permutation"),
    ("transpose", T("bf16", 4, 4), [T("bf16", 4, 4)], {}, "opcode", "needs the attribute"),
    ("broadcast", T("bf16", 4, 8), [T("bf16", 4)], {"dimensions": [0, 1]}, "attr:dimensions",
     "2 entries but the operand bf16[4] has rank 1"),
    ("broadcast", T("bf16", 4, 8), [T("bf16", 4)], {"dimensions": [2]}, "attr:dimensions",
     "not a dimension of the result"),
    ("broadcast", T("bf16", 4, 8), [T("bf16", 4)], {"dimensions": [1]}, "attr:dimensions",
     "size 4) maps to result dimension 1 of size 8"),
    ("broadcast", T("bf16", 4, 4), [T("bf16", 4, 4)], {"dimensions": [1, 0]},
     "attr:dimensions", "must be increasing"),
    ("reduce_add", T("bf16", 4), [T("bf16", 4, 4)], {"dimensions": [2]}, "attr:dimensions",
     "not a dimension of the operand"),
    ("reduce_add", T("bf16"), [T("bf16", 4, 4)], {"dimensions": [1, 1]}, "attr:dimensions",
     "names a dimension twice"),
    ("reduce_add", T("bf16", 4, 4), [T("bf16", 4, 4)], {"dimensions": [1]}, "type",
     "rank 2"),
    ("reduce", T("bf16", 4), [T("bf16", 4, 4), T("bf16", 1)],
     {"dimensions": [1], "to_apply": "add"}, "operand:1", "must be a scalar"),
    ("reduce", T("bf16", 4), [T("bf16", 4, 4), T("bf16")], {"dimensions": [1]}, "opcode",
     "needs the attribute to_apply="),
    ("reshape", T("u8", 4, 4), [T("u8", 15)], {}, "type", "cannot change the element count"),
    ("reshape", T("u8", N, 64, 2), [T("u8", ex.parse_expr("@c.n * 127"))], {}, "type",
     "127 * @c.n elements"),
    ("slice", T("bf16", 8), [T("bf16", 8, 8)], {"slice": [(0, 8, 1)]}, "attr:slice",
     "1 ranges but the operand bf16[8,8] has rank 2"),
    ("slice", T("bf16", 8), [T("bf16", 8)], {"slice": [(0, 9, 1)]}, "attr:slice",
     "limit 9 is past the operand's size 8"),
    ("slice", T("bf16", 0), [T("bf16", 8)], {"slice": [(5, 4, 1)]}, "attr:slice",
     "start 5 is past limit 4"),
    ("slice", T("bf16", 8), [T("bf16", 8)], {"slice": [(0, 8, 0)]}, "attr:slice",
     "stride must be a positive integer"),
    ("concatenate", T("bf16", 4, 8), [T("bf16", 4, 4), T("bf16", 3, 4)],
     {"dimensions": [1]}, "operand:1", "in dimension 0"),
    ("concatenate", T("bf16", 4, 8), [T("bf16", 4, 4), T("bf16", 4, 4)],
     {"dimensions": [1, 0]}, "attr:dimensions", "takes one dimension"),
    ("bitcast_convert", T("bf16", 4), [T("u8", 4, 3)], {}, "operand:0",
     "needs a last dimension of 2"),
    ("bitcast_convert", T("u8", 4, 2), [T("f32", 4)], {}, "type",
     "dimension 1 is 2, expected 4"),
    ("select_lt", T("f32", 4), [T("s32", 4), T("s32", 4), T("f32", 4), T("f32", 5)], {},
     "operand:3", "dimension 0 differs"),
    ("select", T("f32", 4), [T("s32", 4), T("f32", 4), T("f32", 4)], {}, "operand:0",
     "element type pred"),
    ("compare", T("pred", 4), [T("f32", 4), T("f32", 4)], {"direction": "LESS"},
     "attr:direction", "one of EQ, NE"),
    ("dynamic_update_slice", T("f32", 8), [T("f32", 8), T("f32", 9), T("s32")], {},
     "operand:1", "larger than the operand"),
    ("dynamic_update_slice", T("f32", 8), [T("f32", 8), T("f32", 2), T("f32")], {},
     "operand:2", "must be an integer scalar"),
    ("dynamic_update_slice", T("f32", 8), [T("f32", 8), T("f32", 2)], {}, "opcode",
     "takes 1 start indices"),
    ("constant", T("f32", 2, 2), [], {"value": [1, 2]}, "attr:value", "literal has shape [2]"),
    ("constant", T("f32", 2), [], {"value": [[1], [2, 3]]}, "attr:value", "ragged"),
    ("parameter", T("f32", 2), [], {"index": -1}, "attr:index", "non-negative integer"),
    ("frobnicate", T("f32", 2), [], {}, "opcode", "unknown operator 'frobnicate'"),
])
def test_refuses_with_a_message_and_a_place(opcode, declared, operands, attrs, where, words):
    error = refuse(opcode, declared, operands, **attrs)
    assert error.where == where
    assert words in error.message
    assert error.message.startswith(f"{opcode} 'x': ")


def test_symbolic_mismatch_that_can_never_agree_is_refused():
    error = refuse("reshape", T("u8", N, 64, 2), [T("u8", ex.parse_expr("@c.n * 128 + 1"))])
    assert error.where == "type"


def test_symbolic_slice_limit_past_the_operand_is_refused_only_when_always():
    assert infer("slice", T("bf16", N), [T("bf16", 64)], slice=[(0, N, 1)]) == T("bf16", N)
    error = refuse("slice", T("bf16", 64), [T("bf16", 64)],
                   slice=[(0, ex.parse_expr("@c.n + 64"), 1)])
    assert "past the operand's size 64" in error.message


def test_dimensions_that_cannot_agree_together_are_refused():
    # [n, n] declared as [64, 32]: each dimension agrees for some n, never both at once.
    error = refuse("copy", T("bf16", 64, 32), [T("bf16", N, N)])
    assert error.where == "type" and "dimension 1 is 32, expected @c.n" in error.message


# -- convolution ------------------------------------------------------------------------------

NHWC = ("b01f", "01io", "b01f")
NCHW = ("bf01", "oi01", "bf01")


def conv(declared, lhs, rhs, labels=NHWC, **attrs):
    return infer("convolution", declared, [lhs, rhs], dim_labels=labels, **attrs)


@pytest.mark.parametrize("lhs, rhs, labels, attrs, expected", [
    # NHWC input, HWIO kernel, SAME padding: the spatial sizes stay.
    (T("s8", 2, 8, 8, 4), T("s8", 3, 3, 4, 6), NHWC,
     {"window": {"size": [3, 3], "pad": [[1, 1], [1, 1]]}}, T("s32", 2, 8, 8, 6)),
    # NCHW input, OIHW kernel, VALID with stride 2: (9 - 3) // 2 + 1 positions.
    (T("f32", 2, 4, 9, 9), T("f32", 6, 4, 3, 3), NCHW,
     {"window": {"size": [3, 3], "stride": [2, 2]}}, T("f32", 2, 6, 4, 4)),
    # Padding and stride per dimension: (8 + 1 + 1 - 3) // 2 + 1 and (8 + 0 + 2 - 3) + 1.
    (T("f32", 2, 8, 8, 4), T("f32", 3, 3, 4, 6), NHWC,
     {"window": {"size": [3, 3], "stride": [2, 1], "pad": [[1, 1], [0, 2]]}},
     T("f32", 2, 4, 8, 6)),
    # A negative pad cuts: 8 - 1 - 2 = 5 input positions.
    (T("f32", 2, 8, 8, 4), T("f32", 3, 3, 4, 6), NHWC,
     {"window": {"size": [3, 3], "pad": [[-1, -2], [0, 0]]}}, T("f32", 2, 3, 6, 6)),
    # lhs_dilate spreads the input to (5 - 1) * 2 + 1 = 9; rhs_dilate the kernel to 5.
    (T("f32", 1, 5, 9, 2), T("f32", 3, 3, 2, 2), NHWC,
     {"window": {"size": [3, 3], "lhs_dilate": [2, 1], "rhs_dilate": [1, 2]}},
     T("f32", 1, 7, 5, 2)),
    # A window larger than the padded input fits nowhere: an empty dimension.
    (T("f32", 1, 2, 8, 2), T("f32", 3, 3, 2, 2), NHWC, {"window": {"size": [3, 3]}},
     T("f32", 1, 0, 6, 2)),
    # Reversing the kernel changes no size.
    (T("f32", 1, 8, 8, 2), T("f32", 3, 3, 2, 2), NHWC,
     {"window": {"size": [3, 3], "rhs_reversal": [1, 0]}}, T("f32", 1, 6, 6, 2)),
    # Two feature groups: 4 input features are two groups of the kernel's 2.
    (T("f32", 2, 4, 8, 8), T("f32", 6, 2, 3, 3), NCHW,
     {"window": {"size": [3, 3]}, "feature_group_count": 2}, T("f32", 2, 6, 6, 6)),
    # Two batch groups: the result's batch is halved.
    (T("f32", 4, 4, 8, 8), T("f32", 6, 4, 3, 3), NCHW,
     {"window": {"size": [3, 3]}, "batch_group_count": 2}, T("f32", 2, 6, 6, 6)),
    # One spatial dimension, and a result laid out in another order than the input.
    (T("f32", 3, 10, 4), T("f32", 3, 4, 5), ("b0f", "0io", "fb0"),
     {"window": {"size": [3]}}, T("f32", 5, 3, 8)),
    # No spatial dimension: a matrix product, with no window or an empty one.
    (T("f32", 4, 8), T("f32", 8, 6), ("bf", "io", "bf"), {}, T("f32", 4, 6)),
    (T("f32", 4, 8), T("f32", 8, 6), ("bf", "io", "bf"), {"window": {}}, T("f32", 4, 6)),
])
def test_a_convolution_produces_xlas_window_arithmetic(lhs, rhs, labels, attrs, expected):
    assert conv(expected, lhs, rhs, labels, **attrs) == expected


LHS, RHS, WINDOW = T("f32", 2, 8, 8, 4), T("f32", 3, 3, 4, 6), {"size": [3, 3]}
OUT = T("f32", 2, 6, 6, 6)


@pytest.mark.parametrize("operands, attrs, where, code, words", [
    ([LHS], {"dim_labels": NHWC, "window": WINDOW}, "opcode", "operand-count",
     "takes 2 operands, found 1"),
    ([LHS, T("s8", 3, 3, 4, 6)], {"dim_labels": NHWC, "window": WINDOW}, "operand:1",
     "operand-type-mismatch", "both operands must be floating point or both integer"),
    ([LHS, RHS], {"window": WINDOW}, "opcode", "missing-attribute",
     "needs the attribute dim_labels="),
    ([LHS, RHS], {"dim_labels": ("b01f", "01io", "b01"), "window": WINDOW},
     "attr:dim_labels", "bad-attribute", "as many dimensions each, found 4, 4 and 3"),
    ([LHS, RHS], {"dim_labels": ("bx1f", "01io", "b01f"), "window": WINDOW},
     "attr:dim_labels", "bad-attribute", "the lhs labels 'bx1f' must be b, f and the spatial "
     "dimensions 0, 1, each once"),
    ([LHS, RHS], {"dim_labels": ("b01f", "00io", "b01f"), "window": WINDOW},
     "attr:dim_labels", "bad-attribute", "the rhs labels '00io' must be i, o"),
    ([LHS, RHS], {"dim_labels": ("b01f", "01io", "b01b"), "window": WINDOW},
     "attr:dim_labels", "bad-attribute", "the result labels 'b01b' must be b, f"),
    ([T("f32", 2, 8, 4), RHS], {"dim_labels": NHWC, "window": WINDOW}, "attr:dim_labels",
     "bad-attribute", "the lhs labels 'b01f' name 4 dimensions but the lhs f32[2,8,4] has "
     "rank 3"),
    ([LHS, T("f32", 3, 4, 6)], {"dim_labels": NHWC, "window": WINDOW}, "attr:dim_labels",
     "bad-attribute", "the rhs labels '01io' name 4 dimensions"),
    ([LHS, RHS], {"dim_labels": NHWC}, "opcode", "bad-attribute",
     "a convolution with 2 spatial dimensions needs window={size=...}"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"size": [3, 3], "stride": [1]}},
     "attr:window", "bad-attribute", "stride has 1 entries but the convolution has 2 spatial"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"stride": [1, 1]}}, "attr:window",
     "bad-attribute", "the window has no size"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"size": [3, 0]}}, "attr:window",
     "bad-attribute", "size must be at least 1, found 0 for spatial dimension 1"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"size": [3, 3], "stride": [0, 1]}},
     "attr:window", "bad-attribute", "stride must be at least 1, found 0"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"size": [3, 3], "lhs_dilate": [1, -1]}},
     "attr:window", "bad-attribute", "lhs_dilate must be at least 1, found -1"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"size": [3, 3], "rhs_dilate": [0, 1]}},
     "attr:window", "bad-attribute", "rhs_dilate must be at least 1, found 0"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"size": [3, 3], "rhs_reversal": [0, 2]}},
     "attr:window", "bad-attribute", "rhs_reversal must be 0 or 1, found 2"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": {"size": [3, 2]}}, "attr:window",
     "bad-attribute", "size 2 for spatial dimension 1 differs from the rhs f32[3,3,4,6], "
     "whose dimension 1 has size 3"),
    ([T("f32", 4, 8), T("f32", 8, 6)], {"dim_labels": ("bf", "io", "bf"),
                                        "window": {"size": [3]}},
     "attr:window", "bad-attribute", "size has 1 entries but the convolution has 0 spatial"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": WINDOW, "feature_group_count": 0},
     "attr:feature_group_count", "bad-attribute", "must be a positive integer, found 0"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": WINDOW, "batch_group_count": -2},
     "attr:batch_group_count", "bad-attribute", "must be a positive integer, found -2"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": WINDOW, "feature_group_count": 2,
                  "batch_group_count": 2},
     "attr:batch_group_count", "bad-attribute", "at most one of them may exceed 1"),
    ([LHS, T("f32", 3, 3, 3, 6)], {"dim_labels": NHWC, "window": WINDOW}, "operand:1",
     "operand-type-mismatch", "has 4 features but the rhs f32[3,3,3,6] takes 3 input "
     "features"),
    ([LHS, RHS], {"dim_labels": NHWC, "window": WINDOW, "feature_group_count": 2},
     "operand:1", "operand-type-mismatch", "takes 4 input features times "
     "feature_group_count 2"),
    ([LHS, T("f32", 3, 3, 2, 5)], {"dim_labels": NHWC, "window": WINDOW,
                                   "feature_group_count": 2},
     "operand:1", "operand-type-mismatch", "5 output features, not a multiple of "
     "feature_group_count 2"),
    ([LHS, T("f32", 3, 3, 4, 9)], {"dim_labels": NHWC, "window": WINDOW,
                                   "batch_group_count": 2},
     "operand:1", "operand-type-mismatch", "9 output features, not a multiple of "
     "batch_group_count 2"),
    ([T("f32", 3, 8, 8, 4), RHS], {"dim_labels": NHWC, "window": WINDOW,
                                   "batch_group_count": 2},
     "operand:0", "operand-type-mismatch", "has batch 3, not a multiple of "
     "batch_group_count 2"),
])
def test_a_convolution_refuses_with_a_code_and_a_place(operands, attrs, where, code, words):
    error = refuse("convolution", OUT, operands, **attrs)
    assert (error.where, error.code) == (where, code)
    assert words in error.message
    assert error.message.startswith("convolution 'x': ")


def test_a_convolution_result_is_the_declared_element_type_and_xlas_shape():
    # s8 operands may produce s32 (XLA's preferred element type), but not another shape.
    error = refuse("convolution", T("s32", 2, 8, 8, 6), [T("s8", 2, 8, 8, 4),
                   T("s8", 3, 3, 4, 6)], dim_labels=NHWC, window={"size": [3, 3]})
    assert (error.where, error.code) == ("type", "declared-type-mismatch")
    assert "declared shape [2, 8, 8, 6] but the operator produces [2, 6, 6, 6]" in error.message
