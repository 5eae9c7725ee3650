"""act_backend.jax.check's measure: distances in ulps of the result's element type, and
exact differences for integers."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from act_backend.jax.check import difference, ulp_distance, ulp_of_largest

BF16 = ml_dtypes.bfloat16


def bf16_bits(*bits: int) -> np.ndarray:
    return np.array(bits, np.uint16).view(BF16)


@pytest.mark.parametrize(("a", "b", "ulps"), [
    (bf16_bits(0x3F80), bf16_bits(0x3F80), 0),           # 1.0 and 1.0
    (bf16_bits(0x3F80), bf16_bits(0x3F81), 1),           # 1.0 and the next bf16 up
    (bf16_bits(0x3F80), bf16_bits(0x3F7F), 1),           # 1.0 and the next bf16 down
    (bf16_bits(0x0000), bf16_bits(0x8000), 0),           # 0.0 and -0.0
    (bf16_bits(0x0001), bf16_bits(0x8001), 2),           # smallest subnormals across zero
    (bf16_bits(0x7F7F), bf16_bits(0x7F80), 1),           # largest finite and infinity
    (bf16_bits(0x7FC0), bf16_bits(0x7FC0), 0),           # NaN and NaN
    (bf16_bits(0x7FC0), bf16_bits(0x3F80), math.inf),    # NaN and 1.0
    (np.array([1.0], np.float32), np.array([np.nextafter(np.float32(1), np.float32(2))]), 1),
    (np.array([-2.0], np.float32), np.array([np.nextafter(np.float32(-2), np.float32(0))]), 1),
    (np.array([1.0]), np.array([1.0 + 2.0**-52]), 1),
    (np.array([1.0]), np.array([-1.0]), 2 * 0x3FF0000000000000),
])
def test_ulp_distance(a, b, ulps):
    assert ulp_distance(np.asarray(a), np.asarray(b, dtype=np.asarray(a).dtype))[0] == ulps


def test_the_largest_difference_and_where_it_is():
    expected = bf16_bits(0x3F80, 0x4000, 0x4040)            # 1, 2, 3
    actual = bf16_bits(0x3F80, 0x4003, 0x4041)
    diff = difference(0, expected.reshape(1, 3), actual.reshape(1, 3))
    assert (diff.max_ulps, diff.where) == (3.0, (0, 1))
    assert "max 3 ulps at [0, 1]" in str(diff)


@pytest.mark.parametrize(("expected", "actual", "largest"), [
    (np.array([1, 2, 3], np.int8), np.array([1, 2, 3], np.int8), 0.0),
    (np.array([1, 2, 3], np.int8), np.array([1, -2, 3], np.int8), 4.0),
    (np.array([-128], np.int8), np.array([127], np.int8), 255.0),
    (np.array([2**63 - 1], np.int64), np.array([-(2**63)], np.int64), float(2**64 - 1)),
    (np.array([True, False]), np.array([True, True]), 1.0),
])
def test_integers_are_compared_exactly(expected, actual, largest):
    assert difference(0, expected, actual).max_ulps == largest


@pytest.mark.parametrize(("values", "ulp"), [
    (bf16_bits(0x3F80), 2.0**-7),                              # 1.0: 8 significant bits
    (bf16_bits(0x3F80, 0xC080), 2.0**-5),                      # -4.0 is the largest magnitude
    (np.array([0.0], np.float32), 2.0**-149),                  # zero: the smallest subnormal
    (np.array([3.0, np.inf], np.float32), 2.0**-22),           # infinities are left out
])
def test_the_ulp_of_the_largest_magnitude(values, ulp):
    assert ulp_of_largest(values) == ulp


def test_a_sign_change_near_zero_is_far_in_ulps_but_near_in_ulps_of_the_largest():
    expected = np.array([1.0, -2.0**-10], np.float32).astype(BF16)
    actual = np.array([1.0, 2.0**-10], np.float32).astype(BF16)
    diff = difference(0, expected, actual)
    assert diff.max_ulps == 2 * 0x3A80  # both sides of zero: twice the bits of 2**-10
    assert diff.max_abs == 2.0**-9 and diff.max_abs_ulps_of_largest == 0.25


def test_equal_results_have_no_place_of_difference():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    diff = difference(0, a, a.copy())
    assert (diff.max_ulps, diff.max_abs, diff.where) == (0.0, 0.0, None)


def test_results_of_different_types_are_an_error():
    with pytest.raises(ValueError, match="result 0: JAX gives float32"):
        difference(0, np.zeros(2, np.float32), np.zeros(2, BF16))
