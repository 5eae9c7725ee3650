"""A differential campaign over int8 layer kernels of random shapes on the Gemmini example
(or on another Gemmini-like spec, ``--spec``):
products, ReLUs of products, int32 addends written before or after the product, row and
column biases, requantization to int8, wrapping int8 products, batched products with an
addend and scales, two layers in sequence, sums of products, int8 residuals, row sums, ReLUs,
products of vectors, windows of products (off the array's tile boundaries), ReLUs written
with ``jnp.where``, and transposes (of an input, of a product, and products with a transposed
operand), each with rows, contraction and columns drawn from 1 to 64
(multiples of the 16x16 array and not), written with ``jax.numpy`` as a user writes them,
compiled by the example's backend, simulated on its oracle and compared exactly with XLA's
run of the same HLO text.

Prints one line per kernel, then how many compiled, how many were wrong, the refusals grouped
by message and the compile-and-check times. Exits 1 when any compiled kernel was wrong.

Kernels this ISA cannot compute are not drawn: an int32-to-int8 conversion that wraps
(every store to int8 saturates). On another spec (``--spec FILE``, a spec file
that generates its oracle and backend when run, such as the public ACT Gemmini spec), the
same kinds are drawn: what it cannot compute is counted as refused, with its message.

    python tests/benchmarks/gemmini_campaign.py [--kernels 100] [--seed 0] [--keep DIR]
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
SIZES = (1, 3, 8, 16, 17, 24, 32, 40, 48, 64)


def product(a, b):
    return jnp.matmul(a, b, preferred_element_type=I32)


def relu(x):
    return jnp.maximum(x, jnp.zeros((), x.dtype))


def requantize(x):
    return jnp.clip(x, -128, 127).astype(I8)


# kind -> (m, k, n) -> (function, [(shape, dtype) per argument])
KINDS = {
    "product": lambda m, k, n: (product, [((m, k), I8), ((k, n), I8)]),
    "relu(product)": lambda m, k, n: (lambda a, b: relu(product(a, b)),
                                      [((m, k), I8), ((k, n), I8)]),
    "product + c": lambda m, k, n: (lambda a, b, c: product(a, b) + c,
                                    [((m, k), I8), ((k, n), I8), ((m, n), I32)]),
    "c + product": lambda m, k, n: (lambda c, a, b: c + product(a, b),
                                    [((m, n), I32), ((m, k), I8), ((k, n), I8)]),
    "product + row bias": lambda m, k, n: (lambda a, b, c: product(a, b) + c[None, :],
                                           [((m, k), I8), ((k, n), I8), ((n,), I32)]),
    "product + int8 column bias": lambda m, k, n: (
        lambda a, b, c: product(a, b) + c.astype(I32)[:, None],
        [((m, k), I8), ((k, n), I8), ((m,), I8)]),
    "relu(product + c)": lambda m, k, n: (lambda a, b, c: relu(product(a, b) + c),
                                          [((m, k), I8), ((k, n), I8), ((m, n), I32)]),
    "requantize": lambda m, k, n: (lambda a, b: requantize(product(a, b)),
                                   [((m, k), I8), ((k, n), I8)]),
    "int8 product": lambda m, k, n: (jnp.matmul, [((m, k), I8), ((k, n), I8)]),
    "batched product + c": lambda m, k, n: (lambda a, b, c: product(a, b) + c,
                                            [((2, m, k), I8), ((2, k, n), I8),
                                             ((2, m, n), I32)]),
    "scale": lambda m, k, n: (lambda x: x * jnp.int8(3), [((m, n), I8)]),
    "two layers": lambda m, k, n: (
        lambda a, w1, w2: product(requantize(relu(product(a, w1))), w2),
        [((m, k), I8), ((k, n), I8), ((n, k), I8)]),
    "sum of two products": lambda m, k, n: (
        lambda a, b, c, d: product(a, b) + product(c, d),
        [((m, k), I8), ((k, n), I8), ((m, n), I8), ((n, n), I8)]),
    "product + int8 residual": lambda m, k, n: (
        lambda a, b, x: requantize(product(a, b) + x.astype(I32)),
        [((m, k), I8), ((k, n), I8), ((m, n), I8)]),
    "row sums": lambda m, k, n: (lambda x: jnp.sum(x.astype(I32), axis=1), [((m, n), I8)]),
    "relu": lambda m, k, n: (relu, [((m, n), I8)]),
    "matrix-vector product": lambda m, k, n: (product, [((m, k), I8), ((k,), I8)]),
    "relu by jnp.where": lambda m, k, n: (
        lambda a, b, c: (lambda x: jnp.where(x > 0, x, 0))(product(a, b) + c),
        [((m, k), I8), ((k, n), I8), ((m, n), I32)]),
    "window of a product": lambda m, k, n: (
        lambda a, b: product(a, b)[m // 3:, n // 4:n - n // 5],
        [((m, k), I8), ((k, n), I8)]),
    "vector-matrix product + bias": lambda m, k, n: (lambda v, b, c: product(v, b) + c,
                                                     [((k,), I8), ((k, n), I8), ((n,), I32)]),
    # Nothing on Gemmini transposes: each transpose is computed by one-element products.
    "transpose": lambda m, k, n: (lambda x: x.T, [((m, n), I8)]),
    "product with a transposed lhs": lambda m, k, n: (lambda a, b: product(a.T, b),
                                                      [((k, m), I8), ((k, n), I8)]),
    "product with a transposed rhs": lambda m, k, n: (lambda a, b: product(a, b.T),
                                                      [((m, k), I8), ((n, k), I8)]),
    "transposed relu(product)": lambda m, k, n: (lambda a, b: relu(product(a, b)).T,
                                                 [((m, k), I8), ((k, n), I8)]),
}


def draw(rng: np.random.Generator, kinds: list[str]) -> tuple[str, tuple[int, int, int]]:
    kind = kinds[int(rng.integers(len(kinds)))]
    m, k, n = (int(SIZES[int(rng.integers(len(SIZES)))]) for _ in range(3))
    return kind, (m, k, n)


def hlo_text(kind: str, dims: tuple[int, int, int]) -> tuple[str, list]:
    fn, args = KINDS[kind](*dims)
    specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in args]
    return jax.jit(fn).lower(*specs).as_text(dialect="hlo"), args


def random_inputs(rng: np.random.Generator, args: list) -> list[np.ndarray]:
    """Integers over the whole range of their type: products and sums wrap."""
    out = []
    for shape, dtype in args:
        info = np.iinfo(np.dtype(dtype))
        out.append(rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype))
    return out


def main() -> int:
    return example_campaign(__doc__, KINDS, draw, hlo_text, random_inputs)


if __name__ == "__main__":
    sys.exit(main())
