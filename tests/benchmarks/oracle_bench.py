"""How long generating an oracle and simulating with it take: attention on QKV and QKV_new, and
long Gemmini kernels (tiled int8 products of about 1,000 and 5,000 instructions).

Every figure of a compile is the first compile of a fresh process (``fsim-compile``: tracing
the assembly and compiling it with XLA, JAX's own first-use costs included), taken in
``--repeats`` processes; a simulation (``fsim``) is the median of ``--runs`` runs after it.
Prints, per kernel: its instruction count, the strategy ``auto`` chose and its distinct step
signatures, the median and least compile time, and the median run time.

    python tests/benchmarks/oracle_bench.py [--runs 20] [--repeats 5] [--whole]
                                            [--compare-with CHECKOUT]
                                            [--growth [--assembly EXAMPLE=FILE ...]]

``--whole`` also compiles the long kernels whole (one XLA function; about 1.6 ms a call) to
show what the stepwise strategy saves. ``--compare-with`` measures attention's first compile
alternately with the oracle runtime of another checkout of act-backend (the same table), and
prints the CPU time of both beside their wall times, which shifts less when the machine is busy.
``--growth`` measures, instead, what a kernel costs before its first result under each strategy
(``fsim-compile`` and the first ``fsim``, in a fresh process; the median of ``--repeats``
processes, the two strategies alternating) as the number of calls grows, for tiled Gemmini
products (4 signatures) and kernels of many bf16 attention heads (QKV), and what ``auto``
chooses for each: the figures ``executable.WHOLE_MAX_CALLS_PER_SIGNATURE`` is set from.
``--assembly QKV=out/attention_256.py`` adds an assembly file (a kernel an example's backend
compiled, say from ``act_backend/backend/crate/tests/data/tiling``) run on that example's
oracle, on seeded inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# This checkout's act_backend (whose runtime the generated oracles copy), not an installed one.
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers.oracle_harness import (  # noqa: E402
    ASSEMBLY_DIR,
    generate_example_oracle,
    load_bf16,
    load_oracle,
)

EXAMPLES = ("QKV", "QKV_new", "Gemmini")
ATTENTION = {"QKV": "qkv_attention.py", "QKV_new": "qkv_new_attention.py"}
# kernels named by what builds them: "gemmini AxBxC tiles" (a tiled product, gemmini_tiled_matmul)
# or "qkv N heads" (qkv_attention_heads)
LONG = ["gemmini 7x7x7 tiles", "gemmini 12x12x12 tiles"]
# kernels of growing length for --growth: Gemmini products of 4 to 5,328 calls (4 signatures
# each), attention heads of 11 to 1,108 calls (9 signatures from 3 heads up)
GROWTH = [*(f"gemmini {t} tiles" for t in ("1x1x1", "1x1x3", "1x2x3", "2x2x2", "2x2x4",
                                           "3x3x3", "4x4x4", "5x5x5", "7x7x7", "12x12x12")),
          *(f"qkv {h} heads" for h in (1, 2, 3, 6, 9, 30, 90))]


def long_kernel(name: str):
    """The example and the kernel (``helpers.oracle_kernels.LongKernel``) a LONG or GROWTH name
    stands for."""
    from helpers.oracle_kernels import gemmini_tiled_matmul, qkv_attention_heads

    kind, size, _ = name.split()
    if kind == "gemmini":
        return "Gemmini", gemmini_tiled_matmul(*(int(t) for t in size.split("x")))
    if kind == "qkv":
        return "QKV", qkv_attention_heads(int(size))
    raise ValueError(f"no kernel named {name!r}")


def seeded_inputs(kernel) -> list:
    """Seeded inputs for an oracle kernel's input tensors: floats from a normal distribution,
    integers in int8's range."""
    import numpy as np

    rng = np.random.default_rng(0)
    inputs = []
    for tensor in kernel.inputs:
        if np.issubdtype(tensor.dtype, np.integer):
            inputs.append(rng.integers(-128, 127, tensor.shape, endpoint=True)
                          .astype(tensor.dtype))
        else:
            inputs.append(rng.standard_normal(tensor.shape).astype(tensor.dtype))
    return inputs


def child(oracle_dir: str, kernel: str, strategy: str, runs: int) -> dict:
    """One fresh process's figures for ``kernel`` (an example name, a LONG or GROWTH name, or
    the path of an assembly file)."""
    from act_backend.oracle.loading import load_kernel

    oracle = load_oracle(oracle_dir)
    inputs = None
    expected = None
    if kernel in ATTENTION:
        text = (ASSEMBLY_DIR / ATTENTION[kernel]).read_text()
        data = ROOT / "examples" / kernel / "data"
        inputs = [load_bf16(data / f"{m}.dat", (64, 64)) for m in "QKV"]
    elif Path(kernel).suffix == ".py":
        text = Path(kernel).read_text()
    else:
        _, long = long_kernel(kernel)
        text, inputs, expected = long.text, long.inputs, long.expected
    k = load_kernel(oracle, text, kernel)
    if inputs is None:
        inputs = seeded_inputs(k)
    before = os.times()
    # An empty strategy: the runtime's own choice (a runtime of another checkout may have none).
    _, compile_ms = (k("fsim-compile")(strategy=strategy) if strategy
                     else k("fsim-compile")())
    after = os.times()
    cpu_ms = (after.user + after.system - before.user - before.system) * 1e3
    run_ms = []
    for _ in range(runs):
        outputs, ms = k("fsim")(*inputs)
        run_ms.append(ms)
    if expected is not None:
        import numpy as np

        if not all(np.array_equal(np.asarray(o), e) for o, e in zip(outputs, expected,
                                                                      strict=True)):
            raise SystemExit(f"{kernel}: the oracle's result differs from NumPy's")
    executable = sys.modules.get(f"{oracle.__name__}.executable")
    signatures = (len({executable.signature(c, k.hbm) for c in k.program().calls})
                  if executable else 0)
    return {"calls": len(k.program().calls), "signatures": signatures,
            "strategy": getattr(k, "strategy", "whole"), "compile_ms": compile_ms, "cpu_ms": cpu_ms,
            "run_ms": statistics.median(run_ms), "first_run_ms": run_ms[0]}


def one_process(oracle_dir: Path, kernel: str, strategy: str, runs: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(oracle_dir), kernel, strategy, str(runs)],
        check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(label: str, figures: list[dict]) -> None:
    compile_ms = [f["compile_ms"] for f in figures]
    first = figures[0]
    print(f"{label:24s} {first['calls']:5d} calls {first['signatures']:3d} signatures  "
          f"{first['strategy']:8s}  fsim-compile median {statistics.median(compile_ms):8.1f} ms "
          f"(least {min(compile_ms):8.1f}; CPU median "
          f"{statistics.median(f['cpu_ms'] for f in figures):6.0f} ms) over {len(figures)} "
          f"processes   fsim median {statistics.median(f['run_ms'] for f in figures):8.2f} ms",
          flush=True)


def measure(oracle_dir: Path, kernel: str, strategy: str, runs: int, repeats: int) -> None:
    report(kernel, [one_process(oracle_dir, kernel, strategy, runs) for _ in range(repeats)])


def compare(oracle_dir: Path, previous_dir: Path, kernel: str, runs: int, repeats: int) -> None:
    """Attention's first compile with this runtime and another, in alternate processes."""
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(one_process(oracle_dir, kernel, "auto", runs))
        theirs.append(one_process(previous_dir, kernel, "", runs))
    report(kernel, ours)
    report(f"{kernel} (other runtime)", theirs)


def growth(oracles: dict[str, Path], repeats: int, assembly: list[tuple[str, Path]]) -> None:
    """What each GROWTH kernel and each ``(example, assembly file)`` costs before its first
    result, compiled whole and stepwise."""
    print(f"{'kernel':32s} {'calls':>5s} {'sigs':>4s} {'calls/sig':>9s}  "
          f"{'whole: compile + run':>22s}  {'stepwise: compile + run':>25s}  auto", flush=True)
    kernels = [(long_kernel(name)[0], name, name) for name in GROWTH]
    kernels += [(example, str(path.resolve()), f"{example} {path.stem}")
                for example, path in assembly]
    for example, kernel, label in kernels:
        figures: dict[str, list[dict]] = {"whole": [], "stepwise": []}
        for _ in range(repeats):
            for strategy, runs in figures.items():
                runs.append(one_process(oracles[example], kernel, strategy, 1))
        chosen = one_process(oracles[example], kernel, "auto", 1)["strategy"]
        first = figures["whole"][0]
        cells = []
        for runs in figures.values():
            total = statistics.median(f["compile_ms"] + f["first_run_ms"] for f in runs)
            run = statistics.median(f["first_run_ms"] for f in runs)
            cells.append(f"{total:9.0f} ms (run {run:6.1f})")
        print(f"{label:32s} {first['calls']:5d} {first['signatures']:4d} "
              f"{first['calls'] / first['signatures']:9.1f}  {cells[0]:>22s}  {cells[1]:>25s}  "
              f"{chosen}", flush=True)


def with_runtime_of(oracle_dir: Path, checkout: Path, target: Path) -> Path:
    """A copy of ``oracle_dir`` whose runtime modules are those of another checkout."""
    shutil.copytree(oracle_dir, target)
    for module in target.glob("*.py"):
        if module.name != "__init__.py":
            module.unlink()
    for source in (checkout / "act_backend" / "oracle" / "runtime").glob("*.py"):
        if source.name != "__init__.py":
            shutil.copyfile(source, target / source.name)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--whole", action="store_true",
                        help="also compile the long kernels whole")
    parser.add_argument("--compare-with", type=Path, metavar="CHECKOUT",
                        help="also time attention with another checkout's oracle runtime")
    parser.add_argument("--growth", action="store_true",
                        help="only the cost before a first result, whole and stepwise, as "
                             "kernels grow")
    parser.add_argument("--assembly", action="append", default=[], metavar="EXAMPLE=FILE",
                        help="with --growth: also an assembly file run on an example's oracle")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        oracle_dir, kernel, strategy, runs = args.child
        print(json.dumps(child(oracle_dir, kernel, strategy, int(runs))))
        return
    assembly = []
    for given in args.assembly:
        example, _, path = given.partition("=")
        if example not in EXAMPLES or not Path(path).is_file():
            parser.error(f"--assembly {given}: expected EXAMPLE=FILE, EXAMPLE one of "
                         f"{', '.join(EXAMPLES)} and FILE an assembly file")
        assembly.append((example, Path(path)))
    with tempfile.TemporaryDirectory(prefix="act-oracle-bench-") as scratch:
        oracles = {}
        for example in EXAMPLES:
            start = time.perf_counter()
            oracles[example] = generate_example_oracle(
                ROOT / "examples" / example / f"{example}.py", Path(scratch) / example)
            print(f"{example:8s} oracle generated in {(time.perf_counter() - start) * 1e3:.1f} ms",
                  flush=True)
        if args.growth:
            growth(oracles, args.repeats, assembly)
            return
        for example in ATTENTION:
            if args.compare_with:
                other = with_runtime_of(oracles[example], args.compare_with.resolve(),
                                        Path(scratch) / f"{example}-other")
                compare(oracles[example], other, example, args.runs, args.repeats)
            else:
                measure(oracles[example], example, "auto", args.runs, args.repeats)
        for name in LONG:
            measure(oracles[long_kernel(name)[0]], name, "auto", args.runs, args.repeats)
        if args.whole:
            for name in LONG:
                measure(oracles[long_kernel(name)[0]], name, "whole", 3, 1)


if __name__ == "__main__":
    main()
