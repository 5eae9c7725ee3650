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
