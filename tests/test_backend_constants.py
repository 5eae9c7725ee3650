"""Constants end to end: a kernel multiplying by a literal matrix compiles on QKV with the
literal placed in HBM by the assembly's constant list, and simulates to the kernel's result."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from helpers.examples import compile_kernel, instruction_calls, parse_kernel_file
from helpers.oracle_harness import bf16_tolerance, run_assembly

from act_backend.kernel import evaluate

pytestmark = pytest.mark.slow

KERNEL = Path(__file__).resolve().parent / "kernels" / "matmul_by_constant.hlo"


@pytest.fixture(scope="module")
def compiled(example_build, tmp_path_factory):
    build = example_build("QKV")
    out = tmp_path_factory.mktemp("constants") / "matmul_by_constant.py"
    run = compile_kernel(build.backend, KERNEL, out)
    assert run.returncode == 0, run.stderr
    return build, out


def test_the_literal_is_loaded_from_the_constant_list(compiled):
    _, asm = compiled
    calls = instruction_calls(asm)
    assert sorted(calls) == ["gemm", "load_rm", "load_rm", "mov", "store_rm"], calls
    assert "'value': jnp.full((64, 64), 0.5, dtype=jnp.bfloat16)" in asm.read_text()


def test_the_product_with_the_literal_matches_the_reference(compiled):
    build, asm = compiled
    a = np.random.default_rng(7).uniform(-1.0, 1.0, size=(64, 64)).astype(ml_dtypes.bfloat16)
    [out] = run_assembly(build.oracle_dir, asm, [a])
    reference = evaluate(parse_kernel_file(KERNEL), [a])
    assert out.shape == (64, 64) and out.dtype == reference.dtype
    diff = np.max(np.abs(out.astype(np.float32) - reference.astype(np.float32)))
    assert diff <= bf16_tolerance(reference), f"max |compiled - reference| = {diff}"
    # Zeros where the constant should be would give an all-zero result.
    assert np.max(np.abs(out.astype(np.float32))) > 0
