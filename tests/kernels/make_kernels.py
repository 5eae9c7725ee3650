"""Writes the JAX-printed kernel fixtures beside this file.

Each kernel is a small lax program over bf16[64,64] operands, lowered with ``jax.jit`` and
printed as HLO text (``as_text(dialect="hlo")``), exactly as a user of JAX would obtain it.
The programs use lax primitives directly so that every value stays in bf16 (``jnp`` helpers
such as ``jax.nn.softmax`` would sum in f32). Rerun after a JAX upgrade with

    python tests/kernels/make_kernels.py

and review the diff: the parser tests read these files as they are.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax

HERE = Path(__file__).resolve().parent
BF16 = jnp.bfloat16


def _row_sum(x):
    return lax.reduce(x, BF16(0), lax.add, (1,))


def attention(q, k, v):
    """softmax(Q.K^T).V, with K^T expressed through dot dimension numbers."""
    s = lax.dot_general(q, k, (((1,), (1,)), ((), ())))
    e = lax.exp(s)
    p = e / lax.broadcast_in_dim(_row_sum(e), (64, 64), (0,))
    return lax.dot(p, v)


def attention_scaled(q, k, v):
    """softmax(Q.K^T / 8).V: scores scaled by the square root of the head size, divided."""
    s = lax.dot_general(q, k, (((1,), (1,)), ((), ()))) / BF16(8)
    e = lax.exp(s)
    p = e / lax.broadcast_in_dim(_row_sum(e), (64, 64), (0,))
    return lax.dot(p, v)


def matmul(a, b):
    return lax.dot(a, b)


def softmax(x):
    """Row softmax as the QKV softmax instruction defines it (no max subtraction)."""
    e = lax.exp(x)
    return e / lax.broadcast_in_dim(_row_sum(e), (64, 64), (0,))


def unsupported_tanh(a, b):
    """tanh of a product: no QKV instruction implements tanh."""
    return lax.tanh(lax.dot(a, b))


def row_max(x):
    """Each row's maximum across the row (a reduce whose init is -inf)."""
    return lax.broadcast_in_dim(lax.reduce(x, BF16(-jnp.inf), lax.max, (1,)), (64, 64), (0,))


def exp_quarter(x):
    return lax.exp(x) * BF16(0.25)


def relu_select(x):
    """A ReLU as JAX's where: a compare and a select."""
    zero = jnp.zeros_like(x)
    return lax.select(x < zero, zero, x)


KERNELS = {
    "attention_jax.hlo": (attention, 3),
    "matmul.hlo": (matmul, 2),
    "softmax.hlo": (softmax, 1),
    "unsupported_tanh.hlo": (unsupported_tanh, 2),
    "attention_scaled.hlo": (attention_scaled, 3),
    "row_max.hlo": (row_max, 1),
    "exp_quarter.hlo": (exp_quarter, 1),
    "relu_select.hlo": (relu_select, 1),
}


def hlo_text(fn, arity: int) -> str:
    operand = jax.ShapeDtypeStruct((64, 64), BF16)
    return jax.jit(fn).lower(*[operand] * arity).as_text(dialect="hlo")


def main() -> None:
    for file_name, (fn, arity) in KERNELS.items():
        text = hlo_text(fn, arity)
        if " convert(" in text:
            raise SystemExit(f"{file_name}: JAX inserted a convert; the kernel must stay bf16")
        (HERE / file_name).write_text(text)
        print(f"wrote {file_name}")


if __name__ == "__main__":
    main()
