"""A differential campaign over float32 elementwise kernels of random shapes on the Registers
test accelerator (16-lane vector registers; or on another spec, ``--spec``): sums,
differences, products, maxima and minima of two inputs, ReLUs, clamps, multiply-adds, a
scalar times a vector plus another (axpy), scales by a scalar, rows and columns scaled or
shifted by a vector, squares and negations, compositions of those (a ReLU of a
multiply-add, a squared difference, a sum of two scaled inputs, a leaky ReLU, rows scaled
and shifted), and kinds no instruction computes (an absolute value, a row sum), over
vectors, matrices and batches whose dimensions are drawn from 1 to 64 (multiples of the 16
lanes and not), written with ``jax.numpy`` as a user writes them,
compiled by the spec's backend, simulated on its oracle and compared bit for bit with XLA's
run of the same HLO text (every instruction rounds as the kernel does: no tolerance).

Prints one line per kernel, then how many compiled, how many were wrong, the refusals grouped
by message and the compile-and-check times. Exits 1 when any compiled kernel was wrong.

    python tests/benchmarks/vector_campaign.py [--kernels 100] [--seed 0] [--keep DIR]
                                               [--spec FILE]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.differential import campaign_arguments, drawn_kernels, run_campaign  # noqa: E402
from helpers.examples import build_spec_file  # noqa: E402

F32 = jnp.float32
SIZES = (1, 3, 8, 16, 17, 32, 48, 64)
SPEC = ROOT / "tests" / "specs" / "Registers" / "Registers.py"


def relu(x):
    return jnp.maximum(x, jnp.zeros((), x.dtype))


# kind -> shape -> (function, [shape per argument])
KINDS = {
    "add": lambda s: (jnp.add, [s, s]),
    "subtract": lambda s: (jnp.subtract, [s, s]),
    "multiply": lambda s: (jnp.multiply, [s, s]),
    "maximum": lambda s: (jnp.maximum, [s, s]),
    "minimum": lambda s: (jnp.minimum, [s, s]),
    "relu": lambda s: (relu, [s]),
    "clamp": lambda s: (lambda x, lo, hi: jnp.minimum(jnp.maximum(x, lo), hi), [s, s, s]),
    "a * b + c": lambda s: (lambda a, b, c: a * b + c, [s, s, s]),
    "c + a * b": lambda s: (lambda a, b, c: c + a * b, [s, s, s]),
    "axpy": lambda s: (lambda a, x, y: a * x + y, [(), s, s]),
    "scale": lambda s: (lambda x, a: x * a, [s, ()]),
    "square": lambda s: (lambda x: x * x, [s]),
    "negate": lambda s: (jnp.negative, [s]),
    "relu(a - b)": lambda s: (lambda a, b: relu(a - b), [s, s]),
    "rows scaled": lambda s: (lambda x, v: x * v, [s, s[-1:]]),
    "columns shifted": lambda s: (lambda x, v: x + v[..., None], [s, s[:-1]]),
    "relu(a * b + c)": lambda s: (lambda a, b, c: relu(a * b + c), [s, s, s]),
    "(a - b)^2": lambda s: (lambda a, b: (a - b) * (a - b), [s, s]),
    "a * s + b * t": lambda s: (lambda a, x, b, y: a * x + b * y, [s, (), s, ()]),
    "leaky relu": lambda s: (lambda x: jnp.maximum(x, x * jnp.float32(0.125)), [s]),
    "rows scaled and shifted": lambda s: (lambda x, v, w: x * v + w, [s, s[-1:], s[-1:]]),
    "absolute value": lambda s: (jnp.abs, [s]),
    "row sums": lambda s: (lambda x: jnp.sum(x, axis=-1), [s]),
}


def draw(rng: np.random.Generator, kinds: list[str]) -> tuple[str, tuple[int, ...]]:
    kind = kinds[int(rng.integers(len(kinds)))]
    rank = int(rng.integers(1, 4))
    if kind in ("columns shifted", "row sums"):
        rank = max(rank, 2)
    return kind, tuple(int(SIZES[int(rng.integers(len(SIZES)))]) for _ in range(rank))


def hlo_text(kind: str, shape: tuple[int, ...]) -> tuple[str, list]:
    fn, shapes = KINDS[kind](shape)
    specs = [jax.ShapeDtypeStruct(s, F32) for s in shapes]
    return jax.jit(fn).lower(*specs).as_text(dialect="hlo"), shapes


def random_inputs(rng: np.random.Generator, shapes: list) -> list[np.ndarray]:
    """Normal floats of several magnitudes, with signed zeros among them: maxima and minima
    of zeros, and sums that cancel, show their signs."""
    out = []
    for shape in shapes:
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
        x = np.where(rng.random(shape) < 0.05, rng.choice([0.0, -0.0], shape), x)
        out.append(np.asarray(x, dtype=np.float32))
    return out


def main() -> int:
    args = campaign_arguments(__doc__.splitlines()[0], KINDS, SPEC,
                              "the spec file to build (default: the Registers test accelerator)")
    with tempfile.TemporaryDirectory(prefix="act-vector-") as scratch:
        work = args.keep or Path(scratch)
        print(f"building {args.spec} ...", flush=True)
        build = build_spec_file(args.spec.resolve(), work / "build")
        rng = np.random.default_rng(args.seed)
        kernels = drawn_kernels(rng, args.kernels, lambda r: draw(r, args.kinds), hlo_text,
                                random_inputs)
        tally = run_campaign(build, kernels, work, exact=True)

    print("\n" + tally.report(args.kernels))
    return 1 if tally.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
