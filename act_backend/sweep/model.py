"""A sweep as data: what ``load_sweep`` reads from a sweep file and what the points, the
per-point job and the results are made of. Everything here is plain, frozen and picklable, so
that it travels to Ray workers as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# A parameter value as TOML gives it (booleans are kept apart from integers).
Value = bool | int | float | str

# Columns of the results table that a parameter may not be named after.
RESERVED_COLUMNS = ("point", "cost_model", "kernel", "status", "cost", "instructions",
                    "error_ulps", "max_abs_error", "exact", "message")


class SweepFileError(ValueError):
    """A sweep file the sweep cannot run: the message names the file, the line where it can
    and the key."""


class SweepError(RuntimeError):
    """A sweep that could not run as a whole (Ray missing or unreachable, an output
    directory that cannot be written). A single point's failure is a row, never this."""


@dataclass(frozen=True)
class SpecRef:
    """The parameterised spec: ``function`` in a Python file or in an importable module,
    called with one point's parameters as keyword arguments, returning an ``Accelerator``."""

    function: str
    file: str | None = None
    module: str | None = None

    def __str__(self) -> str:
        return f"{self.file or self.module}:{self.function}"


@dataclass(frozen=True)
class Parameter:
    """One axis of the sweep: a list of ``values``, or for random samples a range
    ``[low, high]`` (integers inclusive, floats uniform)."""

    name: str
    kind: str                      # "bool" | "int" | "float" | "str"
    values: tuple[Value, ...] | None = None
    low: float | int | None = None
    high: float | int | None = None


@dataclass(frozen=True)
class Sampling:
    """A random sample of ``count`` distinct points drawn with ``seed`` (None: the grid)."""

    count: int
    seed: int


@dataclass(frozen=True)
class CostModel:
    """A cost library for the backends (``path`` None: the default model, one per
    instruction weighted by the table's costs). ``label`` is how the table names it."""

    label: str
    path: str | None = None


@dataclass(frozen=True)
class ArgSpec:
    """An example argument of a JAX kernel: an HLO element type and a shape."""

    dtype: str
    shape: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class KernelSource:
    """One kernel of the sweep: HLO text (read from ``path`` when the sweep is loaded), or a
    JAX function (``function`` in ``file`` or ``module``) with example ``args``."""

    name: str
    hlo: str | None = None
    path: str | None = None
    function: str | None = None
    file: str | None = None
    module: str | None = None
    args: tuple[ArgSpec, ...] = ()

    @property
    def is_jax(self) -> bool:
        return self.function is not None


@dataclass(frozen=True)
class Inputs:
    """How kernel inputs are drawn: normal values of standard deviation ``scale`` for floats
    (small integers for integer types), from a generator seeded by ``seed`` and the kernel's
    name, so that every point runs a kernel on the same inputs."""

    seed: int = 0
    scale: float = 0.5


@dataclass(frozen=True)
class Sweep:
    """A loaded, validated sweep file."""

    path: Path
    spec: SpecRef
    parameters: tuple[Parameter, ...]
    kernels: tuple[KernelSource, ...]
    sampling: Sampling | None = None
    cost_models: tuple[CostModel, ...] = ()
    time_limit: float | None = None
    inputs: Inputs = field(default_factory=Inputs)
    tolerance_ulps: float = 4.0
    workers: int | None = None
    retries: int = 2
    output: Path | None = None

    @property
    def output_dir(self) -> Path:
        """Where results go: ``[run] output``, else ``<file stem>-results`` beside the file."""
        if self.output is not None:
            return self.output
        return self.path.parent / f"{self.path.stem}-results"


@dataclass(frozen=True)
class Point:
    """One configuration: its index (the order of the table), its parameters in the sweep
    file's order, and its cost model (None when the sweep names none)."""

    index: int
    parameters: tuple[tuple[str, Value], ...]
    cost_model: CostModel | None = None

    @property
    def kwargs(self) -> dict[str, Value]:
        return dict(self.parameters)

    def describe(self) -> str:
        text = ", ".join(f"{name}={value!r}" for name, value in self.parameters)
        if self.cost_model is not None:
            text = f"{text}, cost={self.cost_model.label}" if text else \
                f"cost={self.cost_model.label}"
        return text or "(no parameters)"


@dataclass(frozen=True)
class PointJob:
    """Everything a worker needs to run one point."""

    point: Point
    spec: SpecRef
    kernels: tuple[KernelSource, ...]
    directory: str                  # the point's own output directory
    output_root: str                # the sweep's output directory (messages name paths in it)
    inputs: Inputs
    tolerance_ulps: float
    time_limit: float | None


@dataclass(frozen=True)
class KernelRow:
    """One row of the results table: one kernel on one point. Deterministic: the same
    sweep file gives the same rows."""

    point: int
    kernel: str
    status: str                     # see STATUSES
    cost: float | None = None
    instructions: int | None = None
    error_ulps: float | None = None
    max_abs_error: float | None = None
    exact: bool | None = None
    message: str = ""


# ok: compiled, simulated, within tolerance of the reference; mismatch: compiled and
# simulated but beyond it; refused: the backend refused the kernel; spec-refused: the
# generator refused the point's spec; error: anything else (the spec function raised, the
# build failed, the simulation failed, the worker was lost).
STATUSES = ("ok", "mismatch", "refused", "spec-refused", "error")


@dataclass(frozen=True)
class KernelTiming:
    """Wall-clock figures of one kernel on one point: outside the deterministic table."""

    point: int
    kernel: str
    compile_ms: float | None = None      # this run's backend call (near 0 on a cache hit)
    backend_ms: float | None = None      # the backend's own total, from its report
    simulate_ms: float | None = None     # oracle trace, XLA compile and run
    cached: bool | None = None


@dataclass(frozen=True)
class PointResult:
    """What a worker returns for one point."""

    point: Point
    rows: tuple[KernelRow, ...]
    timings: tuple[KernelTiming, ...] = ()
    generate_s: float | None = None
    wall_s: float | None = None
    worker: str = ""
    log: str | None = None               # the point's log file, relative to the output

    def summary(self) -> str:
        parts = []
        for row in self.rows:
            if row.status in ("ok", "mismatch"):
                parts.append(f"{row.kernel} {row.status} cost {row.cost:g}")
            else:
                parts.append(f"{row.kernel} {row.status}")
        return ", ".join(parts)

