"""Differential testing of a built backend: compile a kernel, simulate the assembly on the
accelerator's oracle, run the same HLO text on XLA, and compare element by element.

``check_kernel(build, text, inputs, work_dir)`` returns an ``Outcome``: ``compiled`` or the
backend's refusal (its message), and for a compiled kernel the largest difference in units of
the tolerance (two bf16 ulps of the largest magnitude for floats, exact for integers, or
``exact=True``: bit for bit). A campaign of many kernels adds their outcomes up in a ``Tally``
(``run_campaign``).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np
from helpers.examples import (
    ExampleBuild,
    build_example,
    build_spec_file,
    compile_kernel,
    parse_kernel_file,
)
from helpers.oracle_harness import bf16_tolerance, run_assembly
from helpers.xla_reference import run_hlo

from act_backend.hlo.dtypes import numpy_dtype


@dataclass(frozen=True)
class Outcome:
    compiled: bool
    refusal: str = ""
    wrong: bool = False
    # Largest |ours - XLA| over the tolerance (<= 1 passes); 0 for an exact integer match.
    # Compared bit for bit (``exact``): the number of elements that differ.
    error: float = 0.0
    instructions: int = 0
    exact: bool = False

    @property
    def summary(self) -> str:
        if not self.compiled:
            return f"refused: {self.refusal}"
        verdict = "WRONG" if self.wrong else "ok"
        if self.exact:
            return f"{verdict} ({self.error:.0f} elements differ bit for bit)"
        return f"{verdict} (error {self.error:.3g} of the tolerance)"


def refusal_line(stderr: str) -> str:
    """The backend's refusal without its file position and quoted instruction: the part to
    group refusals by."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return "no message"
    text = lines[0].removeprefix("error: ")
    # "file:line: message" or "file:line:col: message"
    head, sep, rest = text.partition(": ")
    if sep and head.count(":") >= 1 and head.split(":")[1].isdigit():
        text = rest
    return text.split(" (", 1)[0]


def compare(ours: np.ndarray, theirs: np.ndarray, exact: bool = False) -> tuple[bool, float]:
    """Whether ``ours`` is wrong, and the largest difference in units of the tolerance.

    NaNs must stand where XLA's stand, and infinities must equal XLA's (sign included); the
    finite values are then compared within the tolerance, or (``exact``) bit for bit, the
    sign of a zero included: the number of elements that differ."""
    if ours.shape != theirs.shape:
        return True, float("inf")
    if np.issubdtype(theirs.dtype, np.integer) or theirs.dtype == np.bool_:
        differ = int(np.count_nonzero(ours != theirs))
        return differ > 0, float(differ)
    if exact:
        if ours.dtype != theirs.dtype:
            return True, float("inf")
        nans = np.isnan(theirs)
        bits = f"u{theirs.dtype.itemsize}"
        differ = int(np.count_nonzero((np.isnan(ours) != nans)
                                      | (~nans & (ours.view(bits) != theirs.view(bits)))))
        return differ > 0, float(differ)
    a = ours.astype(np.float32)
    b = theirs.astype(np.float32)
    same_nans = (np.isnan(a) == np.isnan(b)).all()
    same_infinities = (np.isinf(a) == np.isinf(b)).all() and (a[np.isinf(a)]
                                                               == b[np.isinf(b)]).all()
    if not (same_nans and same_infinities):
        return True, float("inf")
    finite = np.isfinite(b)
    tolerance = bf16_tolerance(b[finite]) if finite.any() else 0.0
    diff = float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0
    if tolerance == 0.0:
        return diff > 0.0, 0.0 if diff == 0.0 else float("inf")
    return diff > tolerance, diff / tolerance


def check_kernel(build: ExampleBuild, text: str, inputs: Sequence[np.ndarray],
                 work_dir: Path, name: str = "kernel", exact: bool = False) -> Outcome:
    """Compiles ``text`` with ``build``'s backend and holds its simulation to XLA's run
    (bit for bit where ``exact``, else floats within the tolerance)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    hlo = work_dir / f"{name}.hlo"
    asm = work_dir / f"{name}.py"
    hlo.write_text(text)
    done = compile_kernel(build.backend, hlo, asm)
    if done.returncode != 0:
        return Outcome(False, refusal=refusal_line(done.stderr))
    instructions = sum(1 for line in asm.read_text().splitlines()
                       if line.strip().startswith("api."))
    ours = run_assembly(build.oracle_dir, asm, inputs)
    theirs = run_hlo(text, inputs)
    wrong, error = False, 0.0
    for a, b in zip(ours, theirs, strict=True):
        w, e = compare(np.asarray(a), np.asarray(b), exact)
        wrong, error = wrong or w, max(error, e)
    return Outcome(True, wrong=wrong, error=error, instructions=instructions, exact=exact)


def random_bf16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=shape).astype(ml_dtypes.bfloat16)


def kernel_inputs(path: Path, seed: int) -> list[np.ndarray]:
    """Seeded inputs for the kernel file's parameters: floats (bf16, f16, f32...) in [-1, 1),
    predicates at random, or integers over the whole range of their type (products and sums
    wrap)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in parse_kernel_file(path).entry.parameters():
        shape = tuple(p.type.shape)
        dtype = numpy_dtype(p.type.dtype)
        if p.type.dtype == "bf16":
            out.append(random_bf16(rng, shape))
        elif np.issubdtype(dtype, np.floating):
            out.append(rng.uniform(-1.0, 1.0, size=shape).astype(dtype))
        elif dtype == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            info = np.iinfo(dtype)
            out.append(rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype))
    return out


@dataclass
class Tally:
    """What a campaign of kernels came to: how many compiled, the refusals by message, the
    wrong kernels (as their campaign names them) and each kernel's check time in seconds."""
    compiled: int = 0
    refusals: collections.Counter[str] = field(default_factory=collections.Counter)
    wrong: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def report(self, total: int) -> str:
        """How many of ``total`` kernels compiled, were wrong and were refused (by message),
        and the check times."""
        lines = [f"{self.compiled} of {total} compiled ({100 * self.compiled / total:.0f}%), "
                 f"{len(self.wrong)} wrong, {total - self.compiled} refused"]
        lines += [f"  {count:4d}  {message}" for message, count in self.refusals.most_common()]
        lines += [f"  WRONG {label}" for label in self.wrong]
        lines.append(f"compile, simulate and compare: median {statistics.median(self.seconds):.2f}"
                     f" s, max {max(self.seconds):.2f} s per kernel")
        return "\n".join(lines)

    def record(self, outcome: Outcome, seconds: float, label: str) -> None:
        self.seconds.append(seconds)
        if not outcome.compiled:
            self.refusals[outcome.refusal] += 1
            return
        self.compiled += 1
        if outcome.wrong:
            self.wrong.append(label)


def run_campaign(build: ExampleBuild, kernels: Iterable[tuple], work: Path,
                 exact: bool = False) -> Tally:
    """Checks each ``(label, HLO text, inputs)`` of ``kernels`` on ``build`` in turn, printing
    one line per kernel; their tally. A kernel compares bit for bit where ``exact`` says so, or
    where its fourth element, if it has one, does."""
    tally = Tally()
    for index, (label, text, inputs, *own) in enumerate(kernels):
        started = time.perf_counter()
        outcome = check_kernel(build, text, inputs, work / f"k{index}", "kernel",
                               own[0] if own else exact)
        label = f"{index:3d} {label}"
        tally.record(outcome, time.perf_counter() - started, label)
        print(f"{label}: {outcome.summary}, {outcome.instructions} instructions, "
              f"{tally.seconds[-1]:.2f} s", flush=True)
    return tally


def campaign_arguments(description: str, kinds: Iterable[str], spec: Path | None,
                       spec_help: str) -> argparse.Namespace:
    """The arguments of a campaign that draws kernels of named kinds: ``--kernels``,
    ``--seed``, ``--keep`` (a directory to keep the kernels and assembly in), ``--kinds``
    (checked against ``kinds``) and ``--spec`` (default ``spec``)."""
    kinds = sorted(kinds)
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--kernels", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="keep the kernels and assembly here")
    parser.add_argument("--kinds", type=lambda text: text.split(","), default=kinds,
                        help="draw only these kinds (comma-separated)")
    parser.add_argument("--spec", type=Path, default=spec, help=spec_help)
    args = parser.parse_args()
    unknown = sorted(set(args.kinds) - set(kinds))
    if unknown:
        parser.error(f"unknown kinds {unknown}; the kinds are {kinds}")
    return args


def example_campaign(doc: str, kinds: Iterable[str], draw, hlo_text, random_inputs,
                     example: str = "Gemmini") -> int:
    """The command line of a campaign on `example` (or on a spec like it, ``--spec``):
    arguments as [`campaign_arguments`] reads them, the build, the kernels `draw`,
    `hlo_text` and `random_inputs` make ([`drawn_kernels`]), their checks and the report.
    The exit status: 1 when any compiled kernel was wrong."""
    args = campaign_arguments(doc.splitlines()[0], kinds, None,
                              f"a {example}-like spec file to build instead of the example")
    with tempfile.TemporaryDirectory(prefix=f"act-{example.lower()}-") as scratch:
        work = args.keep or Path(scratch)
        if args.spec:
            print(f"building {args.spec} ...", flush=True)
            build = build_spec_file(args.spec.resolve(), work / "build")
        else:
            print(f"building the {example} example ...", flush=True)
            build = build_example(example, work / "build")
        rng = np.random.default_rng(args.seed)
        kernels = drawn_kernels(rng, args.kernels, lambda r: draw(r, args.kinds), hlo_text,
                                random_inputs)
        tally = run_campaign(build, kernels, work)
    print("\n" + tally.report(args.kernels))
    return 1 if tally.wrong else 0


def drawn_kernels(rng: np.random.Generator, count: int, draw, hlo_text, random_inputs):
    """``count`` kernels ``(label, HLO text, inputs)`` for [`run_campaign`]: a kind and its
    dimensions (a tuple, labelled ``16x32x8``, or any object, labelled as it prints) from
    ``draw(rng)``, its text and argument types from ``hlo_text(kind, dims)``, inputs from
    ``random_inputs(rng, argument types)``, in that order for each kernel (a seed draws the
    same kernels whatever the checks take)."""
    for _ in range(count):
        kind, dims = draw(rng)
        text, arg_types = hlo_text(kind, dims)
        label = "x".join(map(str, dims)) if isinstance(dims, tuple) else str(dims)
        yield f"{kind} {label}", text, random_inputs(rng, arg_types)
