"""Writes the Gemmini example's kernels (kernels/<name>.hlo) as JAX prints them.

Each kernel is an int8 computation on 16x16 tiles written with ``jax.numpy`` the way a JAX
user writes it, lowered with ``jax.jit`` and printed as HLO text. Rerun after a JAX
upgrade with ``python make_kernels.py`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp

HERE = Path(__file__).resolve().parent
I8, I32 = jnp.int8, jnp.int32
TILE = jax.ShapeDtypeStruct((16, 16), I8)
TILE32 = jax.ShapeDtypeStruct((16, 16), I32)
COLUMN = jax.ShapeDtypeStruct((16,), I8)
COLUMN32 = jax.ShapeDtypeStruct((16,), I32)


def product(a, b):
    """The int8 product accumulated in int32, as JAX writes it."""
    return jnp.matmul(a, b, preferred_element_type=I32)


KERNELS = {
    # name: (function, argument shapes)
    "matmul_int8": (lambda a, b: jnp.matmul(a, b), [TILE, TILE]),
    "matmul": (product, [TILE, TILE]),
    "matmul_add": (lambda a, b, c: product(a, b) + c, [TILE, TILE, TILE32]),
    "relu_matmul": (lambda a, b: jnp.maximum(product(a, b), 0), [TILE, TILE]),
    "requantize": (lambda a, b: jnp.clip(product(a, b), -128, 127).astype(I8), [TILE, TILE]),
    "scale": (lambda a: a * I8(3), [TILE]),
    "add": (lambda a, b: a + b, [TILE, TILE]),
    # an int8 bias per row, widened by JAX's type promotion (the array takes int8 operands
    # only: an int32 column has no instruction that repeats it across columns)
    "bias_column": (lambda a, b, bias: product(a, b) + bias[:, None], [TILE, TILE, COLUMN]),
    "bias_column_int32": (lambda a, b, bias: product(a, b) + bias[:, None],
                          [TILE, TILE, COLUMN32]),
    "row_sums": (lambda a: jnp.sum(a, axis=1, dtype=I32), [TILE]),
    "negate": (lambda a: -a, [TILE]),
    "reverse": (lambda a: jnp.flip(a, axis=0), [TILE]),
    # Gemmini's only maximum is the ReLU of its stores: elementwise maxima and minima of
    # int8 values are computed in int32 from one
    "maximum": (lambda a, b: jnp.maximum(a, b), [TILE, TILE]),
    "minimum": (lambda a, b: jnp.minimum(a, b), [TILE, TILE]),
    "clamp": (lambda a: jax.lax.clamp(I8(-24), a, I8(2)), [TILE]),
}


def main() -> None:
    for name, (fn, args) in KERNELS.items():
        text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
        target = HERE / "kernels" / f"{name}.hlo"
        target.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
