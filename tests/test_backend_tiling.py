"""Tiling end to end: a product taller than QKV's 64-row matrix unit compiles, through views of
its operand's bytes and an output written tile by tile in place, and the simulated result is
the kernel's; JAX-written kernels larger than one instruction along their rows, columns,
contraction, reduced dimension or batch (act_backend/backend/crate/tests/data/tiling) compile
on QKV, Gemmini and the RowReduce, OnChipTranspose, FixedArray, WeightStationary, Registers
and ByteTiles test accelerators and equal
XLA's run of the same HLO, and on the Contiguous test accelerator, without strided transfers,
by rows read and written one by one, and on the TallQKV test accelerator, whose units take
every row, whole; poolings (reduce-window) fold strided windows of their images; a dimension
no instruction takes, or a float reduction too long for every instruction, is named in the
refusal."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from helpers.differential import check_kernel, kernel_inputs, random_bf16
from helpers.examples import ROOT, compile_kernel, instruction_calls, parse_kernel_file
from helpers.oracle_harness import bf16_tolerance, run_assembly

from act_backend.kernel import evaluate

pytestmark = pytest.mark.slow

KERNEL = Path(__file__).resolve().parent / "kernels" / "matmul_128x64.hlo"


@pytest.fixture(scope="module")
def compiled(example_build, tmp_path_factory):
    build = example_build("QKV")
    out = tmp_path_factory.mktemp("tiling") / "matmul_128x64.py"
    run = compile_kernel(build.backend, KERNEL, out)
    assert run.returncode == 0, run.stderr
    return build, out


def test_a_128_row_product_runs_as_two_row_tiles(compiled):
    _, asm = compiled
    calls = instruction_calls(asm)
    # B once, then per 64-row tile of A: load, multiply, move out, store into place.
    assert len(calls) == 9, calls
    assert sum(c.startswith("gemm") for c in calls) == 2, calls


def test_the_tiled_product_matches_the_reference(compiled):
    build, asm = compiled
    rng = np.random.default_rng(20260)
    a = random_bf16(rng, (128, 64))
    b = random_bf16(rng, (64, 64))
    [out] = run_assembly(build.oracle_dir, asm, [a, b])
    reference = evaluate(parse_kernel_file(KERNEL), [a, b])
    assert out.shape == (128, 64) and out.dtype == reference.dtype
    diff = np.max(np.abs(out.astype(np.float32) - reference.astype(np.float32)))
    assert diff <= bf16_tolerance(reference), f"max |compiled - reference| = {diff}"
    # Both halves are written: a tile left out would show as zeros or stale bytes.
    for rows in (slice(0, 64), slice(64, 128)):
        half = np.abs(out[rows].astype(np.float32) - reference[rows].astype(np.float32))
        assert np.max(half) <= bf16_tolerance(reference)


TILING = ROOT / "act_backend" / "backend" / "crate" / "tests" / "data" / "tiling"

def assert_compiles_equal_to_xla_with(build, name, tmp_path, counts, exact=False):
    """Kernel `name` of the tiling kernels compiles on `build`, its simulated result equals
    XLA's (bit for bit where `exact`), and its assembly calls each instruction of `counts`
    that many times."""
    path = TILING / f"{name}.hlo"
    outcome = check_kernel(build, path.read_text(), kernel_inputs(path, 7), tmp_path, name,
                           exact)
    assert outcome.compiled, outcome.refusal
    assert not outcome.wrong, outcome.summary
    calls = instruction_calls(tmp_path / f"{name}.py")
    assert {i: calls.count(i) for i in counts} == counts, calls


# kernel -> (example ISA, {instruction: count in the compiled assembly})
TILED = {
    "qkv_attention_256_rows": ("QKV", {"gemm": 8, "softmax": 4}),
    "qkv_attention_4_heads": ("QKV", {"gemm": 8, "softmax": 4}),
    "qkv_softmax_512_rows": ("QKV", {"softmax": 8}),
    # 96 and 160 rows on 64-row units: the last tile overlaps the one before, its last rows kept
    "qkv_matmul_96_rows": ("QKV", {"gemm": 2}),
    "qkv_attention_96_rows": ("QKV", {"gemm": 4, "softmax": 2}),
    "qkv_attention_160_rows": ("QKV", {"gemm": 6, "softmax": 3}),
    # 32 and 16 rows: operands padded with zero rows to the 64-row units, the real rows kept
    "qkv_matmul_32_rows": ("QKV", {"gemm": 1}),
    "qkv_attention_16_rows": ("QKV", {"gemm": 2, "softmax": 1}),
    # the first 20 of a product's 64 columns: computed transposed, stored by the transposing store
    "qkv_matmul_first_20_columns": ("QKV", {"gemm": 1, "store_cm": 1}),
    # twice as wide as the unit: B's halves loaded row by row, each half stored row by row
    # before the next is computed (one gemm per half, 64 one-row loads and stores each)
    "qkv_matmul_64x64x128": ("QKV", {"gemm": 2, "load_rm": 129, "store_rm": 128}),
    # taller too: d1 holds a tile of A beside a half of B, so each half of B is loaded once
    # (row by row) and A's tile once per product
    "qkv_matmul_128x64x128": ("QKV", {"gemm": 4, "mov": 4, "load_rm": 132, "store_rm": 256}),
    # a scale wider than the unit, on an ISA without a multiply: the matrix as 128 rows of 64,
    # each 64-row block times 2I (261 instructions before, its column tiles read row by row)
    "qkv_scale_64x128": ("QKV", {"gemm": 2, "load_rm": 3, "store_rm": 2}),
    "gemmini_matmul_64_rows": ("Gemmini", {"matmul32": 4}),
    "gemmini_matmul_batch_4": ("Gemmini", {"matmul32": 4}),
    # the tiles' results side by side in the accumulator, stored through the ReLU at once
    "gemmini_relu_matmul_128_rows": ("Gemmini", {"matmul32": 8, "mvout_acc_relu": 1}),
    # the maximum of two int8 products (int32): their difference, bounded by the contraction
    # (at most 2 * 48 * 2^14), cannot wrap, so max(x, y) = y + relu(x - y), the ReLU a store's
    # (refused before: "computes `maximum`", nothing bounded a product's result)
    "gemmini_max_of_products_32x48x16": ("Gemmini", {"mac32": 16, "mvout_acc_relu": 1}),
    # strided loads of the operands' tiles; partial products accumulated by the array
    "gemmini_matmul_16x64x16": ("Gemmini", {"matmul32": 1, "mac32": 3}),
    # result columns written into their rows by strided stores
    "gemmini_matmul_16x16x64": ("Gemmini", {"matmul32": 4, "mvout_acc_strided": 4}),
    # every dimension: (64/16)^3 products, each once
    "gemmini_matmul_64x64x64": ("Gemmini", {"matmul32": 16, "mac32": 48}),
    # 32,768 tiles, more than one search holds: one block of 64 rows of the result compiled
    # and run 8 times at the rows of A and of the result it computes, each product once
    "gemmini_matmul_512x512x512": ("Gemmini", {"matmul32": 1024, "mac32": 31744}),
    # a batch of four 256^3 products, 16,384 tiles: one item compiled and run 4 times
    "gemmini_batch_matmul_4x256x256x256": ("Gemmini", {"matmul32": 1024, "mac32": 15360}),
    # 197 rows, a prime: 13 blocks of 16 rows, the last starting 11 rows early (one-row
    # blocks before: 16 times the products)
    "gemmini_matmul_197x768x768": ("Gemmini", {"matmul32": 13 * 48, "mac32": 13 * 48 * 47}),
    # two results of 512x512 (int8 and int32) in 16 blocks of 32 rows of both
    "gemmini_saturated_and_product_512": ("Gemmini", {"matmul32": 16 * 2 * 32,
                                                      "mac32": 16 * 2 * 32 * 31}),
    # a batch of two 512^3 products, each item more than one search holds: one block of rows of
    # an item compiled and run for each block of each item, each product once
    "gemmini_batch_matmul_2x512x512x512": ("Gemmini", {"matmul32": 2048, "mac32": 63488}),
    # 16 rows by 4,096 columns: 4 blocks of all 16 rows and 1,024 columns, each reading its
    # columns of B where they lie and writing its columns of the result in place
    "gemmini_matmul_16x1024x4096": ("Gemmini", {"matmul32": 256, "mac32": 256 * 63,
                                                "mvout_acc_strided": 256}),
    # a batch of two of those: 8 blocks of 16x1024 of an item
    "gemmini_batch_matmul_2x16x1024x4096": ("Gemmini", {"matmul32": 2 * 256,
                                                        "mac32": 2 * 256 * 63,
                                                        "mvout_acc_strided": 2 * 256}),
    # a vector times a 4,096-square matrix: 16 blocks of 256 of the matrix's columns
    "gemmini_matvec_1x4096x4096": ("Gemmini", {"matmul32": 16 * 16, "mac32": 16 * 16 * 255}),
    # A^T.B at 512^3: 8 blocks of 64 result rows, each reading 64 of A's columns
    "gemmini_transposed_lhs_matmul_512": ("Gemmini", {"matmul32": 1024, "mac32": 31744}),
    # convolutions: per piece of an output row, one product for each window position on the
    # input (SAME 3x3 over 8x8: 154), every other pixel read by strided loads at stride 2,
    # a ReLU over a batch of two with 32 output features, two feature groups, and 1-D
    "gemmini_conv_same_3x3_1x8x8x16": ("Gemmini", {"matmul32": 24, "mac32": 130}),
    "gemmini_conv_stride_2_1x9x9x16": ("Gemmini", {"matmul32": 5, "mac32": 40}),
    "gemmini_relu_conv_2x6x6x16x32": ("Gemmini", {"matmul32": 72, "mac32": 376}),
    "gemmini_grouped_conv_1x6x6x32": ("Gemmini", {"matmul32": 36, "mac32": 188}),
    "gemmini_conv_1d_2x10x16": ("Gemmini", {"matmul32": 6, "mac32": 8}),
    # the first and last output rows in the padding hold the same values, the ReLU of the
    # bias, stored into both places (each store of a group's columns starting its own chain:
    # refused before, "found no candidate program", as the two shared one)
    "gemmini_grouped_relu_conv_padded_rows_1x2x3x2": ("Gemmini", {"mac32": 8,
                                                                  "mvout_acc_relu_strided": 8}),
    # a literal of many values added to a convolution, each piece's rows of it loaded under
    # its products (it was added as its first value everywhere: 63 elements wrong)
    "gemmini_conv_plus_literal_1x4x4x16": ("Gemmini", {"mac32": 18, "mvin_acc": 2}),
    # a bias reshaped to a grouped convolution's one pixel, each group's feature of it
    # loaded under its products (refused before: "no instruction of Gemmini computes `add`")
    "gemmini_grouped_relu_conv_one_pixel_1x3x3x16x2": ("Gemmini", {"mac32": 18,
                                                                   "mvout_acc_relu_strided": 2}),
    # a transposed convolution at stride 2: each output's window positions on real pixels
    # only (the input dilated by 2), every other output of a piece computed together
    "gemmini_transposed_conv_1x4x4x16": ("Gemmini", {"matmul32": 48, "mac32": 40}),
    # the same with the kernel as PyTorch lays it out (`transpose_kernel=True`: JAX reverses
    # its window and swaps its features, refused before: "computes `reverse`"): the same
    # products, the reversal read as a mirrored window, each position's block transposed
    "gemmini_transposed_conv_transposed_kernel_1x4x4x16": ("Gemmini", {"matmul32": 48,
                                                                       "mac32": 40}),
    # 1-D at stride 2 over 64 features: each residue's outputs (24 rows) taller than the
    # array, the two side by side written a row tile at a time (refused before: "no
    # instruction of Gemmini computes `concatenate`")
    "gemmini_transposed_conv_1d_2x24x64": ("Gemmini", {"matmul32": 64, "mac32": 288}),
    # jax.lax.conv's layouts (NCHW image and output, OIHW kernel): the products of the
    # channels-last convolution, the image transposed as one matrix, the kernel a window
    # position at a time, the output read back a column at a time from where it is stored
    # (refused before: "no instruction of Gemmini computes `transpose`")
    "gemmini_channels_first_conv_1x16x8x8": ("Gemmini", {"matmul32": 24, "mac32": 130,
                                                         "mvin_acc_strided": 16}),
    # 1-D over a batch of two: each item's int32 result transposed back on its own, each of
    # its 16 output rows a column of the stored result loaded and stored (refused before)
    "gemmini_channels_first_conv_1d_2x16x12": ("Gemmini", {"matmul32": 6, "mac32": 8,
                                                           "mvin_acc_strided": 32}),
    # PyTorch's Conv1d with a bias and ReLU (NCW, one item): the bias under each piece's
    # products, the ReLU on the store, each output row a column of the stored int32 result
    "gemmini_channels_first_relu_conv_1d_1x16x12": ("Gemmini", {"matmul32": 0, "mac32": 7,
                                                                "mvin_acc_strided": 16}),
    # with a bias, a ReLU and saturation to int8 (PyTorch's layout): computed channels-last,
    # the bias loaded under each piece's products and the ReLU and saturation on its store,
    # the int8 result transposed back once (refused before: "computes `add`")
    "gemmini_channels_first_layer_1x16x8x8": ("Gemmini", {"matmul32": 0, "mac32": 154}),
    # a kernel to HWIO: each window position's [O, I] matrix (elements 9 apart) transposed by
    # 16 outer products of its rows read as strided columns
    "gemmini_transpose_kernel_to_hwio_16x16x3x3": ("Gemmini", {"matmul8": 9, "mac8": 135}),
    # a computed value's dimensions reversed in two steps, the second a batch of transposes of
    # the first one's result stored and read back
    "gemmini_transpose_saturated_product_reversed_2x16x16": ("Gemmini", {"matmul32": 2,
                                                                         "matmul8": 48,
                                                                         "mac8": 16}),
    # each output row's last pixel in the padding: runs of zeros between the pieces of the
    # flat output, a row of a literal loaded once and stored after each row (refused before:
    # "no instruction of Gemmini copies the result of `reshape` to HBM")
    "gemmini_conv_rows_ending_in_padding_1x8x6x24": ("Gemmini", {"matmul32": 3, "mac32": 7}),
    # a depthwise convolution (a one-column product per feature, window position on the
    # input and piece: 16 x 112), in bands of one output row
    "gemmini_depthwise_conv_1x6x6x16": ("Gemmini", {"matmul32": 288, "mac32": 1504}),
    # a quantized layer more than a third of a search: 8 bands of 2 output rows (3 kernels:
    # padding above, none, below), the bias loaded into the accumulator under each product
    "gemmini_conv_layer_1x16x16x64": ("Gemmini", {"mac32": 5152, "mvin_acc": 40,
                                                  "mvin_acc_strided": 512}),
    # relu(A.B) at 128x128: each column of eight tiles, side by side in the accumulator, stored
    # through the ReLU into its columns at once; every operand element loaded once: A's two
    # 128-row column windows, kept for every column, and B's eight column windows (24 loads
    # of operand blocks before a window's rows were one window of the input)
    "gemmini_relu_matmul_128x128": ("Gemmini", {"matmul32": 64, "mac32": 64, "mvin_strided": 10,
                                                "mvout_acc_relu_strided": 8}),
    # rows 16+16+8, columns 16+8, contraction 16+4: shorter last tiles
    "gemmini_matmul_40x20x24": ("Gemmini", {"matmul32": 6, "mac32": 6}),
    # 8-row and 8-column last tiles side by side in 16-column buffers
    "gemmini_matmul_40x40x40": ("Gemmini", {"matmul32": 9, "mac32": 18}),
    # windows of a product off the tile boundaries: only the operand windows they need are
    # multiplied, each result tile stored once
    "gemmini_matmul_first_20_columns": ("Gemmini", {"matmul32": 2, "mac32": 2,
                                                    "mvout_acc_strided": 2}),
    "gemmini_matmul_window_10x24": ("Gemmini", {"matmul32": 2, "mac32": 2,
                                                "mvout_acc_strided": 2, "mvin_acc_strided": 0}),
    # every other row of a product: every other row of its lhs, loaded with a doubled row pitch
    "gemmini_matmul_even_rows_16x32x16": ("Gemmini", {"matmul32": 1, "mac32": 1,
                                                      "mvin_strided": 2}),
    # an addend written first joins the accumulation of the split contraction's products
    "gemmini_bias_plus_matmul_16x32x16": ("Gemmini", {"matmul32": 0, "mac32": 2}),
    # a sum of two products with split contractions: the second product's partial products
    # accumulate onto the first's
    "gemmini_sum_of_products_16x32x16": ("Gemmini", {"matmul32": 1, "mac32": 3}),
    # a batch of two, each item's 2 x 2 tiles accumulated onto the addend and written into
    # their place in the batch's output
    "gemmini_batched_matmul_bias_2x17x17": ("Gemmini", {"matmul32": 0, "mac32": 8}),
    # a batch of two one-row products: each item a matrix of one row, accumulated onto its
    # row of the addend
    "gemmini_batched_row_products_bias_2x1x3x16": ("Gemmini", {"matmul32": 0, "mac32": 2}),
    # a vector times a 16 x 64 matrix plus a bias: one row of four 16-column tiles, computed
    # as four rows of one block: the bias loaded as 4 rows of 16, each product accumulated
    # onto its row, the block stored at once (the same bytes as the one-row result)
    "gemmini_vector_matrix_bias_16x64": ("Gemmini", {"mac32": 4, "mvin_acc": 1, "mvout_acc": 1}),
    # a quantized layer at 128^3: all 512 products accumulate onto the row bias, each column
    # of tiles saturated to int8 by one store
    "gemmini_quantized_layer_128": ("Gemmini", {"matmul32": 0, "mac32": 512,
                                                "mvout_acc_s8_strided": 8}),
    # a row bias repeated down the rows: every tile's three products accumulate onto it
    "gemmini_matmul_row_bias_40x40x40": ("Gemmini", {"matmul32": 0, "mac32": 27}),
    # a linear layer: the row bias loaded once, written 16 times down HBM (a 16 x 64 block of
    # repeated rows), and each of its four 16 x 16 tiles read from there once, shared by the
    # column of tiles it starts (not 16 one-row loads per tile)
    "gemmini_linear_layer_64x64x64": ("Gemmini", {"mac32": 64, "mvin_acc": 1, "mvout_acc": 16,
                                                  "mvin_acc_strided": 4}),
    # elementwise operations on 16-column tiles: a ReLU is a store's, a scale a load's
    # transposes where nothing transposes: each transposed input a 16x16 tile at a time, 16
    # one-element products per tile accumulated by the int8 array (a row loaded as a column
    # times a row of I), then the product as the array takes it: A.B^T, (A.B)^T = B^T.A^T,
    # A^T.B, batched, a transpose alone
    "gemmini_matmul_transposed_rhs_64x32x24": ("Gemmini", {"matmul32": 8, "mac32": 8,
                                                           "matmul8": 4, "mac8": 44}),
    # no taller than one product: a one-column product per row of A . B^T instead
    "gemmini_matmul_transposed_rhs_16x32x24": ("Gemmini", {"matmul32": 32, "mac32": 32,
                                                           "mvout_acc": 16}),
    "gemmini_transposed_matmul_16x32x32": ("Gemmini", {"matmul32": 2, "mac32": 2, "matmul8": 6,
                                                       "mac8": 90}),
    "gemmini_transposed_relu_matmul_16x32x32": ("Gemmini", {"matmul32": 2, "mac32": 2,
                                                            "matmul8": 6, "mac8": 90}),
    "gemmini_matmul_transposed_lhs_16x32x48": ("Gemmini", {"matmul32": 6, "matmul8": 2,
                                                           "mac8": 30}),
    "gemmini_batched_matmul_transposed_rhs_2x32x16x48": ("Gemmini", {"matmul32": 12,
                                                                     "matmul8": 6, "mac8": 90}),
    "gemmini_transpose_32x48": ("Gemmini", {"mvin_strided": 48, "mvout": 48, "matmul8": 0}),
    # the same ending in a one-row, one-column tile: refused before (its zero was a transpose)
    "gemmini_transposed_relu_matmul_17x17x17": ("Gemmini", {"matmul32": 4, "mac32": 4,
                                                            "matmul8": 3, "mac8": 45}),
    # the transpose of a window of a product and of two products side by side
    "gemmini_transposed_window_of_product_16x32x48": ("Gemmini", {"matmul32": 2, "mac32": 2,
                                                                  "matmul8": 6, "mac8": 90}),
    "gemmini_transposed_products_side_by_side_16x32x16": ("Gemmini", {"matmul32": 2,
                                                                      "mac32": 2,
                                                                      "matmul8": 6,
                                                                      "mac8": 90}),
    # an int32 product's columns reversed: the product with B's columns reversed by the array
    "gemmini_reversed_matmul_16x32x32": ("Gemmini", {"matmul8": 4, "mac8": 4, "matmul32": 2,
                                                     "mac32": 2}),
    # channels-first convolutions in stages: one too large for one search (the image and the
    # weights transposed once each, the convolution banded channels-last, the int32 result
    # transposed back a column at a time), and one with an int32 addend (refused whole: the
    # addend is transposed as the input of a stage of its own)
    "gemmini_channels_first_conv_in_stages_1x64x16x16": ("Gemmini", {"matmul32": 192,
                                                                     "mac32": 4960,
                                                                     "mvout_acc_strided": 64}),
    # a quantized layer in stages, each stage's literals apart from the others' scratch
    # (shared, a stage overwrote the clamp's bounds of the next: wrong before)
    "gemmini_channels_first_layer_in_stages_1x48x16x16": ("Gemmini", {"mac32": 2898}),
    "gemmini_channels_first_conv_plus_addend_1x16x4x4": ("Gemmini", {"mac32": 70,
                                                                     "mvin_acc_strided": 32}),
    # results that compute nothing, of more than two dimensions, moved through the
    # accumulator as rows of 16: an int32 input written out as it is, a convolution whose
    # output is zeros (every window position on a dilation's zero); both refused before
    "gemmini_int32_input_written_out_2x16x48": ("Gemmini", {"mvin_acc": 1, "mvout_acc": 1}),
    "gemmini_conv_on_dilation_zeros_2x6x5x24": ("Gemmini", {"mvin_acc": 1, "mvout_acc": 1}),
    # a constant added to a product with a split contraction, accumulated onto one tile of it
    "gemmini_matmul_plus_constant_32x32x32": ("Gemmini", {"matmul32": 0, "mac32": 8,
                                                          "mvin_acc_strided": 1}),
    # zero padding: dropped from a contraction; alone, a block of zeros beside the operand
    "gemmini_padded_matmul_16x24x16": ("Gemmini", {"matmul32": 1, "mac32": 1}),
    "gemmini_pad_16x8": ("Gemmini", {"mvin": 2, "mvout_strided": 2}),
    # inputs wider than the array side by side, moved a 16-column window at a time
    "gemmini_pad_16x24": ("Gemmini", {"mvin_strided": 2, "mvout_strided": 3}),
    "gemmini_concatenate_columns_16x24": ("Gemmini", {"mvin_strided": 4, "mvout_strided": 4}),
    # products side by side, each in column tiles: every tile stored into its columns
    "gemmini_concatenated_products_32x16x48": ("Gemmini", {"matmul32": 8,
                                                           "mvout_acc_strided": 4}),
    # a sum over a batch of products: the items' products accumulated
    "gemmini_batch_sum_of_products_4x16x16": ("Gemmini", {"matmul32": 1, "mac32": 3}),
    # an int32 negation: loads that scale by -1; a ReLU clipped to 127 and narrowed: the int8
    # store's saturation of the stored ReLU
    "gemmini_negate_32x32": ("Gemmini", {"mvin_acc_strided": 2, "mvout_acc_strided": 2}),
    "gemmini_relu_clipped_layer_32x32x32": ("Gemmini", {"matmul32": 4, "mac32": 4,
                                                        "mvout_acc_relu_strided": 2,
                                                        "mvout_acc_s8_strided": 2}),
    "gemmini_relu_16x64": ("Gemmini", {"mvin_acc_strided": 4, "mvout_acc_relu_strided": 4}),
    "gemmini_relu_64x64": ("Gemmini", {"mvin_strided": 4, "mvout_relu_strided": 4}),
    "gemmini_scale_16x40": ("Gemmini", {"mvin_strided": 3, "mvout_strided": 3}),
    # an int32 row sum over 64 columns: a product with ones, its contraction split
    "gemmini_row_sums_16x64": ("Gemmini", {"matmul32": 1, "mac32": 3}),
    # reductions of rows longer than the unit's 16: the tiles' sums accumulated, their maxima
    # combined
    "rowreduce_row_sums_16x64": ("RowReduce", {"load_strided": 4, "row_sum": 1,
                                               "row_sum_acc": 3}),
    "rowreduce_row_max_16x40": ("RowReduce", {"load_strided": 3, "row_max": 3, "vec_max": 2}),
    # a transpose only a move between buffers performs: written by the move into 32 rows of
    # 64, moved back and stored as those rows
    "onchiptranspose_transpose_32x64": ("OnChipTranspose", {"load": 1, "mov_t": 1, "mov": 1,
                                                            "store": 1}),
    # 128 rows, more than the move's target buffer holds: 64 rows at a time
    "onchiptranspose_transpose_128x64": ("OnChipTranspose", {"mov_t": 2}),
    # channels-first to channels-last: one [64, 64] matrix transposed by one move
    "onchiptranspose_channels_last_1x64x4x16": ("OnChipTranspose", {"mov_t": 1}),
}


@pytest.mark.parametrize("name", list(TILED))
def test_a_kernel_larger_than_its_instructions_compiles_and_equals_xla(example_build, tmp_path,
                                                                      name):
    example, counts = TILED[name]
    assert_compiles_equal_to_xla_with(example_build(example), name, tmp_path, counts)


def test_a_kernel_in_stages_reports_them_and_the_cost_of_all_of_them(example_build, tmp_path):
    """report.json says how many stages ran, and its program cost is the emitted program's,
    all stages' (the chosen candidate is the last stage's)."""
    build = example_build("Gemmini")
    path = TILING / "gemmini_channels_first_conv_plus_addend_1x16x4x4.hlo"
    reports = tmp_path / "report"
    done = subprocess.run([str(build.backend), "--input", str(path), "--output",
                           str(tmp_path / "k.py"), "--report-dir", str(reports)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads((reports / "report.json").read_text())
    assert report["stages"] == 5 and report["blocks"] is None
    assert report["program_cost"] > report["chosen_cost"] > 0


# kernel -> {instruction: count} on the Contiguous test accelerator, whose loads and stores
# move contiguous runs only: each row of a tile of a wider matrix is read by a load of its
# own, each row of a result wider than 16 columns written by a store of its own.
ROW_BY_ROW = {
    # B's four 16-column windows read a row at a time; each result row stored in its place
    "gemmini_matmul_16x16x64": {"load": 1 + 64, "matmul": 4, "store_acc": 64},
    # A's four windows read a row at a time, B (contiguous) at once; partial products accumulated
    "gemmini_matmul_16x64x16": {"load": 64 + 1, "matmul": 1, "matmul_acc": 3, "store_acc": 1},
    # every tile split along rows, columns and contraction: one product per tile, each once
    "gemmini_matmul_64x64x64": {"load": 512, "matmul": 16, "matmul_acc": 48, "store_acc": 256},
    # one result row of four tiles, computed as four rows of one block stored at once
    "gemmini_vector_matrix_bias_16x64": {"matmul_acc": 4, "load_acc": 1, "store_acc": 1},
    # shorter last tiles in every dimension
    "gemmini_matmul_40x20x24": {"matmul": 6, "matmul_acc": 6, "store_acc": 80},
    # a ReLU on a whole matrix, layout-free: the 16x64 int32 matrix as 64 contiguous rows of
    # 16, one load and one ReLU store (each row of each window apart before: 64 and 64)
    "gemmini_relu_16x64": {"load_acc": 1, "store_acc_relu": 1},
    # relu(A.B) at 128x128: the product's tiles stored row by row, then the whole result read
    # back as 1,024 rows of 16 by one load and written through the ReLU by one store
    "gemmini_relu_matmul_128x128": {"matmul": 64, "matmul_acc": 64, "load_acc": 1,
                                    "store_acc_relu": 1},
    # elementwise work on a whole matrix, layout-free: the 16x40 int8 matrix's 640 elements as
    # 40 contiguous rows of 16, one scaled load and one store
    "gemmini_scale_16x40": {"load": 1, "store": 1},
}


# kernel -> {instruction: count} on the FixedArray test accelerator: an addend on products
# taller and wider than its fixed 16x16 array, whose add of the most rows takes int8 rows from
# HBM only, is added in the products' 16x16 tiles by the array's accumulating form (refused
# before as "no instruction computes `add`"); sizes that are no multiple of the array's
# (refused before)
FIXED_ARRAY = {
    "fixedarray_matmul_plus_32x16x32": {"matmul": 0, "matmul_acc": 4},
    "fixedarray_linear_layer_32x32x32": {"matmul": 0, "matmul_acc": 8},
    "gemmini_linear_layer_64x64x64": {"matmul": 0, "matmul_acc": 64},
    # fewer rows than the array: the product padded with zero rows, the addend added there
    "fixedarray_linear_layer_8x16x16": {"matmul": 0, "matmul_acc": 1},
    "gemmini_vector_matrix_bias_16x64": {"matmul": 0, "matmul_acc": 4},
    # a contraction that is no multiple of the array's 16: its last elements contracted as
    # the window of A's last 16 columns against zero rows and B's last rows
    "fixedarray_matmul_16x20x16": {"matmul": 1, "matmul_acc": 1},
    # rows 16+16+8 (the last tile overlapping the one before), columns 16+16, contraction
    # 16+16+4: 3 x 2 x 3 products, each once
    "fixedarray_matmul_40x36x32": {"matmul": 6, "matmul_acc": 12},
    "fixedarray_linear_layer_40x24x32": {"matmul": 0, "matmul_acc": 12},
    # 24 result columns where the only store writes accumulator rows of 16: the column tiles
    # at 0 and 8, each stored whole a row at a time, the 8 columns both hold written twice
    # with the same values (refused before)
    "fixedarray_matmul_16x16x24": {"matmul": 2, "store_acc": 32},
}


@pytest.mark.parametrize("name", list(FIXED_ARRAY))
def test_products_larger_than_a_fixed_array_are_computed_in_its_tiles(example_build, tmp_path,
                                                                    name):
    assert_compiles_equal_to_xla_with(example_build("FixedArray"), name, tmp_path,
                                      FIXED_ARRAY[name])


# kernel -> {instruction: count} on the WeightStationary test accelerator, whose array
# multiplies in int32 only and whose activation unit narrows to int8, wrapping: an int8
# product (refused before), and layers with a ReLU
WEIGHT_STATIONARY = {
    "weightstationary_int8_matmul_32x64x64": {"read": 1, "read_weights": 1, "matmul": 1,
                                              "activate": 1, "write": 1},
    "weightstationary_relu_layer_128x64x64": {"matmul": 1, "activate_relu": 1},
    "weightstationary_two_layers_32x64": {"read_weights": 2, "matmul": 2, "activate_relu": 2},
}


@pytest.mark.parametrize("name", list(WEIGHT_STATIONARY))
def test_int8_layers_on_an_array_that_multiplies_in_int32_only(example_build, tmp_path, name):
    assert_compiles_equal_to_xla_with(example_build("WeightStationary"), name, tmp_path,
                                      WEIGHT_STATIONARY[name])


@pytest.mark.parametrize("name", list(ROW_BY_ROW))
def test_without_strided_transfers_tiles_are_read_and_written_row_by_row(example_build, tmp_path,
                                                                         name):
    assert_compiles_equal_to_xla_with(example_build("Contiguous"), name, tmp_path,
                                      ROW_BY_ROW[name])


# kernel -> {instruction: count} on the Registers test accelerator: float32 vector registers
# of 16 lanes beside int32 16x16 tile registers, one register per instruction. A float add of
# two rows is two vector adds (refused before: tiled by the tile unit's 16-row int32 add, which
# no float instruction computes); a vector is rows of one register (refused before); a multiply
# and an add into a third register are one fused instruction per register; a register whose
# semantics add dimensions of one holds the kernel's value of the same bytes (refused before)
REGISTERS = {
    "registers_add_2x16": {"vadd": 2, "vload": 4, "vstore": 2},
    "registers_add_64": {"vadd": 4, "vload": 8, "vstore": 4},
    "registers_fma_32x16": {"vfmadd": 32, "vload": 96, "vstore": 32},
    "registers_clamp_48": {"vmax": 3, "vmin": 3, "vload": 9, "vstore": 3},
    # the zero vector is a constant in HBM, loaded once
    "registers_relu_32x32": {"vmax": 64, "vload": 65, "vstore": 64},
    # 8,192 registers of elements: one block of 1 x 64 x 64 compiled and run 32 times, each
    # block loading the broadcast 0.01 once
    "registers_leaky_relu_32x64x64": {"vmul": 8192, "vmax": 8192, "vload": 8224, "vstore": 8192},
    # the row of scales is two registers, loaded once for all eight rows
    "registers_scale_rows_8x32": {"vmul": 16, "vload": 18, "vstore": 16},
    # rows narrower than a register (8), or of no multiple of it in a batch (4 x 8 x 12): the
    # values as rows of 16, each element once (refused before)
    "registers_add_8x8": {"vadd": 4, "vload": 8, "vstore": 4},
    "registers_max_4x8x12": {"vmax": 24, "vload": 48, "vstore": 24},
    # the scalar read into every lane once, then one fused multiply-add per row
    "registers_axpy_128": {"vbroadcast": 1, "vfmadd": 8, "vload": 16, "vstore": 8},
    # tiles are [1, 16, 16] to their semantics, the kernel's [16, 16] the same bytes
    "registers_int32_matmul_16x16x16": {"tzero": 1, "tmac": 1, "tload": 2, "tstore": 1},
    "registers_int32_linear_16x16x16": {"tzero": 0, "tmac": 1, "tload": 3, "tstore": 1},
    # a batch of three products, each item's onto a zeroed tile (refused before: a tile of a
    # product was never itself plus zero)
    "registers_int32_batch_matmul_3x16x16x16": {"tzero": 3, "tmac": 3, "tload": 6, "tstore": 3},
    # A + B on a unit that only multiplies and accumulates: A.I + B, I a constant in HBM
    "registers_int32_add_16x16": {"tmac": 1, "tload": 3, "tstore": 1},
    # element counts no multiple of 16: the last register overlaps the one before (the
    # elements both hold computed and written twice, the same bits): 17 floats in 2, 17 x 17
    # in 19, 17 x 8 in 9, rows of 17 shifted by a scalar each in 2 a row (refused before)
    "registers_scale_17": {"vmul": 2, "vload": 2, "vstore": 2},
    "registers_add_17x17": {"vadd": 19, "vload": 38, "vstore": 19},
    "registers_add_17x8": {"vadd": 9, "vload": 18, "vstore": 9},
    "registers_columns_shifted_17x17": {"vadd": 34, "vbroadcast": 17, "vstore": 34},
}


@pytest.mark.parametrize("name", list(REGISTERS))
def test_register_sized_instructions_compute_vectors_and_rows_of_their_type(example_build,
                                                                           tmp_path, name):
    # Each instruction rounds as the kernel's operation does: the same bits.
    assert_compiles_equal_to_xla_with(example_build("Registers"), name, tmp_path,
                                      REGISTERS[name], exact=True)


# Pooling (XLA's reduce-window, as flax's max_pool and avg_pool and lax.reduce_window write
# it): kernel -> (ISA, {instruction: count}, bit for bit). Each output row of pixels folds, for
# each window position, the input pixels that position reads: every `stride`-th row of the
# image seen as pixels by channels, one strided load of each input pixel register at most
POOLING = {
    # 16 pixels of two registers: 4 loads, 3 maxima and a store each
    "registers_max_pool_1x8x8x32": ("Registers", {"vload": 128, "vmax": 96, "vstore": 32}, True),
    # windows padded at the borders: the positions in the padding left out (XLA's own folds:
    # 100 positions over the 16 outputs of an item, 84 maxima), each input pixel loaded once
    "registers_max_pool_same_2x7x7x16": ("Registers", {"vload": 98, "vmax": 168, "vstore": 32},
                                         True),
    # a sum from +0.0 adds it (+0 + -0 is +0); the order is XLA's reference fold, which XLA's
    # CPU run reassociates at some shapes: compared within the tolerance
    "registers_avg_pool_1x8x8x16": ("Registers", {"vadd": 64, "vmul": 16, "vstore": 16}, False),
    # a window padded across a dimension it does not widen: each output sums one element onto
    # +0.0 (a sum that turns -0 into +0, not one that passes its operand through: refused
    # before), the padded ones the init alone; a sum of one element is exact
    "registers_avg_pool_padded_across_2x4x4x16": ("Registers", {"vadd": 16, "vmul": 17,
                                                                 "vstore": 24}, True),
    # a region written minimum(element, running value): folded in that order
    "registers_min_pool_element_first_1x6x6x16": ("Registers", {"vload": 36, "vmin": 27,
                                                                "vstore": 9}, True),
    "registers_dilated_max_pool_1x6x6x16": ("Registers", {"vload": 36, "vmax": 48,
                                                          "vstore": 16}, True),
    # a dilated image: each window falls on one element and one hole, the init (-inf) folds
    # in nothing: every output is a copy of an input pixel
    "registers_max_over_dilated_rows_1x4x4x16": ("Registers", {"vload": 16, "vmax": 0,
                                                               "vstore": 24}, True),
    # the three-way maximum computes two steps of a 3x3 window's fold at once; the last output
    # of the last row is a piece of its own (its every third pixel, read in groups of three,
    # would run past the image)
    "lanes_max_pool_3x3_1x6x6x64": ("Lanes", {"vload": 19, "vmax3": 12, "vstore": 3}, True),
    # no instruction takes the maximum of two int8 values: max(a, b) = relu(a - b) + b in the
    # accumulator (a product with -I added, stored through the ReLU, loaded back)
    "gemmini_max_pool_1x8x8x16": ("Gemmini", {"mvout_acc_relu": 15, "mvin_strided": 16}, True),
    # a quantized layer (a convolution, a ReLU, saturated to int8) pooled
    "gemmini_layer_max_pool_1x8x8x16": ("Gemmini", {"matmul32": 28, "mac32": 160,
                                                    "mvout_acc_relu": 39}, True),
    # a pooling written as a reshape and a float maximum over the window's dimensions (no
    # instruction reduces: refused before, "no rule computes a f32 reduction"): the same fold
    "registers_max_pool_as_reshape_1x8x8x16": ("Registers", {"vload": 64, "vmax": 48,
                                                              "vstore": 16}, True),
    # laid out channels-first (NCHW, OIHW): the pooling reads the convolution's channels-last
    # result (the same 160 accumulating products and 39 ReLU stores as channels-last), and
    # its result alone is transposed back
    "gemmini_channels_first_layer_max_pool_1x16x8x8": ("Gemmini", {"matmul32": 28,
                                                                   "mac32": 160,
                                                                   "mvout_acc_relu": 39}, True),
    # 14,852 instructions in 16 bands of one output row (whole: 13,467 in 47 s and 2.9 GB;
    # in bands 4.3 s and 274 MB), each output pixel's 3x3 window folded once: 7,812 maxima
    "registers_max_pool_in_bands_1x32x32x64": ("Registers", {"vmax": 7812, "vstore": 1024},
                                               True),
}


@pytest.mark.parametrize("name", list(POOLING))
def test_a_pooling_folds_strided_windows_of_its_image_and_equals_xla(example_build, tmp_path,
                                                                     name):
    example, counts, exact = POOLING[name]
    assert_compiles_equal_to_xla_with(example_build(example), name, tmp_path, counts, exact)


# kernel -> {instruction: count} on the ByteTiles test accelerator, whose int8 tile registers
# one dot-product instruction reads as uint8, as int8 interleaved by fours and as int32: the
# kernel's uint8 matrix, interleaved int8 matrix and int32 accumulator each live in a tile as
# their bytes (refused before: "no instruction computes `convert`")
BYTE_TILES = {
    "bytetiles_product_16x64x16": {"tileloadd": 2, "tilezero": 1, "tdpbusd": 1, "tilestored": 1},
    # the addend loaded into the accumulator tile
    "bytetiles_product_plus_16x64x16": {"tileloadd": 3, "tilezero": 0, "tdpbusd": 1,
                                        "tilestored": 1},
    # two row tiles of A against the one B
    "bytetiles_product_32x64x16": {"tileloadd": 3, "tilezero": 2, "tdpbusd": 2, "tilestored": 2},
}


@pytest.mark.parametrize("name", list(BYTE_TILES))
def test_registers_read_as_other_types_hold_the_kernels_values_as_bytes(example_build, tmp_path,
                                                                        name):
    assert_compiles_equal_to_xla_with(example_build("ByteTiles"), name, tmp_path,
                                      BYTE_TILES[name], exact=True)


# kernel -> {instruction: count} on the StridedTiles test accelerator: the same unit whose only
# transfers move a tile at a row stride (AMX's `tileloadd` and `tilestored`): whole matrices at
# their row length, windows of wider ones at theirs, results written over HBM whose earlier
# contents do not matter (refused before: "no instruction loads parameter 0"). Nothing is
# multiplied twice: (M/16)(N/16)(K/64) products, one store per result tile.
STRIDED_TILES = {
    "stridedtiles_product_16x64x16": {"tileloadd": 2, "tilezero": 1, "tdpbusd": 1,
                                      "tilestored": 1},
    # a contraction of 128: two products accumulated onto one tile
    "stridedtiles_product_16x128x16": {"tdpbusd": 2, "tilezero": 1, "tilestored": 1},
    # result columns from column windows of the interleaved matrix
    "stridedtiles_product_16x64x32": {"tdpbusd": 2, "tilestored": 2},
    # an int32 addend's tiles loaded into the accumulators as windows of its bytes
    "stridedtiles_product_plus_32x64x32": {"tdpbusd": 4, "tilezero": 0, "tilestored": 4},
    "stridedtiles_product_64x256x64": {"tdpbusd": 64, "tilestored": 16},
}


@pytest.mark.parametrize("name", list(STRIDED_TILES))
def test_tiles_moved_at_a_stride_are_whole_matrices_and_windows_of_wider_ones(example_build,
                                                                           tmp_path, name):
    assert_compiles_equal_to_xla_with(example_build("StridedTiles"), name, tmp_path,
                                      STRIDED_TILES[name], exact=True)


# kernel -> {instruction: count} on the TallQKV test accelerator, whose buffers hold 4,096 rows
# and whose product and softmax take any number of them: nothing is split along rows.
TALL = {
    "qkv_softmax_512_rows": {"softmax": 1},
    "qkv_attention_256_rows": {"matmul": 2, "softmax": 1, "load_t": 1},
    "qkv_attention_160_rows": {"matmul": 2, "softmax": 1, "load_t": 1},
    # one item at a time: the product's right operand is one 64 x 64 block
    "qkv_attention_4_heads": {"matmul": 8, "softmax": 4, "load_t": 4},
    # B's halves are windows of 64 of its 128 columns: each row of each is one 128-byte run
    "qkv_matmul_64x64x128": {"matmul": 2, "load": 129, "store": 128},
    # the bias row repeated down 128 rows is one more product, its contraction of one padded
    # to the unit's 64: x, w, the row, 63 zero rows and a [1 0 ... 0] matrix are the loads
    # (before: 64 one-row loads of the bias)
    "qkv_linear_layer_128x64x64": {"matmul": 2, "add": 1, "load": 5},
}


@pytest.mark.parametrize("name", list(TALL))
def test_on_a_unit_that_takes_every_row_only_columns_are_split(example_build, tmp_path, name):
    assert_compiles_equal_to_xla_with(example_build("TallQKV"), name, tmp_path, TALL[name])


# kernel -> {instruction: count} on Lanes, whose one buffer holds 64 rows: no candidate of
# the first selection fits (two or three 64-row tiles side by side), so selections that keep
# every value within half, then a quarter, of its buffer run; each tile is stored in turn.
# Both were refused before: "the kernel does not fit in memory even with spilling".
SMALLER_TILES = {
    "lanes_add_128_rows": {"vload": 8, "vadd": 4, "vstore": 4},      # 32-row tiles
    "lanes_max3_128_rows": {"vload": 24, "vmax3": 8, "vstore": 8},   # 16-row tiles
}


@pytest.mark.parametrize("name", list(SMALLER_TILES))
def test_tiles_too_large_to_fit_beside_each_other_are_made_smaller(example_build, tmp_path,
                                                                   name):
    assert_compiles_equal_to_xla_with(example_build("Lanes"), name, tmp_path,
                                      SMALLER_TILES[name])


def test_a_softmax_wider_than_the_unit_is_refused_naming_its_row_sum(example_build, tmp_path):
    run = compile_kernel(example_build("QKV").backend, TILING / "qkv_softmax_128_columns.hlo",
                         tmp_path / "softmax.py")
    assert run.returncode != 0
    # The exponential splits into 64-column tiles; the bf16 sum of a row does not (that would
    # reorder it), and the unit sums rows of at most 64.
    long = ("computes `reduce` of bf16[64,128] over its dimension 1 (128), longer than every "
            "instruction computing `reduce` reduces (at most 64)")
    assert long in run.stderr
    assert not (tmp_path / "softmax.py").exists()


def test_an_int32_sum_of_two_inputs_is_refused_naming_the_add(example_build, tmp_path):
    run = compile_kernel(example_build("Gemmini").backend, TILING / "gemmini_int32_add_64x64.hlo",
                         tmp_path / "add.py")
    assert run.returncode != 0
    # Every 16-column window of the inputs loads; the array adds only onto a product.
    assert "gemmini_int32_add_64x64.hlo:6: no instruction of Gemmini computes `add`" in run.stderr
    assert "parameter" not in run.stderr
    assert not (tmp_path / "add.py").exists()
