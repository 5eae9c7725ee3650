"""The oracle runtime lowers every semantics operator of the ISA table to what HLO means.

Each case builds a one-instruction semantics program, lowers it with the runtime, runs it
under jax.jit and compares the result with NumPy. Elementwise bf16 arithmetic is compared bit
for bit with an f32 computation rounded once to bf16, which is what XLA does. Operators that
only move values keep every bit pattern of bf16, f16 and f32 (NaN payloads included).
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest
from helpers.bit_patterns import bits_of, every_pattern

from act_backend.oracle.runtime.bits import from_bits, to_bits
from act_backend.oracle.runtime.semantics import lower
from act_backend.oracle.runtime.table import Instruction, OracleError, SliceSpec

BF16 = ml_dtypes.bfloat16
_NAMES = {np.dtype(np.float32): "f32", np.dtype(BF16): "bf16", np.dtype(np.int32): "s32",
          np.dtype(np.uint8): "u8", np.dtype(np.int8): "s8", np.dtype(np.uint32): "u32",
          np.dtype(np.float16): "f16", np.dtype(np.uint16): "u16", np.dtype(np.int16): "s16"}
_DTYPES = {name: dtype for dtype, name in _NAMES.items()}


def _int(v):
    return {"int": v}


def op(name, opcode, dtype, shape, operands, root=False, **attrs):
    return {"name": name, "op": opcode, "dtype": dtype, "shape": [_int(d) for d in shape],
            "operands": list(operands), "attrs": attrs, "root": root}


def program(ops, inputs):
    """An instruction whose parameters p0, p1, ... take ``inputs``; ``ops`` follow them."""
    params = [op(f"p{i}", "parameter", _NAMES[np.dtype(x.dtype)], x.shape, [], index=i)
              for i, x in enumerate(inputs)]
    hbm_slice = SliceSpec("d0", (_int(0),), (_int(1),))
    return Instruction("probe", (), (), tuple(hbm_slice for _ in inputs), (hbm_slice,),
                       tuple(params + list(ops)))


def run(ops, *inputs):
    lowered = lower(program(ops, inputs), {})
    return np.asarray(jax.jit(lowered.fn)([np.asarray(x) for x in inputs]))


def run_on_bits(ops, *inputs):
    """What ``run`` computes, but as the runtime runs an instruction: its inputs read from, and
    its result written to, a state that holds floating values as their bits; the result's bits.
    (Given bf16 parameters and results, XLA folds the operators' own bitcasts away and may move
    the values through f32 after all: a broadcast then quiets signalling NaNs.)"""
    lowered = lower(program(ops, inputs), {})
    types = [np.dtype(x.dtype) for x in inputs]

    def on_bits(held):
        return to_bits(lowered.fn([from_bits(h, t) for h, t in zip(held, types, strict=True)]))

    return np.asarray(jax.jit(on_bits)([bits_of(np.asarray(x)) for x in inputs]))


def rng_array(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Data movement


def test_reshape_is_row_major():
    x = rng_array((4, 6))
    got = run([op("r", "reshape", "f32", (2, 3, 4), ["p0"])], x)
    np.testing.assert_array_equal(got, x.reshape(2, 3, 4))


def test_bitcast_convert_of_equal_widths_keeps_the_shape():
    x = rng_array((3, 5))
    got = run([op("r", "bitcast_convert", "s32", (3, 5), ["p0"])], x)
    np.testing.assert_array_equal(got, x.view(np.int32))


def test_bitcast_convert_to_a_narrower_type_appends_the_ratio_as_a_dim():
    x = rng_array((3, 5))
    got = run([op("r", "bitcast_convert", "u8", (3, 5, 4), ["p0"])], x)
    np.testing.assert_array_equal(got, x.view(np.uint8).reshape(3, 5, 4))


def test_bitcast_convert_to_a_wider_type_consumes_the_last_dim_little_endian():
    x = np.arange(2 * 3 * 2, dtype=np.uint8).reshape(2, 3, 2)
    got = run([op("r", "bitcast_convert", "bf16", (2, 3), ["p0"])], x)
    expected = (x[..., 0].astype(np.uint16) | (x[..., 1].astype(np.uint16) << 8)).view(BF16)
    np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16))


# source type and shape, target type and shape: every change of width the oracle's types allow
BITCASTS = [
    ("u8", (6, 2), "bf16", (6,)),
    ("u8", (6, 2), "f16", (6,)),
    ("u8", (2, 3, 4), "f32", (2, 3)),
    ("s8", (5, 4), "s32", (5,)),
    ("u8", (5, 2), "s16", (5,)),
    ("bf16", (3, 2), "u32", (3,)),
    ("u16", (4, 2), "f32", (4,)),
    ("bf16", (6,), "u8", (6, 2)),
    ("f16", (6,), "s8", (6, 2)),
    ("f32", (2, 3), "u8", (2, 3, 4)),
    ("s32", (5,), "s8", (5, 4)),
    ("u32", (3,), "bf16", (3, 2)),
    ("f32", (4,), "u16", (4, 2)),
]


@pytest.mark.parametrize("source, shape, target, result", BITCASTS)
def test_bitcast_convert_across_widths_gives_xlas_bits(source, shape, target, result):
    # Any bit pattern, NaN payloads and infinities included, comes out as XLA's own op lays it.
    width = _DTYPES[source].itemsize
    raw = np.random.default_rng(3).integers(0, 256, (*shape, width), dtype=np.uint8)
    raw.reshape(-1, width)[0] = 0xFF  # all ones: a NaN with a full payload in a float type
    x = raw.view(_DTYPES[source]).reshape(shape)
    got = run([op("r", "bitcast_convert", target, result, ["p0"])], x)
    expected = np.asarray(jax.jit(lambda v: jax.lax.bitcast_convert_type(v, _DTYPES[target]))(x))
    assert got.dtype == expected.dtype and got.shape == expected.shape == result
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_bitcast_convert_to_a_wider_type_needs_the_ratio_as_last_dim():
    x = np.zeros((4, 3), np.uint8)
    with pytest.raises(OracleError, match=r"needs a last dim of 2"):
        run([op("r", "bitcast_convert", "bf16", (4,), ["p0"])], x)


def test_convert_rounds_f32_to_bf16_to_nearest_even_and_truncates_to_int():
    x = rng_array((4, 4)) * 10
    got = run([op("r", "convert", "bf16", (4, 4), ["p0"])], x)
    np.testing.assert_array_equal(got.view(np.uint16), x.astype(BF16).view(np.uint16))
    got = run([op("r", "convert", "s32", (4, 4), ["p0"])], x)
    np.testing.assert_array_equal(got, np.trunc(x).astype(np.int32))


def test_copy_is_the_identity():
    x = rng_array((2, 7), BF16)
    got = run([op("r", "copy", "bf16", (2, 7), ["p0"])], x)
    np.testing.assert_array_equal(got.view(np.uint16), x.view(np.uint16))


def test_transpose_result_dim_i_is_operand_dim_permutation_i():
    x = rng_array((2, 3, 4))
    got = run([op("r", "transpose", "f32", (4, 2, 3), ["p0"], dimensions=[2, 0, 1])], x)
    np.testing.assert_array_equal(got, np.transpose(x, (2, 0, 1)))


def test_slice_honours_start_limit_and_stride_per_dim():
    x = rng_array((8, 9))
    bounds = [[_int(1), _int(7), _int(2)], [_int(0), _int(9), _int(4)]]
    got = run([op("r", "slice", "f32", (3, 3), ["p0"], slice=bounds)], x)
    np.testing.assert_array_equal(got, x[1:7:2, 0:9:4])


def test_slice_without_a_stride_takes_every_element():
    x = rng_array((5, 4))
    bounds = [[_int(2), _int(5)], [_int(1), _int(3)]]
    got = run([op("r", "slice", "f32", (3, 2), ["p0"], slice=bounds)], x)
    np.testing.assert_array_equal(got, x[2:5, 1:3])


def test_concatenate_joins_along_its_dimension():
    a, b, c = rng_array((3, 2), seed=1), rng_array((3, 4), seed=2), rng_array((3, 1), seed=3)
    got = run([op("r", "concatenate", "f32", (3, 7), ["p0", "p1", "p2"], dimensions=[1])],
              a, b, c)
    np.testing.assert_array_equal(got, np.concatenate([a, b, c], axis=1))


def test_dynamic_update_slice_writes_the_update_at_the_indices():
    x = rng_array((6, 5))
    u = rng_array((2, 3), seed=1)
    i, j = np.int32(3), np.int32(1)
    got = run([op("r", "dynamic_update_slice", "f32", (6, 5), ["p0", "p1", "p2", "p3"])],
              x, u, i, j)
    expected = x.copy()
    expected[3:5, 1:4] = u
    np.testing.assert_array_equal(got, expected)


def test_dynamic_update_slice_clamps_indices_as_hlo_does():
    x = np.zeros((4, 4), np.float32)
    u = np.ones((2, 2), np.float32)
    got = run([op("r", "dynamic_update_slice", "f32", (4, 4), ["p0", "p1", "p2", "p3"])],
              x, u, np.int32(3), np.int32(-1))
    expected = x.copy()
    expected[2:4, 0:2] = 1  # row index 3 clamps to 2 (the update must fit), -1 clamps to 0
    np.testing.assert_array_equal(got, expected)


def _select_on_s32(x):
    # which of two values each element takes is decided by s32 operands, not by x itself
    a = np.arange(x.size, dtype=np.int32).reshape(x.shape) % 3
    return ([op("r", "select_lt", "T", x.shape, ["p1", "p2", "p0", "p3"])],
            [x, a, np.ones_like(a), x[::-1].copy()],
            np.where(a < 1, bits_of(x), bits_of(x[::-1])))


# how each operator that moves values is called on x (ops, inputs), and the bits it gives;
# "T" stands for x's element type
MOVES = [
    ("reshape", lambda x: ([op("r", "reshape", "T", (6, 8), ["p0"])], [x],
                           bits_of(x).reshape(6, 8))),
    ("copy", lambda x: ([op("r", "copy", "T", x.shape, ["p0"])], [x], bits_of(x))),
    ("transpose", lambda x: ([op("r", "transpose", "T", (12, 4), ["p0"], dimensions=[1, 0])],
                             [x], bits_of(x).T)),
    ("slice", lambda x: ([op("r", "slice", "T", (2, 6), ["p0"],
                             slice=[[_int(1), _int(4), _int(2)], [_int(0), _int(12), _int(2)]])],
                         [x], bits_of(x)[1:4:2, ::2])),
    ("broadcast", lambda x: ([op("r", "broadcast", "T", (4, 3, 12), ["p0"], dimensions=[0, 2])],
                             [x], np.repeat(bits_of(x)[:, None, :], 3, axis=1))),
    ("concatenate", lambda x: ([op("r", "concatenate", "T", (4, 24), ["p0", "p1"],
                                   dimensions=[1])], [x, x[::-1].copy()],
                               np.concatenate([bits_of(x), bits_of(x[::-1])], axis=1))),
    ("select_lt", _select_on_s32),
    ("dynamic_update_slice", lambda x: (
        [op("r", "dynamic_update_slice", "T", (4, 12), ["p0", "p1", "p2", "p3"])],
        [x, x[:2, :5][::-1].copy(), np.int32(1), np.int32(6)],
        np.concatenate([bits_of(x)[:1], np.concatenate(
            [bits_of(x)[1:3, :6], bits_of(x)[:2, :5][::-1], bits_of(x)[1:3, 11:]], axis=1),
            bits_of(x)[3:]]))),
]


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("name, case", MOVES, ids=[name for name, _ in MOVES])
def test_operators_that_move_values_keep_every_bit_pattern(name, case, dtype):
    # NaN payloads, signalling NaNs, infinities, negative zeros and subnormals come out as they
    # went in: XLA's CPU computes some of these operators on bf16 in f32, quieting NaNs.
    x = every_pattern((4, 12), _DTYPES[dtype], seed=7)
    ops, inputs, expected = case(x)
    ops = [{**o, "dtype": dtype if o["dtype"] == "T" else o["dtype"]} for o in ops]
    np.testing.assert_array_equal(run_on_bits(ops, *inputs), expected)


@pytest.mark.parametrize("opcode, operands", [
    ("concatenate", ["p0", "p1"]),
    ("dynamic_update_slice", ["p0", "p1", "p2", "p3"]),
])
def test_operators_that_move_values_refuse_operands_of_two_element_types(opcode, operands):
    a, b = rng_array((2, 4)), rng_array((2, 4), BF16)
    attrs = {"dimensions": [0]} if opcode == "concatenate" else {}
    with pytest.raises(OracleError, match=r"f32\[2,4\], bf16\[2,4\] differ in element type"):
        run([op("r", opcode, "f32", (4, 4) if opcode == "concatenate" else (2, 4), operands,
                **attrs)], a, b, np.int32(0), np.int32(0))


def test_constant_takes_a_nested_list_and_a_scalar_fills_its_shape():
    x = rng_array((2, 2))
    got = run([op("c", "constant", "f32", (2, 2), [], value=[[1.0, 2.0], [3.0, 4.0]]),
               op("r", "add", "f32", (2, 2), ["p0", "c"])], x)
    np.testing.assert_array_equal(got, x + np.array([[1, 2], [3, 4]], np.float32))
    got = run([op("c", "constant", "f32", (2, 2), [], value=0.5),
               op("r", "multiply", "f32", (2, 2), ["p0", "c"])], x)
    np.testing.assert_array_equal(got, x * np.float32(0.5))


# ---------------------------------------------------------------------------------------------
# Broadcast: operand dim i lands on result dim dimensions[i]


def test_broadcast_of_a_row_sum_along_dim_0_repeats_across_columns():
    v = rng_array((4,))
    got = run([op("r", "broadcast", "f32", (4, 3), ["p0"], dimensions=[0])], v)
    np.testing.assert_array_equal(got, np.repeat(v[:, None], 3, axis=1))


def test_broadcast_along_dim_1_repeats_across_rows():
    v = rng_array((3,))
    got = run([op("r", "broadcast", "f32", (4, 3), ["p0"], dimensions=[1])], v)
    np.testing.assert_array_equal(got, np.repeat(v[None, :], 4, axis=0))


def test_broadcast_with_unordered_dimensions_transposes_the_operand():
    x = rng_array((2, 3))
    got = run([op("r", "broadcast", "f32", (3, 5, 2), ["p0"], dimensions=[2, 0])], x)
    # result[i, j, k] = x[k, i] for every j
    expected = np.broadcast_to(x.T[:, None, :], (3, 5, 2))
    np.testing.assert_array_equal(got, expected)


def test_broadcast_of_a_scalar_fills_the_result():
    got = run([op("r", "broadcast", "f32", (2, 3), ["p0"], dimensions=[])], np.float32(1.5))
    np.testing.assert_array_equal(got, np.full((2, 3), 1.5, np.float32))


def test_broadcast_stretches_a_size_one_dimension_as_xla_does():
    x = rng_array((4, 1))
    got = run([op("r", "broadcast", "f32", (4, 3), ["p0"], dimensions=[0, 1])], x)
    np.testing.assert_array_equal(got, np.repeat(x, 3, axis=1))


def test_broadcast_refuses_a_dimension_whose_size_differs():
    x = rng_array((2, 3))
    with pytest.raises(OracleError, match=r"probe: %r = broadcast\(%p0\): operand dim 0 "
                                          r"\(size 2\) maps to result dim 1 \(size 3\)"):
        run([op("r", "broadcast", "f32", (2, 3), ["p0"], dimensions=[1, 0])], x)


# ---------------------------------------------------------------------------------------------
# Dot: contracting and batch dims


def test_dot_contracts_lhs_dim_1_with_rhs_dim_0():
    a, b = rng_array((3, 4), seed=1), rng_array((4, 5), seed=2)
    got = run([op("r", "dot", "f32", (3, 5), ["p0", "p1"], lhs_contracting_dims=[1],
                  rhs_contracting_dims=[0], lhs_batch_dims=[], rhs_batch_dims=[])], a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-6, atol=1e-6)


def test_dot_contracting_rhs_dim_1_multiplies_by_the_transpose():
    a, b = rng_array((3, 4), seed=1), rng_array((5, 4), seed=2)
    got = run([op("r", "dot", "f32", (3, 5), ["p0", "p1"], lhs_contracting_dims=[1],
                  rhs_contracting_dims=[1])], a, b)
    np.testing.assert_allclose(got, a @ b.T, rtol=1e-6, atol=1e-6)


def test_dot_with_batch_dims_puts_batch_then_lhs_free_then_rhs_free():
    a = rng_array((3, 2, 4), seed=1)  # free 3, batch 2, contract 4
    b = rng_array((4, 5, 2), seed=2)  # contract 4, free 5, batch 2
    got = run([op("r", "dot", "f32", (2, 3, 5), ["p0", "p1"], lhs_contracting_dims=[2],
                  rhs_contracting_dims=[0], lhs_batch_dims=[1], rhs_batch_dims=[2])], a, b)
    np.testing.assert_allclose(got, np.einsum("ibk,kjb->bij", a, b), rtol=1e-5, atol=1e-5)


def test_dot_of_s8_operands_accumulates_into_the_declared_s32():
    a = rng_array((4, 8), np.int8, seed=1)
    b = rng_array((8, 3), np.int8, seed=2)
    got = run([op("r", "dot", "s32", (4, 3), ["p0", "p1"], lhs_contracting_dims=[1],
                  rhs_contracting_dims=[0])], a, b)
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def test_dot_of_bf16_rounds_its_result_to_bf16():
    a, b = rng_array((8, 16), BF16, seed=1), rng_array((16, 8), BF16, seed=2)
    got = run([op("r", "dot", "bf16", (8, 8), ["p0", "p1"], lhs_contracting_dims=[1],
                  rhs_contracting_dims=[0])], a, b)
    assert got.dtype == BF16
    exact = a.astype(np.float32) @ b.astype(np.float32)
    ulp = np.spacing(np.abs(exact).astype(BF16)).astype(np.float32)
    assert np.all(np.abs(got.astype(np.float32) - exact) <= ulp)


def test_dot_refuses_contracting_dims_of_different_sizes():
    a, b = rng_array((3, 4)), rng_array((5, 6))
    with pytest.raises(OracleError, match=r"probe: %r = dot\(%p0, %p1\): "):
        run([op("r", "dot", "f32", (3, 6), ["p0", "p1"], lhs_contracting_dims=[1],
                rhs_contracting_dims=[0])], a, b)


# ---------------------------------------------------------------------------------------------
# Reductions


@pytest.mark.parametrize("computation, init, numpy_fn", [
    ("add", 0.0, np.sum), ("max", -np.inf, np.max), ("min", np.inf, np.min),
    ("mul", 1.0, np.prod)])
def test_reduce_applies_its_computation_over_the_dimensions(computation, init, numpy_fn):
    x = rng_array((3, 4, 5)) * 0.5
    got = run([op("r", "reduce", "f32", (4,), ["p0", "p1"], dimensions=[0, 2],
                  computation=computation)], x, np.float32(init))
    np.testing.assert_allclose(got, numpy_fn(x, axis=(0, 2)), rtol=1e-5)


def test_reduce_starts_from_its_init_value():
    x = np.ones((2, 3), np.float32)
    got = run([op("r", "reduce", "f32", (2,), ["p0", "p1"], dimensions=[1],
                  computation="add")], x, np.float32(10))
    np.testing.assert_array_equal(got, [13, 13])


def test_reduce_add_sums_from_zero():
    x = rng_array((4, 6))
    got = run([op("r", "reduce_add", "f32", (4,), ["p0"], dimensions=[1],
                  computation="add")], x)
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Elementwise


def _rounded(fn, *xs):
    """bf16 result of ``fn`` computed in f32 and rounded once."""
    return fn(*(x.astype(np.float32) for x in xs)).astype(BF16)


@pytest.mark.parametrize("opcode, numpy_fn", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum)])
def test_binary_bf16_operators_round_once_like_xla(opcode, numpy_fn):
    a, b = rng_array((8, 8), BF16, seed=1), rng_array((8, 8), BF16, seed=2)
    got = run([op("r", opcode, "bf16", (8, 8), ["p0", "p1"])], a, b)
    np.testing.assert_array_equal(got.view(np.uint16), _rounded(numpy_fn, a, b).view(np.uint16))


def test_exponential_of_f32_matches_numpy():
    x = rng_array((5, 5))
    got = run([op("r", "exponential", "f32", (5, 5), ["p0"])], x)
    np.testing.assert_allclose(got, np.exp(x), rtol=2e-6)


def test_exponential_of_bf16_is_within_one_bf16_ulp():
    x = rng_array((6, 6), BF16)
    got = run([op("r", "exponential", "bf16", (6, 6), ["p0"])], x).astype(np.float32)
    exact = np.exp(x.astype(np.float32))
    assert np.all(np.abs(got - exact) <= np.spacing(exact.astype(BF16)).astype(np.float32))


def test_integer_divide_rounds_toward_zero():
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    got = run([op("r", "divide", "s32", (4,), ["p0", "p1"])], a, b)
    np.testing.assert_array_equal(got, [3, -3, -3, 3])


def test_xor_is_bitwise():
    a, b = rng_array((4, 4), np.int32, seed=1), rng_array((4, 4), np.int32, seed=2)
    got = run([op("r", "xor", "s32", (4, 4), ["p0", "p1"])], a, b)
    np.testing.assert_array_equal(got, a ^ b)


def test_select_lt_picks_on_true_where_a_is_below_b():
    a, b = rng_array((5, 5), seed=1), rng_array((5, 5), seed=2)
    t, f = rng_array((5, 5), seed=3), rng_array((5, 5), seed=4)
    got = run([op("r", "select_lt", "f32", (5, 5), ["p0", "p1", "p2", "p3"])], a, b, t, f)
    np.testing.assert_array_equal(got, np.where(a < b, t, f))


def test_select_eq_var_picks_on_true_where_a_equals_b():
    a = np.array([1, 2, 3, 4], np.int32)
    b = np.array([1, 0, 3, 0], np.int32)
    t = np.array([10, 20, 30, 40], np.int32)
    f = np.array([-1, -2, -3, -4], np.int32)
    got = run([op("r", "select_eq_var", "s32", (4,), ["p0", "p1", "p2", "p3"])], a, b, t, f)
    np.testing.assert_array_equal(got, [10, -2, 30, -4])


def test_elementwise_operators_refuse_operands_of_different_types():
    a, b = rng_array((2, 2)), rng_array((2, 2), BF16)
    with pytest.raises(OracleError, match=r"probe: %r = add\(%p0, %p1\): operands f32\[2,2\] "
                                          r"and bf16\[2,2\] differ"):
        run([op("r", "add", "f32", (2, 2), ["p0", "p1"])], a, b)


# ---------------------------------------------------------------------------------------------
# Declarations are checked against what the operators compute


def test_a_declared_shape_that_disagrees_is_refused_naming_the_value():
    x = rng_array((2, 3))
    with pytest.raises(OracleError, match=r"probe: %r = transpose\(%p0\): declared f32\[2,3\] "
                                          r"but the operands give f32\[3,2\]"):
        run([op("r", "transpose", "f32", (2, 3), ["p0"], dimensions=[1, 0])], x)


def test_computational_attributes_size_the_declared_shapes():
    ops = [{"name": "p0", "op": "parameter", "dtype": "u8",
            "shape": [{"op": "*", "args": [{"attr": "c.n"}, _int(4)]}], "operands": [],
            "attrs": {"index": 0}},
           {"name": "r", "op": "reshape", "dtype": "u8", "shape": [{"attr": "c.n"}, _int(4)],
            "operands": ["p0"], "attrs": {}, "root": True}]
    hbm_slice = SliceSpec("d0", (_int(0),), (_int(1),))
    instr = Instruction("probe", ("n",), (), (hbm_slice,), (hbm_slice,), tuple(ops))
    lowered = lower(instr, {"n": 3})
    assert lowered.root.shape == (3, 4)
    assert lowered.params[0].shape == (12,)


def test_an_unknown_operator_is_refused():
    with pytest.raises(OracleError, match=r"probe: %r = sort\(%p0\): operator 'sort' is not"):
        run([op("r", "sort", "f32", (2,), ["p0"])], rng_array((2,)))


def test_an_operand_used_before_it_is_defined_is_refused():
    with pytest.raises(OracleError, match=r"operand %later is not defined before it"):
        run([op("r", "copy", "f32", (2,), ["later"]), op("later", "copy", "f32", (2,), ["p0"])],
            rng_array((2,)))
