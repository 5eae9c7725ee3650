"""An int8 layer from JAX on the Gemmini example accelerator, in one call.

    python examples/jax/gemmini_int8_layer.py            # generates Gemmini on first use
    python examples/jax/gemmini_int8_layer.py BACKEND    # a spec file or a built backends/Gemmini

``relu(x @ w + b)`` on a 16x16 tile: int8 activations and weights, the product accumulated in
int32 with an int32 bias, as a JAX user writes it (examples/Gemmini/Gemmini.py is the
accelerator). The result stays int32: requantizing it to int8 (``jnp.clip(...).astype``) is not
compiled yet (JAX prints the clip as a call, which the backend refuses). The integers are
compared with JAX on the CPU exactly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

import act_backend.jax

GEMMINI_SPEC = Path(__file__).resolve().parents[1] / "Gemmini" / "Gemmini.py"


def layer(x, w, b):
    return jnp.maximum(jnp.matmul(x, w, preferred_element_type=jnp.int32) + b, 0)


def main(backend: str | Path = GEMMINI_SPEC) -> None:
    kx, kw, kb = jax.random.split(jax.random.key(0), 3)
    x = jax.random.randint(kx, (16, 16), -128, 128, jnp.int8)
    w = jax.random.randint(kw, (16, 16), -128, 128, jnp.int8)
    b = jax.random.randint(kb, (16, 16), -2000, 2000, jnp.int32)

    kernel = act_backend.jax.compile(layer, x, w, b, backend=backend)
    out, run_ms = kernel.simulate(x, w, b)
    source = "the cache" if kernel.cached else "the backend"
    print(f"{kernel.name}: {len(kernel.instructions)} instructions, cost {kernel.cost}, "
          f"from {source}; assembly in {kernel.assembly.path}")
    for call in kernel.instructions:
        print(f"    {call}")
    print(f"out: {out.dtype}{list(out.shape)}, simulated in {run_ms:.2f} ms")
    print(act_backend.jax.check(layer, x, w, b, backend=backend))


if __name__ == "__main__":
    main(*sys.argv[1:2])
