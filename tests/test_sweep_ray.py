"""Sweeps end to end on a local Ray with two workers: QKV with 32, 64, 128 and 256 operand
rows (32 is refused by the generator, 64 refuses the kernels for memory) by three kernels
(two HLO files and a JAX function), each compiled by the point's generated backend and
simulated on its oracle; two runs write identical tables; a worker that dies is retried and
a point whose worker always dies is a row with its error. One Ray serves the whole module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from act_backend.sweep import run_sweep

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]
FAMILY = ROOT / "examples" / "sweep" / "qkv_family.py"

QKV_SWEEP = f'''
[spec]
file = "{FAMILY}"
function = "qkv"

[parameters]
d1_rows = [32, 64, 128, 256]

[[kernels]]
hlo = "{ROOT / "examples" / "QKV" / "kernels" / "attention.hlo"}"

[[kernels]]
hlo = "{ROOT / "tests" / "kernels" / "matmul.hlo"}"

[[kernels]]
jax = "{ROOT / "examples" / "sweep" / "kernels.py"}:scores"
args = ["bf16[64,64]", "bf16[64,64]"]

[run]
retries = 1
'''

# (point, d1_rows, kernel, status, cost, instructions)
EXPECTED = [
    (0, 32, "attention", "spec-refused", None, None),
    (0, 32, "matmul", "spec-refused", None, None),
    (0, 32, "scores", "spec-refused", None, None),
    (1, 64, "attention", "refused", None, None),    # Q.K^T alone needs two 64-row tiles
    (1, 64, "matmul", "refused", None, None),
    (1, 64, "scores", "refused", None, None),
    (2, 128, "attention", "ok", 9.0, 9),
    (2, 128, "matmul", "ok", 5.0, 5),
    (2, 128, "scores", "ok", 6.0, 6),
    (3, 256, "attention", "ok", 9.0, 9),
    (3, 256, "matmul", "ok", 5.0, 5),
    (3, 256, "scores", "ok", 6.0, 6),
]


@pytest.fixture(scope="module")
def local_ray():
    from act_backend.sweep.runner import start_local_ray

    start_local_ray(2)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def qkv_runs(local_ray, tmp_path_factory):
    """The QKV sweep run twice on Ray, into two output directories, with the first run's
    progress lines."""
    work = tmp_path_factory.mktemp("qkv-sweep")
    path = work / "qkv.toml"
    path.write_text(QKV_SWEEP)
    lines: list[str] = []
    first = run_sweep(path, output=work / "run1", progress=lines.append)
    second = run_sweep(path, output=work / "run2", progress=lambda line: None)
    return first, second, lines


def test_the_local_ray_has_two_workers(local_ray):
    assert ray.cluster_resources()["CPU"] == 2


def test_three_qkv_variants_by_three_kernels(qkv_runs):
    first, _, _ = qkv_runs
    assert [(r["point"], r["d1_rows"], r["kernel"], r["status"], r["cost"],
             r["instructions"]) for r in first.rows] == EXPECTED
    for row in first.rows:
        if row["status"] == "ok":
            assert row["error_ulps"] <= 4.0 and row["message"] == ""
    # A product of two bf16 tiles accumulates as the reference does: bit for bit.
    assert all(r["exact"] for r in first.rows if r["kernel"] == "matmul" and r["cost"])


def test_a_point_whose_spec_is_refused_is_a_row_with_its_error(qkv_runs):
    first, _, _ = qkv_runs
    for row in first.rows[:3]:
        assert f"{FAMILY}:" in row["message"]
        assert "never fits in d1, which has 32 units along this dimension" in row["message"]


def test_a_kernel_refused_on_one_point_compiles_on_another(qkv_runs):
    first, _, _ = qkv_runs
    matmul = {r["d1_rows"]: r for r in first.rows if r["kernel"] == "matmul"}
    assert matmul[64]["status"] == "refused"
    # How many candidates selection offers is selection's business; the refusal is memory's.
    assert re.match(r"the kernel does not fit in memory even with spilling: none of the \d+ "
                    r"candidates could be placed: candidate 0: ", matmul[64]["message"])
    assert (matmul[128]["status"], matmul[128]["cost"]) == ("ok", 5.0)


def test_two_runs_write_identical_tables(qkv_runs):
    first, second, _ = qkv_runs
    assert first.output != second.output
    for name in ("csv", "parquet", "best"):
        assert first.files[name].read_bytes() == second.files[name].read_bytes(), name
    assert first.rows == second.rows


def test_progress_is_a_line_per_point_as_it_finishes(qkv_runs):
    _, _, lines = qkv_runs
    assert lines[0].startswith("sweep qkv.toml: 4 points x 3 kernels -> ")
    assert [line.split("]")[0] for line in lines[1:]] == ["[1/4", "[2/4", "[3/4", "[4/4"]
    assert any("point 2 (d1_rows=128): attention ok cost 9, matmul ok cost 5, scores ok "
               "cost 6 [" in line for line in lines)


def test_the_best_configuration_the_plot_and_the_timings_are_beside_the_table(qkv_runs):
    first, _, _ = qkv_runs
    assert first.best["overall"] == {"point": 2, "parameters": {"d1_rows": 128},
                                     "total_cost": 20.0,
                                     "costs": {"attention": 9.0, "matmul": 5.0, "scores": 6.0}}
    assert first.best["per_kernel"]["matmul"]["point"] == 2   # ties go to the earlier point
    for name in ("csv", "parquet", "best", "plot", "timings"):
        assert first.files[name].parent == first.output and first.files[name].is_file()
    timings = first.files["timings"].read_text().splitlines()
    assert timings[0].startswith("point,kernel,worker,")
    assert len(timings) == 1 + len(EXPECTED)
    # Each point's own files: its log, oracle, backend and compiled kernels.
    point = first.output / "points" / "002"
    assert (point / "log.txt").is_file() and (point / "backends" / "QKV").is_file()
    assert (point / "targets" / "QKV" / "oracle" / "isa.json").is_file()


def test_a_serial_run_gives_the_same_table(qkv_runs, tmp_path):
    first, _, _ = qkv_runs
    serial = run_sweep(first.sweep, output=tmp_path / "serial", serial=True,
                       progress=lambda line: None)
    assert serial.files["csv"].read_bytes() == first.files["csv"].read_bytes()


FLAKY_SPEC = '''
import os
import sys
from pathlib import Path

sys.path.insert(0, {family_dir!r})
from qkv_family import qkv

CALLS = Path({calls!r})


def flaky(fate: str):
    """Kills the worker running it: on its first call ("once") or on every call ("always")."""
    calls = CALLS / f"{{fate}}.txt"
    with open(calls, "a") as f:
        f.write(f"{{os.getpid()}}\\n")
    if fate == "always" or (fate == "once" and len(calls.read_text().splitlines()) == 1):
        os._exit(1)
    return qkv(d1_rows=128)
'''


def test_a_worker_that_dies_is_retried_and_one_that_always_dies_is_a_row(local_ray,
                                                                         tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    (tmp_path / "flaky.py").write_text(FLAKY_SPEC.format(family_dir=str(FAMILY.parent),
                                                         calls=str(calls)))
    (tmp_path / "flaky.toml").write_text(f'''
[spec]
file = "flaky.py"
function = "flaky"

[parameters]
fate = ["once", "always"]

[[kernels]]
hlo = "{ROOT / "tests" / "kernels" / "matmul.hlo"}"

[run]
retries = 1
''')
    done = run_sweep(tmp_path / "flaky.toml", progress=lambda line: None)
    assert [(r["fate"], r["status"], r["cost"], r["message"]) for r in done.rows] == [
        ("once", "ok", 5.0, ""),
        ("always", "error", None, "the worker running this point died (2 attempts)"),
    ]
    # Two workers died running "always" (the first attempt and its retry), one running
    # "once", whose retry on a fresh worker succeeded.
    assert len((calls / "once.txt").read_text().splitlines()) == 2
    assert len((calls / "always.txt").read_text().splitlines()) == 2


def test_a_kernel_beyond_tolerance_is_a_mismatch_row(tmp_path):
    # Attention on QKV is 2.5 ulps of its largest magnitude from the NumPy reference (the
    # fused softmax sums in bf16); a product of two tiles is exact.
    (tmp_path / "strict.toml").write_text(f'''
[spec]
file = "{FAMILY}"
function = "qkv"

[[kernels]]
hlo = "{ROOT / "examples" / "QKV" / "kernels" / "attention.hlo"}"

[[kernels]]
hlo = "{ROOT / "tests" / "kernels" / "matmul.hlo"}"

[check]
tolerance_ulps = 0
''')
    done = run_sweep(tmp_path / "strict.toml", serial=True, progress=lambda line: None)
    attention, matmul = done.rows
    assert (attention["status"], attention["cost"], attention["exact"]) == \
        ("mismatch", 9.0, False)
    assert attention["error_ulps"] > 0
    assert attention["message"] == (f"{attention['error_ulps']:g} ulps of the largest "
                                    "magnitude from the reference (tolerance 0)")
    assert (matmul["status"], matmul["exact"], matmul["message"]) == ("ok", True, "")
    assert done.best["overall"] is None and done.best["per_kernel"]["matmul"]["point"] == 0
