"""How long generating an oracle and simulating with it take, for the QKV and QKV_new examples.

Prints, per example: the oracle generation time (validation, table, files), the time the
oracle takes to trace and compile the hand-written attention kernel (``fsim-compile``), and
the median time of one simulation (``fsim``) over N runs.

    python tests/benchmarks/oracle_bench.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.oracle_harness import (  # noqa: E402
    ASSEMBLY_DIR,
    generate_example_oracle,
    load_bf16,
    load_kernel,
    load_oracle,
)

EXAMPLES = {"QKV": ("QKV.py", "qkv_attention.py"), "QKV_new": ("QKV_new.py",
                                                                "qkv_new_attention.py")}


def bench(example: str, runs: int, scratch: Path) -> None:
    spec, asm = EXAMPLES[example]
    work = scratch / example
    work.mkdir()
    start = time.perf_counter()
    oracle_dir = generate_example_oracle(ROOT / "examples" / example / spec, work)
    generate_ms = (time.perf_counter() - start) * 1e3

    oracle = load_oracle(oracle_dir)
    kernel = load_kernel(oracle, ASSEMBLY_DIR / asm)
    _, compile_ms = kernel("fsim-compile")()
    data = ROOT / "examples" / example / "data"
    inputs = [load_bf16(data / f"{m}.dat", (64, 64)) for m in ("Q", "K", "V")]
    run_ms = []
    for _ in range(runs):
        _, ms = kernel("fsim")(*inputs)
        run_ms.append(ms)
    print(f"{example:8s} generate {generate_ms:8.1f} ms   fsim-compile {compile_ms:8.1f} ms   "
          f"fsim median {statistics.median(run_ms):6.2f} ms over {runs} runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="act-oracle-bench-") as scratch:
        for example in EXAMPLES:
            bench(example, args.runs, Path(scratch))


if __name__ == "__main__":
    main()
