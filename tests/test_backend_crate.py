"""The back half's crate tests (scheduling, allocation requests and answers, emission, the
default cost model, the candidate loop, the command line's parts) and the crate's side of the
conformance corpus run by cargo on the crate of the source tree, so that the suite runs them
too."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from act_backend.backend import crate_dir
from act_backend.backend.cargo import build_env, cache_dir

pytestmark = pytest.mark.slow

CRATE_TESTS = ["backend_schedule", "backend_alloc", "backend_emit", "backend_cost",
               "backend_driver", "backend_spilling",
               # The conformance corpus and case tables, which pytest runs on the Python side.
               "conformance_kernels", "conformance_tables"]
# Unit tests inside the back half's modules (cargo filters test names by substring).
UNIT_FILTERS = ["layout::", "emit::", "cost::", "output::", "cli::"]


def passed(done: subprocess.CompletedProcess) -> int:
    """Tests cargo ran and passed; fails the test when any failed."""
    assert done.returncode == 0, done.stdout + done.stderr
    results = re.findall(r"test result: ok\. (\d+) passed; 0 failed", done.stdout)
    assert results, done.stdout
    return sum(int(n) for n in results)


def cargo_test(*args: str) -> subprocess.CompletedProcess:
    env = build_env(cache_dir(), None)
    # A debug build of its own, beside the release builds of generated backends.
    env["CARGO_TARGET_DIR"] = os.path.join(env["CARGO_TARGET_DIR"], "..", "target-crate-tests")
    return subprocess.run(["cargo", "test", "--locked", *args], cwd=crate_dir(), env=env,
                          capture_output=True, text=True)


@pytest.mark.parametrize("name", CRATE_TESTS)
def test_crate_integration_tests_pass(name):
    assert passed(cargo_test("--test", name)) > 0


def test_crate_unit_tests_of_the_back_half_pass():
    assert passed(cargo_test("--lib", "--", *UNIT_FILTERS)) >= 10
