"""The JAX example runs as the README shows: examples/jax/qkv_attention.py compiles attention
for QKV, shows the instructions and compares with JAX; a second run comes from the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from act_backend.jax import cache

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "jax" / "qkv_attention.py"


def run_example(backend: Path, kernels: Path) -> str:
    env = dict(os.environ, **{cache.ENV: str(kernels)})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(EXAMPLE), str(backend)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_attention_example_compiles_runs_and_checks(example_build, tmp_path):
    backend = example_build("QKV").backend
    first = run_example(backend, tmp_path / "kernels")
    assert "attention: 9 instructions, cost 9.0, from the backend" in first
    assert "    gemm(" in first and "out: bfloat16[64, 64]" in first
    assert "largest difference in ulps: " in first
    second = run_example(backend, tmp_path / "kernels")
    assert "from the cache" in second
