"""Kernels beyond the examples' attention, compiled by the generated backends: each compiled
kernel is simulated by the generated oracle and held to the NumPy reference of its HLO; a
kernel the ISA cannot express is refused with a message naming the operation."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.examples import ROOT, compile_kernel, instruction_calls, parse_kernel_file
from helpers.oracle_harness import bf16_tolerance, run_assembly

from act_backend.kernel import evaluate

pytestmark = pytest.mark.slow

KERNELS = ROOT / "tests" / "kernels"

# (accelerator, kernel file, instructions expected, tolerance in bf16 ulps of the largest
# reference magnitude)
CASES = [
    ("QKV", "attention_jax.hlo", 9, 2),       # JAX's own printing, Q.K^T through dot dims
    ("QKV_new", "attention_jax.hlo", 10, 2),
    ("QKV", "qkt_dimension_numbers.hlo", 5, 2),  # load_rm Q, load_cm K, gemm, mov, store_rm
    ("QKV_new", "qkt_dimension_numbers.hlo", 6, 2),
    ("QKV", "matmul.hlo", 5, 2),
    # Scores divided by 8 are scores times 1/8, bit for bit: one more gemm with I/8. Its
    # softmax's row sums differ from the reference's by their order, as softmax's below.
    ("QKV", "attention_scaled.hlo", 12, 4),
    # A bf16 row sum of 64 terms depends on the order of the additions (XLA on the CPU adds
    # two halves, the reference adds in index order) by a few ulps of the sum, and softmax
    # divides every element of the row by it; nothing downstream averages that out.
    ("Vec", "softmax.hlo", 3, 4),             # load_2, softmax, store_2
    # QKV brings HBM data into d2 only through gemm: the input passes through it as x.I.
    ("QKV", "softmax.hlo", 6, 4),             # load_rm x, load_rm I, gemm, softmax, mov, store_rm
    # Lanes' semantics are written in TAIDL-TO's dialect (an init-less reduce, `%max_bf16`,
    # a backquoted float literal, select_lt).
    ("Lanes", "row_max.hlo", 3, 0),           # vload, vrowmax, vstore
    ("Lanes", "exp_quarter.hlo", 4, 2),       # vload, vexp, vquarter, vstore
    ("Lanes", "relu_select.hlo", 3, 0),       # vload, vrelu, vstore
]


def random_inputs(module, seed: int) -> list[np.ndarray]:
    """Seeded bf16 inputs in the range where the kernels' bf16 arithmetic is meaningful."""
    from act_backend.hlo.dtypes import numpy_dtype

    rng = np.random.default_rng(seed)
    scale = 64 ** -0.25  # dot products of 64 terms then have a standard deviation near 1
    return [rng.normal(0.0, scale, p.type.shape).astype(numpy_dtype(p.type.dtype))
            for p in module.entry.parameters()]


@pytest.mark.parametrize(("accelerator", "kernel", "count", "ulps"), CASES,
                         ids=[f"{a.lower()}-{k.removesuffix('.hlo')}" for a, k, _, _ in CASES])
def test_kernel_compiles_and_matches_the_numpy_reference(example_build, tmp_path, accelerator,
                                                         kernel, count, ulps):
    build = example_build(accelerator)
    asm = tmp_path / "kernel.py"
    run = compile_kernel(build.backend, KERNELS / kernel, asm)
    assert run.returncode == 0, run.stderr
    assert len(instruction_calls(asm)) == count, instruction_calls(asm)

    module = parse_kernel_file(KERNELS / kernel)
    inputs = random_inputs(module, seed=7)
    [out] = run_assembly(build.oracle_dir, asm, inputs)
    reference = evaluate(module, inputs)
    assert out.shape == reference.shape and out.dtype == reference.dtype
    diff = float(np.max(np.abs(out.astype(np.float32) - reference.astype(np.float32))))
    tolerance = ulps / 2 * bf16_tolerance(reference)  # bf16_tolerance is two ulps
    assert diff <= tolerance, f"max |compiled - reference| = {diff} > {tolerance}"


def test_an_init_less_reduce_starts_from_the_identity_not_from_zero(example_build, tmp_path):
    """Lanes' vrowmax is a max reduce written without an init: on rows of negative numbers
    only -inf as the start gives each row's own maximum."""
    build = example_build("Lanes")
    asm = tmp_path / "kernel.py"
    assert compile_kernel(build.backend, KERNELS / "row_max.hlo", asm).returncode == 0
    module = parse_kernel_file(KERNELS / "row_max.hlo")
    negative = [-np.abs(x) - 1 for x in random_inputs(module, seed=3)]
    [out] = run_assembly(build.oracle_dir, asm, negative)
    assert np.array_equal(out, evaluate(module, negative))
    assert float(out.max()) <= -1  # a start of zero would give 0


@pytest.mark.parametrize(("accelerator", "kernel", "operation"), [
    ("QKV", "unsupported_tanh.hlo", "tanh"),
])
def test_a_kernel_the_isa_cannot_express_is_refused_by_name(example_build, tmp_path,
                                                            accelerator, kernel, operation):
    build = example_build(accelerator)
    asm = tmp_path / "kernel.py"
    run = compile_kernel(build.backend, KERNELS / kernel, asm)
    assert run.returncode == 1
    assert f"no instruction of {accelerator} computes `{operation}`" in run.stderr
    assert f"{kernel}:" in run.stderr
    assert not asm.exists()
