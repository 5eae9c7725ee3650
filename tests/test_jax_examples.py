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


def test_the_readme_opens_with_a_one_call_example_that_runs(example_build, tmp_path):
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("# act-backend\n\n```python\n")
    snippet = readme.split("```python\n", 1)[1].split("```\n", 1)[0]
    assert "act_backend.jax.compile(" in snippet and 'backend="examples/QKV/QKV.py"' in snippet
    # The spec of a QKV build made beforehand: the run reuses it rather than generating.
    spec = example_build("QKV").workdir / "QKV.py"
    script = tmp_path / "readme_example.py"
    script.write_text(snippet.replace("examples/QKV/QKV.py", str(spec)))
    env = dict(os.environ, **{cache.ENV: str(tmp_path / "kernels")})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "generating" not in done.stderr
    assert done.stdout.startswith("9.0 ['load_rm(") and "largest difference in ulps" in done.stdout


def test_the_gemmini_int8_layer_equals_jax(example_build, tmp_path):
    backend = example_build("Gemmini").backend
    env = dict(os.environ, **{cache.ENV: str(tmp_path / "kernels")})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "jax" / "gemmini_int8_layer.py"),
                           str(backend)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "    mac32(" in done.stdout and "    mvout_acc_s8(" in done.stdout
    assert "out: int8[16, 16]" in done.stdout
    assert "result 0 (int8[16, 16]): max 0 (integer difference)" in done.stdout
