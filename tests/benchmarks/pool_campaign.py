"""A differential campaign over float32 poolings of random shapes on the Registers test
accelerator (16-lane vector registers; or on another spec, ``--spec``): windowed maxima and
minima (``jax.lax.reduce_window``, the region written either way round), maxima of a ReLU
(the pooling reads a computed value), scaled maxima (work after the pooling) and mean
poolings, over channels-last images of 1 to 3 spatial dimensions, batches of 1 or 2, spatial
sizes from 1 to 12, channels 8 to 48, windows 1 to 3 wide, strides 1 to 3, window dilations of
1 or 2, now and then a dilated image, padding SAME, VALID or drawn per side, written with
``jax.lax.reduce_window`` as flax's ``max_pool`` and ``avg_pool`` write it, compiled by the
spec's backend, simulated on its oracle and compared with XLA's run of the same HLO text: bit
for bit for maxima and minima (signed zeros among the inputs), within two bf16 ulps for means
(a float sum is rounded in XLA's reference order, which XLA's CPU run reassociates at some
shapes).

Prints one line per kernel, then how many compiled, how many were wrong, the refusals grouped
by message and the compile-and-check times. Exits 1 when any compiled kernel was wrong.

    python tests/benchmarks/pool_campaign.py [--kernels 60] [--seed 0] [--keep DIR]
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

from helpers.differential import campaign_arguments, run_campaign  # noqa: E402
from helpers.examples import build_spec_file  # noqa: E402

F32 = jnp.float32
SPEC = ROOT / "tests" / "specs" / "Registers" / "Registers.py"
CHANNELS = (8, 16, 16, 32, 48)


def pool(g, x, init, reducer):
    """`reducer` over the windows `g` draws, of the channels-last image `x`."""
    rank = len(g["spatial"])
    whole = (1,) * rank
    return jax.lax.reduce_window(
        x, jnp.array(init, x.dtype), reducer, (1, *g["window"], 1), (1, *g["strides"], 1),
        g["padding"] if isinstance(g["padding"], str) else [(0, 0), *g["padding"], (0, 0)],
        base_dilation=(1, *g.get("base_dilation", whole), 1),
        window_dilation=(1, *g["dilation"], 1))


def relu(x):
    return jnp.maximum(x, jnp.zeros((), x.dtype))


# kind -> (function of the drawn geometry and the image, exact)
KINDS = {
    "max pool": (lambda g, x: pool(g, x, -jnp.inf, jax.lax.max), True),
    "min pool": (lambda g, x: pool(g, x, jnp.inf, jax.lax.min), True),
    "min pool, element first": (lambda g, x: pool(g, x, jnp.inf, lambda a, b: jnp.minimum(b, a)),
                                True),
    "max pool of relu": (lambda g, x: pool(g, relu(x), -jnp.inf, jax.lax.max), True),
    "scaled max pool": (lambda g, x: pool(g, x, -jnp.inf, jax.lax.max) * F32(0.5), True),
    "mean pool": (lambda g, x: pool(g, x, 0.0, jax.lax.add) / np.prod(g["window"]), False),
}


class Geometry(dict):
    """A drawn pooling, printed as `image / window stride padding`."""

    def __str__(self) -> str:
        dims = "x".join(map(str, (self["batch"], *self["spatial"], self["channels"])))
        window = "x".join(map(str, self["window"]))
        stride = "x".join(map(str, self["strides"]))
        pad = self["padding"] if isinstance(self["padding"], str) else "pad" + ",".join(
            f"{lo}_{hi}" for lo, hi in self["padding"])
        dilated = "" if set(self["dilation"]) == {1} else " dilated"
        base = self.get("base_dilation")
        spread = "" if base is None else " image dilated " + "x".join(map(str, base))
        return f"{dims} / {window} stride {stride} {pad}{dilated}{spread}"


def draw(rng: np.random.Generator, kinds: list[str]) -> tuple[str, Geometry]:
    kind = kinds[int(rng.integers(len(kinds)))]
    while True:
        rank = int(rng.choice([1, 2, 2, 2, 3]))
        spatial = [int(rng.integers(1, 13 if rank < 3 else 7)) for _ in range(rank)]
        style = rng.integers(3)
        g = Geometry({
            "batch": int(rng.integers(1, 3)), "spatial": spatial,
            "channels": int(rng.choice(CHANNELS)),
            "window": [int(rng.integers(1, 4)) for _ in range(rank)],
            "strides": [int(rng.integers(1, 4)) for _ in range(rank)],
            "dilation": [int(rng.choice([1, 1, 2])) for _ in range(rank)],
            "padding": ("SAME" if style == 0 else "VALID" if style == 1 else
                        [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(rank)]),
        })
        if rng.integers(6) == 0:
            g["base_dilation"] = [int(rng.choice([1, 2])) for _ in range(rank)]
        image = jax.ShapeDtypeStruct((g["batch"], *spatial, g["channels"]), F32)
        try:
            out = jax.eval_shape(lambda x, g=g: KINDS[kind][0](g, x), image).shape
        except (TypeError, ValueError):
            continue
        if all(d > 0 for d in out):
            return kind, g


def hlo_text(kind: str, g: Geometry) -> tuple[str, tuple[int, ...]]:
    shape = (g["batch"], *g["spatial"], g["channels"])
    fn = KINDS[kind][0]
    return jax.jit(lambda x: fn(g, x)).lower(jax.ShapeDtypeStruct(shape, F32)).as_text(
        dialect="hlo"), shape


def random_input(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal floats of several magnitudes, with signed zeros among them: the zero a maximum
    of `+0` and `-0` keeps depends on the order of the fold."""
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
    x = np.where(rng.random(shape) < 0.1, rng.choice([0.0, -0.0], shape), x)
    return np.asarray(x, dtype=np.float32)


def drawn(rng: np.random.Generator, count: int, kinds: list[str]):
    """`count` poolings ``(label, HLO text, inputs, exact)`` for `run_campaign`."""
    for _ in range(count):
        kind, g = draw(rng, kinds)
        text, shape = hlo_text(kind, g)
        yield f"{kind} {g}", text, [random_input(rng, shape)], KINDS[kind][1]


def main() -> int:
    args = campaign_arguments(__doc__.splitlines()[0], KINDS, SPEC,
                              "the spec file to build (default: the Registers test accelerator)")
    with tempfile.TemporaryDirectory(prefix="act-pool-") as scratch:
        work = args.keep or Path(scratch)
        print(f"building {args.spec} ...", flush=True)
        build = build_spec_file(args.spec.resolve(), work / "build")
        rng = np.random.default_rng(args.seed)
        tally = run_campaign(build, drawn(rng, args.kernels, args.kinds), work)
    print("\n" + tally.report(args.kernels))
    return 1 if tally.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
