"""A differential campaign over int8 convolutions of random shapes on the Gemmini example (or
on another Gemmini-like spec, ``--spec``): plain convolutions, ReLUs of them with a bias,
quantized layers (bias, ReLU, saturation to int8), convolutions plus an addend of their shape,
grouped and depthwise ones, 1-D and 3-D ones, with batches of 1 or 2, spatial sizes from 1 to
12, features from 1 to 32, windows from 1 to 4 wide, strides from 1 to 3, kernel dilations of
1 or 2, input dilations of 1 to 3 (transposed convolutions), padding SAME, VALID or drawn
per side (negative too), and images channels-last (NHWC) or channels-first (NCHW, as
``jax.lax.conv`` takes them) and kernels spatial-first (HWIO) or features-first (OIHW), written
with
``jax.lax.conv_general_dilated`` as a user writes them, compiled by the example's backend,
simulated on its oracle and compared exactly with XLA's run of the same HLO text.

Prints one line per kernel, then how many compiled, how many were wrong, the refusals grouped
by message and the compile-and-check times. Exits 1 when any compiled kernel was wrong.

    python tests/benchmarks/conv_campaign.py [--kernels 60] [--seed 0] [--keep DIR]
                                             [--spec FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.differential import example_campaign  # noqa: E402

I8, I32 = jnp.int8, jnp.int32
FEATURES = (1, 3, 8, 16, 24, 32)
SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def layouts(geometry) -> tuple[str, str, str]:
    """The dimension numbers of `geometry`: its image (and output) and kernel layouts."""
    spatial = SPATIAL[geometry["rank"]]
    image = "NC" + spatial if geometry["channels_first"] else "N" + spatial + "C"
    kernel = "OI" + spatial if geometry["kernel_features_first"] else spatial + "IO"
    return image, kernel, image


def relu(x):
    return jnp.maximum(x, jnp.zeros((), x.dtype))


def requantize(x):
    return jnp.clip(x, -128, 127).astype(I8)


class Geometry(dict):
    """A drawn convolution, printed as `input * window / strides padding groups`."""

    def __str__(self) -> str:
        dims = "x".join(map(str, (self["batch"], *self["spatial"], self["features"])))
        window = "x".join(map(str, (*self["window"], self["out_features"])))
        pad = self["padding"] if isinstance(self["padding"], str) else "pad" + ",".join(
            f"{lo}_{hi}" for lo, hi in self["padding"])
        dilation = "" if set(self["dilation"]) == {1} else " dilated"
        spread = self["lhs_dilation"]
        transposed = "" if set(spread) == {1} else " input dilated " + "x".join(map(str, spread))
        groups = "" if self["groups"] == 1 else f" {self['groups']} groups"
        stride = "x".join(map(str, self["strides"]))
        image, kernel, _ = layouts(self)
        layout = f" {image}/{kernel}"
        return f"{dims} * {window} stride {stride} {pad}{dilation}{transposed}{groups}{layout}"


def conv(geometry):
    """The int32 convolution `geometry` describes (strides, padding, dilation, groups)."""
    def apply(x, w):
        return jax.lax.conv_general_dilated(
            x, w, geometry["strides"], geometry["padding"], lhs_dilation=geometry["lhs_dilation"],
            rhs_dilation=geometry["dilation"], dimension_numbers=layouts(geometry),
            feature_group_count=geometry["groups"], preferred_element_type=I32)
    return apply


def per_feature(b, out: tuple[int, ...], axis: int):
    """A bias of one value per output feature (`axis` of the output), shaped to broadcast."""
    return b.reshape([n if d == axis else 1 for d, n in enumerate(out)])


# kind -> (convolution, output shape, its feature axis) -> (function, [(shape, dtype) per
# argument after the input and kernel])
KINDS = {
    "convolution": lambda c, out, f: (lambda x, w: c(x, w), []),
    "relu(convolution + bias)": lambda c, out, f: (
        lambda x, w, b: relu(c(x, w) + per_feature(b, out, f)), [((out[f],), I32)]),
    "quantized layer": lambda c, out, f: (
        lambda x, w, b: requantize(relu(c(x, w) + per_feature(b, out, f))), [((out[f],), I32)]),
    "convolution + addend": lambda c, out, f: (lambda x, w, y: c(x, w) + y, [(out, I32)]),
}


def draw(rng: np.random.Generator, kinds: list[str]) -> tuple[str, Geometry]:
    kind = kinds[int(rng.integers(len(kinds)))]
    while True:
        rank = int(rng.choice([1, 2, 2, 2, 3]))
        spatial = [int(rng.integers(1, 13 if rank < 3 else 7)) for _ in range(rank)]
        window = [int(rng.integers(1, 5)) for _ in range(rank)]
        strides = tuple(int(rng.integers(1, 4)) for _ in range(rank))
        dilation = tuple(int(rng.choice([1, 1, 2])) for _ in range(rank))
        style = rng.integers(3)
        padding = ("SAME" if style == 0 else "VALID" if style == 1 else
                   [(int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(rank)])
        groups = int(rng.choice([1, 1, 1, 2, 4]))
        features = int(rng.choice(FEATURES)) * groups
        out_features = int(rng.choice(FEATURES)) * groups
        lhs_dilation = tuple(int(rng.choice([1, 1, 1, 2, 3])) for _ in range(rank))
        channels_first, kernel_features_first = (bool(rng.integers(3) == 0) for _ in range(2))
        geometry = Geometry({"rank": rank, "batch": int(rng.integers(1, 3)), "spatial": spatial,
                    "window": window, "strides": strides, "dilation": dilation,
                    "lhs_dilation": lhs_dilation,
                    "padding": padding, "groups": groups, "features": features,
                    "out_features": out_features, "channels_first": channels_first,
                    "kernel_features_first": kernel_features_first})
        try:
            out = output_shape(geometry)
        except (TypeError, ValueError):
            continue
        if all(d > 0 for d in out):
            return kind, geometry


def arguments(geometry: dict) -> list:
    g = geometry
    image = ((g["batch"], g["features"], *g["spatial"]) if g["channels_first"]
             else (g["batch"], *g["spatial"], g["features"]))
    kernel_in = g["features"] // g["groups"]
    kernel = ((g["out_features"], kernel_in, *g["window"]) if g["kernel_features_first"]
              else (*g["window"], kernel_in, g["out_features"]))
    return [(image, I8), (kernel, I8)]


def output_shape(geometry: dict) -> tuple[int, ...]:
    specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in arguments(geometry)]
    return tuple(jax.eval_shape(conv(geometry), *specs).shape)


def hlo_text(kind: str, geometry: dict) -> tuple[str, list]:
    out = output_shape(geometry)
    fn, extra = KINDS[kind](conv(geometry), out, 1 if geometry["channels_first"] else len(out) - 1)
    args = arguments(geometry) + extra
    specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in args]
    return jax.jit(fn).lower(*specs).as_text(dialect="hlo"), args


def random_inputs(rng: np.random.Generator, args: list) -> list[np.ndarray]:
    """Integers over the whole range of their type (int32 addends bounded): sums wrap."""
    out = []
    for shape, dtype in args:
        info = np.iinfo(np.dtype(dtype))
        low, high = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
        out.append(rng.integers(low, high, shape, endpoint=True).astype(dtype))
    return out


def main() -> int:
    return example_campaign(__doc__, KINDS, draw, hlo_text, random_inputs)


if __name__ == "__main__":
    sys.exit(main())
