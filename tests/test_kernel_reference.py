"""The NumPy reference computes what the HLO computes, rounded as XLA rounds on the CPU.

Cases are hand-computed where the arithmetic is small, and otherwise compared with JAX
running the very HLO text the reference reads (JAX is used here only as a cross-check).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

from act_backend.kernel import UnsupportedOperator, evaluate, parse_hlo

ROOT = Path(__file__).resolve().parents[1]
KERNELS = Path(__file__).resolve().parent / "kernels"
BF16 = ml_dtypes.bfloat16


def run(text: str, *inputs):
    return evaluate(parse_hlo(text, "k.hlo"), list(inputs))


def with_jax(fn, *inputs):
    """(reference, JAX) results of ``fn`` on ``inputs``, the reference reading JAX's HLO."""
    text = jax.jit(fn).lower(*inputs).as_text(dialect="hlo")
    ours = evaluate(parse_hlo(text), list(inputs))
    theirs = jax.jit(fn)(*inputs)
    if isinstance(ours, tuple):
        return ours, tuple(np.asarray(t) for t in theirs)
    return ours, np.asarray(theirs)


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between two bf16 arrays of the same sign."""
    ia = np.asarray(a, BF16).view(np.int16).astype(np.int32)
    ib = np.asarray(b, BF16).view(np.int16).astype(np.int32)
    return np.abs(ia - ib)


def bf16(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).astype(BF16)


RNG = np.random.default_rng(7)


def random_bf16(shape, scale=1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(BF16)


# -- hand-computed -------------------------------------------------------------------------

def test_a_small_matmul():
    text = """HloModule mm
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT c = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = run(text, a, b)
    assert out.dtype == np.float32
    assert out.tolist() == [[10, 13], [28, 40]]


def test_dot_contracting_the_rhs_rows_is_a_times_b_transposed():
    text = (KERNELS / "qkt_dimension_numbers.hlo").read_text()
    q, k = random_bf16((64, 64)), random_bf16((64, 64))
    expected = (q.astype(np.float32) @ k.astype(np.float32).T).astype(BF16)
    assert np.array_equal(run(text, q, k), expected)


def test_dot_with_batch_dimensions():
    text = """HloModule bmm
ENTRY main {
  a = s32[2,2,3] parameter(0)
  b = s32[2,3,2] parameter(1)
  ROOT c = s32[2,2,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0},
                                 lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
"""
    a = np.arange(12, dtype=np.int32).reshape(2, 2, 3)
    b = np.arange(12, dtype=np.int32).reshape(2, 3, 2)
    assert np.array_equal(run(text, a, b), np.matmul(a, b))


@pytest.mark.parametrize("window, expected", [
    # out[j] = x[j] * 1 + x[j + 1] * 10 + x[j + 2] * 100: each digit is one input.
    ("size=3", [321, 432, 543]),
    ("size=3 rhs_reversal=1", [123, 234, 345]),
    ("size=3 stride=2", [321, 543]),
    ("size=3 pad=1_1", [210, 321, 432, 543, 54]),
    ("size=3 pad=-1_0", [432, 543]),
    # The input spread to 1 0 2 0 3 0 4 0 5; the kernel to 1 _ 10 _ 100.
    ("size=3 lhs_dilate=2", [201, 20, 302, 30, 403, 40, 504]),
    ("size=3 rhs_dilate=2", [531]),
])
def test_a_convolution_slides_the_kernel_over_the_input(window, expected):
    text = f"""HloModule conv
ENTRY main {{
  x = s32[1,5,1] parameter(0)
  w = s32[3,1,1] parameter(1)
  ROOT y = s32[1,{len(expected)},1] convolution(x, w), window={{{window}}},
                                    dim_labels=b0f_0io->b0f
}}
"""
    x = np.arange(1, 6, dtype=np.int32).reshape(1, 5, 1)
    w = np.array([1, 10, 100], dtype=np.int32).reshape(3, 1, 1)
    assert run(text, x, w).reshape(-1).tolist() == expected


@pytest.mark.parametrize("lhs, groups", [
    # Feature groups: output feature g is computed from input feature g alone.
    ("s32[1,1,2]", "feature_group_count=2"),
    # Batch groups: output feature g is computed from batch element g alone.
    ("s32[2,1,1]", "batch_group_count=2"),
])
def test_convolution_groups_pair_blocks_of_inputs_with_blocks_of_outputs(lhs, groups):
    text = f"""HloModule conv
ENTRY main {{
  x = {lhs} parameter(0)
  w = s32[1,1,2] parameter(1)
  ROOT y = s32[1,1,2] convolution(x, w), window={{size=1}}, dim_labels=b0f_0io->b0f,
                                         {groups}
}}
"""
    x = np.array([1, 2], dtype=np.int32).reshape(parse_hlo(text).entry.parameters()[0].type.shape)
    w = np.array([10, 100], dtype=np.int32).reshape(1, 1, 2)
    assert run(text, x, w).reshape(-1).tolist() == [10, 200]


def test_broadcast_maps_operand_dimensions_to_result_dimensions():
    text = """HloModule b
ENTRY main {
  r = s32[2] parameter(0)
  rows = s32[2,3] broadcast(r), dimensions={0}
  cols = s32[3,2] broadcast(r), dimensions={1}
  ROOT t = (s32[2,3], s32[3,2]) tuple(rows, cols)
}
"""
    rows, cols = run(text, np.array([1, 2], np.int32))
    assert rows.tolist() == [[1, 1, 1], [2, 2, 2]]
    assert cols.tolist() == [[1, 2], [1, 2], [1, 2]]


def test_data_movement_operators():
    text = """HloModule moves
ENTRY main {
  x = s32[2,4] parameter(0)
  t = s32[4,2] transpose(x), dimensions={1,0}
  r = s32[8] reshape(x)
  s = s32[2,2] slice(x), slice={[0:2], [1:4:2]}
  c = s32[4,4] concatenate(x, x), dimensions={0}
  i = s32[2,3] iota(), iota_dimension=1
  ROOT all = (s32[4,2], s32[8], s32[2,2], s32[4,4], s32[2,3]) tuple(t, r, s, c, i)
}
"""
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    t, r, s, c, i = run(text, x)
    assert t.tolist() == x.T.tolist()
    assert r.tolist() == list(range(8))
    assert s.tolist() == [[1, 3], [5, 7]]
    assert c.tolist() == [*x.tolist(), *x.tolist()]
    assert i.tolist() == [[0, 1, 2], [0, 1, 2]]


def test_dynamic_slices_clamp_their_start_indices():
    text = """HloModule dyn
ENTRY main {
  x = s32[4,4] parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  w = s32[2,2] dynamic-slice(x, i, z), dynamic_slice_sizes={2,2}
  u = s32[1,2] constant({{-1, -2}})
  v = s32[4,4] dynamic-update-slice(x, u, i, i)
  ROOT t = (s32[2,2], s32[4,4]) tuple(w, v)
}
"""
    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    w, v = run(text, x, np.int32(9))
    assert w.tolist() == [[8, 9], [12, 13]]
    assert v[3].tolist() == [12, 13, -1, -2]
    w, v = run(text, x, np.int32(-5))
    assert w.tolist() == [[0, 1], [4, 5]]
    assert v[0].tolist() == [-1, -2, 2, 3]


def test_compare_select_and_the_taidl_selects():
    text = """HloModule sel
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  p = pred[4] compare(a, b), direction=LE
  s = f32[4] select(p, a, b)
  lt = f32[4] select_lt(a, b, a, b)
  eq = f32[4] select_eq_var(a, b, a, b)
  ROOT t = (pred[4], f32[4], f32[4], f32[4]) tuple(p, s, lt, eq)
}
"""
    a = np.array([1, 5, 3, -1], np.float32)
    b = np.array([2, 4, 3, -2], np.float32)
    p, s, lt, eq = run(text, a, b)
    assert p.tolist() == [True, False, True, False]
    assert s.tolist() == [1, 4, 3, -2]
    assert lt.tolist() == [1, 4, 3, -2]
    assert eq.tolist() == [2, 4, 3, -2]


def test_integer_division_truncates_and_dividing_by_zero_gives_all_ones():
    text = """HloModule div
ENTRY main {
  a = s32[6] parameter(0)
  b = s32[6] parameter(1)
  q = s32[6] divide(a, b)
  r = s32[6] remainder(a, b)
  ROOT t = (s32[6], s32[6]) tuple(q, r)
}
"""
    a = np.array([7, -7, 7, -7, 5, -2**31], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1], np.int32)
    q, r = run(text, a, b)
    assert q.tolist() == [3, -3, -3, 3, -1, -2**31]
    assert r.tolist() == [1, -1, 1, -1, 5, 0]


def test_integer_arithmetic_wraps():
    text = """HloModule wrap
ENTRY main {
  a = u8[2] parameter(0)
  ROOT s = u8[2] add(a, a)
}
"""
    assert run(text, np.array([200, 3], np.uint8)).tolist() == [144, 6]


def test_converting_floats_to_integers_truncates_and_saturates():
    text = """HloModule cvt
ENTRY main {
  f = f32[7] parameter(0)
  s = s8[7] convert(f)
  u = u8[7] convert(f)
  p = pred[7] convert(f)
  ROOT t = (s8[7], u8[7], pred[7]) tuple(s, u, p)
}
"""
    f = np.array([300, -300, np.nan, np.inf, -np.inf, 2.7, -2.7], np.float32)
    s, u, p = run(text, f)
    assert s.tolist() == [127, -128, 0, 127, -128, 2, -2]
    assert u.tolist() == [255, 0, 0, 255, 0, 2, 0]
    assert p.tolist() == [True, True, True, True, True, True, True]


def test_bitcast_convert_splits_and_joins_bytes_little_endian():
    text = """HloModule bits
ENTRY main {
  x = bf16[2] parameter(0)
  b = u8[2,2] bitcast-convert(x)
  back = bf16[2] bitcast-convert(b)
  ROOT t = (u8[2,2], bf16[2]) tuple(b, back)
}
"""
    x = bf16([1.0, -2.0])
    b, back = run(text, x)
    assert b.tolist() == [[0x80, 0x3F], [0x00, 0xC0]]
    assert np.array_equal(back, x)


def test_constants_take_their_declared_type():
    text = """HloModule k
ENTRY main {
  a = bf16[] constant(0.1)
  b = s32[2,2] constant({ {1, 2}, {3, 4} })
  c = f32[3] constant(2)
  ROOT t = (bf16[], s32[2,2], f32[3]) tuple(a, b, c)
}
"""
    a, b, c = run(text)
    assert a.dtype == BF16 and float(a) == 0.10009765625
    assert b.tolist() == [[1, 2], [3, 4]]
    assert c.dtype == np.float32 and c.tolist() == [2, 2, 2]


# -- bf16 rounding ---------------------------------------------------------------------------

REDUCE_AND_DOT = """HloModule r
add {
  x = bf16[] parameter(0)
  y = bf16[] parameter(1)
  ROOT s = bf16[] add(x, y)
}
ENTRY main {
  v = bf16[3] parameter(0)
  w = bf16[3] parameter(1)
  z = bf16[] constant(0)
  r = bf16[] reduce(v, z), dimensions={0}, to_apply=add
  d = bf16[] dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (bf16[], bf16[]) tuple(r, d)
}
"""


def test_a_bf16_reduce_rounds_after_every_step_but_a_dot_rounds_once():
    # 1 + 2^-8 is halfway between two bf16 values and rounds (to even) back to 1, twice; the
    # dot sums 1 + 2^-8 + 2^-8 = 1 + 2^-7 in float32, which bf16 holds exactly.
    v = bf16([1.0, 2**-8, 2**-8])
    r, d = run(REDUCE_AND_DOT, v, bf16([1, 1, 1]))
    assert float(r) == 1.0
    assert float(d) == 1.0 + 2**-7


def test_bf16_elementwise_results_are_float32_results_rounded():
    text = """HloModule e
ENTRY main {
  x = bf16[2] parameter(0)
  y = bf16[2] parameter(1)
  e = bf16[2] exponential(x)
  q = bf16[2] divide(x, y)
  ROOT t = (bf16[2], bf16[2]) tuple(e, q)
}
"""
    e, q = run(text, bf16([1.0, -1.0]), bf16([3.0, 3.0]))
    assert e.tolist() == [2.71875, 0.3671875]
    assert q.tolist() == [0.333984375, -0.333984375]
    assert e.dtype == BF16 and q.dtype == BF16


def test_rounding_happens_after_each_operation_not_at_the_end():
    text = """HloModule chain
ENTRY main {
  x = bf16[1] parameter(0)
  y = bf16[1] parameter(1)
  s = bf16[1] add(x, y)
  ROOT d = bf16[1] subtract(s, x)
}
"""
    # In float32 (1 + 2^-9) - 1 = 2^-9; in bf16 the sum rounds to 1 first.
    assert run(text, bf16([1.0]), bf16([2**-9])).tolist() == [0.0]


# -- JAX cross-checks --------------------------------------------------------------------------

def load_example(name: str) -> np.ndarray:
    raw = (ROOT / "examples" / "QKV" / "data" / f"{name}.dat").read_bytes()
    return np.frombuffer(raw, "<u2").view(BF16).reshape(64, 64)


def jax_attention(q, k, v):
    s = lax.dot_general(q, k, (((1,), (1,)), ((), ())))
    e = lax.exp(s)
    r = lax.reduce(e, jnp.bfloat16(0), lax.add, (1,))
    return lax.dot(e / lax.broadcast_in_dim(r, (64, 64), (0,)), v)


@pytest.mark.parametrize("inputs", ["example data", "random"])
def test_the_attention_fixture_agrees_with_jax_within_two_ulps_of_v(inputs):
    if inputs == "example data":
        q, k, v = (load_example(n) for n in "QKV")
    else:
        q, k = (random_bf16((64, 64), 64 ** -0.25) for _ in range(2))
        v = RNG.uniform(-1, 1, (64, 64)).astype(BF16)
    ours = evaluate(parse_hlo((KERNELS / "attention_jax.hlo").read_text()), [q, k, v])
    theirs = np.asarray(jax.jit(jax_attention)(q, k, v))
    # XLA sums each row in two halves; the reference folds it in index order. The results
    # stay within the project's tolerance: two bf16 ulps of the largest magnitude in V.
    largest = float(np.abs(v.astype(np.float32)).max())
    ulp = 2.0 ** (np.floor(np.log2(largest)) - 7)
    assert np.abs(ours.astype(np.float32) - theirs.astype(np.float32)).max() <= 2 * ulp


def test_the_hand_written_and_jax_attention_agree_exactly():
    q, k, v = (random_bf16((64, 64), 0.5) for _ in range(3))
    hand = parse_hlo((ROOT / "examples" / "QKV" / "kernels" / "attention.hlo").read_text())
    printed = parse_hlo((KERNELS / "attention_jax.hlo").read_text())
    assert np.array_equal(evaluate(hand, [q, k, v]), evaluate(printed, [q, k, v]))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
@pytest.mark.parametrize("fn", [lax.add, lax.sub, lax.mul, lax.div, lax.max, lax.min,
                                lax.rem, lax.atan2, lax.pow],
                         ids=lambda f: f.__name__)
def test_binary_operators_match_jax(fn, dtype):
    x = (RNG.standard_normal(256) * 3).astype(dtype)
    y = (RNG.standard_normal(256) * 3).astype(dtype)
    if fn is lax.pow:
        x = np.abs(x)
    ours, theirs = with_jax(fn, x, y)
    assert ours.dtype == theirs.dtype
    exact = fn in (lax.add, lax.sub, lax.mul, lax.div, lax.max, lax.min, lax.rem)
    if exact:
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours.astype(np.float32), theirs.astype(np.float32),
                                   rtol=2e-6 if dtype == jnp.float32 else 8e-3)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
@pytest.mark.parametrize("fn", [lax.exp, lax.log, lax.sqrt, lax.rsqrt, lax.tanh, lax.abs,
                                lax.neg, lax.floor, lax.ceil, lax.sign, lax.sin, lax.cos,
                                lax.logistic, lax.cbrt, lax.expm1, lax.log1p,
                                lax.round,
                                lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)],
                         ids=lambda f: f.__name__.replace("<lambda>", "round_even"))
def test_unary_operators_match_jax(fn, dtype):
    x = (RNG.standard_normal(256) * 2).astype(dtype)
    if fn in (lax.log, lax.sqrt, lax.rsqrt):
        x = np.abs(x) + np.asarray(0.01, dtype)
    if fn.__name__ in ("round", "<lambda>"):
        x = np.concatenate([x, np.asarray([0.5, 1.5, 2.5, -0.5, -2.5], dtype)])
    ours, theirs = with_jax(fn, x)
    assert ours.dtype == theirs.dtype
    if dtype == jnp.bfloat16:
        # XLA's float32 approximations may land on the other side of a bf16 rounding boundary.
        assert ulps_apart(ours, theirs).max() <= 1
    else:
        np.testing.assert_allclose(ours, theirs, rtol=5e-6, atol=1e-7)


def test_integer_division_and_conversion_match_jax():
    a = np.array([7, -7, 7, -7, 5, -2**31, 0], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1, 0], np.int32)
    for fn in (lax.div, lax.rem):
        ours, theirs = with_jax(fn, a, b)
        np.testing.assert_array_equal(ours, theirs)
    f = np.array([300, -300, np.nan, np.inf, -np.inf, 2.7, -2.7, 1e10], np.float32)
    for target in (jnp.int8, jnp.uint8, jnp.int32, jnp.uint32, jnp.bfloat16):
        ours, theirs = with_jax(lambda x, t=target: lax.convert_element_type(x, t), f)
        assert ours.dtype == theirs.dtype
        # float32 views, so that NaN equals NaN in the comparison
        np.testing.assert_array_equal(ours.astype(np.float32), theirs.astype(np.float32))


def test_a_jax_program_of_data_movement_matches_exactly():
    def program(x, i):
        window = lax.dynamic_slice(x, (i, 0), (4, 64))
        updated = lax.dynamic_update_slice(x, window * 2, (i, i))
        where = jnp.where(x > 0, x, -x)
        strided = jnp.concatenate([x, jnp.tanh(x)], axis=0)[::2, 1:5]
        moved = x.T.reshape(32, 128)
        bits = lax.bitcast_convert_type(x, jnp.uint8)
        return updated, where, strided, lax.iota(jnp.int32, 5), moved, bits

    x = random_bf16((64, 64))
    for i in (3, 70, -2):
        ours, theirs = with_jax(program, x, np.int32(i))
        for a, b in zip(ours, theirs, strict=True):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_a_reduce_with_a_general_reducer_matches_jax():
    def program(x):
        # max |.| over rows: the region is abs, abs, maximum, not a plain binary reducer.
        return lax.reduce(x, np.float32(0), lambda a, b: lax.max(lax.abs(a), lax.abs(b)), (1,))

    x = RNG.standard_normal((16, 8)).astype(np.float32)
    text = jax.jit(program).lower(x).as_text(dialect="hlo")
    module = parse_hlo(text)
    reduce = next(i for i in module.entry.instructions if i.opcode == "reduce")
    assert "computation" not in reduce.attrs
    ours, theirs = with_jax(program, x)
    np.testing.assert_array_equal(ours, theirs)


def test_an_f32_sum_over_all_dimensions_matches_jax_closely():
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    ours, theirs = with_jax(lambda x: jnp.sum(x), x)
    assert ours.shape == ()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


# -- errors ----------------------------------------------------------------------------------

def test_an_unsupported_operator_is_named_with_its_line():
    text = """HloModule k
ENTRY main {
  x = f32[4,4] parameter(0)
  ROOT y = f32[4,4] cholesky(x)
}
"""
    with pytest.raises(UnsupportedOperator, match=r"^k\.hlo:4:3: .*operator 'cholesky' "
                                                  r"\(instruction 'y', line 4\)"):
        run(text, np.zeros((4, 4), np.float32))


def test_a_missing_attribute_is_named_with_its_instruction():
    text = """HloModule k
ENTRY main {
  x = f32[2,2] parameter(0)
  ROOT y = f32[2,2] transpose(x)
}
"""
    with pytest.raises(ValueError, match=r"^k\.hlo:4:3: transpose 'y' needs the attribute "
                                         r"'dimensions'"):
        run(text, np.zeros((2, 2), np.float32))


def test_inputs_must_match_the_parameters():
    text = (KERNELS / "matmul.hlo").read_text()
    a = random_bf16((64, 64))
    with pytest.raises(ValueError, match=r"takes 2 input\(s\) \(bf16\[64,64\], bf16\[64,64\]\)"):
        run(text, a)
    with pytest.raises(ValueError, match=r"input 1 of kernel 'jit_matmul' \(parameter 'b\.1'\) "
                                         r"must be bf16\[64,64\], got float32\[64,64\]"):
        run(text, a, np.zeros((64, 64), np.float32))
