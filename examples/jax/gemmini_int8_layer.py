"""An int8 layer from JAX on the Gemmini example accelerator, in one call.

    python examples/jax/gemmini_int8_layer.py            # generates Gemmini on first use
    python examples/jax/gemmini_int8_layer.py BACKEND    # a spec file or a built backends/Gemmini

A quantized layer on a 16x16 tile, as a JAX user writes it: int8 activations and weights, the
product accumulated in int32 with an int32 bias, ReLU, then requantized to int8 by saturation
(examples/Gemmini/Gemmini.py is the accelerator). The integers are compared with JAX on the
CPU exactly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
from compile_and_check import compile_and_check

GEMMINI_SPEC = Path(__file__).resolve().parents[1] / "Gemmini" / "Gemmini.py"


def layer(x, w, b):
    accumulated = jnp.matmul(x, w, preferred_element_type=jnp.int32) + b
    return jnp.clip(jnp.maximum(accumulated, 0), -128, 127).astype(jnp.int8)


def main(backend: str | Path = GEMMINI_SPEC) -> None:
    kx, kw, kb = jax.random.split(jax.random.key(0), 3)
    x = jax.random.randint(kx, (16, 16), -128, 128, jnp.int8)
    w = jax.random.randint(kw, (16, 16), -128, 128, jnp.int8)
    b = jax.random.randint(kb, (16, 16), -2000, 2000, jnp.int32)

    compile_and_check(layer, x, w, b, backend=backend)


if __name__ == "__main__":
    main(*sys.argv[1:2])
