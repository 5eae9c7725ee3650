"""Tiling end to end: a product taller than QKV's 64-row matrix unit compiles, through views of
its operand's bytes and an output written tile by tile in place, and the simulated result is
the kernel's."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from helpers.examples import compile_kernel, instruction_calls, parse_kernel_file
from helpers.oracle_harness import bf16_tolerance, run_assembly

from act_backend.kernel import evaluate

pytestmark = pytest.mark.slow

KERNEL = Path(__file__).resolve().parent / "kernels" / "matmul_128x64.hlo"


def random_bf16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=shape).astype(ml_dtypes.bfloat16)


@pytest.fixture(scope="module")
def compiled(example_build, tmp_path_factory):
    build = example_build("QKV")
    out = tmp_path_factory.mktemp("tiling") / "matmul_128x64.py"
    run = compile_kernel(build.backend, KERNEL, out)
    assert run.returncode == 0, run.stderr
    return build, out


def test_a_128_row_product_runs_as_two_row_tiles(compiled):
    _, asm = compiled
    calls = instruction_calls(asm)
    # B once, then per 64-row tile of A: load, multiply, move out, store into place.
    assert len(calls) == 9, calls
    assert sum(c.startswith("gemm") for c in calls) == 2, calls


def test_the_tiled_product_matches_the_reference(compiled):
    build, asm = compiled
    rng = np.random.default_rng(20260)
    a = random_bf16(rng, (128, 64))
    b = random_bf16(rng, (64, 64))
    [out] = run_assembly(build.oracle_dir, asm, [a, b])
    reference = evaluate(parse_kernel_file(KERNEL), [a, b])
    assert out.shape == (128, 64) and out.dtype == reference.dtype
    diff = np.max(np.abs(out.astype(np.float32) - reference.astype(np.float32)))
    assert diff <= bf16_tolerance(reference), f"max |compiled - reference| = {diff}"
    # Both halves are written: a tile left out would show as zeros or stale bytes.
    for rows in (slice(0, 64), slice(64, 128)):
        half = np.abs(out[rows].astype(np.float32) - reference[rows].astype(np.float32))
        assert np.max(half) <= bf16_tolerance(reference)
