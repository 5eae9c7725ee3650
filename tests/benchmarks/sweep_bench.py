"""How long a sweep takes on one Ray worker and on two, and what Ray adds per point.

The sweep: the QKV family of ``examples/sweep`` with N operand-buffer sizes (128, 192, ...
rows, the fused softmax on), each compiling attention (HLO), matmul (HLO) and the JAX
``scores`` kernel, simulated on the point's oracle. Every run writes into a fresh directory,
so each point generates its backend (at the shared build site) and compiles its kernels; the
site's crate is built once beforehand by a one-point warm-up run, which is not timed.

Prints: the wall time of the sweep run serially in this process (no Ray), on an embedded
local Ray with one worker and with two (Ray's start-up timed apart); Ray's per-point
overhead, (one worker - serial) / points, which includes each worker process importing JAX
and act-backend once; the same measured inside the tasks, (wall - sum of the points' own
times) / points; the round trip of an empty Ray task; and the median of each phase
(generating a point's backend, compiling a kernel, simulating it) over every run.

Each mode runs ``--repeats`` times (the median is printed): on a machine shared with other
work single runs vary by several seconds.

    python tests/benchmarks/sweep_bench.py [--points 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's act_backend, not another installation
SWEEP = '''
[spec]
file = "{root}/examples/sweep/qkv_family.py"
function = "qkv"

[parameters]
d1_rows = {rows}

[[kernels]]
hlo = "{root}/examples/QKV/kernels/attention.hlo"

[[kernels]]
hlo = "{root}/tests/kernels/matmul.hlo"

[[kernels]]
jax = "{root}/examples/sweep/kernels.py:scores"
args = ["bf16[64,64]", "bf16[64,64]"]
'''


def write_sweep(directory: Path, points: int) -> Path:
    path = directory / f"bench{points}.toml"
    path.write_text(SWEEP.format(root=ROOT, rows=[128 + 64 * i for i in range(points)]))
    return path


def timed_run(path: Path, output: Path, **options) -> tuple[float, float]:
    """The sweep's wall time and the sum of its points' own times (the phases of the points
    are added to PHASES)."""
    from act_backend.sweep import run_sweep

    started = time.perf_counter()
    result = run_sweep(path, output=output, progress=lambda line: None, **options)
    wall = time.perf_counter() - started
    bad = [r for r in result.rows if r["status"] != "ok"]
    if bad:
        raise SystemExit(f"the benchmark sweep should compile everything; got {bad[0]}")
    for point in result.results:
        PHASES.setdefault("generate (s)", []).append(point.generate_s)
        for timing in point.timings:
            PHASES.setdefault("compile (ms)", []).append(timing.compile_ms)
            PHASES.setdefault("simulate (ms)", []).append(timing.simulate_ms)
    return wall, sum(r.wall_s for r in result.results)


PHASES: dict[str, list[float]] = {}


def noop_round_trip(runs: int) -> float:
    import ray

    @ray.remote(num_cpus=1)
    def noop() -> None:
        return None

    ray.get(noop.remote())  # a worker is started for the first call
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        ray.get(noop.remote())
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import ray

    from act_backend.sweep.runner import start_local_ray

    with tempfile.TemporaryDirectory(prefix="act-sweep-bench-") as scratch:
        work = Path(scratch)
        path = write_sweep(work, args.points)
        started = time.perf_counter()
        timed_run(write_sweep(work, 1), work / "warm-up", serial=True)
        print(f"warm-up (one point, serial; builds the site's crate when it is cold): "
              f"{time.perf_counter() - started:.1f} s")

        runs = range(args.repeats)
        serial = statistics.median(timed_run(path, work / f"serial{i}", serial=True)[0]
                                   for i in runs)
        print(f"{args.points} points x 3 kernels, serial in this process: {serial:.1f} s "
              f"({serial / args.points:.2f} s per point)")
        walls, inits, inside = {}, {}, []
        for workers in (1, 2):
            times = []
            for i in runs:
                started = time.perf_counter()
                start_local_ray(workers)
                inits.setdefault(workers, []).append(time.perf_counter() - started)
                try:
                    wall, points = timed_run(path, work / f"ray{workers}-{i}")
                    times.append(wall)
                    if workers == 1:
                        inside.append((wall - points) / args.points)
                        round_trip = noop_round_trip(100)
                finally:
                    ray.shutdown()
            walls[workers] = statistics.median(times)
            print(f"{args.points} points x 3 kernels, Ray with {workers} worker"
                  f"{'s' if workers > 1 else ''}: {walls[workers]:.1f} s (ray.init "
                  f"{statistics.median(inits[workers]):.1f} s apart)")
        print(f"speed-up of two workers over one: {walls[1] / walls[2]:.2f}x")
        print(f"Ray per-point overhead, (one worker - serial) / points: "
              f"{(walls[1] - serial) / args.points * 1e3:.0f} ms")
        print(f"Ray per-point overhead outside the tasks, one worker: "
              f"{statistics.median(inside) * 1e3:.0f} ms")
        print(f"empty Ray task round trip (median of 100, last run): {round_trip:.2f} ms")
        print("per point and kernel, median over every run: " + ", ".join(
            f"{name} {statistics.median(values):.2f}" for name, values in PHASES.items()))


if __name__ == "__main__":
    main()
