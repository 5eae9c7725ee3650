"""The sweep's outputs and its per-point job on their own, without Ray or a backend build:
the table in point-then-kernel order whatever order points finish in, its CSV and Parquet
forms, the best configurations, the plot, the job's rows for points that fail before any
build, and the errors for a missing optional dependency."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from act_backend.sweep import SweepError, results
from act_backend.sweep import best as best_module
from act_backend.sweep.inputs import kernel_inputs
from act_backend.sweep.job import lost_point, run_point
from act_backend.sweep.kernel_run import compare, refusal
from act_backend.sweep.messages import without_root
from act_backend.sweep.model import (
    CostModel,
    Inputs,
    KernelRow,
    KernelSource,
    KernelTiming,
    Parameter,
    Point,
    PointJob,
    PointResult,
    SpecRef,
    Sweep,
)
from act_backend.sweep.plot import write_plot
from act_backend.sweep.runner import require

ROOT = Path(__file__).resolve().parents[1]
FAMILY = ROOT / "examples" / "sweep" / "qkv_family.py"
KERNELS = (KernelSource("attention", hlo="HloModule a"), KernelSource("matmul", hlo="HloModule m"))


def make_sweep(tmp_path: Path, parameters=None, cost_models=()) -> Sweep:
    if parameters is None:
        parameters = (Parameter("rows", "int", values=(64, 128)),
                      Parameter("fused", "bool", values=(True, False)))
    return Sweep(path=tmp_path / "s.toml", spec=SpecRef("qkv", file=str(FAMILY)),
                 parameters=parameters, kernels=KERNELS, cost_models=cost_models)


def point(index: int, rows: int, fused: bool, cost_model=None) -> Point:
    return Point(index, (("rows", rows), ("fused", fused)), cost_model)


def result(p: Point, attention: tuple, matmul: tuple, wall: float = 1.0) -> PointResult:
    """A point's result from (status, cost) per kernel; rows given in reverse kernel order,
    as a worker might list them."""
    rows = [KernelRow(p.index, name, status, cost=cost,
                      instructions=None if cost is None else int(cost),
                      exact=None if cost is None else True,
                      message="" if cost is not None else "refused here")
            for name, (status, cost) in (("matmul", matmul), ("attention", attention))]
    timings = tuple(KernelTiming(p.index, row.kernel, compile_ms=12.5, cached=False)
                    for row in rows)
    return PointResult(p, tuple(rows), timings, generate_s=0.5, wall_s=wall, worker="w:1")


FINISHED = [  # out of order, as Ray returns them
    result(point(2, 128, True), ("ok", 9.0), ("ok", 5.0)),
    result(point(0, 64, True), ("refused", None), ("refused", None)),
    result(point(3, 128, False), ("refused", None), ("ok", 5.0)),
    result(point(1, 64, False), ("spec-refused", None), ("spec-refused", None)),
]


def test_rows_are_ordered_by_point_then_by_the_sweeps_kernel_order(tmp_path):
    rows = results.table_rows(make_sweep(tmp_path), FINISHED)
    assert [(r["point"], r["kernel"]) for r in rows] == [
        (0, "attention"), (0, "matmul"), (1, "attention"), (1, "matmul"),
        (2, "attention"), (2, "matmul"), (3, "attention"), (3, "matmul")]
    assert rows[4] == {"point": 2, "rows": 128, "fused": True, "kernel": "attention",
                       "status": "ok", "cost": 9.0, "instructions": 9, "error_ulps": None,
                       "max_abs_error": None, "exact": True, "message": ""}


def test_the_csv_writes_empty_cells_booleans_and_floats_as_read_back(tmp_path):
    sweep = make_sweep(tmp_path)
    rows = results.table_rows(sweep, FINISHED)
    path = tmp_path / "t.csv"
    results.write_csv(path, [name for name, _ in results.columns(sweep)], rows)
    lines = path.read_text().splitlines()
    assert lines[0] == ("point,rows,fused,kernel,status,cost,instructions,error_ulps,"
                        "max_abs_error,exact,message")
    assert lines[1] == "0,64,true,attention,refused,,,,,,refused here"
    assert lines[5] == "2,128,true,attention,ok,9.0,9,,,true,"


def test_the_parquet_table_has_the_columns_types_and_is_the_same_bytes_twice(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    sweep = make_sweep(tmp_path, cost_models=(CostModel("default"),))
    finished = [PointResult(Point(r.point.index, r.point.parameters, CostModel("default")),
                            r.rows) for r in FINISHED]
    rows = results.table_rows(sweep, finished)
    schema = results.columns(sweep)
    results.write_parquet(tmp_path / "a.parquet", schema, rows)
    results.write_parquet(tmp_path / "b.parquet", schema, rows)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    table = pq.read_table(tmp_path / "a.parquet")
    assert table.column_names == [name for name, _ in schema]
    assert [str(t) for t in table.schema.types] == [
        "int64", "string", "int64", "bool", "string", "string", "double", "int64", "double",
        "double", "bool", "string"]
    assert table.to_pylist() == rows


def test_timings_are_a_separate_table_keyed_by_point_and_kernel(tmp_path):
    rows = results.timing_rows(FINISHED)
    assert [(r["point"], r["kernel"]) for r in rows][:2] == [(0, "matmul"), (0, "attention")]
    assert rows[0]["compile_ms"] == 12.5 and rows[0]["worker"] == "w:1"
    assert set(rows[0]) == set(results.TIMING_COLUMNS)
    table_columns = {name for name, _ in results.columns(make_sweep(tmp_path))}
    assert set(results.TIMING_COLUMNS) & table_columns == {"point", "kernel"}


def test_the_best_configuration_per_kernel_and_overall(tmp_path):
    sweep = make_sweep(tmp_path)
    finished = [*FINISHED, result(point(4, 256, True), ("ok", 9.0), ("ok", 4.0))]
    best = best_module.best_configurations(sweep, results.table_rows(sweep, finished))
    # attention costs 9 on points 2 and 4: the earlier point wins the tie.
    assert best["per_kernel"]["attention"] == {
        "point": 2, "parameters": {"rows": 128, "fused": True}, "cost": 9.0,
        "instructions": 9}
    assert best["per_kernel"]["matmul"]["point"] == 4
    assert best["overall"] == {"point": 4, "parameters": {"rows": 256, "fused": True},
                               "total_cost": 13.0, "costs": {"attention": 9.0, "matmul": 4.0}}
    lines = best_module.describe(best)
    assert lines[-1] == "  overall: total cost 13 on point 4 (rows=256, fused=True)"


def test_no_best_where_no_point_is_ok(tmp_path):
    sweep = make_sweep(tmp_path)
    best = best_module.best_configurations(sweep, results.table_rows(sweep, FINISHED[1:2]))
    assert best["per_kernel"] == {"attention": None, "matmul": None}
    assert best["overall"] is None
    assert "no point compiles every kernel" in best_module.describe(best)[-1]


@pytest.mark.parametrize("parameters", [
    None,                                                   # an int and a bool
    (Parameter("rows", "int", low=64, high=256), Parameter("fused", "bool",
                                                           values=(True, False))),
    (),                                                     # a single point
], ids=["grid", "range", "no-parameters"])
def test_the_plot_is_a_png_beside_the_table(tmp_path, parameters):
    pytest.importorskip("matplotlib")
    sweep = make_sweep(tmp_path, parameters)
    finished = FINISHED if parameters != () else [
        PointResult(Point(0, ()), FINISHED[0].rows)]
    path = tmp_path / "cost.png"
    write_plot(path, sweep, results.table_rows(sweep, finished))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def job(tmp_path: Path, spec: SpecRef, parameters=()) -> PointJob:
    return PointJob(point=Point(0, tuple(parameters)), spec=spec, kernels=KERNELS,
                    directory=str(tmp_path / "out" / "points" / "000"),
                    output_root=str(tmp_path / "out"), inputs=Inputs(),
                    tolerance_ulps=4.0, time_limit=None)


def test_a_spec_the_generator_refuses_is_a_row_per_kernel_with_its_error(tmp_path):
    done = run_point(job(tmp_path, SpecRef("qkv", file=str(FAMILY)), [("d1_rows", 32)]))
    assert [r.status for r in done.rows] == ["spec-refused", "spec-refused"]
    message = done.rows[0].message
    assert f"{FAMILY}:" in message and "never fits in d1, which has 32 units" in message
    assert "\n" not in message
    log = tmp_path / "out" / done.log
    assert done.log == "points/000/log.txt" and "never fits in d1" in log.read_text()


@pytest.mark.parametrize(("source", "message"), [
    ("def spec(**kw):\n    raise RuntimeError('no such accelerator\\nsecond line')\n",
     "the spec function spec raised RuntimeError: no such accelerator; second line"),
    ("def spec(**kw):\n    return 42\n",
     "the spec function spec returned int, not an Accelerator"),
], ids=["raises", "not-an-accelerator"])
def test_a_spec_function_that_fails_is_an_error_row_not_a_crash(tmp_path, source, message):
    (tmp_path / "spec.py").write_text(source)
    done = run_point(job(tmp_path, SpecRef("spec", file=str(tmp_path / "spec.py"))))
    assert [(r.status, r.message) for r in done.rows] == [("error", message)] * 2


def test_a_point_whose_worker_died_on_every_attempt(tmp_path):
    lost = lost_point(job(tmp_path, SpecRef("qkv", file=str(FAMILY))), 3)
    assert [(r.kernel, r.status, r.message) for r in lost.rows] == [
        (k.name, "error", "the worker running this point died (3 attempts)") for k in KERNELS]


def test_messages_name_the_output_directory_as_dot():
    assert without_root("cannot read /tmp/run1/points/003/x", "/tmp/run1") == \
        "cannot read ./points/003/x"


class _Refused:
    def __init__(self, message: str, stderr: str):
        self.backend_message = message
        self.stderr = stderr


@pytest.mark.parametrize(("message", "stderr", "row"), [
    ("no instruction of QKV computes `tanh` (ROOT t = ...)", "error: kernel.hlo:5: ...",
     "no instruction of QKV computes `tanh` (ROOT t = ...)"),
    ("none of the 2 candidates could be placed:",
     "error: none of the 2 candidates could be placed:\n  candidate 0: too big\n"
     "  candidate 1: too big too\n",
     "none of the 2 candidates could be placed: candidate 0: too big (and 1 more)"),
    ("none of the 1 candidates could be placed:",
     "error: none of the 1 candidates could be placed:\n  candidate 0: too big\n",
     "none of the 1 candidates could be placed: candidate 0: too big"),
])
def test_a_refusal_is_one_line_of_the_table(message, stderr, row):
    assert refusal(_Refused(message, stderr)) == row


def bf16(values):
    return np.asarray(values, dtype=ml_dtypes.bfloat16)


@pytest.mark.parametrize(("expected", "actual", "tolerance", "verdict"), [
    # (error in ulps of the largest magnitude, largest |difference|, exact, within)
    ([bf16([1.0, 2.0])], [bf16([1.0, 2.0])], 4, (0.0, 0.0, True, True)),
    ([bf16([1.0, 2.0])], [bf16([1.0, 2.015625])], 4, (1.0, 0.015625, False, True)),
    ([bf16([1.0, 2.0])], [bf16([1.0, 2.5])], 4, (32.0, 0.5, False, False)),
    ([np.array([3], np.int32)], [np.array([4], np.int32)], 4, (1.0, 1.0, False, False)),
    ([bf16([1.0]), bf16([2.0])], [bf16([1.0]), bf16([2.0])], 0, (0.0, 0.0, True, True)),
], ids=["equal", "one-ulp", "beyond", "integers-must-be-equal", "two-results"])
def test_the_comparison_with_the_reference(expected, actual, tolerance, verdict):
    assert compare(expected, actual, tolerance) == verdict


def test_inputs_are_the_same_for_a_kernel_on_every_point_and_differ_between_kernels():
    types = [("bf16", (4, 4)), ("s8", (3,)), ("u8", (2,)), ("pred", (2,))]
    a = kernel_inputs("attention", types, Inputs(seed=1))
    assert [(x.dtype.name, x.shape) for x in a] == [("bfloat16", (4, 4)), ("int8", (3,)),
                                                    ("uint8", (2,)), ("bool", (2,))]
    again = kernel_inputs("attention", types, Inputs(seed=1))
    assert all(np.array_equal(x, y) for x, y in zip(a, again, strict=True))
    assert not np.array_equal(a[0], kernel_inputs("matmul", types, Inputs(seed=1))[0])
    assert not np.array_equal(a[0], kernel_inputs("attention", types, Inputs(seed=2))[0])


def test_a_missing_extra_is_a_clear_error(monkeypatch, tmp_path):
    from act_backend.sweep import run_sweep

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SweepError, match=r"needs ray, which is not installed .*"
                                         r"pip install 'act-backend\[sweep\]'"):
        require("ray")
    spec = tmp_path / "spec.py"
    spec.write_text("def spec():\n    pass\n")
    (tmp_path / "m.hlo").write_text((ROOT / "tests" / "kernels" / "matmul.hlo").read_text())
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text('[spec]\nfile = "spec.py"\nfunction = "spec"\n'
                          '[[kernels]]\nhlo = "m.hlo"\n')
    with pytest.raises(SweepError, match="needs ray"):
        run_sweep(sweep_file)
    assert not (tmp_path / "s-results").exists()


def test_the_core_package_does_not_import_ray():
    code = ("import act_backend, act_backend.sweep, act_backend.cli, sys; "
            "print(any(m == 'ray' or m.startswith('ray.') for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.strip() == "False"


def test_the_console_script_is_the_command_module():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["act-backend"] == "act_backend.cli:main"
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["sweep"]
    assert {requirement.split("==")[0] for requirement in extra} == {"ray", "pyarrow",
                                                                    "matplotlib"}


@pytest.mark.parametrize(("args", "status", "said"), [
    (["sweep", "--help"], 0, "SWEEP.toml"),
    (["sweep", "missing.toml"], 1, "act-backend sweep: error: "),
    (["sweep", "x.toml", "--serial", "--workers", "2"], 2, "--serial runs without Ray"),
    (["sweep", "x.toml", "--workers", "0"], 2, "expected at least 1"),
], ids=["help", "missing-file", "serial-with-workers", "no-workers"])
def test_the_command_line(tmp_path, args, status, said):
    done = subprocess.run([sys.executable, "-m", "act_backend", *args], capture_output=True,
                          text=True, cwd=tmp_path, env=_env())
    assert done.returncode == status, done.stderr
    assert said in done.stdout + done.stderr


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def test_the_qkv_family_is_the_qkv_example_changed_in_what_it_varies():
    from act_backend.spec.load import load_spec
    from act_backend.sweep.user_code import load_function
    from act_backend.table import isa_table

    example = isa_table(load_spec(ROOT / "examples" / "QKV" / "QKV.py"))
    qkv = load_function("qkv", file=str(FAMILY))
    assert isa_table(qkv()) == example
    member = isa_table(qkv(d1_rows=256, d2_rows=128, softmax=False, name="QKV2"))
    assert member["name"] == "QKV2"
    assert [(b["name"], b["access_dims"]) for b in member["buffers"]] == [
        ("d0", [None]), ("d1", [256]), ("d2", [128])]
    assert member["instructions"] == [
        i for i in example["instructions"] if i["name"] != "softmax"]
