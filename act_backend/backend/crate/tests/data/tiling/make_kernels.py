"""Writes the tiling kernels (``<name>.hlo`` beside this file) as JAX prints them.

Each kernel is larger than one instruction of the ISA it targets along some dimension (rows,
columns, a contraction, a reduction or a batch), written with ``jax.numpy`` the way a user
writes it. Rerun after a JAX upgrade
with ``python make_kernels.py`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
BF16, F32, U8, I8, I32 = jnp.bfloat16, jnp.float32, jnp.uint8, jnp.int8, jnp.int32


def shape(*dims: int, dtype=BF16) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(dims, dtype)


def row_softmax(x):
    """A softmax along the last axis without the max subtraction, summed in bf16 as QKV's unit
    computes it (``jnp.sum`` would accumulate in f32: a different rounding, which XLA's CPU
    run itself applies at some shapes and not at others)."""
    e = jnp.exp(x)
    sums = jax.lax.reduce(e, jnp.zeros((), e.dtype), jax.lax.add, (x.ndim - 1,))
    return e / sums[..., None]


def attention(q, k, v):
    """softmax(Q.K^T).V with a row softmax, as the QKV examples write it."""
    return jnp.matmul(row_softmax(jnp.matmul(q, jnp.swapaxes(k, -1, -2))), v)


def relu(x):
    return jnp.maximum(x, jnp.zeros((), x.dtype))


def int8_product(a, b):
    return jnp.matmul(a, b, preferred_element_type=I32)


def int8_conv(x, w, strides=(1, 1), padding="SAME", **options):
    """An NHWC int8 convolution with an HWIO kernel, accumulated in int32."""
    return jax.lax.conv_general_dilated(x, w, strides, padding,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        preferred_element_type=I32, **options)


def max_pool(x, window, strides, padding="VALID", **options):
    """The maximum over spatial windows of an NHWC image, as flax's ``max_pool`` writes it."""
    lowest = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    return jax.lax.reduce_window(x, jnp.array(lowest, x.dtype), jax.lax.max, (1, *window, 1),
                                 (1, *strides, 1), padding, **options)


def avg_pool(x, window, strides, padding="VALID"):
    """The mean over spatial windows of an NHWC image, as flax's ``avg_pool`` writes it."""
    sums = jax.lax.reduce_window(x, jnp.zeros((), x.dtype), jax.lax.add, (1, *window, 1),
                                 (1, *strides, 1), padding)
    return sums / np.prod(window)


def saturated_and_product(a, b):
    """Two results: the int8 product saturated to int8, and the product."""
    p = int8_product(a, b)
    return jnp.clip(p, -128, 127).astype(I8), p


def interleaved_product(a, p):
    """`a` (uint8) times the int8 matrix `p` holds four rows at a time, interleaved in each of
    its rows (`p[k, 4n + j] = b[4k + j, n]`), in int32."""
    rows, cols = p.shape
    b = p.reshape(rows, cols // 4, 4).transpose(0, 2, 1).reshape(rows * 4, cols // 4)
    return jnp.matmul(a.astype(I32), b.astype(I32))


KERNELS = {
    # name: (function, argument shapes), for QKV (bf16, a 64x64 matrix unit)
    "qkv_attention_256_rows": (attention, [shape(256, 64), shape(64, 64), shape(64, 64)]),
    "qkv_attention_4_heads": (attention, [shape(4, 64, 64)] * 3),
    "qkv_softmax_512_rows": (lambda x: row_softmax(x), [shape(512, 64)]),
    # row counts no multiple of the fixed 64-row units: the last tile overlaps the one before
    "qkv_matmul_96_rows": (jnp.matmul, [shape(96, 64), shape(64, 64)]),
    "qkv_attention_96_rows": (attention, [shape(96, 64), shape(64, 64), shape(64, 64)]),
    "qkv_attention_160_rows": (attention, [shape(160, 64), shape(64, 64), shape(64, 64)]),
    # fewer rows than the fixed 64-row units: operands padded with zero rows on chip
    "qkv_matmul_32_rows": (jnp.matmul, [shape(32, 64), shape(64, 64)]),
    "qkv_attention_16_rows": (attention, [shape(16, 64), shape(64, 64), shape(64, 64)]),
    # a product twice as wide as the unit: each half of B read a row at a time (QKV loads
    # whole rows of 64), each half's result stored a row at a time before the other half is
    # computed (the operand buffer holds A beside one half of B or one result, not more)
    "qkv_matmul_64x64x128": (jnp.matmul, [shape(64, 64), shape(64, 128)]),
    # taller and wider than the unit: four result tiles, and the operand buffer holds one tile
    # of A beside one half of B, or a half beside a result; so each half of B is loaded once
    # (row by row) and A's tile for each product, each result stored before the next product
    "qkv_matmul_128x64x128": (jnp.matmul, [shape(128, 64), shape(64, 128)]),
    # a row bias: the row broadcast down the rows as a product over one term, padded to the
    # unit's fixed contraction of 64 (the row above 63 zero rows, times [1 0 ... 0] columns)
    "qkv_linear_layer_128x64x64": (lambda x, w, b: jnp.matmul(x, w) + b[None, :],
                                   [shape(128, 64), shape(64, 64), shape(64)]),
    # refused: a product contracting 32 elements; gemm takes exactly 64, and every QKV load
    # writes whole rows of 64, so no load reads `a`'s rows of 32
    "qkv_matmul_contraction_32": (jnp.matmul, [shape(64, 32), shape(32, 64)]),
    # refused: an exponential over 128 columns, whose column windows QKV cannot load
    "qkv_exponential_128_columns": (jnp.exp, [shape(64, 128)]),
    # a scale wider than the unit (QKV has no multiply): the 64x128 matrix as 128 rows of 64,
    # times 2I by two gemms
    "qkv_scale_64x128": (lambda x: x * jnp.bfloat16(2), [shape(64, 128)]),
    # refused: a bf16 product contracting 128 elements (gemm contracts 64; a float contraction
    # is not split)
    "qkv_matmul_contraction_128": (jnp.matmul, [shape(64, 128), shape(128, 64)]),
    # refused: an exponential of a batch of two 128-row matrices, whose windows load item by item
    "qkv_exponential_batch_2x128": (jnp.exp, [shape(2, 128, 64)]),
    # refused: a row softmax over 128 columns, on a 64-wide softmax unit
    "qkv_softmax_128_columns": (lambda x: row_softmax(x), [shape(64, 128)]),
    # the first 20 of a product's 64 columns: QKV stores whole rows, so the product is
    # computed transposed and its first 20 rows stored transposed
    "qkv_matmul_first_20_columns": (lambda a, b: jnp.matmul(a, b)[:, :20],
                                    [shape(64, 64), shape(64, 64)]),
    # for Gemmini (int8, a 16x16 systolic array)
    # refused: an int32 sum of two inputs (the array adds only onto a product of int8
    # values), though every 16-column window of the inputs can be loaded
    "gemmini_int32_add_64x64": (lambda a, b: a + b, [shape(64, 64, dtype=I32)] * 2),
    # every other row of a product: every other row of its lhs, read with a doubled row pitch
    "gemmini_matmul_even_rows_16x32x16": (lambda a, b: int8_product(a, b)[::2],
                                          [shape(16, 32, dtype=I8), shape(32, 16, dtype=I8)]),
    # transposes where no Gemmini instruction transposes: each transposed input computed by
    # products contracting one element (a row loaded as a column times a row of I), then the
    # product as the array takes it: (A.B)^T = B^T.A^T, A^T.B, A.B^T, batched, and alone
    "gemmini_transposed_matmul_16x32x32": (lambda a, b: int8_product(a, b).T,
                                           [shape(16, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    "gemmini_matmul_transposed_rhs_64x32x24": (lambda a, b: int8_product(a, b.T),
                                               [shape(64, 32, dtype=I8), shape(24, 32, dtype=I8)]),
    # no taller than one product: each row of the result is B times that row of A as a
    # column, a one-column product per row (multiplying no more than transposing B would)
    "gemmini_matmul_transposed_rhs_16x32x24": (lambda a, b: int8_product(a, b.T),
                                               [shape(16, 32, dtype=I8), shape(24, 32, dtype=I8)]),
    "gemmini_matmul_transposed_lhs_16x32x48": (lambda a, b: int8_product(a.T, b),
                                               [shape(16, 32, dtype=I8), shape(16, 48, dtype=I8)]),
    "gemmini_batched_matmul_transposed_rhs_2x32x16x48": (
        lambda a, b: int8_product(a, jnp.swapaxes(b, -1, -2)),
        [shape(2, 32, 16, dtype=I8), shape(2, 48, 16, dtype=I8)]),
    "gemmini_transpose_32x48": (lambda a: a.T, [shape(32, 48, dtype=I8)]),
    # the transpose of a ReLU of a product: the ReLU of B^T.A^T
    "gemmini_transposed_relu_matmul_16x32x32": (lambda a, b: relu(int8_product(a, b)).T,
                                                [shape(16, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    # the same where rows and columns end in a one-row, one-column tile (found by the campaign)
    "gemmini_transposed_relu_matmul_17x17x17": (lambda a, b: relu(int8_product(a, b)).T,
                                                [shape(17, 17, dtype=I8), shape(17, 17, dtype=I8)]),
    # the transpose of a window of a product, and of two products side by side: the window
    # and the concatenation of transposes, B^T.A^T
    "gemmini_transposed_window_of_product_16x32x48": (
        lambda a, b: int8_product(a, b)[:, 8:40].T,
        [shape(16, 32, dtype=I8), shape(32, 48, dtype=I8)]),
    "gemmini_transposed_products_side_by_side_16x32x16": (
        lambda a, b, c: jnp.concatenate([int8_product(a, b), int8_product(a, c)], axis=1).T,
        [shape(16, 32, dtype=I8), shape(32, 16, dtype=I8), shape(32, 16, dtype=I8)]),
    # an int32 product with its columns reversed: (A.B)J = A.(BJ), B's columns reversed by
    # the int8 array (a product with the exchange matrix)
    "gemmini_reversed_matmul_16x32x32": (lambda a, b: jnp.flip(int8_product(a, b), axis=1),
                                         [shape(16, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    # refused: an int32 product computed in 16-column tiles, squared elementwise (Gemmini
    # multiplies only by a load's constant scale); the multiply is named, not the product
    "gemmini_squared_matmul_16x32x32": (lambda a, b: jnp.square(int8_product(a, b)),
                                        [shape(16, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    # a constant added to a product whose contraction is split: the partial products
    # accumulate onto a tile of the constant
    "gemmini_matmul_plus_constant_32x32x32": (lambda a, b: int8_product(a, b) + 5,
                                              [shape(32, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    # a padded operand: its zero columns drop out of the contraction; a pad alone is the
    # operand beside a block of zeros
    "gemmini_padded_matmul_16x24x16": (
        lambda a, w: int8_product(jnp.pad(a, ((0, 0), (0, 8))), w),
        [shape(16, 24, dtype=I8), shape(32, 16, dtype=I8)]),
    "gemmini_pad_16x8": (lambda a: jnp.pad(a, ((0, 0), (0, 8))), [shape(16, 8, dtype=I8)]),
    # inputs wider than the array side by side: each moved a 16-column window at a time
    "gemmini_pad_16x24": (lambda a: jnp.pad(a, ((0, 0), (0, 8))), [shape(16, 24, dtype=I8)]),
    "gemmini_concatenate_columns_16x24": (lambda a, b: jnp.concatenate([a, b], axis=1),
                                          [shape(16, 24, dtype=I8)] * 2),
    # two products side by side, each computed in column tiles: every tile stored into its
    # columns
    "gemmini_concatenated_products_32x16x48": (
        lambda a, w, v: jnp.concatenate([int8_product(a, w), int8_product(a, v)], axis=1),
        [shape(32, 16, dtype=I8), shape(16, 24, dtype=I8), shape(16, 24, dtype=I8)]),
    # a sum over a batch of products: the items' products accumulated onto each other
    "gemmini_batch_sum_of_products_4x16x16": (lambda a, b: jnp.sum(int8_product(a, b), axis=0),
                                              [shape(4, 16, 16, dtype=I8)] * 2),
    # an int32 negation of a matrix larger than the array both ways: loads that scale by -1
    "gemmini_negate_32x32": (lambda a: -a, [shape(32, 32, dtype=I32)]),
    # a ReLU clipped to 127 and narrowed: the int8 store's saturation of the ReLU
    "gemmini_relu_clipped_layer_32x32x32": (
        lambda x, w: jnp.minimum(relu(int8_product(x, w)), 127).astype(I8),
        [shape(32, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    "gemmini_matmul_64_rows": (int8_product, [shape(64, 16, dtype=I8), shape(16, 16, dtype=I8)]),
    "gemmini_matmul_batch_4": (int8_product, [shape(4, 16, 16, dtype=I8)] * 2),
    "gemmini_relu_matmul_128_rows": (lambda a, b: jnp.maximum(int8_product(a, b), 0),
                                     [shape(128, 16, dtype=I8), shape(16, 16, dtype=I8)]),
    # the contraction split, the columns split, and both with the rows: strided transfers
    "gemmini_matmul_16x64x16": (int8_product, [shape(16, 64, dtype=I8), shape(64, 16, dtype=I8)]),
    "gemmini_matmul_16x16x64": (int8_product, [shape(16, 16, dtype=I8), shape(16, 64, dtype=I8)]),
    "gemmini_matmul_64x64x64": (int8_product, [shape(64, 64, dtype=I8), shape(64, 64, dtype=I8)]),
    # more tiles than one search holds (32,768): compiled as one block of rows, run once per
    # block with its addresses moved to the block's rows of A and of the result
    "gemmini_matmul_512x512x512": (int8_product,
                                   [shape(512, 512, dtype=I8), shape(512, 512, dtype=I8)]),
    # a batch of four 256^3 products (16,384 tiles): one item compiled, run once per item
    "gemmini_batch_matmul_4x256x256x256": (int8_product, [shape(4, 256, 256, dtype=I8)] * 2),
    # 197 rows (a ViT's tokens), a prime: 13 blocks of 16 rows, the last one starting 11 rows
    # early and computing them again
    "gemmini_matmul_197x768x768": (int8_product,
                                   [shape(197, 768, dtype=I8), shape(768, 768, dtype=I8)]),
    # two results, the product saturated to int8 and the product, in blocks of rows of both
    "gemmini_saturated_and_product_512": (saturated_and_product, [shape(512, 512, dtype=I8)] * 2),
    # a product of 16 rows by 4,096 columns (65,536 tiles, no block of rows fits): blocks of
    # all 16 rows and 1,024 columns, each reading its columns of B where they lie and writing
    # its columns of the result in place by strided stores
    "gemmini_matmul_16x1024x4096": (int8_product,
                                    [shape(16, 1024, dtype=I8), shape(1024, 4096, dtype=I8)]),
    # a batch of two of those: each item's blocks of 16x1024, its rows written as a matrix's
    "gemmini_batch_matmul_2x16x1024x4096": (int8_product, [shape(2, 16, 1024, dtype=I8),
                                                           shape(2, 1024, 4096, dtype=I8)]),
    # a vector times a 4,096-square matrix: blocks of 256 of the result's elements, each
    # reading its columns of the matrix (compiled whole before: 75 s and 7 GB)
    "gemmini_matvec_1x4096x4096": (int8_product,
                                   [shape(1, 4096, dtype=I8), shape(4096, 4096, dtype=I8)]),
    # A^T.B at 512^3: a block of the result's rows reads a block of A's columns (refused
    # before, at the search's node limit)
    "gemmini_transposed_lhs_matmul_512": (lambda a, b: int8_product(a.T, b),
                                          [shape(512, 512, dtype=I8)] * 2),
    # a batch of two 512^3 products, one item more than one search holds: each item compiled
    # in blocks of its rows, run once per block of each item
    "gemmini_batch_matmul_2x512x512x512": (int8_product, [shape(2, 512, 512, dtype=I8)] * 2),
    # on an array that takes any number of rows, without strided transfers: 96-row products
    # whose operand windows are read, and whose results are written, 96 rows one by one
    "gemmini_matmul_96x32x32": (int8_product, [shape(96, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    "gemmini_relu_matmul_128x128": (lambda a, b: jnp.maximum(int8_product(a, b), 0),
                                    [shape(128, 32, dtype=I8), shape(32, 128, dtype=I8)]),
    # sizes that are no multiple of the array: shorter last tiles in every dimension
    "gemmini_matmul_40x20x24": (int8_product, [shape(40, 20, dtype=I8), shape(20, 24, dtype=I8)]),
    # 8-row and 8-column last tiles side by side in the 16-column buffers: their row-major
    # starts split into a row and a column
    "gemmini_matmul_40x40x40": (int8_product, [shape(40, 40, dtype=I8), shape(40, 40, dtype=I8)]),
    # a window of a product off the tile boundaries: only the operand windows it needs are
    # multiplied (the slice moves into the product's operands)
    "gemmini_matmul_first_20_columns": (lambda a, b: int8_product(a, b)[:, :20],
                                        [shape(16, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    "gemmini_matmul_window_10x24": (lambda a, b: int8_product(a, b)[3:13, 5:29],
                                    [shape(16, 32, dtype=I8), shape(32, 32, dtype=I8)]),
    # an int32 addend written first, with a split contraction: the partial products
    # accumulate onto it
    "gemmini_bias_plus_matmul_16x32x16": (lambda c, a, b: c + int8_product(a, b),
                                          [shape(16, 16, dtype=I32), shape(16, 32, dtype=I8),
                                           shape(32, 16, dtype=I8)]),
    # a sum of two products, each contraction split: one chain of four accumulations
    "gemmini_sum_of_products_16x32x16": (lambda a, b, c, d: int8_product(a, b) + int8_product(c, d),
                                         [shape(16, 32, dtype=I8), shape(32, 16, dtype=I8)] * 2),
    # a batch of two products plus an int32 addend, each item larger than the array in rows
    # and columns: each item's tiles written into their place in the batch's output
    "gemmini_batched_matmul_bias_2x17x17": (lambda a, b, c: int8_product(a, b) + c,
                                            [shape(2, 17, 3, dtype=I8), shape(2, 3, 17, dtype=I8),
                                             shape(2, 17, 17, dtype=I32)]),
    # a batch of two one-row products plus an addend: a batch of one is dropped, the row of
    # one kept (the array takes matrices)
    "gemmini_batched_row_products_bias_2x1x3x16": (lambda a, b, c: int8_product(a, b) + c,
                                                   [shape(2, 1, 3, dtype=I8),
                                                    shape(2, 3, 16, dtype=I8),
                                                    shape(2, 1, 16, dtype=I32)]),
    # a vector times a matrix four times wider than the array, plus an int32 bias: one row of
    # results, which an ISA that stores only contiguous runs writes a tile at a time
    "gemmini_vector_matrix_bias_16x64": (lambda v, b, c: int8_product(v, b) + c,
                                         [shape(16, dtype=I8), shape(16, 64, dtype=I8),
                                          shape(64, dtype=I32)]),
    # a quantized layer at 128^3: an int32 row bias, the products accumulated onto it, the
    # result saturated to int8 by the store (the search grows past its per-tile target)
    "gemmini_quantized_layer_128": (lambda a, b, c: jnp.clip(int8_product(a, b) + c[None, :],
                                                             -128, 127).astype(I8),
                                    [shape(128, 128, dtype=I8), shape(128, 128, dtype=I8),
                                     shape(128, dtype=I32)]),
    # an int32 row bias repeated down 40 rows, every tile's products accumulated onto it
    "gemmini_matmul_row_bias_40x40x40": (lambda a, b, c: int8_product(a, b) + c[None, :],
                                         [shape(40, 40, dtype=I8), shape(40, 40, dtype=I8),
                                          shape(40, dtype=I32)]),
    # a linear layer: an int32 row bias under a 64-deep contraction, four column tiles
    "gemmini_linear_layer_64x64x64": (lambda a, b, c: int8_product(a, b) + c[None, :],
                                      [shape(64, 64, dtype=I8), shape(64, 64, dtype=I8),
                                       shape(64, dtype=I32)]),
    # elementwise operations wider than the array's 16 columns: column tiles, read and written
    # by strided transfers (a ReLU is a store's, a scale a load's)
    "gemmini_relu_16x64": (relu, [shape(16, 64, dtype=I32)]),
    "gemmini_relu_64x64": (relu, [shape(64, 64, dtype=I8)]),
    "gemmini_scale_16x40": (lambda x: x * jnp.int8(3), [shape(16, 40, dtype=I8)]),
    # an int32 row sum over 64 columns (a product with ones, its contraction split)
    "gemmini_row_sums_16x64": (lambda x: jnp.sum(x.astype(I32), axis=1), [shape(16, 64, dtype=I8)]),
    # for RowReduce (tests/specs: int32 reductions of rows of at most 16 elements): reductions
    # of longer rows, combined from those of their column tiles
    "rowreduce_row_sums_16x64": (lambda x: jnp.sum(x, axis=1), [shape(16, 64, dtype=I32)]),
    "rowreduce_row_max_16x40": (lambda x: jnp.max(x, axis=1), [shape(16, 40, dtype=I32)]),
    # for Lanes (one 64-row buffer): two 64-row tiles of a sum do not fit beside each other
    "lanes_add_128_rows": (jnp.add, [shape(128, 64), shape(128, 64)]),
    # three operands of one instruction: tiles of a quarter of the buffer
    "lanes_max3_128_rows": (lambda a, b, c: jnp.maximum(jnp.maximum(a, b), c),
                            [shape(128, 64)] * 3),
    # for OnChipTranspose (tests/specs: only a move between buffers transposes): a transpose
    # of 32 rows, written by the move into 32 rows of 64 and stored as they lie; one of 128
    # rows, more than the move's target buffer holds, transposed 64 rows at a time
    "onchiptranspose_transpose_32x64": (jnp.transpose, [shape(32, 64)]),
    "onchiptranspose_transpose_128x64": (jnp.transpose, [shape(128, 64)]),
    "onchiptranspose_channels_last_1x64x4x16": (lambda x: jnp.transpose(x, (0, 2, 3, 1)),
                                                [shape(1, 64, 4, 16)]),
    # for FixedArray (tests/specs: a fixed 16x16 array beside an add of many accumulator rows
    # to int8 rows from HBM): an int32 addend and a linear layer's bias on products taller and
    # wider than the array, added by the array's accumulating form tile by tile
    "fixedarray_matmul_plus_32x16x32": (lambda a, b, c: int8_product(a, b) + c,
                                        [shape(32, 16, dtype=I8), shape(16, 32, dtype=I8),
                                         shape(32, 32, dtype=I32)]),
    "fixedarray_linear_layer_32x32x32": (lambda a, b, c: int8_product(a, b) + c[None, :],
                                         [shape(32, 32, dtype=I8), shape(32, 32, dtype=I8),
                                          shape(32, dtype=I32)]),
    # fewer rows than the array: the product padded with zero rows, the bias added to it there
    "fixedarray_linear_layer_8x16x16": (lambda a, b, c: int8_product(a, b) + c[None, :],
                                        [shape(8, 16, dtype=I8), shape(16, 16, dtype=I8),
                                         shape(16, dtype=I32)]),
    # a contraction that is no multiple of the array's 16: the last 4 (8) elements as the
    # window of A's last 16 columns against 12 (8) zero rows and B's last rows; 40 rows as
    # tiles of 16, the last overlapping the one before
    "fixedarray_matmul_16x20x16": (int8_product, [shape(16, 20, dtype=I8),
                                                  shape(20, 16, dtype=I8)]),
    "fixedarray_matmul_40x36x32": (int8_product, [shape(40, 36, dtype=I8),
                                                  shape(36, 32, dtype=I8)]),
    # an int32 result of 24 columns, where the only store writes rows of 16: its last column
    # tile overlaps the one before, and both are stored whole, a row at a time
    "fixedarray_matmul_16x16x24": (int8_product, [shape(16, 16, dtype=I8),
                                                  shape(16, 24, dtype=I8)]),
    "fixedarray_linear_layer_40x24x32": (lambda a, b, c: int8_product(a, b) + c[None, :],
                                         [shape(40, 24, dtype=I8), shape(24, 32, dtype=I8),
                                          shape(32, dtype=I32)]),
    # on a weight-stationary array that multiplies and accumulates in int32 only: an int8
    # product (wrapping) is the int32 product narrowed by the activation unit; layers with a
    # ReLU, one and two
    "weightstationary_int8_matmul_32x64x64": (jnp.matmul, [shape(32, 64, dtype=I8),
                                                           shape(64, 64, dtype=I8)]),
    "weightstationary_relu_layer_128x64x64": (
        lambda a, w: relu(int8_product(a, w)).astype(I8),
        [shape(128, 64, dtype=I8), shape(64, 64, dtype=I8)]),
    # refused: a contraction of 128 on the 64-row array, whose parts nothing adds
    "weightstationary_relu_layer_32x128x64": (
        lambda a, w: relu(int8_product(a, w)).astype(I8),
        [shape(32, 128, dtype=I8), shape(128, 64, dtype=I8)]),
    "weightstationary_two_layers_32x64": (
        lambda a, w, v: relu(int8_product(relu(int8_product(a, w)).astype(I8), v)).astype(I8),
        [shape(32, 64, dtype=I8), shape(64, 64, dtype=I8), shape(64, 64, dtype=I8)]),
    # on a register file of 16-lane float32 vectors beside int32 16x16 tiles: a float add of
    # two rows is two vector adds (not one tile add, which takes int32 only); vectors are rows
    # of one register; a multiply and an add into a third register are one fused instruction
    "registers_add_2x16": (jnp.add, [shape(2, 16, dtype=F32)] * 2),
    "registers_add_64": (jnp.add, [shape(64, dtype=F32)] * 2),
    "registers_fma_32x16": (lambda a, b, c: a * b + c, [shape(32, 16, dtype=F32)] * 3),
    "registers_clamp_48": (lambda x, lo, hi: jnp.minimum(jnp.maximum(x, lo), hi),
                           [shape(48, dtype=F32)] * 3),
    "registers_relu_32x32": (relu, [shape(32, 32, dtype=F32)]),
    # 8,192 registers of elements: one block of rows compiled, run once per block
    "registers_leaky_relu_32x64x64": (lambda x: jnp.maximum(x, x * 0.01),
                                      [shape(32, 64, 64, dtype=F32)]),
    "registers_scale_rows_8x32": (lambda x, v: x * v[None, :],
                                  [shape(8, 32, dtype=F32), shape(32, dtype=F32)]),
    # a register's semantics see it as [1, 16, 16] (or [1, 16]): the same bytes as the
    # kernel's [16, 16] (or [16]); a scalar read into every lane
    "registers_axpy_128": (lambda a, x, y: a * x + y,
                           [shape(dtype=F32), shape(128, dtype=F32), shape(128, dtype=F32)]),
    "registers_int32_matmul_16x16x16": (jnp.matmul, [shape(16, 16, dtype=I32)] * 2),
    "registers_int32_linear_16x16x16": (lambda a, b, c: jnp.matmul(a, b) + c,
                                        [shape(16, 16, dtype=I32)] * 3),
    # rows narrower than a register, and a batch of rows of 12: the values seen as rows of 16
    "registers_add_8x8": (jnp.add, [shape(8, 8, dtype=F32)] * 2),
    "registers_max_4x8x12": (jnp.maximum, [shape(4, 8, 12, dtype=F32)] * 2),
    # refused: an absolute value, which no instruction computes (its input loads in rows)
    "registers_abs_64x32": (jnp.abs, [shape(64, 32, dtype=F32)]),
    # refused: the same, its rows of 3 loading only as the 27 registers its elements fill
    "registers_abs_48x3x3": (jnp.abs, [shape(48, 3, 3, dtype=F32)]),
    # refused at once: a float row sum, where no instruction's semantics reduces
    "registers_row_sums_17x32": (lambda x: jnp.sum(x, axis=1), [shape(17, 32, dtype=F32)]),
    # refused at once: means over 9 positions (a division by 9) and quotients of two inputs,
    # where no instruction's semantics divides
    "registers_avg_pool_3x3_1x6x6x16": (lambda x: avg_pool(x, (3, 3), (1, 1)),
                                        [shape(1, 6, 6, 16, dtype=F32)]),
    "registers_quotient_16x16": (jnp.divide, [shape(16, 16, dtype=F32)] * 2),
    # 17 floats, where every load and store moves 16: the first 16, then the last 16, which
    # overlap by 15 computed twice; and so for a 17x17 sum (289 elements: 19 registers), an
    # 17x8 one (136: 9) and rows of 17 shifted by a scalar each (two registers a row)
    "registers_scale_17": (lambda x, a: x * a, [shape(17, dtype=F32), shape(dtype=F32)]),
    "registers_add_17x17": (jnp.add, [shape(17, 17, dtype=F32)] * 2),
    "registers_add_17x8": (jnp.add, [shape(17, 8, dtype=F32)] * 2),
    "registers_columns_shifted_17x17": (lambda x, v: x + v[:, None],
                                        [shape(17, 17, dtype=F32), shape(17, dtype=F32)]),
    # refused: 8 floats, fewer than one load moves
    "registers_scale_8": (lambda x, a: x * a, [shape(8, dtype=F32), shape(dtype=F32)]),
    # a batch of products on a unit that only multiplies and accumulates: each item's
    # product onto a zeroed tile
    "registers_int32_batch_matmul_3x16x16x16": (jnp.matmul, [shape(3, 16, 16, dtype=I32)] * 2),
    # an int32 sum on a unit that only multiplies and accumulates: A.I + B
    "registers_int32_add_16x16": (jnp.add, [shape(16, 16, dtype=I32)] * 2),
    # on int8 tile registers read by one instruction as uint8, interleaved int8 and int32: a
    # product, a product onto an addend, and two row tiles of a product (refused before: "no
    # instruction computes `convert`")
    "bytetiles_product_16x64x16": (interleaved_product, [shape(16, 64, dtype=U8),
                                                         shape(16, 64, dtype=I8)]),
    "bytetiles_product_plus_16x64x16": (lambda a, p, c: interleaved_product(a, p) + c,
                                        [shape(16, 64, dtype=U8), shape(16, 64, dtype=I8),
                                         shape(16, 16, dtype=I32)]),
    "bytetiles_product_32x64x16": (interleaved_product, [shape(32, 64, dtype=U8),
                                                         shape(16, 64, dtype=I8)]),
    # the same unit with loads and stores at a row stride, its only transfers: whole matrices
    # at their row length, a contraction of 128 as two accumulated products, result columns
    # from column windows of the interleaved matrix, each written by a strided store, and a
    # product larger than a tile in every dimension (refused before: "no instruction loads
    # parameter 0")
    "stridedtiles_product_16x64x16": (interleaved_product, [shape(16, 64, dtype=U8),
                                                            shape(16, 64, dtype=I8)]),
    # convolutions: one product per window position on the input, per piece of an output row
    "gemmini_conv_same_3x3_1x8x8x16": (int8_conv, [shape(1, 8, 8, 16, dtype=I8),
                                                   shape(3, 3, 16, 16, dtype=I8)]),
    "gemmini_conv_stride_2_1x9x9x16": (lambda x, w: int8_conv(x, w, (2, 2), "VALID"),
                                       [shape(1, 9, 9, 16, dtype=I8),
                                        shape(3, 3, 16, 16, dtype=I8)]),
    "gemmini_relu_conv_2x6x6x16x32": (lambda x, w: relu(int8_conv(x, w)),
                                      [shape(2, 6, 6, 16, dtype=I8),
                                       shape(3, 3, 16, 32, dtype=I8)]),
    "gemmini_grouped_conv_1x6x6x32": (lambda x, w: int8_conv(x, w, feature_group_count=2),
                                      [shape(1, 6, 6, 32, dtype=I8),
                                       shape(3, 3, 16, 32, dtype=I8)]),
    "gemmini_conv_1d_2x10x16": (lambda x, w: jax.lax.conv_general_dilated(
        x, w, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"),
        preferred_element_type=I32), [shape(2, 10, 16, dtype=I8), shape(3, 16, 16, dtype=I8)]),
    # a quantized convolution layer, int8 to int8: more than a third of a search, so in bands
    # of output rows, the bias added and the ReLU and saturation applied in each band
    "gemmini_conv_layer_1x16x16x64": (lambda x, w, b: jnp.clip(relu(int8_conv(x, w) + b), -128,
                                                               127).astype(I8),
                                      [shape(1, 16, 16, 64, dtype=I8),
                                       shape(3, 3, 64, 64, dtype=I8), shape(64, dtype=I32)]),
    # two feature groups with a bias and a ReLU whose first and last output rows lie in the
    # padding: the same values (the ReLU of the bias) stored into two places of the output
    "gemmini_grouped_relu_conv_padded_rows_1x2x3x2": (
        lambda x, w, b: relu(int8_conv(x, w, (1, 1), ((1, 1), (0, 0)), feature_group_count=2)
                             + b),
        [shape(1, 2, 3, 2, dtype=I8), shape(1, 2, 1, 4, dtype=I8), shape(4, dtype=I32)]),
    # a depthwise convolution (one feature per group): a product of one column per feature
    # and window position, more operations than one search is given, so in bands of rows
    "gemmini_depthwise_conv_1x6x6x16": (lambda x, w: int8_conv(x, w, feature_group_count=16),
                                        [shape(1, 6, 6, 16, dtype=I8),
                                         shape(3, 3, 1, 16, dtype=I8)]),
    # a transposed convolution (stride 2: the input dilated by 2, zeros between its pixels):
    # each output reads the window positions of its residue, every other output a piece
    "gemmini_transposed_conv_1x4x4x16": (lambda x, w: jax.lax.conv_transpose(
        x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        preferred_element_type=I32), [shape(1, 4, 4, 16, dtype=I8), shape(3, 3, 16, 16, dtype=I8)]),
    # PyTorch's layout for it (`transpose_kernel=True`): the kernel's window reversed and its
    # features swapped, which the convolution reads where they lie
    "gemmini_transposed_conv_transposed_kernel_1x4x4x16": (lambda x, w: jax.lax.conv_transpose(
        x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), transpose_kernel=True,
        preferred_element_type=I32), [shape(1, 4, 4, 16, dtype=I8), shape(3, 3, 16, 16, dtype=I8)]),
    # a literal of many values added to a convolution (each piece adds its rows of it), and
    # a bias on a grouped convolution of one output pixel (which JAX writes as a reshape,
    # not a broadcast; each group's piece adds its features of it)
    "gemmini_conv_plus_literal_1x4x4x16": (
        lambda x, w: int8_conv(x, w, (1, 1), "VALID")
        + np.arange(2 * 2 * 16, dtype=np.int32).reshape(1, 2, 2, 16),
        [shape(1, 4, 4, 16, dtype=I8), shape(3, 3, 16, 16, dtype=I8)]),
    "gemmini_grouped_relu_conv_one_pixel_1x3x3x16x2": (
        lambda x, w, b: relu(int8_conv(x, w, (1, 1), "VALID", feature_group_count=2) + b),
        [shape(1, 3, 3, 16, dtype=I8), shape(3, 3, 8, 2, dtype=I8), shape(2, dtype=I32)]),
    # a 1-D transposed convolution of 64 features: each residue's part taller than the
    # array, the parts side by side written a row tile at a time
    "gemmini_transposed_conv_1d_2x24x64": (lambda x, w: jax.lax.conv_transpose(
        x, w, (2,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"), preferred_element_type=I32),
        [shape(2, 24, 64, dtype=I8), shape(3, 64, 64, dtype=I8)]),
    # each output row's last pixel lies in the padding: runs of zeros between the pieces of
    # the flat output, each loaded as a row of a literal and stored
    "gemmini_conv_rows_ending_in_padding_1x8x6x24": (
        lambda x, w: int8_conv(x, w, (3, 3), ((1, -1), (-1, 2))),
        [shape(1, 8, 6, 24, dtype=I8), shape(2, 1, 24, 8, dtype=I8)]),
    # jax.lax.conv's own layouts: a channels-first image (NCHW) and kernel (OIHW), the output
    # channels-first too. The image is transposed as one [16, 64] matrix, the kernel a window
    # position at a time (its [O, I] elements 9 apart), the output from where it is stored
    "gemmini_channels_first_conv_1x16x8x8": (
        lambda x, w: jax.lax.conv(x, w, (1, 1), "SAME", preferred_element_type=I32),
        [shape(1, 16, 8, 8, dtype=I8), shape(16, 16, 3, 3, dtype=I8)]),
    # 1-D, a batch of two: each item's int32 result transposed back on its own, each output
    # row a column of the stored result
    "gemmini_channels_first_conv_1d_2x16x12": (
        lambda x, w: jax.lax.conv(x, w, (1,), "SAME", preferred_element_type=I32),
        [shape(2, 16, 12, dtype=I8), shape(16, 16, 3, dtype=I8)]),
    # PyTorch's Conv1d and ReLU (NCW, one item): the int32 result transposed as one matrix
    "gemmini_channels_first_relu_conv_1d_1x16x12": (
        lambda x, w, b: relu(jax.lax.conv(x, w, (1,), "SAME", preferred_element_type=I32)
                             + b[None, :, None]),
        [shape(1, 16, 12, dtype=I8), shape(16, 16, 3, dtype=I8), shape(16, dtype=I32)]),
    # a quantized layer laid out channels-first as PyTorch lays it out: computed channels-last,
    # the bias and ReLU on each piece, the int8 result transposed back once
    "gemmini_channels_first_layer_1x16x8x8": (
        lambda x, w, b: jnp.clip(relu(jax.lax.conv(x, w, (1, 1), "SAME", preferred_element_type=I32)
                                      + b[None, :, None, None]), -128, 127).astype(I8),
        [shape(1, 16, 8, 8, dtype=I8), shape(16, 16, 3, 3, dtype=I8), shape(16, dtype=I32)]),
    # too large for one search: in stages, the image and the weights transposed once each,
    # the convolution computed channels-last in bands, the result transposed back
    "gemmini_channels_first_conv_in_stages_1x64x16x16": (
        lambda x, w: jax.lax.conv(x, w, (1, 1), "SAME", preferred_element_type=I32),
        [shape(1, 64, 16, 16, dtype=I8), shape(64, 64, 3, 3, dtype=I8)]),
    # a quantized layer in stages: each stage's literals (the clamp's bounds) kept apart from
    # the others' scratch
    "gemmini_channels_first_layer_in_stages_1x48x16x16": (
        lambda x, w, b: jnp.clip(relu(jax.lax.conv(x, w, (1, 1), "SAME", preferred_element_type=I32)
                                      + b[None, :, None, None]), -128, 127).astype(I8),
        [shape(1, 48, 16, 16, dtype=I8), shape(48, 48, 3, 3, dtype=I8), shape(48, dtype=I32)]),
    # an int32 addend, which Gemmini transposes only as a kernel's input (a column at a
    # time): refused whole, compiled in stages
    "gemmini_channels_first_conv_plus_addend_1x16x4x4": (
        lambda x, w, y: jax.lax.conv(x, w, (1, 1), "SAME", preferred_element_type=I32) + y,
        [shape(1, 16, 4, 4, dtype=I8), shape(16, 16, 3, 3, dtype=I8),
         shape(1, 16, 4, 4, dtype=I32)]),
    # transposes of more than two dimensions: of an input, a matrix at a time; of a computed
    # value, in steps that each turn the dimensions before the next one in place behind it
    "gemmini_transpose_kernel_to_hwio_16x16x3x3": (lambda w: jnp.transpose(w, (2, 3, 1, 0)),
                                                   [shape(16, 16, 3, 3, dtype=I8)]),
    "gemmini_transpose_saturated_product_reversed_2x16x16": (
        lambda a, b: jnp.transpose(saturated_and_product(a, b)[0].reshape(2, 16, 16), (2, 1, 0)),
        [shape(32, 16, dtype=I8), shape(16, 16, dtype=I8)]),
    # results that compute nothing, of more than two dimensions: an int32 input written out as
    # it is, and a convolution every window position of which falls on a dilation's zero (its
    # output a literal of zeros): each moved through the accumulator as rows of 16
    "gemmini_int32_input_written_out_2x16x48": (lambda x: x + 0, [shape(2, 16, 48, dtype=I32)]),
    "gemmini_conv_on_dilation_zeros_2x6x5x24": (
        lambda x, w: int8_conv(x, w, (3, 2), ((2, -1), (1, 1)), lhs_dilation=(3, 2)),
        [shape(2, 6, 5, 24, dtype=I8), shape(4, 1, 24, 16, dtype=I8)]),
    # pooling: the windows' maxima (or sums) of strided rows of pixels by channels
    "registers_max_pool_1x8x8x32": (lambda x: max_pool(x, (2, 2), (2, 2)),
                                    [shape(1, 8, 8, 32, dtype=F32)]),
    "registers_max_pool_same_2x7x7x16": (lambda x: max_pool(x, (3, 3), (2, 2), "SAME"),
                                         [shape(2, 7, 7, 16, dtype=F32)]),
    "registers_avg_pool_1x8x8x16": (lambda x: avg_pool(x, (2, 2), (2, 2)),
                                    [shape(1, 8, 8, 16, dtype=F32)]),
    # a window padded across a dimension it does not widen: the outputs there sum the init
    # alone, and each other output one element onto +0.0 (a sum with +0.0 computes
    # something, -0 + +0 = +0: refused before, tiled as if it passed its operand through)
    "registers_avg_pool_padded_across_2x4x4x16": (
        lambda x: jax.lax.reduce_window(x, jnp.float32(0), jax.lax.add, (1, 2, 1, 1),
                                        (1, 3, 1, 1), ((0, 0), (1, 1), (1, 1), (0, 0)),
                                        window_dilation=(1, 2, 1, 1)) / 2,
        [shape(2, 4, 4, 16, dtype=F32)]),
    "registers_min_pool_element_first_1x6x6x16": (
        lambda x: jax.lax.reduce_window(x, jnp.float32(jnp.inf), lambda a, b: jnp.minimum(b, a),
                                        (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
        [shape(1, 6, 6, 16, dtype=F32)]),
    "registers_dilated_max_pool_1x6x6x16": (
        lambda x: max_pool(x, (2, 2), (1, 1), window_dilation=(1, 2, 2, 1)),
        [shape(1, 6, 6, 16, dtype=F32)]),
    "registers_max_over_dilated_rows_1x4x4x16": (
        lambda x: max_pool(x, (2, 1), (1, 1), base_dilation=(1, 2, 1, 1)),
        [shape(1, 4, 4, 16, dtype=F32)]),
    "lanes_max_pool_3x3_1x6x6x64": (lambda x: max_pool(x, (3, 3), (3, 3)), [shape(1, 6, 6, 64)]),
    # the int32 maximum of two int8 products: each at most 48 * 2^14 in magnitude, so their
    # difference cannot wrap and the maximum is one plus the ReLU of the difference
    "gemmini_max_of_products_32x48x16": (
        lambda a, b, c, d: jnp.maximum(int8_product(a, b), int8_product(c, d)),
        [shape(32, 48, dtype=I8), shape(48, 16, dtype=I8)] * 2),
    "gemmini_max_pool_1x8x8x16": (lambda x: max_pool(x, (2, 2), (2, 2)),
                                  [shape(1, 8, 8, 16, dtype=I8)]),
    # a quantized layer and its pooling: the pooling reads the layer's int8 output
    "gemmini_layer_max_pool_1x8x8x16": (
        lambda x, w: max_pool(jnp.clip(relu(int8_conv(x, w)), -128, 127).astype(I8), (2, 2),
                              (2, 2)),
        [shape(1, 8, 8, 16, dtype=I8), shape(3, 3, 16, 16, dtype=I8)]),
    # channels-first (as PyTorch lays a layer out): the pooling reads the convolution's
    # channels-last result before it is transposed back
    "gemmini_channels_first_layer_max_pool_1x16x8x8": (
        lambda x, w: jax.lax.reduce_window(
            jnp.clip(relu(jax.lax.conv_general_dilated(
                x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"),
                preferred_element_type=I32)), -128, 127).astype(I8),
            jnp.int8(-128), jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
        [shape(1, 16, 8, 8, dtype=I8), shape(16, 16, 3, 3, dtype=I8)]),
    # written as a reshape and a maximum over the two window dimensions
    "registers_max_pool_as_reshape_1x8x8x16": (
        lambda x: jnp.max(x.reshape(1, 4, 2, 4, 2, 16), axis=(2, 4)),
        [shape(1, 8, 8, 16, dtype=F32)]),
    # too large for one search: in bands of output rows, as convolutions are
    "registers_max_pool_in_bands_1x32x32x64": (lambda x: max_pool(x, (3, 3), (2, 2), "SAME"),
                                               [shape(1, 32, 32, 64, dtype=F32)]),
    "stridedtiles_product_16x128x16": (interleaved_product, [shape(16, 128, dtype=U8),
                                                             shape(32, 64, dtype=I8)]),
    "stridedtiles_product_16x64x32": (interleaved_product, [shape(16, 64, dtype=U8),
                                                            shape(16, 128, dtype=I8)]),
    "stridedtiles_product_plus_32x64x32": (lambda a, p, c: interleaved_product(a, p) + c,
                                           [shape(32, 64, dtype=U8), shape(16, 128, dtype=I8),
                                            shape(32, 32, dtype=I32)]),
    "stridedtiles_product_64x256x64": (interleaved_product, [shape(64, 256, dtype=U8),
                                                             shape(64, 256, dtype=I8)]),
}


def main() -> None:
    for name, (fn, args) in KERNELS.items():
        text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
        (HERE / f"{name}.hlo").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
