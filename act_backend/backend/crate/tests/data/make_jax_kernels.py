"""Writes the JAX-printed kernels the selection tests read, beside this file.

Each kernel is lowered with ``jax.jit`` and printed as HLO text, as a JAX user would get it.
Rerun after a JAX upgrade with ``python make_jax_kernels.py`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax

HERE = Path(__file__).resolve().parent
BF16 = jnp.bfloat16


def attention(q, k, v):
    """softmax(Q.K^T).V with jnp: K^T as a transpose, the row sum accumulated in f32."""
    e = jnp.exp(q @ k.T)
    return (e / jnp.sum(e, axis=1, keepdims=True)) @ v


def attention_dot_general(q, k, v):
    """K^T through dot dimension numbers (contracting dimension 1 of both operands)."""
    e = jnp.exp(lax.dot_general(q, k, (((1,), (1,)), ((), ()))))
    return (e / jnp.sum(e, axis=1)[:, None]) @ v


def attention_batch1(q, k, v):
    """A batch of one: every value has a leading dimension of size 1."""
    e = jnp.exp(jnp.einsum("bqd,bkd->bqk", q, k))
    total = lax.reduce(e, BF16(0), lax.add, (2,))
    return jnp.einsum("bqk,bkd->bqd", e / lax.broadcast_in_dim(total, e.shape, (0, 1)), v)


def abt(a, b):
    return lax.dot_general(a, b, (((1,), (1,)), ((), ())))


def tanh(a):
    return jnp.tanh(a)


def tanh_of_product(a, b):
    return jnp.tanh(lax.dot(a, b))


def debug_info(*xs):
    """Many parameters (index comments), scalar constants, max and min reductions."""
    y = xs[0]
    for t in xs[1:]:
        y = y + jnp.maximum(t, 0.5) * 2
    return jnp.max(y, axis=1) - jnp.min(y, axis=1)


def main() -> None:
    square = jax.ShapeDtypeStruct((64, 64), BF16)
    batch = jax.ShapeDtypeStruct((1, 64, 64), BF16)
    small = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    kernels = {
        "attention_jax": (attention, [square] * 3, False),
        "attention_dot_general": (attention_dot_general, [square] * 3, False),
        "attention_batch1_jax": (attention_batch1, [batch] * 3, False),
        "abt_jax": (abt, [square] * 2, False),
        "tanh_jax": (tanh, [square], False),
        "tanh_of_product": (tanh_of_product, [square] * 2, False),
        "debug_info_jax": (debug_info, [small] * 7, True),
    }
    for name, (fn, args, debug) in kernels.items():
        text = jax.jit(fn).lower(*args).as_text(dialect="hlo", debug_info=debug)
        (HERE / f"{name}.hlo").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
