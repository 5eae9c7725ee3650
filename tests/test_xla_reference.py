"""The XLA reference the differential tests trust: HLO text run on XLA's CPU client gives
XLA's answer, for one output or several."""

from __future__ import annotations

import numpy as np
from helpers.differential import compare, refusal_line
from helpers.xla_reference import run_hlo

PRODUCT = """HloModule m

ENTRY %m (a: s32[2,3], b: s32[3,2]) -> s32[2,2] {
  %a = s32[2,3]{1,0} parameter(0)
  %b = s32[3,2]{1,0} parameter(1)
  ROOT %c = s32[2,2]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

TWO_RESULTS = """HloModule m

ENTRY %m (a: f32[3]) -> (f32[3], f32[3]) {
  %a = f32[3]{0} parameter(0)
  %n = f32[3]{0} negate(f32[3]{0} %a)
  %e = f32[3]{0} exponential(f32[3]{0} %a)
  ROOT %t = (f32[3]{0}, f32[3]{0}) tuple(f32[3]{0} %n, f32[3]{0} %e)
}
"""


def test_xla_runs_hlo_text_exactly():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(6, dtype=np.int32).reshape(3, 2) - 2
    (out,) = run_hlo(PRODUCT, [a, b])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, a @ b)


def test_a_tuple_root_gives_each_result():
    a = np.array([0.0, 1.0, -2.0], np.float32)
    neg, exp = run_hlo(TWO_RESULTS, [a])
    np.testing.assert_array_equal(neg, -a)
    np.testing.assert_allclose(exp, np.exp(a), rtol=1e-6)


def test_comparison_is_exact_for_integers_and_two_ulps_for_floats():
    assert compare(np.array([1, 2]), np.array([1, 2])) == (False, 0.0)
    assert compare(np.array([1, 2]), np.array([1, 3]))[0]
    x = np.array([1.0, 100.0], np.float32)
    assert not compare(x + np.float32(0.5), x)[0]     # 2 ulps of 100 in bf16 is 1.0
    assert compare(x + np.float32(1.5), x)[0]
    assert compare(np.array([np.nan]), np.array([1.0]))[0]


def test_refusals_are_grouped_without_their_position():
    line = ("error: /x/k1.hlo:17: no instruction of QKV computes `exponential` "
            "(%exp6 = bf16[64,64]{1,0} exponential(%p0))")
    assert refusal_line(line) == "no instruction of QKV computes `exponential`"
