"""The kernel-suite script (tests/benchmarks/kernel_suite.py) as a user runs it on another
project's kernels: it builds the accelerator from a spec file, compiles every kernel of the
files and directories named, holds each compiled one to XLA and tallies the refusals."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from helpers.examples import ROOT

pytestmark = pytest.mark.slow

SCRIPT = ROOT / "tests" / "benchmarks" / "kernel_suite.py"
GEMMINI = ROOT / "examples" / "Gemmini"

# Gemmini's array multiplies matrices; nothing multiplies two int8 values elementwise.
ELEMENTWISE_PRODUCT = """HloModule product
ENTRY main {
  a = s8[16,16] parameter(0)
  b = s8[16,16] parameter(1)
  ROOT m = s8[16,16] multiply(a, b)
}
"""


def test_a_directory_of_kernels_is_compiled_checked_and_tallied(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("maximum", "add"):
        shutil.copy(GEMMINI / "kernels" / f"{name}.hlo", suite / f"{name}.hlo")
    (suite / "product.gen.hlo").write_text(ELEMENTWISE_PRODUCT)
    run = subprocess.run([sys.executable, str(SCRIPT), "--spec", str(GEMMINI / "Gemmini.py"),
                          "--keep", str(tmp_path / "work"), str(suite)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    [maximum] = [line for line in run.stdout.splitlines() if "maximum.hlo:" in line]
    assert "maximum.hlo: ok (error 0 of the tolerance), 9 instructions" in maximum
    assert "2 of 3 compiled (67%), 0 wrong, 1 refused" in run.stdout
    assert "no instruction of Gemmini computes `multiply`" in run.stdout
    # The assembly of each kernel is kept, named after its file.
    assert (tmp_path / "work" / "k2" / "product_gen.hlo").exists()


def test_a_spec_that_writes_no_backend_is_an_error(tmp_path):
    spec = tmp_path / "Nothing.py"
    spec.write_text("print('this spec generates nothing')\n")
    kernel = tmp_path / "k.hlo"
    kernel.write_text(ELEMENTWISE_PRODUCT)
    run = subprocess.run([sys.executable, str(SCRIPT), "--spec", str(spec), str(kernel)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "expected one: does it call generate_oracle and generate_backend?" in run.stderr
