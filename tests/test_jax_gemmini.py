"""Int8 kernels written with JAX's int8 idiom compile on the Gemmini example through
act_backend.jax and equal JAX exactly: products accumulated in int32 with
``preferred_element_type``, bias adds, ReLU, requantization by ``jnp.clip`` and
``astype(int8)``, per-row biases and row sums, as a quantized layer on a systolic array writes
them, and a quantized convolution layer. What no instruction computes is refused at the JAX
line that made it.
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import act_backend.jax as ajax
from act_backend.jax import cache

pytestmark = pytest.mark.slow

I8, I32 = jnp.int8, jnp.int32


def acc(x, w):
    """The int8 product accumulated in int32."""
    return jnp.matmul(x, w, preferred_element_type=I32)


def requantize(y):
    return jnp.clip(y, -128, 127).astype(I8)


# name: (function, argument types as (shape, dtype), the instructions compiled)
KERNELS = {
    "product": (acc, [((16, 16), I8), ((16, 16), I8)],
                ["mvin", "mvin", "matmul32", "mvout_acc"]),
    "wrapping int8 product": (jnp.matmul, [((16, 16), I8), ((16, 16), I8)],
                              ["mvin", "mvin", "matmul8", "mvout"]),
    "bias": (lambda x, w, b: acc(x, w) + b, [((16, 16), I8), ((16, 16), I8), ((16, 16), I32)],
             ["mvin", "mvin", "mvin_acc", "mac32", "mvout_acc"]),
    "relu": (lambda x, w: jnp.maximum(acc(x, w), 0), [((16, 16), I8), ((16, 16), I8)],
             ["mvin", "mvin", "matmul32", "mvout_acc_relu"]),
    # a ReLU written as a choice: `0 < x ? x : 0` is `max(0, x)` on integers
    "relu by jnp.where": (lambda x, w: jnp.where(acc(x, w) > 0, acc(x, w), 0),
                          [((16, 16), I8), ((16, 16), I8)],
                          ["mvin", "mvin", "matmul32", "mvout_acc_relu"]),
    "requantize": (lambda x, w: requantize(acc(x, w)), [((16, 16), I8), ((16, 16), I8)],
                   ["mvin", "mvin", "matmul32", "mvout_acc_s8"]),
    "layer": (lambda x, w, b: requantize(jnp.maximum(acc(x, w) + b, 0)),
              [((16, 16), I8), ((16, 16), I8), ((16, 16), I32)],
              ["mvin", "mvin", "mvin_acc", "mac32", "mvout_acc_relu", "mvin_acc",
               "mvout_acc_s8"]),
    "int8 bias per row": (lambda x, w, b: acc(x, w) + b[:, None],
                          [((16, 16), I8), ((16, 16), I8), ((16,), I8)],
                          ["mvin", "mvin", "matmul32", "mvin", "mvin", "mac32", "mvout_acc"]),
    "row sums": (lambda x: jnp.sum(x, axis=1, dtype=I32), [((16, 16), I8)],
                 ["mvin", "mvin", "matmul32", "mvout_acc"]),
    "fewer rows": (acc, [((8, 16), I8), ((16, 16), I8)],
                   ["mvin", "mvin", "matmul32", "mvout_acc"]),
    # a vector is a matrix of one column on the right, of one row on the left
    "matrix-vector product": (acc, [((16, 16), I8), ((16,), I8)],
                              ["mvin", "mvin", "matmul32", "mvout_acc"]),
    "vector-matrix product": (acc, [((16,), I8), ((16, 16), I8)],
                              ["mvin", "mvin", "matmul32", "mvout_acc"]),
    "dot product of vectors": (acc, [((16,), I8), ((16,), I8)],
                               ["mvin", "mvin", "matmul32", "mvout_acc"]),
    # an outer product: a column by a row, over a contraction of one
    "outer product": (lambda u, v: jax.lax.dot_general(u, v, (((), ()), ((), ())),
                                                       preferred_element_type=I32),
                      [((16,), I8), ((16,), I8)], ["mvin", "mvin", "matmul32", "mvout_acc"]),
    # ...as jnp.outer writes it: a product of two vectors repeated across a matrix
    "jnp.outer": (lambda u, v: jnp.outer(u.astype(I32), v.astype(I32)),
                  [((16,), I8), ((16,), I8)], ["mvin", "mvin", "matmul32", "mvout_acc"]),
    # ...and a vector's bias, added to its one-row matrix
    "vector layer": (lambda v, w, b: requantize(acc(v, w) + b),
                     [((16,), I8), ((16, 16), I8), ((16,), I32)],
                     ["mvin", "mvin", "mvin_acc", "mac32", "mvout_acc_s8"]),
    # the array multiplies int8 only: the column is written into each of the 16 columns of
    # an HBM matrix by strided stores, which the multiply-accumulate then adds
    "int32 bias per row": (lambda x, w, b: acc(x, w) + b[:, None],
                           [((16, 16), I8), ((16, 16), I8), ((16,), I32)],
                           ["mvin", "mvin", "mvin_acc"] + ["mvout_acc_strided"] * 16
                           + ["mvin_acc", "mac32", "mvout_acc"]),
}


def elementwise_product(x, w):
    y = acc(x, w)
    return y * y


PRODUCT_LINE = inspect.getsourcelines(elementwise_product)[1] + 2


def arrays(types, seed):
    """Values over each type's whole range (bounded for int32), seeded."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in types:
        info = np.iinfo(dtype)
        low, high = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
        out.append(jnp.asarray(rng.integers(low, high, shape, endpoint=True), dtype))
    return out


@pytest.fixture(scope="module")
def gemmini(example_build):
    return example_build("Gemmini").backend


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "kernels"))


@pytest.mark.parametrize("name", list(KERNELS))
def test_an_int8_kernel_compiles_and_equals_jax(gemmini, name):
    fn, types, instructions = KERNELS[name]
    structs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in types]
    kernel = ajax.compile(fn, *structs, backend=gemmini)
    assert [call.split("(")[0] for call in kernel.instructions] == instructions
    for seed in (1, 2):
        report = ajax.check(fn, *arrays(types, seed), backend=gemmini)
        assert report.max_ulps == 0.0, str(report)


def test_an_elementwise_product_is_refused_at_its_line(gemmini):
    # The array multiplies matrices, loads multiply by a constant scale: no instruction
    # multiplies two computed values element by element.
    types = [((16, 16), I8), ((16, 16), I8)]
    structs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in types]
    with pytest.raises(ajax.CompileError, match=rf"^{__file__}:{PRODUCT_LINE}: ") as caught:
        ajax.compile(elementwise_product, *structs, backend=gemmini)
    assert "no instruction of Gemmini computes `multiply`" in str(caught.value)


def conv_layer(x, w, b):
    """A quantized convolution layer as JAX writes it: NHWC input, HWIO kernel, int32 sums."""
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                     preferred_element_type=I32)
    return requantize(jnp.maximum(y + b, 0))


def test_a_convolution_layer_compiles_and_equals_jax(gemmini):
    # 4x4 pixels of 16 features, SAME 3x3: each output row in pieces of its first pixel, the
    # two inside and its last, 2, 3 and 2 window columns on the input each, times 2, 3, 3 and 2
    # window rows: 70 array products, each accumulating onto the piece's bias.
    types = [((1, 4, 4, 16), I8), ((3, 3, 16, 16), I8), ((16,), I32)]
    structs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in types]
    kernel = ajax.compile(conv_layer, *structs, backend=gemmini)
    names = [call.split("(")[0] for call in kernel.instructions]
    assert names.count("mac32") == (2 + 3 + 2) * (2 + 3 + 3 + 2)
    assert names.count("mvout_acc_relu") == 12
    for seed in (1, 2):
        report = ajax.check(conv_layer, *arrays(types, seed), backend=gemmini)
        assert report.max_ulps == 0.0, str(report)
