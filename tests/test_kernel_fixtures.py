"""The kernel fixtures are what their script prints, stay in bf16, and compute what the lax
programs they came from compute."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import ml_dtypes
import numpy as np
import pytest

from act_backend.kernel import check_hlo, evaluate, parse_hlo

KERNELS = Path(__file__).resolve().parent / "kernels"


def _load_script():
    spec = importlib.util.spec_from_file_location("make_kernels", KERNELS / "make_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _load_script()


@pytest.mark.parametrize("file_name", sorted(MAKE.KERNELS))
def test_a_printed_fixture_is_what_the_script_prints(file_name):
    if jax.__version__ != "0.10.2":
        pytest.skip(f"the fixtures were printed by jax 0.10.2, this is {jax.__version__}")
    fn, arity = MAKE.KERNELS[file_name]
    assert (KERNELS / file_name).read_text() == MAKE.hlo_text(fn, arity)


@pytest.mark.parametrize("file_name", sorted(MAKE.KERNELS))
def test_a_printed_fixture_stays_in_bf16(file_name):
    text = (KERNELS / file_name).read_text()
    assert " convert(" not in text and "f32" not in text
    assert check_hlo(text, file_name) == []


@pytest.mark.parametrize("file_name", sorted(MAKE.KERNELS))
def test_a_printed_fixture_computes_its_program(file_name):
    fn, arity = MAKE.KERNELS[file_name]
    rng = np.random.default_rng(3)
    inputs = [(rng.standard_normal((64, 64)) * 64 ** -0.25).astype(ml_dtypes.bfloat16)
              for _ in range(arity)]
    ours = evaluate(parse_hlo((KERNELS / file_name).read_text()), inputs).astype(np.float32)
    theirs = np.asarray(jax.jit(fn)(*inputs)).astype(np.float32)
    # Row sums are folded in another order than XLA's; everything else rounds identically.
    tolerance = 0 if file_name in ("matmul.hlo", "unsupported_tanh.hlo") else 2 ** -7
    assert np.abs(ours - theirs).max() <= tolerance * max(1.0, float(np.abs(theirs).max()))


def test_the_tanh_fixture_uses_tanh_and_the_dimension_numbers_fixture_no_transpose():
    tanh = parse_hlo((KERNELS / "unsupported_tanh.hlo").read_text())
    assert tanh.entry.root.opcode == "tanh"
    qkt = parse_hlo((KERNELS / "qkt_dimension_numbers.hlo").read_text())
    assert [i.opcode for i in qkt.entry.instructions] == ["parameter", "parameter", "dot"]
