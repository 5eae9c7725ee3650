"""How long generating a backend and compiling with it take, for the QKV and QKV_new examples.

Prints, per example: the cold generation time (an empty build cache: every dependency, the
allocator and the crate are compiled), the regeneration time after a spec edit (the cache is
warm and only the ISA table changed), and the compile time of the attention kernel (median
of N runs), with the e-graph size, the candidates tried and the per-phase medians that the
backend's own ``--report-dir`` report gives.

    python tests/benchmarks/backend_bench.py [--runs 20] [--warm]

``--warm`` skips the cold generation and uses the build cache of ``ACT_BACKEND_CACHE`` (the
default one when unset); otherwise the cold generation uses a fresh cache of its own.
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
sys.path.insert(0, str(ROOT / "tests"))

from cost_models import copy_example  # noqa: E402

EXAMPLES = {"QKV": "QKV.py", "QKV_new": "QKV_new.py"}
PHASES = ("parse", "select", "rewrite", "match", "extract", "schedule", "allocate", "emit",
          "cost", "total")


GENERATE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from cost_models import load_spec
from act_backend import generate_backend
generate_backend(load_spec(Path(sys.argv[2])))
"""


def generate(spec: Path) -> float:
    """Seconds one ``generate_backend`` of ``spec`` takes (in a child process, as a user's
    ``python spec.py`` would run it)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", GENERATE, str(ROOT / "tests"), str(spec)],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"generating {spec} failed:\n{done.stdout}{done.stderr}")
    return elapsed


def edit_spec(spec: Path) -> None:
    """A spec edit that changes the ISA table: one more (unused) data model."""
    text = spec.read_text()
    anchor = 'qkv.add_data_model("d2", [64], [64], "bf16")'
    if anchor not in text:
        raise SystemExit(f"{spec}: cannot find `{anchor}` to edit after")
    spec.write_text(text.replace(anchor, anchor + '\nqkv.add_data_model("d9", [16], [64], "bf16")'))


def compile_runs(project: Path, name: str, runs: int) -> tuple[float, dict]:
    """Median wall milliseconds of ``runs`` compiles, and the median of each reported phase."""
    backend = project / "backends" / name
    kernel = project / "kernels" / "attention.hlo"
    walls, reports = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(runs):
            report_dir = Path(scratch) / f"r{i}"
            started = time.perf_counter()
            done = subprocess.run([str(backend), "--input", str(kernel), "--output",
                                   str(Path(scratch) / "out.py"), "--report-dir",
                                   str(report_dir)], capture_output=True, text=True)
            walls.append((time.perf_counter() - started) * 1e3)
            if done.returncode != 0:
                raise SystemExit(f"compiling with {name} failed:\n{done.stderr}")
            reports.append(json.loads((report_dir / "report.json").read_text()))
    last = reports[-1]
    summary = {
        "egraph_nodes": last["egraph"]["nodes"],
        "egraph_classes": last["egraph"]["classes"],
        "candidates_found": last["candidates_found"],
        "candidates_tried": last["candidates_tried"],
        "instructions": last["chosen_cost"],
        "phases_ms": {p: statistics.median(r["timings_ms"][p] for r in reports)
                      for p in PHASES},
    }
    return statistics.median(walls), summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="compiles per kernel (median)")
    parser.add_argument("--warm", action="store_true",
                        help="skip the cold generation; use the configured build cache")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="act-backend-bench-") as work:
        work_dir = Path(work)
        if not args.warm:
            os.environ["ACT_BACKEND_CACHE"] = str(work_dir / "cache")
        for name, spec_file in EXAMPLES.items():
            project = copy_example(name, work_dir)
            spec = project / spec_file
            first = generate(spec)
            label = "cold" if not args.warm else "first (this path)"
            edit_spec(spec)
            again = generate(spec)
            wall, s = compile_runs(project, name, args.runs)
            print(f"{name}:")
            print(f"  generation, {label}: {first:.1f} s")
            print(f"  regeneration after a spec edit: {again:.2f} s")
            print(f"  compile attention: median {wall:.1f} ms wall over {args.runs} runs; "
                  f"{s['instructions']:g} instructions; e-graph {s['egraph_nodes']} nodes, "
                  f"{s['egraph_classes']} classes; candidates {s['candidates_tried']} tried "
                  f"of {s['candidates_found']}")
            print("  phases (median ms): " + ", ".join(
                f"{p} {v:.3f}" for p, v in s["phases_ms"].items()))
            if not args.warm:
                # Cold again for the next example: a fresh cache, as a new machine has.
                shutil.rmtree(work_dir / "cache", ignore_errors=True)


if __name__ == "__main__":
    main()
