"""A differential fuzzing campaign: random compositions of products, transposed products and
row softmaxes over bf16[64,64] values, compiled by an example's backend, simulated on its
oracle and compared element by element with XLA's own run of the same HLO text.

Prints how many compiled, how many were wrong (beyond two bf16 ulps of the largest
magnitude), the refusals grouped by message, and the compile time. Exits 1 when any compiled
kernel was wrong.

    python tests/benchmarks/fuzz_campaign.py [--example QKV] [--kernels 250] [--seed 0]
        [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.compositions import random_composition, random_inputs  # noqa: E402
from helpers.differential import Tally, check_kernel  # noqa: E402
from helpers.examples import build_example  # noqa: E402


def draw_shape(rng: np.random.Generator) -> tuple[int, int]:
    """(inputs, steps): one to three inputs, and enough steps to use them all."""
    inputs = int(rng.integers(1, 4))
    return inputs, int(rng.integers(max(1, inputs - 1), 6))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default="QKV")
    parser.add_argument("--kernels", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="keep the kernels and assembly here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="act-fuzz-") as scratch:
        work = args.keep or Path(scratch)
        print(f"building the {args.example} example ...", flush=True)
        build = build_example(args.example, work / "build")
        rng = np.random.default_rng(args.seed)
        tally = Tally()
        for k in range(args.kernels):
            inputs, steps = draw_shape(rng)
            kernel = random_composition(rng, steps, inputs, name=f"fuzz{k}")
            started = time.perf_counter()
            outcome = check_kernel(build, kernel.text, random_inputs(rng, inputs),
                                   work / "kernels", f"fuzz{k}")
            tally.record(outcome, time.perf_counter() - started,
                         f"fuzz{k} {' '.join(kernel.steps)}: {outcome.summary}")
            if (k + 1) % 25 == 0:
                print(f"  {k + 1}/{args.kernels} kernels", flush=True)

    total = args.kernels
    print(f"\n{args.example}: {tally.compiled}/{total} compiled "
          f"({100 * tally.compiled / total:.1f}%), {len(tally.wrong)} wrong, seed {args.seed}")
    print(f"per kernel (compile + simulate + XLA): median {statistics.median(tally.seconds):.2f} s")
    for line in tally.wrong:
        print(f"  WRONG {line}")
    for message, count in tally.refusals.most_common():
        print(f"  {count:4d} refused: {message}")
    return 1 if tally.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
