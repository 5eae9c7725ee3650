"""The QKV differential fuzz, seeded: every random composition of products, transposed
products and row softmaxes over bf16[64,64] values compiles, and its simulation on the oracle
matches XLA's run of the same HLO text within two bf16 ulps.

QKV can compute every such composition: a softmax of a value the matrix unit did not produce
passes through it as a product with the identity, and values that do not fit the on-chip
buffers together are spilled to HBM. The long campaign is tests/benchmarks/fuzz_campaign.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.compositions import random_composition, random_inputs
from helpers.differential import check_kernel, compare

pytestmark = pytest.mark.slow

# A seed whose set holds both obstacles: 12 softmaxes of values the matrix unit did not
# produce and 2 kernels whose values do not fit on chip together without spilling.
SEED = 24
KERNELS = 32


def seeded_set(seed: int = SEED, kernels: int = KERNELS):
    """(name, composition, inputs) of each kernel, drawn as the campaign draws them."""
    rng = np.random.default_rng(seed)
    for k in range(kernels):
        inputs = int(rng.integers(1, 4))
        steps = int(rng.integers(max(1, inputs - 1), 6))
        kernel = random_composition(rng, steps, inputs, name=f"fuzz{k}")
        yield f"fuzz{k}", kernel, random_inputs(rng, inputs)


def test_every_composition_compiles_and_matches_xla(example_build, tmp_path):
    build = example_build("QKV")
    failures = []
    for name, kernel, inputs in seeded_set():
        outcome = check_kernel(build, kernel.text, inputs, tmp_path, name)
        if not outcome.compiled or outcome.wrong:
            failures.append(f"{name} {' '.join(kernel.steps)}: {outcome.summary}")
    assert not failures, "\n".join(failures)


def test_the_seeded_set_exercises_every_operation():
    # The set is only worth its time if it holds every operation the compositions draw.
    seen = {step for _, kernel, _ in seeded_set() for step in kernel.steps}
    assert seen == {"dot", "dot_transpose", "dot_rhs_contracting_1", "softmax"}


def test_four_chained_products_whose_softmax_overflows_match_xla_nan_for_nan(example_build,
                                                                             tmp_path):
    # fuzz236 of the campaign's seed 0: products grow to about 480 before a softmax, so most
    # exponentials overflow and a row's inf / inf is NaN. The program computes every product
    # bit for bit as XLA does, and its NaNs stand where XLA's do.
    *_, (name, kernel, inputs) = seeded_set(seed=0, kernels=237)
    assert kernel.steps == ("dot", "dot_transpose", "dot_transpose", "dot_transpose", "softmax")
    outcome = check_kernel(example_build("QKV"), kernel.text, inputs, tmp_path, name)
    assert outcome.compiled and not outcome.wrong, outcome.summary


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(("ours", "xla", "wrong"), [
    ([1.0, NAN, INF], [1.0, NAN, INF], False),   # NaN for NaN, the same infinity
    ([1.0, NAN, 2.0], [1.0, 2.0, NAN], True),    # NaNs elsewhere
    ([1.0, 0.0], [1.0, NAN], True),              # a NaN XLA has and we do not
    ([INF, 1.0], [-INF, 1.0], True),             # an infinity of the other sign
    ([INF, 1.0], [3.0e38, 1.0], True),           # an overflow XLA does not have
    ([1.0, 100.0], [1.0078125, 100.0], False),   # within two bf16 ulps of the largest
    ([1.0, 100.0], [3.0, 100.0], True),
])
def test_the_comparison_with_xla(ours, xla, wrong):
    assert compare(np.array(ours, np.float32), np.array(xla, np.float32))[0] is wrong
