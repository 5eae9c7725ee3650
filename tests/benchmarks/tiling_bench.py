"""How compilation grows with kernel size when kernels are tiled: int8 products N^3 on the
Gemmini example, attention with more query rows and more heads on QKV.

Prints one row per kernel: the backend's compile wall time and peak memory, the number of
instructions and of matrix-unit instructions (for an N^3 product exactly (N/16)^3: nothing
computed twice), total instructions over matrix-unit ones, the oracle's fsim-compile and fsim
times, and whether the simulated result equals XLA's run of the same HLO (exactly for
integers, within two bf16 ulps for floats). A kernel the backend refuses prints its refusal.

    python tests/benchmarks/tiling_bench.py [--sizes 16,32,64,128] [--rows 64,128,256,512]
        [--heads 1,2,4,8] [--timeout 600]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.differential import compare, refusal_line  # noqa: E402
from helpers.examples import build_example, instruction_calls, parse_kernel_file  # noqa: E402
from helpers.oracle_harness import load_kernel, load_oracle  # noqa: E402
from helpers.xla_reference import run_hlo  # noqa: E402

MATRIX_UNIT = {"Gemmini": ("matmul8", "matmul32", "mac8", "mac32"), "QKV": ("gemm",)}


def int8_product(a, b):
    return jnp.matmul(a, b, preferred_element_type=jnp.int32)


def attention(q, k, v):
    """softmax(Q.K^T).V, the sum in bf16 as QKV's softmax unit computes it."""
    s = jnp.matmul(q, jnp.swapaxes(k, -1, -2))
    e = jnp.exp(s)
    sums = jax.lax.reduce(e, jnp.zeros((), e.dtype), jax.lax.add, (e.ndim - 1,))
    return jnp.matmul(e / sums[..., None], v)


def hlo(fn, *shapes) -> str:
    return jax.jit(fn).lower(*shapes).as_text(dialect="hlo")


def compile_measured(backend: Path, kernel: Path, out: Path, timeout: float):
    """Runs the backend under GNU time; its wall time (s), peak resident memory (MiB, NaN
    without ``/usr/bin/time``) and, when it fails, its stderr."""
    timer = Path("/usr/bin/time")
    prefix = [str(timer), "-f", "peak-kib %M"] if timer.exists() else []
    start = time.perf_counter()
    try:
        done = subprocess.run([*prefix, str(backend), "--input", str(kernel), "--output", str(out),
                               "-q"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout:.0f} s"
    wall = time.perf_counter() - start
    lines = done.stderr.splitlines()
    peak = float("nan")
    if prefix and lines and lines[-1].startswith("peak-kib "):
        peak = int(lines.pop().split()[1]) / 1024
    return wall, peak, "\n".join(lines) if done.returncode else ""


def inputs_for(text: str, seed: int) -> list[np.ndarray]:
    with tempfile.NamedTemporaryFile("w", suffix=".hlo", delete=False) as f:
        f.write(text)
    params = parse_kernel_file(Path(f.name)).entry.parameters()
    os.unlink(f.name)
    rng = np.random.default_rng(seed)
    out = []
    for p in params:
        shape = tuple(p.type.shape)
        if p.type.dtype == "s8":
            out.append(rng.integers(-128, 127, shape, endpoint=True).astype(np.int8))
        else:
            out.append(rng.uniform(-1, 1, shape).astype(jnp.bfloat16))
    return out


def bench(build, name: str, text: str, work: Path, timeout: float) -> None:
    kernel = work / f"{name}.hlo"
    kernel.write_text(text)
    asm = work / f"{name}.py"
    wall, peak, err = compile_measured(build.backend, kernel, asm, timeout)
    if err:
        print(f"{name:28s} refused or failed: {refusal_line(err) or err.strip()[:160]}")
        return
    calls = instruction_calls(asm)
    unit = sum(c in MATRIX_UNIT[build.example] for c in calls)
    oracle = load_oracle(build.oracle_dir)
    k = load_kernel(oracle, asm)
    _, fsim_compile_ms = k("fsim-compile")()
    inputs = inputs_for(text, 7)
    outs, fsim_ms = k("fsim")(*inputs)
    theirs = run_hlo(text, inputs)
    wrong = any(compare(np.asarray(a), np.asarray(b))[0] for a, b in zip(outs, theirs, strict=True))
    print(f"{name:28s} compile {wall:7.2f} s  peak {peak:7.1f} MiB  instructions {len(calls):6d}"
          f"  matrix unit {unit:5d}  ratio {len(calls) / max(unit, 1):5.2f}"
          f"  fsim-compile {fsim_compile_ms / 1e3:6.2f} s  fsim {fsim_ms:8.2f} ms"
          f"  {'WRONG' if wrong else 'equals XLA'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,32,64,128")
    parser.add_argument("--rows", default="64,128,256,512")
    parser.add_argument("--heads", default="1,2,4,8")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    ints = lambda text: [int(x) for x in text.split(",") if x]  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="act-tiling-bench-") as scratch:
        work = Path(scratch)
        gemmini = build_example("Gemmini", work / "build")
        for n in ints(args.sizes):
            s8 = jax.ShapeDtypeStruct((n, n), jnp.int8)
            bench(gemmini, f"gemmini int8 {n}^3", hlo(int8_product, s8, s8), work, args.timeout)
        qkv = build_example("QKV", work / "build")
        bf16 = lambda *d: jax.ShapeDtypeStruct(d, jnp.bfloat16)  # noqa: E731
        for rows in ints(args.rows):
            text = hlo(attention, bf16(rows, 64), bf16(64, 64), bf16(64, 64))
            bench(qkv, f"qkv attention {rows} rows", text, work, args.timeout)
        for heads in ints(args.heads):
            text = hlo(attention, *[bf16(heads, 64, 64)] * 3)
            bench(qkv, f"qkv attention {heads} heads", text, work, args.timeout)


if __name__ == "__main__":
    main()
