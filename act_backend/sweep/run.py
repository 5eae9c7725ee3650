"""``run_sweep(path)``: a sweep file from start to finish. It loads and checks the file, lists
the points, runs one job per point (on Ray, or serially), and writes beside each other in the
output directory the table (``results.csv``, ``results.parquet``), ``best.json``,
``timings.csv`` and ``cost.png``; each point's files (its log, oracle, backend and compiled
kernels) go to ``points/<index>/``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from act_backend.sweep import best as best_module
from act_backend.sweep import plot, results
from act_backend.sweep.model import Point, PointJob, PointResult, Sweep, SweepError
from act_backend.sweep.points import points_of
from act_backend.sweep.sweep_file import load_sweep


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: its table rows (in table order), best configurations and files."""

    sweep: Sweep
    points: list[Point]
    rows: list[dict[str, Any]]
    best: dict[str, Any]
    output: Path
    files: dict[str, Path]
    wall_s: float
    results: list[PointResult]


def run_sweep(sweep: str | Path | Sweep, *, workers: int | None = None,
              address: str | None = None, output: str | Path | None = None,
              serial: bool = False,
              progress: Callable[[str], None] | None = None) -> SweepResult:
    """Runs ``sweep`` (a sweep file or a loaded ``Sweep``) and writes its results.

    ``workers`` (default: the file's ``[run] workers``, else every CPU) sizes the embedded
    local Ray; ``address`` runs on an existing Ray cluster instead (``ray.init(address=...)``,
    e.g. ``"auto"`` or ``"ray://head:10001"``); a Ray already started in this process is used
    as it is. ``serial`` runs the points in this process without Ray. ``output`` overrides
    the file's output directory. ``progress`` receives one line per finished point (default:
    printed on stderr). Raises ``SweepFileError`` for a bad sweep file and ``SweepError`` when
    the sweep cannot run at all; a point that fails is a row of the table."""
    from act_backend.sweep.runner import require, run_on_ray, run_serially

    started = time.perf_counter()
    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    # The optional dependencies, before any point runs: a missing one is one clear error.
    for name in ("pyarrow", "matplotlib") + (() if serial else ("ray",)):
        require(name)
    out = Path(output).expanduser().resolve() if output is not None else sweep.output_dir
    try:
        (out / "points").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SweepError(f"cannot create the output directory {out}: {e.strerror or e}") \
            from e
    points = points_of(sweep)
    jobs = [_job(sweep, point, out, len(points)) for point in points]
    say = progress if progress is not None else _print
    say(f"sweep {sweep.path.name}: {len(points)} points x {len(sweep.kernels)} kernels -> "
        f"{out}")

    def announce(result: PointResult, finished: int, total: int) -> None:
        wall = f" [{result.wall_s:.1f} s]" if result.wall_s is not None else ""
        say(f"[{finished}/{total}] point {result.point.index} ({result.point.describe()}): "
            f"{result.summary()}{wall}")

    if serial:
        finished = run_serially(jobs, progress=announce)
    else:
        finished = run_on_ray(jobs, workers=workers or sweep.workers, address=address,
                              retries=sweep.retries, progress=announce)
    rows = results.table_rows(sweep, finished)
    schema = results.columns(sweep)
    files = {"csv": out / results.TABLE_CSV, "parquet": out / results.TABLE_PARQUET,
             "timings": out / results.TIMINGS_CSV, "best": out / best_module.BEST_JSON,
             "plot": out / plot.PLOT}
    results.write_csv(files["csv"], [name for name, _ in schema], rows)
    results.write_parquet(files["parquet"], schema, rows)
    results.write_csv(files["timings"], results.TIMING_COLUMNS, results.timing_rows(finished))
    best = best_module.best_configurations(sweep, rows)
    best_module.write_best(files["best"], best)
    plot.write_plot(files["plot"], sweep, rows)
    return SweepResult(sweep, points, rows, best, out, files, time.perf_counter() - started,
                       sorted(finished, key=lambda r: r.point.index))


def _job(sweep: Sweep, point: Point, out: Path, count: int) -> PointJob:
    width = max(3, len(str(count - 1)))
    return PointJob(point=point, spec=sweep.spec, kernels=sweep.kernels,
                    directory=str(out / "points" / f"{point.index:0{width}d}"),
                    output_root=str(out), inputs=sweep.inputs,
                    tolerance_ulps=sweep.tolerance_ulps, time_limit=sweep.time_limit)


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
