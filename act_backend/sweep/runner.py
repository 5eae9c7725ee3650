"""Running the points' jobs on Ray: an embedded local Ray (``ray.init(num_cpus=workers)``) by
default, an existing cluster by its address, or the Ray this process has already started.
Each point is one task (one CPU), retried by Ray when its worker dies; the results come back
as they finish, each announced to ``progress``. ``run_serially`` runs the same jobs one after
another in this process, without Ray (for debugging, and the benchmark's baseline).

Ray is imported here only, when a sweep runs: the rest of act-backend does not need it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

from act_backend.sweep.job import lost_point, run_point
from act_backend.sweep.messages import one_line
from act_backend.sweep.model import KernelRow, PointJob, PointResult, SweepError

# (result, how many have finished, how many there are)
Progress = Callable[[PointResult, int, int], None]

EXTRA = "pip install 'act-backend[sweep]'"


def require(name: str) -> ModuleType:
    """The optional module ``name`` (ray, pyarrow, matplotlib), or a ``SweepError`` saying
    how to install the extra that brings it."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise SweepError(f"act-backend sweep needs {name}, which is not installed "
                         f"(the optional extra 'sweep': {EXTRA})") from e


def start_local_ray(workers: int | None = None) -> None:
    """Starts an embedded local Ray with ``workers`` CPUs (all of this machine's when None)
    whose workers import the same act_backend as this process."""
    ray = require("ray")
    with _workers_import_this_package(), warnings.catch_warnings():
        # Ray starts its processes with fork and exec; JAX, when this process has already
        # run it, warns about any fork, though nothing of JAX runs between the two.
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called",
                                category=RuntimeWarning)
        ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING,
                 log_to_driver=False)


def run_on_ray(jobs: Sequence[PointJob], *, workers: int | None = None,
               address: str | None = None, retries: int = 2,
               progress: Progress | None = None) -> list[PointResult]:
    """Every job's result, in the order they finished. Uses the Ray this process has
    started if there is one (``workers`` and ``address`` are then not used), else starts
    one (and shuts it down afterwards)."""
    ray = require("ray")
    started_here = not ray.is_initialized()
    if started_here:
        if address is not None:
            try:
                ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
            except Exception as e:
                raise SweepError(f"cannot connect to the Ray cluster at {address}: "
                                 f"{one_line(e)}") from e
        else:
            start_local_ray(workers)
    try:
        task = ray.remote(num_cpus=1, max_retries=retries)(run_point)
        submitted = {task.remote(job): job for job in jobs}
        pending = list(submitted)
        results: list[PointResult] = []
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                result = _result(ray, ref, submitted[ref], retries)
                results.append(result)
                if progress is not None:
                    progress(result, len(results), len(jobs))
        return results
    finally:
        if started_here:
            ray.shutdown()


def run_serially(jobs: Sequence[PointJob], *, progress: Progress | None = None
                 ) -> list[PointResult]:
    """Every job's result, run one after another in this process."""
    results = []
    for job in jobs:
        results.append(run_point(job))
        if progress is not None:
            progress(results[-1], len(results), len(jobs))
    return results


def _result(ray: ModuleType, ref: object, job: PointJob, retries: int) -> PointResult:
    """The job's result; a task Ray gave up on becomes rows that say why."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        # The job itself raised: a bug, not a point's failure (those are rows already).
        cause = e.cause if getattr(e, "cause", None) is not None else e
        message = f"the point's job raised {type(cause).__name__}: {one_line(cause)}"
        return PointResult(job.point, tuple(KernelRow(job.point.index, k.name, "error",
                                                      message=message)
                                            for k in job.kernels))
    except ray.exceptions.RayError:
        return lost_point(job, retries + 1)


@contextlib.contextmanager
def _workers_import_this_package() -> Iterator[None]:
    """Local workers start in the environment ``ray.init`` gives the node it launches,
    copied from this process: with the directory holding this act_backend first on their
    PYTHONPATH they import the same act_backend as the driver, not another installation."""
    import act_backend

    root = str(Path(act_backend.__file__).resolve().parents[1])
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([root, previous] if previous else [root])
    try:
        yield
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous
