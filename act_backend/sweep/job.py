"""The per-point job, what a Ray worker runs: call the spec function with the point's
parameters, generate the point's oracle and backend, and run every kernel on it. It returns
the point's rows whatever happens to the point: a spec function that raises, a spec the
generators refuse or a failed build makes every kernel's row say so. What the generators and
the backend print goes to the point's ``log.txt``, not to the terminal.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import traceback
from dataclasses import replace
from pathlib import Path

from act_backend.sweep.messages import first_line, one_line, without_root
from act_backend.sweep.model import KernelRow, PointJob, PointResult
from act_backend.sweep.user_code import load_function

LOG = "log.txt"
COMPILED = "compiled"


def run_point(job: PointJob) -> PointResult:
    """The rows (one per kernel, in the sweep's kernel order) of ``job``'s point."""
    started = time.perf_counter()
    directory = Path(job.directory)
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / LOG
    with open(log_path, "w", encoding="utf-8") as log, \
            contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        print(f"point {job.point.index}: {job.point.describe()}", flush=True)
        rows, timings, generate_s = _run(job, directory)
        for row in rows:
            print(f"{row.kernel}: {row.status} {row.message}".rstrip(), flush=True)
    rows = tuple(_relative(row, job.output_root) for row in rows)
    return PointResult(job.point, rows, tuple(timings), generate_s,
                       time.perf_counter() - started, f"{socket.gethostname()}:{os.getpid()}",
                       os.path.relpath(log_path, job.output_root))


def _run(job: PointJob, directory: Path):
    from act_backend.spec import Accelerator
    from act_backend.sweep.build import build_point
    from act_backend.sweep.kernel_run import run_kernel
    from act_backend.validation import validate

    spec = job.spec
    try:
        function = load_function(spec.function, file=spec.file, module=spec.module)
        acc = function(**job.point.kwargs)
    except Exception as e:
        traceback.print_exc()
        return _every_kernel(job, "error", f"the spec function {spec.function} raised "
                             f"{type(e).__name__}: {one_line(e)}"), [], None
    if not isinstance(acc, Accelerator):
        return _every_kernel(job, "error", f"the spec function {spec.function} returned "
                             f"{type(acc).__name__}, not an Accelerator"), [], None
    try:
        validate(acc)
    except ValueError as e:
        print(e)
        return _every_kernel(job, "spec-refused", one_line(e)), [], None
    started = time.perf_counter()
    cost = job.point.cost_model.path if job.point.cost_model is not None else None
    try:
        target = build_point(acc, directory, cost)
    except Exception as e:
        traceback.print_exc()
        return _every_kernel(job, "error", f"generating the backend failed: "
                             f"{first_line(e)}"), [], None
    generate_s = time.perf_counter() - started
    rows, timings = [], []
    for kernel in job.kernels:
        row, timing = run_kernel(kernel, target, point=job.point.index,
                                 cache=directory / COMPILED, inputs=job.inputs,
                                 tolerance_ulps=job.tolerance_ulps, time_limit=job.time_limit)
        rows.append(row)
        timings.append(timing)
    return rows, timings, generate_s


def lost_point(job: PointJob, attempts: int) -> PointResult:
    """The rows of a point whose worker died on every attempt (Ray gave up on the task)."""
    return PointResult(job.point, _every_kernel(
        job, "error", f"the worker running this point died ({attempts} attempt"
        f"{'s' if attempts != 1 else ''})"))


def _every_kernel(job: PointJob, status: str, message: str) -> tuple[KernelRow, ...]:
    return tuple(KernelRow(job.point.index, k.name, status, message=message)
                 for k in job.kernels)


def _relative(row: KernelRow, output_root: str) -> KernelRow:
    """The row with the output directory's path written as ``.``: the table must not depend
    on where a run wrote its files."""
    message = without_root(row.message, output_root)
    return row if message == row.message else replace(row, message=message)

