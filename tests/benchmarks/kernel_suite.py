"""Runs a suite of HLO kernels (another project's, or your own) through an accelerator's
generated backend: each ``.hlo`` file is compiled, the assembly simulated on the oracle with
seeded random inputs (bf16 in [-1, 1), integers over their whole range) and compared with
XLA's run of the same text.

The accelerator is one of the examples (``--example Gemmini``) or any spec file that
generates its oracle and backend when run (``--spec path/to/Accel.py``). Prints one line per
kernel, then how many compiled, how many were wrong, the refusals grouped by message and the
check times. Exits 1 when any compiled kernel was wrong.

    python tests/benchmarks/kernel_suite.py --example Gemmini KERNEL.hlo|DIR ...
    python tests/benchmarks/kernel_suite.py --spec Accel.py --seed 1 DIR
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.differential import Tally, check_kernel, kernel_inputs  # noqa: E402
from helpers.examples import EXAMPLES, TEST_SPECS, build_example, build_spec_file  # noqa: E402


def kernel_files(paths: list[Path]) -> list[Path]:
    """The ``.hlo`` files named, and those under the directories named, in name order."""
    out = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(path.rglob("*.hlo")))
        elif path.is_file():
            out.append(path)
        else:
            raise SystemExit(f"{path}: no such file or directory")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--example", choices=sorted({*EXAMPLES, *TEST_SPECS}))
    target.add_argument("--spec", type=Path, help="a spec file that generates its backend")
    parser.add_argument("--seed", type=int, default=7, help="seed of the random inputs")
    parser.add_argument("--keep", type=Path, help="keep the build and assembly here")
    parser.add_argument("kernels", type=Path, nargs="+", help=".hlo files or directories")
    args = parser.parse_args()
    files = kernel_files(args.kernels)
    if not files:
        parser.error("no .hlo files among the paths given")

    with tempfile.TemporaryDirectory(prefix="act-suite-") as scratch:
        work = args.keep or Path(scratch)
        print(f"building {args.example or args.spec} ...", flush=True)
        build = (build_example(args.example, work / "build") if args.example
                 else build_spec_file(args.spec.resolve(), work / "build"))
        tally = Tally()
        for index, path in enumerate(files):
            started = time.perf_counter()
            outcome = check_kernel(build, path.read_text(), kernel_inputs(path, args.seed),
                                   work / f"k{index}", path.stem.replace(".", "_"))
            tally.record(outcome, time.perf_counter() - started, str(path))
            print(f"{path}: {outcome.summary}, {outcome.instructions} instructions, "
                  f"{tally.seconds[-1]:.2f} s", flush=True)

    print("\n" + tally.report(len(files)))
    return 1 if tally.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
