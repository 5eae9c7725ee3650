"""Attention from JAX on the QKV accelerator, in one call.

    python examples/jax/qkv_attention.py            # generates QKV on first use, then compiles
    python examples/jax/qkv_attention.py BACKEND    # a spec file or a built backends/QKV instead

Compiles ``softmax(Q.K^T).V`` written with jax.numpy for QKV (examples/QKV/QKV.py), simulates
it on QKV's oracle with the example's inputs, shows what was compiled, and compares it with
JAX on the CPU. Kernels are cached (``$ACT_BACKEND_JAX_CACHE``): a second run compiles nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import ml_dtypes
import numpy as np
from compile_and_check import compile_and_check

EXAMPLES = Path(__file__).resolve().parents[1]
QKV_SPEC = EXAMPLES / "QKV" / "QKV.py"
DATA = EXAMPLES / "QKV" / "data"


def attention(q, k, v):
    scores = q @ k.T
    e = jnp.exp(scores)
    return (e / jnp.sum(e, axis=1, keepdims=True)) @ v


def load(name: str) -> jnp.ndarray:
    """A 64x64 bf16 matrix of the QKV example (raw little-endian bf16)."""
    raw = np.fromfile(DATA / f"{name}.dat", dtype="<u2")
    return jnp.asarray(raw.view(ml_dtypes.bfloat16).reshape(64, 64))


def main(backend: str | Path = QKV_SPEC) -> None:
    q, k, v = load("Q"), load("K"), load("V")

    compile_and_check(attention, q, k, v, backend=backend)


if __name__ == "__main__":
    main(*sys.argv[1:2])
