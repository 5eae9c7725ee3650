"""The commands' plain parts: argument checking, reading the backend's errors and report, and
the summaries shown to the user; and the simulation child's input loading, comparison and
heatmaps."""

from __future__ import annotations

import stat
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from lsp.commands import compile as compile_command
from lsp.commands import generate as generate_command
from lsp.commands import simulate as simulate_command
from lsp.commands.arguments import ArgumentError
from lsp.compiled import report_dir_for
from lsp.documents import uri_of
from lsp.simulate_child import (
    HEATMAP_CELLS,
    SimulationError,
    as_matrix,
    compare,
    difference_view,
    heatmap,
    load_inputs,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "attention.hlo").write_text(
        (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text())
    (tmp_path / "spec.py").write_text("")
    backend = tmp_path / "backends" / "QKV"
    backend.parent.mkdir()
    backend.write_text("#!/bin/sh\n")
    backend.chmod(stat.S_IRWXU)
    return tmp_path


def test_files_are_given_as_uris_or_paths_relative_to_the_workspace(workspace):
    by_uri = compile_command.parse_arguments(
        [uri_of(str(workspace / "kernels" / "attention.hlo")), "backends/QKV"], str(workspace))
    by_path = compile_command.parse_arguments(["kernels/attention.hlo", "backends/QKV"],
                                              str(workspace))
    assert by_uri == by_path == (str(workspace / "kernels" / "attention.hlo"),
                                 str(workspace / "backends" / "QKV"),
                                 str(workspace / "kernels" / "attention.py"))


@pytest.mark.parametrize(("values", "message"), [
    ([], "act.compileKernel: argument 'kernelUri' is missing (argument 1 of act.compileKernel)"),
    (["kernels/attention.hlo", "backends/QKV", "out.py", "extra"],
     "act.compileKernel: argument 'outputPath' is followed by 1 unexpected argument(s); "
     "act.compileKernel takes kernelUri, backendPath, outputPath"),
    (["spec.py", "backends/QKV"], "argument 'kernelUri' must be a .hlo file"),
    (["kernels/attention.hlo", "spec.py"], "argument 'backendPath' is not executable"),
    (["kernels/attention.hlo", "backends/nope"],
     "argument 'backendPath' names no file"),
    (["kernels/attention.hlo", 7], "argument 'backendPath' must be a non-empty string, got 7"),
])
def test_bad_compile_arguments_name_the_argument(workspace, values, message):
    with pytest.raises(ArgumentError) as failure:
        compile_command.parse_arguments(values, str(workspace))
    assert message in str(failure.value)


def test_generate_takes_a_spec_and_optionally_an_accelerator(workspace):
    assert generate_command.parse_arguments(["spec.py"], str(workspace)) == (
        str(workspace / "spec.py"), None)
    assert generate_command.parse_arguments(["spec.py", "QKV"], str(workspace))[1] == "QKV"
    with pytest.raises(ArgumentError, match="'specUri' must be a .py file"):
        generate_command.parse_arguments(["kernels/attention.hlo"], str(workspace))


def test_simulate_compares_with_the_hlo_beside_the_compiled_kernel_by_default(workspace):
    compiled = workspace / "kernels" / "attention.py"
    compiled.write_text("")
    data = workspace / "Q.dat"
    data.write_bytes(b"")
    parsed = simulate_command.parse_arguments(
        ["kernels/attention.py", "kernels", ["Q.dat"]], str(workspace))
    assert parsed == (str(compiled), str(workspace / "kernels"), [str(data)],
                      str(workspace / "kernels" / "attention.hlo"))
    with pytest.raises(ArgumentError, match=r"argument 'dataFiles\[0\]' names no file"):
        simulate_command.parse_arguments(["kernels/attention.py", "kernels", ["R.dat"]],
                                         str(workspace))


def test_backend_errors_about_the_kernel_become_findings():
    output = ["parsing...",
              "/scratch/attention.hlo:14:3: no instruction computes dot",
              "/scratch/attention.hlo:99: past the end",
              "other.hlo:1:1: not this kernel"]
    found = compile_command.located_errors(output, "/project/kernels/attention.hlo",
                                           (EXAMPLES / "QKV" / "kernels" /
                                            "attention.hlo").read_text())
    assert [(f.range.start, f.message) for f in found] == [
        ((13, 2), "no instruction computes dot"),
        ((20, 0), "past the end")]


def test_generation_summaries_say_what_happened():
    refused = generate_command.summarize(
        {"error": {"kind": "refused", "message": "accelerator 'QKV': bad"}}, "")
    assert refused == {"ok": False, "kind": "refused",
                       "message": "The spec was refused: accelerator 'QKV': bad"}
    spec_failed = generate_command.summarize({"error": {
        "kind": "spec-failed", "message": "KeyError: 'x'",
        "span": {"file": "s.py", "line": 3, "column": 1}}}, "")
    assert spec_failed["message"] == "Running the spec failed: s.py:3:1: KeyError: 'x'"
    built = generate_command.summarize(
        {"built": [{"accelerator": "QKV", "backend": "/w/backends/QKV", "base_dir": "/w"}]}, "")
    assert built["ok"] and built["message"] == "Generated QKV -> /w/backends/QKV"
    died = generate_command.summarize(None, "Segmentation fault\n")
    assert died == {"ok": False, "message": "The generator process stopped without a result:"
                    "\nSegmentation fault"}


def test_simulation_summary_reports_the_largest_difference():
    result = {"max_abs_diff": 0.0078125, "max_abs_reference": 0.98, "shape": [64, 64],
              "run_ms": 12.5, "max_ulps": 2.0, "difference_unit": "ulps", "dtype": "bfloat16",
              "max_abs_ulps_of_largest": 2.0}
    summary = simulate_command.summarize({"result": result}, "", "/w/attention.py")
    assert summary["ok"] and summary["message"] == (
        "Simulated attention.py: largest difference 2 ulps (bfloat16), max |oracle - "
        "reference| = 0.0078125 = 2 ulps of the largest magnitude (largest reference magnitude "
        "0.98, shape [64, 64], 12.5 ms)")
    assert summary["max_ulps"] == 2.0
    for ulps, unit, said in [(1.0, "ulps", "1 ulp"), (None, "ulps", "infinitely many ulps"),
                             (3.0, "integer difference", "3 integer difference")]:
        text = simulate_command.largest_difference(
            {**result, "max_ulps": ulps, "difference_unit": unit})
        assert text == f"largest difference {said} (bfloat16)"


def test_the_report_lives_beside_the_assembly_and_names_its_picture(tmp_path):
    output = tmp_path / "kernels" / "attention.py"
    report_dir = Path(report_dir_for(str(output)))
    assert report_dir == tmp_path / "kernels" / "attention.report"
    assert compile_command.report_files(str(report_dir)) == {}
    report_dir.mkdir(parents=True)
    (report_dir / "report.json").write_text("{}")
    (report_dir / "candidate_0.py").write_text("")
    assert compile_command.report_files(str(report_dir)) == {
        "report": str(report_dir / "report.json")}
    (report_dir / "memory.svg").write_text("<svg/>")
    assert set(compile_command.report_files(str(report_dir))) == {"report", "memory_svg"}


# ---- the simulation child's plain parts --------------------------------------------------


def test_inputs_are_read_raw_in_parameter_order_with_the_kernel_types(tmp_path):
    from act_backend.kernel import parse_hlo

    module = parse_hlo((EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text())
    files = [str(EXAMPLES / "QKV" / "data" / f"{n}.dat") for n in "QKV"]
    inputs = load_inputs(module, files)
    assert [(a.shape, a.dtype) for a in inputs] == [((64, 64), np.dtype(ml_dtypes.bfloat16))] * 3
    raw = np.frombuffer((EXAMPLES / "QKV" / "data" / "K.dat").read_bytes(), dtype="<u2")
    assert np.array_equal(inputs[1].view(np.uint16).ravel(), raw)
    short = tmp_path / "short.dat"
    short.write_bytes(b"\0" * 10)
    with pytest.raises(SimulationError, match="holds 10 bytes but parameter K"):
        load_inputs(module, [files[0], str(short), files[2]])
    with pytest.raises(SimulationError, match="takes 3 inputs"):
        load_inputs(module, files[:2])


def test_comparison_is_the_largest_absolute_difference():
    want = np.array([[1.0, -2.0], [0.5, np.nan]], dtype=np.float32)
    got = np.array([[1.0, -2.25], [0.5, np.nan]], dtype=ml_dtypes.bfloat16)
    assert compare(got, want) == {"max_abs_diff": 0.25, "max_abs_reference": 2.0,
                                  "shape": [2, 2]}
    assert compare(np.array([np.nan]), np.array([1.0]))["max_abs_diff"] == float("inf")
    with pytest.raises(SimulationError, match="shape"):
        compare(np.zeros((2, 2)), np.zeros((4,)))


def test_outputs_are_drawn_as_rows_and_columns():
    for shape, rows_cols in [((), (1, 1)), ((5,), (1, 5)), ((3, 4), (3, 4)), ((2, 3, 4), (6, 4))]:
        assert as_matrix(np.zeros(shape)).shape == rows_cols, shape


def test_a_heatmap_shows_each_cell_or_blocks_of_them_and_null_for_non_finite():
    small = heatmap(np.array([[1.0, np.nan], [np.inf, -2.0]]), "mean")
    assert small == {"rows": 2, "cols": 2, "shape": [2, 2], "block": [1, 1], "reduce": "mean",
                     "min": -2.0, "max": 1.0, "non_finite": 2,
                     "values": [[1.0, None], [None, -2.0]]}
    # Twice as many columns as cells: blocks of 1 x 2, the largest of each for differences.
    wide = np.arange(2 * HEATMAP_CELLS, dtype=float).reshape(1, -1)
    blocks = heatmap(wide, "max")
    assert (blocks["rows"], blocks["cols"], blocks["block"]) == (1, HEATMAP_CELLS, [1, 2])
    assert blocks["values"][0][:3] == [1.0, 3.0, 5.0]
    # A side that does not divide evenly: the last block holds what is left.
    odd = heatmap(np.ones((HEATMAP_CELLS + 1, 1)), "mean")
    assert (odd["rows"], odd["block"], odd["values"][-1]) == (
        HEATMAP_CELLS // 2 + 1, [2, 1], [1.0])


def test_the_difference_is_counted_in_ulps_of_the_output_type():
    bf16 = ml_dtypes.bfloat16
    want = np.array([[1.0, 2.0], [0.5, 4.0]], dtype=bf16)
    got = want.copy()
    got[0, 1] = bf16(2.03125)  # two bf16 steps above 2.0 (spacing 2^-6)
    view = difference_view(got, want)
    assert (view["dtype"], view["difference_unit"]) == ("bfloat16", "ulps")
    assert (view["max_ulps"], view["where"]) == (2.0, [0, 1])
    assert (view["oracle_at"], view["reference_at"]) == (2.03125, 2.0)
    # 0.03125 in ulps of the largest magnitude, 4.0 (spacing 2^-5): one.
    assert view["max_abs_ulps_of_largest"] == 1.0
    assert view["heatmaps"]["difference"]["values"] == [[0.0, 2.0], [0.0, 0.0]]
    assert view["heatmaps"]["output"]["values"][0] == [1.0, 2.03125]
    got[1, 1] = np.nan
    assert difference_view(got, want)["max_ulps"] is None  # a NaN against a number
    equal = difference_view(want, want)
    assert (equal["max_ulps"], equal["where"]) == (0.0, None)
    ints = difference_view(np.array([3, 9], dtype=np.int8), np.array([3, 5], dtype=np.int8))
    assert (ints["difference_unit"], ints["max_ulps"], ints["where"]) == (
        "integer difference", 4.0, [1])
