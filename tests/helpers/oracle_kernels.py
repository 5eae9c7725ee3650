"""Assembly kernels, written the way the backend writes assembly, for comparing the oracle's
compilation strategies and running it at scale (thousands of instructions drawn from a few
instructions at varying addresses).

* ``gemmini_every_instruction(seed)``: every instruction of the Gemmini example, with scales,
  partial rows and columns, and multiply-accumulates in place;
* ``gemmini_tiled_matmul(tm, tn, tk, seed)``: an int8 product ``C = A.B`` of ``16*tm x
  16*tk`` by ``16*tk x 16*tn`` on the Gemmini example, tile by tile (two loads, a product or a
  multiply-accumulate into the accumulator per contraction tile, a store per output tile):
  ``tm * tn * (3 * tk + 1)`` instructions, exact against NumPy;
* ``qkv_attention_heads(heads, seed)``: ``softmax(Q.K^T).V`` for many independent heads on the
  QKV example, each head's softmax split into row blocks of 16, 32 or 64 rows: bf16 arithmetic
  with exponentials, for comparing compilation strategies bit for bit;
* ``qkv_moves(seed)``, ``qkv_new_moves(seed)``: every instruction of the QKV (or QKV_new)
  example that only moves data (loads, stores, transposes), with partial rows and reads of
  rows two writes left, on random bf16 bit patterns: exact outputs, NaN payloads included.

Each returns a ``LongKernel``: the assembly text, its instruction count and seeded inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from helpers.bit_patterns import bits_of, every_pattern

TILE = 16  # Gemmini's array side
QKV_ROWS = 64  # QKV's gemm operand: 64 rows of 64 bf16
QKV_MATRIX_BYTES = QKV_ROWS * 64 * 2


@dataclass(frozen=True)
class LongKernel:
    text: str
    count: int
    inputs: list[np.ndarray]
    # the exact expected outputs, where the arithmetic allows one (integers)
    expected: list[np.ndarray] | None = None


def _assembly(name: str, hbm: int, inputs: list[tuple[int, tuple, str]],
              outputs: list[tuple[int, tuple, str]], body: list[str]) -> str:
    def specs(tensors: list[tuple[int, tuple, str]]) -> str:
        return ", ".join(f"{{'addr': {addr}, 'shape': {shape}, 'dtype': jnp.{dtype}}}"
                         for addr, shape, dtype in tensors)

    lines = [
        "import jax.numpy as jnp",
        "",
        "",
        f"def {name}(kernel, api):",
        f"    @kernel(hbm={hbm},",
        f"            input=[{specs(inputs)}],",
        "            constant=[],",
        f"            output=[{specs(outputs)}])",
        f"    def {name}_():",
        *(f"        {line}" for line in body),
        f"    return {name}_",
        "",
    ]
    return "\n".join(lines)


def gemmini_every_instruction(seed: int = 0) -> LongKernel:
    """Each Gemmini instruction once or more: loads with scales (wrapping in int8), a load of
    8 columns, products into both buffers, multiply-accumulates in place and over 8 columns,
    a product of 8 rows, and every store."""
    body = [
        "api.mvin(rows=16, cols=16, scale=1, hbm_addr=0, sp_addr=0)",
        "api.mvin(rows=16, cols=16, scale=3, hbm_addr=256, sp_addr=16)",
        "api.mvin(rows=16, cols=8, scale=-1, hbm_addr=256, sp_addr=32)",
        "api.mvin_acc(rows=16, cols=16, scale=2, hbm_addr=512, acc_addr=0)",
        "api.mvin_acc_s8(rows=16, cols=16, scale=1, hbm_addr=1536, acc_addr=16)",
        "api.matmul8(DIM_I=16, DIM_J=16, DIM_K=16, C_dst=48, A_src=0, B_src=16)",
        "api.mac8(DIM_I=16, DIM_J=16, DIM_K=16, C_dst=64, A_src=0, B_src=16, D_src=48)",
        "api.matmul32(DIM_I=16, DIM_J=16, DIM_K=16, C_dst=32, A_src=0, B_src=16)",
        "api.mac32(DIM_I=16, DIM_J=16, DIM_K=16, C_dst=0, A_src=0, B_src=16, D_src=0)",
        "api.mac32(DIM_I=16, DIM_J=8, DIM_K=16, C_dst=16, A_src=0, B_src=32, D_src=16)",
        "api.matmul32(DIM_I=8, DIM_J=16, DIM_K=16, C_dst=48, A_src=0, B_src=16)",
        "api.mvout(rows=16, cols=16, hbm_addr=2048, sp_addr=48)",
        "api.mvout_relu(rows=16, cols=16, hbm_addr=2304, sp_addr=64)",
        "api.mvout_acc(rows=16, cols=16, hbm_addr=2560, acc_addr=0)",
        "api.mvout_acc_relu(rows=16, cols=16, hbm_addr=3584, acc_addr=32)",
        "api.mvout_acc_s8(rows=16, cols=16, hbm_addr=4608, acc_addr=16)",
        "api.mvout_acc(rows=8, cols=16, hbm_addr=4864, acc_addr=48)",
    ]
    inputs = [(0, (16, 16), "int8"), (256, (16, 16), "int8"), (512, (16, 16), "int32"),
              (1536, (16, 16), "int8")]
    outputs = [(2048, (16, 16), "int8"), (2304, (16, 16), "int8"), (2560, (16, 16), "int32"),
               (3584, (16, 16), "int32"), (4608, (16, 16), "int8"), (4864, (8, 16), "int32")]
    text = _assembly("gemmini_every_instruction", 5376, inputs, outputs, body)
    rng = np.random.default_rng(seed)
    values = [rng.integers(-128, 127, (16, 16), endpoint=True).astype(np.int8),
              rng.integers(-128, 127, (16, 16), endpoint=True).astype(np.int8),
              rng.integers(-(1 << 20), 1 << 20, (16, 16)).astype(np.int32),
              rng.integers(-128, 127, (16, 16), endpoint=True).astype(np.int8)]
    return LongKernel(text, len(body), values)


def gemmini_tiled_matmul(tm: int, tn: int, tk: int, seed: int = 0) -> LongKernel:
    """``C = A.B`` with A, B int8 and C int32, every matrix stored tile after tile in HBM
    (``[tiles_rows, tiles_cols, 16, 16]``, so that a tile is one contiguous load)."""
    a_shape, b_shape, c_shape = (tm, tk, TILE, TILE), (tk, tn, TILE, TILE), (tm, tn, TILE, TILE)
    a_addr = 0
    b_addr = a_addr + tm * tk * TILE * TILE
    c_addr = b_addr + tk * tn * TILE * TILE
    hbm = c_addr + tm * tn * TILE * TILE * 4
    tile_bytes = TILE * TILE
    body = []
    spad_slots = 1024 // TILE // 2  # pairs of scratchpad tiles (A, B), used in turn
    acc_slots = 256 // TILE
    turn = 0
    for i in range(tm):
        for j in range(tn):
            acc = ((i * tn + j) % acc_slots) * TILE
            for k in range(tk):
                slot = (turn % spad_slots) * 2 * TILE
                turn += 1
                a_tile = a_addr + (i * tk + k) * tile_bytes
                b_tile = b_addr + (k * tn + j) * tile_bytes
                body.append(f"api.mvin(rows=16, cols=16, scale=1, hbm_addr={a_tile}, "
                            f"sp_addr={slot})")
                body.append(f"api.mvin(rows=16, cols=16, scale=1, hbm_addr={b_tile}, "
                            f"sp_addr={slot + TILE})")
                if k == 0:
                    body.append(f"api.matmul32(DIM_I=16, DIM_J=16, DIM_K=16, C_dst={acc}, "
                                f"A_src={slot}, B_src={slot + TILE})")
                else:
                    body.append(f"api.mac32(DIM_I=16, DIM_J=16, DIM_K=16, C_dst={acc}, "
                                f"A_src={slot}, B_src={slot + TILE}, D_src={acc})")
            c_tile = c_addr + (i * tn + j) * tile_bytes * 4
            body.append(f"api.mvout_acc(rows=16, cols=16, hbm_addr={c_tile}, acc_addr={acc})")
    text = _assembly(f"gemmini_matmul_{tm}x{tn}x{tk}", hbm,
                     [(a_addr, a_shape, "int8"), (b_addr, b_shape, "int8")],
                     [(c_addr, c_shape, "int32")], body)
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 127, a_shape, endpoint=True).astype(np.int8)
    b = rng.integers(-128, 127, b_shape, endpoint=True).astype(np.int8)
    return LongKernel(text, len(body), [a, b], [_tiled_product(a, b)])


def _tiled_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The product of two tiled matrices, tiled the same way, in int32."""
    def whole(t: np.ndarray) -> np.ndarray:
        rows, cols, r, c = t.shape
        return t.transpose(0, 2, 1, 3).reshape(rows * r, cols * c).astype(np.int64)

    product = (whole(a) @ whole(b)).astype(np.int32)
    tm, tn = a.shape[0], b.shape[1]
    return product.reshape(tm, TILE, tn, TILE).transpose(0, 2, 1, 3).copy()


# Row blocks each head's softmax is split into, in turn: softmax is per row, so any split
# computes the same values, but each block size is a step signature of its own.
_SOFTMAX_SPLITS: list[list[tuple[int, int]]] = [
    [(0, 64)],
    [(0, 32), (32, 32)],
    [(0, 16), (16, 16), (32, 32)],
]


def qkv_attention_heads(heads: int, seed: int = 0) -> LongKernel:
    """Attention of ``heads`` independent bf16[64,64] heads: the inputs Q, K, V of each head in
    turn, then the outputs, in HBM."""
    shape = (QKV_ROWS, 64)
    inputs_at = [(3 * h + m) * QKV_MATRIX_BYTES for h in range(heads) for m in range(3)]
    out_base = 3 * heads * QKV_MATRIX_BYTES
    hbm = out_base + heads * QKV_MATRIX_BYTES
    body: list[str] = []
    for h in range(heads):
        q, k, v = inputs_at[3 * h:3 * h + 3]
        body += [
            f"api.load_rm(n=64, addr_in={q}, addr_out=0)",
            f"api.load_cm(n=64, addr_in={k}, addr_out=64)",
            "api.gemm(addr_1=0, addr_2=64, addr_out=0)",
            *(f"api.softmax(n={n}, addr={start})"
              for start, n in _SOFTMAX_SPLITS[h % len(_SOFTMAX_SPLITS)]),
            "api.mov(n=64, addr_in=0, addr_out=0)",
            f"api.load_rm(n=64, addr_in={v}, addr_out=64)",
            "api.gemm(addr_1=0, addr_2=64, addr_out=0)",
            "api.mov(n=64, addr_in=0, addr_out=0)",
            f"api.store_rm(n=64, addr_in=0, addr_out={out_base + h * QKV_MATRIX_BYTES})",
        ]
    text = _assembly(f"qkv_heads_{heads}", hbm,
                     [(addr, shape, "bfloat16") for addr in inputs_at],
                     [(out_base + h * QKV_MATRIX_BYTES, shape, "bfloat16")
                      for h in range(heads)], body)
    rng = np.random.default_rng(seed)
    inputs = [(rng.standard_normal(shape) * 0.5).astype(ml_dtypes.bfloat16) for _ in inputs_at]
    return LongKernel(text, len(body), inputs)



def _moves(name: str, body: list[str], seed: int, expected) -> LongKernel:
    """A QKV-family kernel of ``body`` on random bf16 bit patterns X (at byte 0) and Y (at
    8192), [64,64] each. ``expected(x, y)`` gives each output's bits from X's and Y's, as
    (HBM address, uint16 rows of 64); the outputs follow the inputs in HBM, in that order."""
    x, y = (every_pattern((QKV_ROWS, 64), ml_dtypes.bfloat16, seed + k) for k in range(2))
    outputs = expected(bits_of(x), bits_of(y))
    shape = (QKV_ROWS, 64)
    last, rows = outputs[-1]
    text = _assembly(name, last + rows.nbytes,
                     [(0, shape, "bfloat16"), (QKV_MATRIX_BYTES, shape, "bfloat16")],
                     [(addr, rows.shape, "bfloat16") for addr, rows in outputs], body)
    return LongKernel(text, len(body), [x, y],
                      [np.ascontiguousarray(rows).view(ml_dtypes.bfloat16)
                       for _, rows in outputs])


def qkv_moves(seed: int = 0) -> LongKernel:
    """QKV's loads and stores: row-major and column-major, whole and partial, a read of rows a
    row-major load partly overwrote after a column-major one, a read inside a write."""
    body = [
        "api.load_rm(n=64, addr_in=0, addr_out=0)",
        "api.load_cm(n=64, addr_in=8192, addr_out=64)",
        "api.load_rm(n=32, addr_in=4096, addr_out=96)",
        "api.store_rm(n=64, addr_in=64, addr_out=16384)",
        "api.store_cm(n=64, addr_in=0, addr_out=24576)",
        "api.store_rm(n=16, addr_in=8, addr_out=32768)",
    ]
    return _moves("qkv_moves", body, seed, lambda x, y: [
        (16384, np.concatenate([y.T[:32], x[32:]])), (24576, x.T), (32768, x[8:24])])


def qkv_new_moves(seed: int = 0) -> LongKernel:
    """QKV_new's loads into d1 and d3, its stores from both, and its transpose from d1 into d3,
    whole and partial, with a read of rows a load partly overwrote after the transpose."""
    body = [
        "api.load_01(n=64, addr_in=0, addr_out=0)",
        "api.load_03(n=64, addr_in=8192, addr_out=0)",
        "api.transpose_13(addr_in=0, addr_out=64)",
        "api.load_03(n=32, addr_in=2048, addr_out=80)",
        "api.store_30(n=64, addr_in=64, addr_out=16384)",
        "api.store_10(n=64, addr_in=0, addr_out=24576)",
        "api.store_30(n=16, addr_in=8, addr_out=32768)",
    ]
    return _moves("qkv_new_moves", body, seed, lambda x, y: [
        (16384, np.concatenate([x.T[:16], x[16:48], x.T[48:]])), (24576, x), (32768, y[8:24])])
