"""The Gemmini example end to end: its JAX-printed int8 kernels compile, and the compiled
assembly, simulated on the generated oracle, equals XLA's own run of the same HLO exactly.
Every kernel of ``examples/Gemmini/kernels/`` is in the list.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.differential import check_kernel
from helpers.examples import ROOT, compile_kernel, instruction_calls, parse_kernel_file
from helpers.oracle_harness import load_kernel, load_oracle

from act_backend.hlo.dtypes import numpy_dtype

pytestmark = pytest.mark.slow

KERNELS = ROOT / "examples" / "Gemmini" / "kernels"

# kernel -> the instructions of the compiled assembly, in order
CASES = {
    "matmul_int8": ["mvin", "mvin", "matmul8", "mvout"],
    "matmul": ["mvin", "mvin", "matmul32", "mvout_acc"],
    "matmul_add": ["mvin", "mvin", "mvin_acc", "mac32", "mvout_acc"],
    "relu_matmul": ["mvin", "mvin", "matmul32", "mvout_acc_relu"],
    # jnp.clip through a call, inlined: the saturating store to int8
    "requantize": ["mvin", "mvin", "matmul32", "mvout_acc_s8"],
    "scale": ["mvin", "mvout"],
    # an add without a product: A.I + B on the multiply-accumulate, I loaded as a constant
    "add": ["mvin", "mvin", "mvin", "mac8", "mvout"],
    # a load scaled by -1
    "negate": ["mvin", "mvout"],
    # a product with the exchange matrix
    "reverse": ["mvin", "mvin", "matmul8", "mvout"],
    # the int8 column times a row of ones (both loaded), then A.B accumulated onto it
    "bias_column": ["mvin", "mvin", "matmul32", "mvin", "mvin", "mac32", "mvout_acc"],
    # an int32 column: written into each of the 16 columns of an HBM matrix by strided
    # stores, loaded as the matrix the multiply-accumulate adds to A.B
    "bias_column_int32": ["mvin", "mvin", "mvin_acc"] + ["mvout_acc_strided"] * 16
    + ["mvin_acc", "mac32", "mvout_acc"],
    # an int32 sum along rows: a product with a column of ones
    "row_sums": ["mvin", "mvin", "matmul32", "mvout_acc"],
    # Gemmini's only maximum is a store's ReLU: max(a, b) = b + relu(a - b) in int32, where
    # the difference of int8 values cannot overflow. a - b accumulated onto a widened a by
    # a product with -I; its ReLU stored and loaded back; b added by a product with I; the
    # result, an int8 value, narrowed by the saturating store
    "maximum": ["mvin", "mvin", "mvin_acc_s8", "mac32", "mvout_acc_relu", "mvin_acc", "mvin",
                "mac32", "mvout_acc_s8"],
    # min(a, b) = a - relu(a - b): the ReLU loaded back negated (scale -1)
    "minimum": ["mvin", "mvin", "mvin_acc_s8", "mac32", "mvout_acc_relu", "mvin_acc", "mvin",
                "mvin", "mac32", "mvout_acc_s8"],
    # clamp(lo, a, hi) = min(max(a, lo), hi), each as above, the maximum stored between
    "clamp": ["mvin", "mvin", "mvin_acc_s8", "mac32", "mvout_acc_relu", "mvin_acc", "mvin",
              "mac32", "mvout_acc_s8", "mvin", "mvin_acc", "mac32", "mvout_acc_relu",
              "mvin_acc", "mac32", "mvout_acc_s8"],
}


def test_every_example_kernel_is_checked():
    assert sorted(p.stem for p in KERNELS.glob("*.hlo")) == sorted(CASES)


def int8_inputs(name: str, seed: int) -> list[np.ndarray]:
    """Seeded inputs over the whole range of each parameter's type (int8 products wrap)."""
    module = parse_kernel_file(KERNELS / f"{name}.hlo")
    rng = np.random.default_rng(seed)
    out = []
    for p in module.entry.parameters():
        dtype = numpy_dtype(p.type.dtype)
        info = np.iinfo(dtype)
        low, high = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
        out.append(rng.integers(low, high, p.type.shape, endpoint=True).astype(dtype))
    return out


@pytest.fixture(scope="module")
def gemmini(example_build):
    return example_build("Gemmini")


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_compiles_and_equals_xla(gemmini, tmp_path, name):
    text = (KERNELS / f"{name}.hlo").read_text()
    for seed in (1, 2):
        outcome = check_kernel(gemmini, text, int8_inputs(name, seed), tmp_path, name)
        assert outcome.compiled, outcome.refusal
        assert not outcome.wrong and outcome.error == 0.0, outcome.summary
    assert instruction_calls(tmp_path / f"{name}.py") == CASES[name]


def test_a_scaled_load_takes_the_kernels_constant_and_plain_loads_scale_by_one(gemmini, tmp_path):
    for name, scales in (("scale", [3]), ("matmul", [1, 1])):
        asm = tmp_path / f"{name}.py"
        assert compile_kernel(gemmini.backend, KERNELS / f"{name}.hlo", asm).returncode == 0
        loads = [line for line in asm.read_text().splitlines() if "api.mvin(" in line]
        assert [int(line.split("scale=")[1].split(",")[0]) for line in loads] == scales


def test_loaded_scratchpad_blocks_start_at_multiples_of_16_rows(gemmini, tmp_path):
    # The spec constrains mvin with `@a.sp_addr % 16 == 0`: the allocator honours it.
    asm = tmp_path / "matmul_add.py"
    assert compile_kernel(gemmini.backend, KERNELS / "matmul_add.hlo", asm).returncode == 0
    rows = [int(line.split("sp_addr=")[1].split(")")[0]) for line in asm.read_text().splitlines()
            if "api.mvin(" in line]
    assert len(rows) == 2 and len(set(rows)) == 2 and all(r % 16 == 0 for r in rows), rows


def test_costs_are_the_table_costs_in_the_backend_and_the_oracle(gemmini, tmp_path):
    # Loads and stores cost 1 each; a product costs its row count, @c.DIM_I = 16.
    asm = tmp_path / "matmul.py"
    report = tmp_path / "report"
    done = compile_kernel(gemmini.backend, KERNELS / "matmul.hlo", asm, "--report-dir",
                          str(report))
    assert done.returncode == 0, done.stderr
    assert json.loads((report / "report.json").read_text())["chosen_cost"] == 1 + 1 + 16 + 1
    kernel = load_kernel(load_oracle(gemmini.oracle_dir), asm)
    assert kernel("cost")() == 19
