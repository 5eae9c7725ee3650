"""The operators JAX prints for elementwise, reduction, layout and convolution work: the kernel
checker accepts them as JAX lowers them, and the NumPy reference computes what XLA computes.

Each operator's reference is held to XLA itself (``tests/helpers/xla_reference.py`` runs the
HLO text on XLA's CPU client) on inputs that include the edge values of its definition:
exactly for integers, predicates, clamps, layout and precision reduction; for the
transcendental ``erf`` and ``tan`` within the tolerance of the other transcendental
operators (one bf16 ulp, or a relative 5e-6 in f32); for a float convolution, a sum in
another order than XLA's, within one bf16 ulp or a relative 1e-5 in f32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

from act_backend.hlo import vocabulary
from act_backend.kernel import check_hlo, evaluate, parse_hlo
from tests.helpers.xla_reference import run_hlo

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(10)

# -- every operator as JAX lowers it -------------------------------------------------------

F32 = jnp.zeros((4, 8), jnp.float32)
S32 = jnp.zeros((4, 8), jnp.int32)
U8 = jnp.zeros((4, 8), jnp.uint8)

# (what lax calls, function, example input, operator the HLO must contain)
LOWERED = [
    ("clamp", lambda x: lax.clamp(0.0, x, 1.0), F32, "clamp"),
    ("clamp of arrays", lambda x: lax.clamp(x - 1, x, x + 1), F32, "clamp"),
    ("rev", lambda x: lax.rev(x, (0, 1)), F32, "reverse"),
    ("pad", lambda x: lax.pad(x, 0.0, ((1, 2, 0), (-1, 1, 1))), F32, "pad"),
    ("erf", lax.erf, F32, "erf"),
    ("tan", lax.tan, F32, "tan"),
    ("is_finite", lax.is_finite, F32, "is-finite"),
    ("population_count", lax.population_count, S32, "popcnt"),
    ("clz", lax.clz, U8, "count-leading-zeros"),
    ("shift_left", lambda x: lax.shift_left(x, x), S32, "shift-left"),
    ("shift_right_arithmetic", lambda x: lax.shift_right_arithmetic(x, x), S32,
     "shift-right-arithmetic"),
    ("shift_right_logical", lambda x: lax.shift_right_logical(x, x), S32,
     "shift-right-logical"),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 5, 10), F32, "reduce-precision"),
    ("neg", lax.neg, F32, "negate"),
    ("abs", lax.abs, S32, "abs"),
    ("sign", lax.sign, F32, "sign"),
    ("select", lambda x: lax.select(x > 0, x, -x), F32, "select"),
    ("max", lambda x: lax.max(x, x * 2), F32, "maximum"),
    ("min", lambda x: lax.min(x, x * 2), F32, "minimum"),
    ("slice", lambda x: lax.slice(x, (1, 0), (3, 8), (1, 2)), F32, "slice"),
    ("concatenate", lambda x: lax.concatenate([x, x], 1), F32, "concatenate"),
    ("iota", lambda x: x + lax.broadcasted_iota(jnp.float32, (4, 8), 1), F32, "iota"),
    ("round", lax.round, F32, "round-nearest-afz"),
    ("expm1", lax.expm1, F32, "exponential-minus-one"),
    ("atan2", lambda x: lax.atan2(x, x), F32, "atan2"),
    ("rem", lambda x: lax.rem(x, x), S32, "remainder"),
    ("not", lax.bitwise_not, S32, "not"),
    ("reduce_max", lambda x: jnp.max(x, axis=1), F32, "reduce"),
    ("sum", lambda x: jnp.sum(x, axis=0), F32, "reduce"),
    ("cumsum", lambda x: jnp.cumsum(x, axis=0), F32, "reduce-window"),
    ("cummax", lambda x: lax.cummax(x, axis=1), S32, "reduce-window"),
    ("reduce_window", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 1),
                                                  ((0, 1), (1, 1))), F32, "reduce-window"),
]


@pytest.mark.parametrize("fn, example, opcode", [c[1:] for c in LOWERED],
                         ids=[c[0] for c in LOWERED])
def test_the_checker_accepts_the_operator_as_jax_lowers_it(fn, example, opcode):
    text = jax.jit(fn).lower(example).as_text(dialect="hlo")
    assert f" {opcode}(" in text, text
    assert check_hlo(text) == []


def test_operators_without_a_meaning_here_stay_refused_by_name():
    text = jax.jit(lambda x: jnp.sort(x, axis=0)).lower(F32).as_text(dialect="hlo")
    problems = check_hlo(text)
    assert [p.code for p in problems] == ["unsupported-operator"], problems
    assert "sort" in problems[0].message
    assert "sort" in vocabulary.operators(kernels=False)
    assert "reduce_window" in vocabulary.operators(kernels=True)


# -- the reference against XLA -------------------------------------------------------------

def _kernel(body: str, params: list[str], result: str) -> str:
    decls = "\n".join(f"  p{i} = {t} parameter({i})" for i, t in enumerate(params))
    return f"HloModule m\n\nENTRY e {{\n{decls}\n  ROOT r = {result} {body}\n}}\n"


def _floats(dtype, shape=(6, 8)) -> np.ndarray:
    """Random floats with the special values first. No subnormals: XLA's CPU client flushes
    them to zero on some code paths (vectorised loops) and not on others, which the reference
    does not model."""
    values = RNG.standard_normal(shape).astype(np.float32) * 3
    flat = values.reshape(-1)
    flat[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 60000.0, 3e38]
    with np.errstate(over="ignore", invalid="ignore"):
        values = values.astype(dtype)
        tiny = ml_dtypes.finfo(dtype).tiny
        return np.where(np.abs(values) < tiny, np.zeros((), dtype), values).astype(dtype)


def _ints(dtype, shape=(6, 8)) -> np.ndarray:
    info = np.iinfo(dtype)
    values = RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    flat = values.reshape(-1)
    flat[:6] = [0, 1, info.max, info.min, info.max // 2, 3]
    return values


def _shift_amounts(dtype, shape=(6, 8)) -> np.ndarray:
    width = np.dtype(dtype).itemsize * 8
    values = RNG.integers(0, width + 3, size=shape).astype(dtype)
    flat = values.reshape(-1)
    flat[:4] = [0, width - 1, width, width + 1]
    if np.issubdtype(dtype, np.signedinteger):
        flat[4] = -1
    return values


def _agree(text: str, inputs: list[np.ndarray], exact: bool = True) -> None:
    ours = evaluate(parse_hlo(text, "k.hlo"), inputs)
    (theirs,) = run_hlo(text, inputs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if exact:
        # Bit for bit (NaN equal to NaN).
        np.testing.assert_array_equal(ours.view(f"u{ours.dtype.itemsize}"),
                                      theirs.view(f"u{theirs.dtype.itemsize}"))
        return
    a, b = ours.astype(np.float32), theirs.astype(np.float32)
    if ours.dtype == BF16:
        finite = np.isfinite(a) & np.isfinite(b)
        ia = np.asarray(ours, BF16).view(np.int16).astype(np.int32)
        ib = np.asarray(theirs, BF16).view(np.int16).astype(np.int32)
        assert np.abs(ia - ib)[finite].max() <= 1
        np.testing.assert_array_equal(a[~finite], b[~finite])
    else:
        np.testing.assert_allclose(a, b, rtol=5e-6, atol=1e-7)


FLOAT_TYPES = [("f32", np.float32), ("bf16", BF16), ("f16", np.float16)]
INT_TYPES = [("s32", np.int32), ("s8", np.int8), ("u8", np.uint8), ("u32", np.uint32),
             ("s16", np.int16)]


@pytest.mark.parametrize("op", ["erf", "tan"])
@pytest.mark.parametrize("name, dtype", FLOAT_TYPES[:2], ids=["f32", "bf16"])
def test_transcendental_operators_agree_with_xla(op, name, dtype):
    x = _floats(dtype)
    _agree(_kernel(f"{op}(p0)", [f"{name}[6,8]"], f"{name}[6,8]"), [x], exact=False)


@pytest.mark.parametrize("name, dtype", FLOAT_TYPES, ids=[t[0] for t in FLOAT_TYPES])
def test_is_finite_agrees_with_xla(name, dtype):
    _agree(_kernel("is-finite(p0)", [f"{name}[6,8]"], "pred[6,8]"), [_floats(dtype)])


@pytest.mark.parametrize("op", ["popcnt", "count-leading-zeros"])
@pytest.mark.parametrize("name, dtype", INT_TYPES, ids=[t[0] for t in INT_TYPES])
def test_bit_counts_agree_with_xla(op, name, dtype):
    _agree(_kernel(f"{op}(p0)", [f"{name}[6,8]"], f"{name}[6,8]"), [_ints(dtype)])


@pytest.mark.parametrize("op", ["shift-left", "shift-right-arithmetic", "shift-right-logical"])
@pytest.mark.parametrize("name, dtype", INT_TYPES, ids=[t[0] for t in INT_TYPES])
def test_shifts_agree_with_xla(op, name, dtype):
    text = _kernel(f"{op}(p0, p1)", [f"{name}[6,8]"] * 2, f"{name}[6,8]")
    _agree(text, [_ints(dtype), _shift_amounts(dtype)])


@pytest.mark.parametrize("exponent, mantissa", [(5, 10), (8, 7), (4, 3), (8, 23), (11, 52),
                                                (2, 1), (3, 0)])
@pytest.mark.parametrize("name, dtype", FLOAT_TYPES, ids=[t[0] for t in FLOAT_TYPES])
def test_reduce_precision_agrees_with_xla(name, dtype, exponent, mantissa):
    text = _kernel(f"reduce-precision(p0), exponent_bits={exponent}, mantissa_bits={mantissa}",
                   [f"{name}[6,8]"], f"{name}[6,8]")
    _agree(text, [_floats(dtype)])


@pytest.mark.parametrize("name, dtype, values", [
    ("f32", np.float32, _floats), ("bf16", BF16, _floats), ("s32", np.int32, _ints),
    ("u8", np.uint8, _ints)], ids=["f32", "bf16", "s32", "u8"])
def test_clamp_agrees_with_xla_with_scalar_and_array_bounds(name, dtype, values):
    x = values(dtype)
    scalar = _kernel("clamp(p1, p0, p2)", [f"{name}[6,8]", f"{name}[]", f"{name}[]"],
                     f"{name}[6,8]")
    low, high = (np.asarray(v, dtype) for v in ((-1, 2) if name != "u8" else (3, 200)))
    _agree(scalar, [x, low, high])
    arrays = _kernel("clamp(p1, p0, p2)", [f"{name}[6,8]"] * 3, f"{name}[6,8]")
    _agree(arrays, [x, values(dtype), values(dtype)])


@pytest.mark.parametrize("dims", [[0], [1], [0, 1]])
def test_reverse_agrees_with_xla(dims):
    x = _floats(BF16)
    dimensions = ",".join(map(str, dims))
    _agree(_kernel(f"reverse(p0), dimensions={{{dimensions}}}", ["bf16[6,8]"], "bf16[6,8]"),
           [x])


@pytest.mark.parametrize("padding, shape", [
    ("0_0x1_2", [6, 11]), ("1_2_0x-1_1_1", [9, 15]), ("-2_-1_2x0_0_0", [13, 8]),
    ("2_-3_1x-2_3_0", [10, 9]),
])
def test_pad_agrees_with_xla(padding, shape):
    x = _ints(np.int32)
    text = _kernel(f"pad(p0, p1), padding={padding}", ["s32[6,8]", "s32[]"],
                   f"s32[{','.join(map(str, shape))}]")
    assert check_hlo(text) == []
    _agree(text, [x, np.asarray(-7, np.int32)])


# -- convolution ---------------------------------------------------------------------------

# (what it exercises, lhs shape, rhs shape, attributes, result shape)
CONVOLUTIONS = [
    ("NHWC SAME 3x3", [2, 8, 8, 4], [3, 3, 4, 6],
     "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f", [2, 8, 8, 6]),
    ("VALID stride 2", [2, 9, 8, 4], [3, 3, 4, 6],
     "window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f", [2, 4, 3, 6]),
    ("NCHW OIHW, stride and padding", [2, 4, 7, 9], [5, 4, 3, 2],
     "window={size=3x2 stride=1x2 pad=1_0x2_1}, dim_labels=bf01_oi01->bf01", [2, 5, 6, 6]),
    ("result in another layout", [2, 8, 8, 4], [6, 3, 3, 4],
     "window={size=3x3}, dim_labels=b01f_o01i->fb10", [6, 2, 6, 6]),
    ("rhs_dilate", [2, 9, 9, 4], [3, 2, 4, 5],
     "window={size=3x2 rhs_dilate=2x3}, dim_labels=b01f_01io->b01f", [2, 5, 6, 5]),
    ("lhs_dilate", [2, 5, 6, 4], [3, 2, 4, 5],
     "window={size=3x2 stride=1x2 pad=2_1x0_3 lhs_dilate=2x3}, dim_labels=b01f_01io->b01f",
     [2, 10, 9, 5]),
    ("negative padding", [2, 8, 8, 4], [3, 3, 4, 5],
     "window={size=3x3 pad=-1_2x1_-2}, dim_labels=b01f_01io->b01f", [2, 7, 5, 5]),
    ("rhs_reversal", [2, 8, 8, 4], [3, 3, 4, 5],
     "window={size=3x3 pad=1_1x0_0 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f",
     [2, 8, 6, 5]),
    ("feature_group_count=2", [2, 4, 8, 8], [6, 2, 3, 3],
     "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=2",
     [2, 6, 8, 8]),
    ("batch_group_count=2", [4, 4, 8, 8], [6, 4, 3, 3],
     "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, batch_group_count=2",
     [2, 6, 8, 8]),
    ("1-D", [3, 10, 4], [3, 4, 5],
     "window={size=3 stride=2 pad=1_1}, dim_labels=b0f_0io->b0f", [3, 5, 5]),
    ("no spatial dimension", [4, 8], [8, 6], "dim_labels=bf_io->bf", [4, 6]),
]


def _convolution(lhs: list[int], rhs: list[int], attrs: str, result: list[int],
                 operand_type: str, result_type: str) -> str:
    def t(dtype: str, shape: list[int]) -> str:
        return f"{dtype}[{','.join(map(str, shape))}]"
    return _kernel(f"convolution(p0, p1), {attrs}", [t(operand_type, lhs), t(operand_type, rhs)],
                   t(result_type, result))


@pytest.mark.parametrize("lhs, rhs, attrs, result", [c[1:] for c in CONVOLUTIONS],
                         ids=[c[0] for c in CONVOLUTIONS])
def test_an_int8_convolution_to_s32_agrees_with_xla_exactly(lhs, rhs, attrs, result):
    text = _convolution(lhs, rhs, attrs, result, "s8", "s32")
    assert check_hlo(text) == []
    _agree(text, [_ints(np.int8, lhs), _ints(np.int8, rhs)])


@pytest.mark.parametrize("lhs, rhs, attrs, result", [c[1:] for c in CONVOLUTIONS],
                         ids=[c[0] for c in CONVOLUTIONS])
def test_an_f32_convolution_agrees_with_xla_closely(lhs, rhs, attrs, result):
    # A float32 sum in another order than XLA's: equal up to rounding.
    text = _convolution(lhs, rhs, attrs, result, "f32", "f32")
    assert check_hlo(text) == []
    inputs = [RNG.standard_normal(shape).astype(np.float32) for shape in (lhs, rhs)]
    ours = evaluate(parse_hlo(text, "k.hlo"), inputs)
    (theirs,) = run_hlo(text, inputs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_an_int8_convolution_to_s8_wraps_as_xla_does():
    text = _convolution([2, 8, 8, 4], [3, 3, 4, 6], "window={size=3x3 pad=1_1x1_1}, "
                        "dim_labels=b01f_01io->b01f", [2, 8, 8, 6], "s8", "s8")
    _agree(text, [_ints(np.int8, (2, 8, 8, 4)), _ints(np.int8, (3, 3, 4, 6))])


def test_a_bf16_convolution_accumulates_in_f32_and_rounds_once_as_xla_does():
    text = _convolution([2, 8, 8, 16], [3, 3, 16, 5], "window={size=3x3 pad=1_1x1_1}, "
                        "dim_labels=b01f_01io->b01f", [2, 8, 8, 5], "bf16", "bf16")
    inputs = [RNG.standard_normal(shape).astype(BF16) for shape in ((2, 8, 8, 16), (3, 3, 16, 5))]
    _agree(text, inputs, exact=False)


def test_the_checker_accepts_convolutions_as_jax_lowers_them():
    x, w = jnp.zeros((2, 8, 8, 4), jnp.int8), jnp.zeros((3, 3, 2, 6), jnp.int8)

    def program(x, w):
        return lax.conv_general_dilated(
            x, w, (2, 1), ((1, -1), (0, 2)), lhs_dilation=(1, 2), rhs_dilation=(2, 1),
            dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2,
            preferred_element_type=jnp.int32)

    text = jax.jit(program).lower(x, w).as_text(dialect="hlo")
    assert " convolution(" in text and "feature_group_count=2" in text, text
    assert check_hlo(text) == []


# -- windowed reductions ----------------------------------------------------------------------

def _windowed(x: np.ndarray, init, reducer, window, strides, padding, **dilation) -> str:
    args = [jax.ShapeDtypeStruct(x.shape, x.dtype)]
    return jax.jit(lambda v: lax.reduce_window(v, np.asarray(init, x.dtype), reducer, window,
                                               strides, padding, **dilation)).lower(
        *args).as_text(dialect="hlo")


WINDOWS = [  # (window, strides, padding, dilations)
    ((1, 2, 2, 1), (1, 2, 2, 1), "VALID", {}),
    ((1, 3, 3, 1), (1, 2, 2, 1), "SAME", {}),
    ((1, 2, 2, 1), (1, 1, 1, 1), "VALID", {"window_dilation": (1, 2, 1, 1)}),
    ((1, 2, 1, 1), (1, 1, 1, 1), ((0, 0), (1, 0), (0, 0), (0, 0)),
     {"base_dilation": (1, 2, 1, 1)}),
]


@pytest.mark.parametrize("window, strides, padding, dilation", WINDOWS,
                         ids=["pool", "same", "window-dilated", "base-dilated"])
@pytest.mark.parametrize("name, dtype", [("f32", np.float32), ("s8", np.int8)],
                         ids=["f32", "s8"])
def test_a_windowed_maximum_agrees_with_xla_exactly(window, strides, padding, dilation, name,
                                                     dtype):
    x = _floats(dtype, (2, 7, 6, 3)) if name == "f32" else _ints(dtype, (2, 7, 6, 3))
    lowest = -np.inf if name == "f32" else np.iinfo(dtype).min
    _agree(_windowed(x, lowest, lax.max, window, strides, padding, **dilation), [x])


def test_a_windowed_integer_sum_wraps_as_xla_does():
    x = _ints(np.int32, (3, 9, 5))
    _agree(_windowed(x, 0, lax.add, (1, 3, 2), (1, 2, 1), "SAME"), [x])


def test_a_cumulative_sum_folds_in_index_order_as_xla_does():
    x = _floats(np.float32, (4, 8))
    text = jax.jit(lambda v: jnp.cumsum(v, axis=1)).lower(x).as_text(dialect="hlo")
    _agree(text, [x], exact=False)
