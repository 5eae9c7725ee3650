"""Compile times of two builds of a backend on the same kernel, run interleaved, so that a
before/after comparison on a shared machine sees the same load on both sides.

Each round compiles the kernel once with every backend given (the order alternates between
rounds) and keeps the backend's ``report.json``; prints per backend the median wall time, the
median of each phase the report times, the e-graph size, the candidates tried and why the
search stopped.

    python tests/benchmarks/compile_ab.py --runs 20 \\
        before=OLD/backends/QKV,examples/QKV/kernels/attention.hlo \\
        after=NEW/backends/QKV,examples/QKV/kernels/attention.hlo
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def compile_once(backend: str, kernel: str, scratch: Path, tag: str) -> tuple[float, dict]:
    """Wall milliseconds of one compile, and its report."""
    report_dir = scratch / tag
    started = time.perf_counter()
    done = subprocess.run([backend, "--input", kernel, "--output", str(scratch / f"{tag}.py"),
                           "--report-dir", str(report_dir)], capture_output=True, text=True)
    wall = (time.perf_counter() - started) * 1e3
    if done.returncode != 0:
        raise SystemExit(f"{backend} failed on {kernel}:\n{done.stderr}")
    return wall, json.loads((report_dir / "report.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="rounds (medians are over these)")
    parser.add_argument("builds", nargs="+", metavar="NAME=BACKEND,KERNEL")
    args = parser.parse_args()
    builds = []
    for spec in args.builds:
        name, _, rest = spec.partition("=")
        backend, _, kernel = rest.partition(",")
        if not (name and backend and kernel):
            raise SystemExit(f"expected NAME=BACKEND,KERNEL, got {spec!r}")
        builds.append((name, backend, kernel))
    walls: dict[str, list[float]] = {name: [] for name, _, _ in builds}
    phases: dict[str, dict[str, list[float]]] = {name: {} for name, _, _ in builds}
    last: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="act-compile-ab-") as scratch:
        for i in range(args.runs):
            for name, backend, kernel in builds if i % 2 == 0 else builds[::-1]:
                wall, report = compile_once(backend, kernel, Path(scratch), f"{name}-{i}")
                walls[name].append(wall)
                for phase, ms in report["timings_ms"].items():
                    if ms is not None:
                        phases[name].setdefault(phase, []).append(ms)
                last[name] = report
    for name, _, _ in builds:
        report = last[name]
        print(f"{name}: median {statistics.median(walls[name]):.1f} ms wall over {args.runs} "
              f"runs (min {min(walls[name]):.1f}, max {max(walls[name]):.1f}); e-graph "
              f"{report['egraph']['nodes']} nodes; candidates {report['candidates_tried']} tried "
              f"of {report['candidates_found']} ({report['stop_reason']}); cost "
              f"{report['chosen_cost']:g}")
        print("  phases (median ms): " + ", ".join(
            f"{phase} {statistics.median(ms):.2f}" for phase, ms in sorted(phases[name].items())))


if __name__ == "__main__":
    main()
