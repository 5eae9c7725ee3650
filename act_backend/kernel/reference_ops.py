"""NumPy implementations of single HLO operators, as XLA defines them on the CPU.

Each function takes NumPy arrays holding HLO element types (bf16 through ml_dtypes) and
returns the unrounded result; ``act_backend.kernel.reference`` rounds it to the instruction's
element type. Narrow floats (bf16, f16) are computed in float32, as XLA's CPU backend does
after upcasting them; integers wrap; a dot or a convolution accumulates in float32 (int64
for integers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np

from act_backend.hlo.dtypes import numpy_dtype

_NARROW_FLOATS = (np.dtype(np.float16), numpy_dtype("bf16"))


def is_float(x: np.ndarray) -> bool:
    return x.dtype in _NARROW_FLOATS or np.issubdtype(x.dtype, np.floating)


def widen(x: np.ndarray) -> np.ndarray:
    """The array in the type its arithmetic is done in: float32 for bf16 and f16."""
    return x.astype(np.float32) if x.dtype in _NARROW_FLOATS else x


# -- elementwise ---------------------------------------------------------------------------

def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _bits_of(x: np.ndarray) -> tuple[np.ndarray, int]:
    """The elements' bit patterns as unsigned integers of their width, and the width."""
    width = x.dtype.itemsize * 8
    return x.view(np.dtype(f"u{x.dtype.itemsize}")), width


def _popcnt(x: np.ndarray) -> np.ndarray:
    bits, width = _bits_of(x)
    count = np.zeros(x.shape, dtype=x.dtype)
    for k in range(width):
        count += ((bits >> k) & 1).astype(x.dtype)
    return count


def _count_leading_zeros(x: np.ndarray) -> np.ndarray:
    bits, width = _bits_of(x)
    count = np.full(x.shape, width, dtype=np.int64)
    for k in range(width):  # the highest set bit decides
        count = np.where((bits >> k) & 1 == 1, width - 1 - k, count)
    return count.astype(x.dtype)


def _erf(x: np.ndarray) -> np.ndarray:
    return _erf64(x.astype(np.float64)).astype(x.dtype)


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs,
    "cbrt": np.cbrt,
    "ceil": np.ceil,
    "copy": lambda x: x.copy(),
    "cosine": np.cos,
    "count_leading_zeros": _count_leading_zeros,
    "erf": _erf,
    "exponential": np.exp,
    "exponential_minus_one": np.expm1,
    "floor": np.floor,
    "log": np.log,
    "log_plus_one": np.log1p,
    "logistic": _logistic,
    "negate": np.negative,
    "not": _not,
    "popcnt": _popcnt,
    "round_nearest_afz": _round_half_away,
    "round_nearest_even": np.rint,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sign": np.sign,
    "sine": np.sin,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": np.tanh,
}


def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """XLA's reduce-precision on the bits of ``x``'s own float type: the mantissa rounded to
    ``mantissa_bits`` (to nearest even), then exponents beyond the reduced range become
    infinity and those below its smallest normal one become zero (with their sign); NaN
    stays NaN."""
    info = ml_dtypes.finfo(x.dtype)
    src_mantissa, src_exponent = info.nmant, info.nexp
    bits, width = _bits_of(x)
    wide = bits.astype(np.uint64)
    one = np.uint64(1)
    if mantissa_bits < src_mantissa:
        shift = np.uint64(src_mantissa - mantissa_bits)
        last = one << shift
        bias = (last >> one) - one + ((wide & last) >> shift)
        wide = (wide + bias) & ~(last - one) & np.uint64((1 << width) - 1)
    if exponent_bits < src_exponent:
        sign = wide & np.uint64(1 << (width - 1))
        exp_mask = np.uint64(((1 << src_exponent) - 1) << src_mantissa)
        src_bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = wide & exp_mask
        overflow = exponent > np.uint64((src_bias + reduced_bias) << src_mantissa)
        underflow = exponent <= np.uint64((src_bias - reduced_bias) << src_mantissa)
        wide = np.where(overflow, sign | exp_mask, np.where(underflow, sign, wide))
    result = wide.astype(bits.dtype).view(x.dtype)
    return np.where(np.isnan(x), x, result)


# Unary operators whose meaning takes attributes: (operand, attributes) -> result.
UNARY_WITH_ATTRIBUTES: dict[str, Callable[[np.ndarray, dict], np.ndarray]] = {
    "reduce_precision": lambda x, attrs: reduce_precision(x, attrs["exponent_bits"],
                                                          attrs["mantissa_bits"]),
}



def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division (truncating); x/0 is all ones and MIN/-1 is MIN, as XLA's CPU gives."""
    signed = np.issubdtype(a.dtype, np.signedinteger)
    overflow = (a == np.iinfo(a.dtype).min) & (b == -1) if signed else np.zeros(b.shape, bool)
    safe = np.where((b == 0) | overflow, 1, b).astype(a.dtype)
    quotient = a // safe
    if signed:
        rest = a - quotient * safe
        quotient = np.where((rest != 0) & ((a < 0) != (safe < 0)), quotient + 1, quotient)
    quotient = np.where(overflow, a, quotient)
    return np.where(b == 0, np.array(-1).astype(a.dtype), quotient).astype(a.dtype)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a / b if is_float(a) else _int_divide(a, b)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C remainder (sign of the dividend); x rem 0 is x."""
    if is_float(a):
        return np.fmod(a, b)
    # x rem -1 is 0 for every x; dividing by 1 instead avoids MIN rem -1 overflowing.
    trivial = (b == -1) if np.issubdtype(a.dtype, np.signedinteger) else np.zeros(b.shape, bool)
    safe = np.where((b == 0) | trivial, 1, b).astype(a.dtype)
    return np.where(b == 0, a, np.fmod(a, safe)).astype(a.dtype)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if is_float(a):
        return np.power(a, b)
    # A negative integer exponent gives 0, except for bases 1 and -1.
    result = np.power(a, np.maximum(b, 0).astype(b.dtype))
    odd = (b % 2) != 0
    negative_exp = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
    return np.where(b < 0, negative_exp, result).astype(a.dtype)


def _shift(kind: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """XLA's shifts: the amount is read as unsigned; an amount of the width or more shifts
    every bit out (sign bits in, for the arithmetic right shift)."""
    def shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        bits, width = _bits_of(x)
        amount = _bits_of(y)[0].astype(np.uint64)
        out = np.minimum(amount, width - 1).astype(bits.dtype)
        if kind == "left":
            value = bits << out
        elif kind == "logical":
            value = bits >> out
        else:
            signed = bits.view(np.dtype(f"i{x.dtype.itemsize}"))
            return (signed >> out.astype(signed.dtype)).view(x.dtype)
        return np.where(amount >= width, 0, value).astype(bits.dtype).view(x.dtype)
    return shift


BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "and": np.bitwise_and,
    "atan2": np.arctan2,
    "divide": _divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "multiply": np.multiply,
    "or": np.bitwise_or,
    "power": _power,
    "remainder": _remainder,
    "shift_left": _shift("left"),
    "shift_right_arithmetic": _shift("arithmetic"),
    "shift_right_logical": _shift("logical"),
    "subtract": np.subtract,
    "xor": np.bitwise_xor,
}

COMPARE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
}


# -- conversions ---------------------------------------------------------------------------

def convert(x: np.ndarray, dst: str) -> np.ndarray:
    """XLA's convert: floats to integers truncate and saturate (NaN -> 0), to pred is != 0."""
    target = numpy_dtype(dst)
    if dst == "pred":
        return x != 0
    if is_float(x) and np.issubdtype(target, np.integer):
        info = np.iinfo(target)
        f = np.trunc(x.astype(np.float64))
        low, high = f <= info.min, f >= float(info.max)
        inside = ~(low | high | np.isnan(f))
        result = np.zeros(f.shape, dtype=target)
        result[low] = info.min
        result[high] = info.max
        result[inside] = f[inside].astype(target)
        return result
    return x.astype(target)


def bitcast_convert(x: np.ndarray, dst: str, shape: tuple[int, ...]) -> np.ndarray:
    """Reinterpret the bytes: a narrower type adds a last dimension, a wider one removes it
    (the machine's byte order, little-endian on every platform XLA targets)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    return flat.view(numpy_dtype(dst)).reshape(shape)


# -- data movement -------------------------------------------------------------------------

def broadcast(x: np.ndarray, dims: Sequence[int], shape: tuple[int, ...]) -> np.ndarray:
    """Operand dimension i becomes result dimension dims[i]; size-1 dimensions stretch."""
    placed = [1] * len(shape)
    for i, d in enumerate(dims):
        placed[d] = x.shape[i]
    # Put the operand's dimensions in the order they take in the result, then stretch.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    return np.broadcast_to(np.transpose(x, order).reshape(placed), shape).copy()


def slice_(x: np.ndarray, ranges: Sequence[Sequence[int]]) -> np.ndarray:
    return x[tuple(slice(start, limit, stride) for start, limit, stride in ranges)].copy()


def pad(x: np.ndarray, value: np.ndarray, config: Sequence[Sequence[int]]) -> np.ndarray:
    """XLA's pad: ``interior`` copies of the value between neighbours, then ``low`` before and
    ``high`` after each dimension, a negative ``low`` or ``high`` cutting instead."""
    spread = [size + max(size - 1, 0) * interior
              for size, (_, _, interior) in zip(x.shape, config, strict=True)]
    grown = [max(low, 0) + n + max(high, 0) for n, (low, high, _) in zip(spread, config,
                                                                       strict=True)]
    out = np.full(grown, value, dtype=x.dtype)
    out[tuple(slice(max(low, 0), max(low, 0) + n, interior + 1)
              for n, (low, _, interior) in zip(spread, config, strict=True))] = x
    return out[tuple(slice(max(-low, 0), g - max(-high, 0))
                     for g, (low, high, _) in zip(grown, config, strict=True))].copy()


def clamp_starts(starts: Sequence[np.ndarray], operand: tuple[int, ...],
                 sizes: tuple[int, ...]) -> list[int]:
    """XLA clamps dynamic start indices so that the window stays inside the operand."""
    return [min(max(int(s), 0), dim - size) for s, dim, size in zip(starts, operand, sizes,
                                                                     strict=True)]


def dynamic_slice(x: np.ndarray, starts: Sequence[np.ndarray],
                  sizes: Sequence[int]) -> np.ndarray:
    begin = clamp_starts(starts, x.shape, tuple(sizes))
    return x[tuple(slice(b, b + s) for b, s in zip(begin, sizes, strict=True))].copy()


def dynamic_update_slice(x: np.ndarray, update: np.ndarray,
                         starts: Sequence[np.ndarray]) -> np.ndarray:
    begin = clamp_starts(starts, x.shape, update.shape)
    result = x.copy()
    result[tuple(slice(b, b + s) for b, s in zip(begin, update.shape, strict=True))] = update
    return result


def iota(shape: tuple[int, ...], dim: int, dtype: str) -> np.ndarray:
    line = np.arange(shape[dim]).reshape([-1 if k == dim else 1 for k in range(len(shape))])
    return np.broadcast_to(line, shape).astype(numpy_dtype(dtype))


# -- dot -----------------------------------------------------------------------------------

def _accumulator(lhs: np.ndarray, rhs: np.ndarray) -> np.dtype:
    if np.float64 in (lhs.dtype, rhs.dtype):
        return np.dtype(np.float64)
    if is_float(lhs) or is_float(rhs):
        return np.dtype(np.float32)
    return np.dtype(np.int64)


def dot(lhs: np.ndarray, rhs: np.ndarray, lhs_contracting: Sequence[int],
        rhs_contracting: Sequence[int], lhs_batch: Sequence[int],
        rhs_batch: Sequence[int]) -> np.ndarray:
    """dot_general: result dimensions are batch, then lhs free, then rhs free."""
    lhs_free = [d for d in range(lhs.ndim) if d not in lhs_batch and d not in lhs_contracting]
    rhs_free = [d for d in range(rhs.ndim) if d not in rhs_batch and d not in rhs_contracting]
    acc = _accumulator(lhs, rhs)
    left = np.transpose(lhs, [*lhs_batch, *lhs_free, *lhs_contracting]).astype(acc)
    right = np.transpose(rhs, [*rhs_batch, *rhs_contracting, *rhs_free]).astype(acc)
    batch_shape = [lhs.shape[d] for d in lhs_batch]
    m = math.prod(lhs.shape[d] for d in lhs_free)
    k = math.prod(lhs.shape[d] for d in lhs_contracting)
    n = math.prod(rhs.shape[d] for d in rhs_free)
    b = math.prod(batch_shape)
    product = np.matmul(left.reshape(b, m, k), right.reshape(b, k, n))
    return product.reshape([*batch_shape, *(lhs.shape[d] for d in lhs_free),
                            *(rhs.shape[d] for d in rhs_free)])


# -- convolution ---------------------------------------------------------------------------

def convolution(lhs: np.ndarray, rhs: np.ndarray, window: dict[str, list],
                labels: Sequence[str], feature_groups: int = 1,
                batch_groups: int = 1) -> np.ndarray:
    """XLA's convolution, with ``window`` as the parser decodes it (absent fields take XLA's
    defaults) and ``labels`` the (lhs, rhs, out) dim_labels.

    The lhs is dilated (lhs_dilate - 1 zeros between neighbours) and padded (a negative pad
    cuts), the kernel reversed where rhs_reversal says and dilated by rhs_dilate, and the
    sum over the window taken one kernel position at a time: every output position's
    strided slice of the input times the kernel's [output feature, input feature] matrix at
    that position. Feature groups pair the g-th block of lhs features with the g-th block
    of rhs output features; batch groups pair the g-th block of the lhs batch with it.
    """
    lhs_l, rhs_l, out_l = labels
    n = len(lhs_l) - 2
    spatial = [str(d) for d in range(n)]
    acc = _accumulator(lhs, rhs)
    # Canonical layouts: lhs [batch, feature, spatial...], rhs [out, in, spatial...].
    x = np.transpose(lhs, [lhs_l.index(c) for c in ["b", "f", *spatial]]).astype(acc)
    w = np.transpose(rhs, [rhs_l.index(c) for c in ["o", "i", *spatial]]).astype(acc)

    def field(key: str, default) -> list:
        return list(window.get(key, [default] * n))

    stride, pads = field("stride", 1), field("pad", (0, 0))
    lhs_dilate, rhs_dilate = field("lhs_dilate", 1), field("rhs_dilate", 1)
    reversed_dims = tuple(2 + d for d, r in enumerate(field("rhs_reversal", 0)) if r)
    if reversed_dims:
        w = np.flip(w, axis=reversed_dims)
    x = pad(x, np.zeros((), acc), [(0, 0, 0), (0, 0, 0), *(
        (low, high, dilate - 1) for (low, high), dilate in zip(pads, lhs_dilate, strict=True))])

    batch, features = x.shape[:2]
    outputs, inputs = w.shape[:2]
    kernel = w.shape[2:]
    out_sizes = []
    for size, k, s, r in zip(x.shape[2:], kernel, stride, rhs_dilate, strict=True):
        extent = (k - 1) * r + 1
        out_sizes.append(0 if size < extent else (size - extent) // s + 1)

    # One group axis g: lhs [g, batch, in, ...] against rhs [g, out / groups, in].
    groups = feature_groups * batch_groups
    x = x.reshape(batch_groups, batch // batch_groups, feature_groups, inputs, *x.shape[2:])
    x = x[:, :, 0] if batch_groups > 1 else np.moveaxis(x[0], 1, 0)
    w = w.reshape(groups, outputs // groups, inputs, *kernel)
    result = np.zeros((batch // batch_groups, groups, outputs // groups, *out_sizes), acc)
    for position in np.ndindex(*kernel):
        window_slice = tuple(
            slice(p * r, p * r + (o - 1) * s + 1, s) if o else slice(0, 0)
            for p, r, o, s in zip(position, rhs_dilate, out_sizes, stride, strict=True))
        taps = x[(slice(None), slice(None), slice(None), *window_slice)]
        result += np.einsum("gbi...,goi->bgo...", taps, w[(Ellipsis, *position)])
    result = result.reshape(batch // batch_groups, outputs, *out_sizes)
    canonical = {"b": 0, "f": 1, **{c: 2 + d for d, c in enumerate(spatial)}}
    return np.transpose(result, [canonical[c] for c in out_l])
