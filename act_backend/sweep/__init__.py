"""Design-space sweeps: which accelerator of a family is best for my kernels?

A sweep file (TOML) names a parameterised spec (a Python function from parameters to an
``Accelerator``), a grid or random sample of parameters, kernels (HLO files or JAX
functions) and optionally cost libraries. ``run_sweep(path)`` (``act-backend sweep
SWEEP.toml``) generates each point's backend, compiles every kernel with it, simulates it on
the point's oracle against the reference, and writes the results table, the best
configurations and a plot. Points run as Ray tasks: an embedded local Ray by default, an
existing cluster by address.

One module per step: ``sweep_file`` (reading and checking the file; ``locations`` finds the
line of a key), ``points`` (grid and random sample), ``job`` (one point, run by a worker:
``build`` generates the backend, ``kernel_run`` compiles and simulates one kernel,
``inputs`` draws its inputs), ``runner`` (Ray, or serially), ``results`` (the table and
timings), ``best`` and ``plot``, and ``run`` over all of them. Ray, pyarrow and matplotlib
(the extra ``act-backend[sweep]``) are imported only when a sweep runs.
"""

from act_backend.sweep.model import (
    KernelRow,
    KernelSource,
    Point,
    PointResult,
    Sweep,
    SweepError,
    SweepFileError,
)
from act_backend.sweep.points import points_of
from act_backend.sweep.run import SweepResult, run_sweep
from act_backend.sweep.sweep_file import load_sweep

__all__ = ["KernelRow", "KernelSource", "Point", "PointResult", "Sweep", "SweepError",
           "SweepFileError", "SweepResult", "load_sweep", "points_of", "run_sweep"]
