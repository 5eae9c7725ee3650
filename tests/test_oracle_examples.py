"""Hand-written attention kernels simulate correctly on the oracles of the example specs.

Each example spec is run in a temporary directory (its oracle only), the hand-written kernel
in tests/assembly is simulated on examples/<ex>/data/{Q,K,V}.dat, and the result is held to
the NumPy reference evaluation of examples/<ex>/kernels/attention.hlo within two bf16 ulps of
the largest magnitude in V.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.oracle_harness import (
    ASSEMBLY_DIR,
    EXAMPLES_DIR,
    bf16_tolerance,
    generate_example_oracle,
    load_bf16,
    load_kernel,
    load_oracle,
    run_assembly,
)

from act_backend.kernel import parse_hlo
from act_backend.kernel.reference import evaluate

CASES = [
    pytest.param("QKV", "qkv_attention.py", 9, id="qkv"),
    pytest.param("QKV_new", "qkv_new_attention.py", 10, id="qkv_new"),
]


def inputs(example):
    data = EXAMPLES_DIR / example / "data"
    return [load_bf16(data / f"{name}.dat", (64, 64)) for name in "QKV"]


def reference(example, args):
    path = EXAMPLES_DIR / example / "kernels" / "attention.hlo"
    module = parse_hlo(path.read_text(), str(path))
    return np.asarray(evaluate(module, args), dtype=np.float32)


@pytest.mark.parametrize("example, assembly, _count", CASES)
def test_attention_matches_the_hlo_reference(tmp_path, example, assembly, _count):
    oracle_dir = generate_example_oracle(EXAMPLES_DIR / example / f"{example}.py", tmp_path)
    args = inputs(example)
    (out,) = run_assembly(oracle_dir, ASSEMBLY_DIR / assembly, args)
    assert out.shape == (64, 64)
    expected = reference(example, args)
    error = np.max(np.abs(out.astype(np.float32) - expected))
    assert error <= bf16_tolerance(args[2]), f"max error {error} against the HLO reference"


@pytest.mark.parametrize("example, assembly, count", CASES)
def test_cost_is_the_number_of_instructions(tmp_path, example, assembly, count):
    oracle_dir = generate_example_oracle(EXAMPLES_DIR / example / f"{example}.py", tmp_path)
    kernel = load_kernel(load_oracle(oracle_dir), ASSEMBLY_DIR / assembly)
    assert kernel("cost")() == count


def test_a_wrong_kernel_differs_from_the_reference(tmp_path):
    # Guards the comparison itself: attention without the transpose of K must not pass.
    oracle_dir = generate_example_oracle(EXAMPLES_DIR / "QKV" / "QKV.py", tmp_path)
    wrong = tmp_path / "wrong.py"
    text = (ASSEMBLY_DIR / "qkv_attention.py").read_text()
    wrong.write_text(text.replace("api.load_cm(", "api.load_rm("))
    args = inputs("QKV")
    (out,) = run_assembly(oracle_dir, wrong, args)
    error = np.max(np.abs(out.astype(np.float32) - reference("QKV", args)))
    assert error > bf16_tolerance(args[2])
