"""The backend's command line, on the QKV example's compiler: exit codes (0 compiled, 1
compile error, 2 usage error), messages that say what is wrong and where, an output file
written whole or not at all, candidates in a private directory unless --report-dir asks for
them, report.json and the memory picture, and the -v / -q / --time-limit options."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def qkv(example_build):
    return example_build("QKV")


def run(qkv, *args: str, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run([str(qkv.backend), *args], capture_output=True, text=True, env=env)


def compile_args(qkv, out: Path, *extra: str, kernel: Path | None = None) -> list[str]:
    return ["--input", str(kernel or qkv.kernel), "--output", str(out), *extra]


def test_help_and_version(qkv):
    done = run(qkv, "--help")
    assert done.returncode == 0
    assert "--input" in done.stdout and "--report-dir" in done.stdout
    assert "QKV" in done.stdout
    done = run(qkv, "--version")
    assert done.returncode == 0 and "QKV" in done.stdout


@pytest.mark.parametrize("args,message", [
    ([], "missing --input"),
    (["--input", "k.hlo"], "missing --output"),
    (["--input", "k.hlo", "--output", "k.py", "--fast"], "unknown option --fast"),
    (["--input", "k.hlo", "--output", "k.py", "--time-limit", "soon"], "number of seconds"),
])
def test_usage_errors_exit_with_2(qkv, args, message):
    done = run(qkv, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "--help" in done.stderr


def test_a_compile_writes_the_assembly_and_nothing_else(qkv, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = out_dir / "attention.py"
    done = run(qkv, *compile_args(qkv, out), tmpdir=scratch)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert [p.name for p in out_dir.iterdir()] == ["attention.py"], "no temporary left over"
    assert list(scratch.iterdir()) == [], "the private candidate folder is removed"
    text = out.read_text()
    assert text.startswith("import jax.numpy as jnp\n\n\ndef qkv(kernel, api):\n")
    assert "@kernel(hbm=32768," in text
    assert sum(line.startswith("        api.") for line in text.splitlines()) == 9


def test_identical_inputs_give_identical_bytes(qkv, tmp_path):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    assert run(qkv, *compile_args(qkv, first)).returncode == 0
    assert run(qkv, *compile_args(qkv, second, "--report-dir", str(tmp_path / "r"))).returncode == 0
    assert first.read_bytes() == second.read_bytes()


def test_report_dir_keeps_candidates_and_a_report(qkv, tmp_path):
    out = tmp_path / "attention.py"
    report_dir = tmp_path / "report"
    done = run(qkv, *compile_args(qkv, out, "--report-dir", str(report_dir)))
    assert done.returncode == 0, done.stderr
    report = json.loads((report_dir / "report.json").read_text())
    assert report["format"] == "act-backend-report/1"
    assert (report["status"], report["module"], report["isa"]) == ("ok", "qkv", "QKV")
    assert report["candidates_tried"] == len(report["candidates"]) >= 1
    assert report["egraph"]["nodes"] > 0 and report["egraph"]["iterations"] > 0
    for phase in ("parse", "select", "rewrite", "match", "extract", "schedule", "allocate",
                  "emit", "cost", "total"):
        assert report["timings_ms"][phase] >= 0, phase
    chosen = report["candidates"][report["chosen"]]
    assert chosen["status"] == "solved" and chosen["instructions"] == 9
    assert chosen["cost"] == report["chosen_cost"] == 9
    assert (report_dir / chosen["file"]).read_bytes() == out.read_bytes()
    for c in report["candidates"]:
        assert (c["file"] is not None) == (c["status"] == "solved")


SVG = "{http://www.w3.org/2000/svg}"


def test_report_dir_draws_the_chosen_program_s_memory(qkv, tmp_path):
    """memory.svg parses as XML; it has one lane per on-chip buffer and one rectangle per
    value an instruction made on chip, each with its story for hover, and no two rectangles
    of a lane overlap; report.json's program names every step and value."""
    report_dir = tmp_path / "report"
    done = run(qkv, *compile_args(qkv, tmp_path / "attention.py", "--report-dir", str(report_dir)))
    assert done.returncode == 0, done.stderr
    report = json.loads((report_dir / "report.json").read_text())
    program = report["program"]
    assert [s["implements"] for s in program["assembly"]][:4] == [
        ["Q"], ["Kt"], ["S"], ["E", "rowsum", "denom", "P"]]
    assert {h["name"]: h["line"] for h in report["hlo"]}["Kt"] == 13
    on_chip = [v for v in program["values"] if v["made"] == "step" and v["on_chip"]]
    assert {v["label"] for v in on_chip} == {"Q", "Kt", "S", "P", "V", "O"}

    root = ET.parse(report_dir / "memory.svg").getroot()
    assert root.tag == f"{SVG}svg"
    lanes = root.findall(f".//{SVG}g[@class='lane']")
    assert [g.get("data-buffer") for g in lanes] == ["d1", "d2"]
    groups = root.findall(f".//{SVG}g[@class='value']")
    assert sorted(int(g.get("data-value")) for g in groups) == sorted(v["id"] for v in on_chip)
    by_id = {v["id"]: v for v in on_chip}
    boxes = []
    for g in groups:
        [rect] = g.findall(f"{SVG}rect")
        assert rect.get("class") == "value"
        value = by_id[int(g.get("data-value"))]
        hover = g.find(f"{SVG}title").text
        assert hover.startswith(value["label"]) and f"made by step {value['made_by']}" in hover
        box = [float(rect.get(k)) for k in ("x", "y", "width", "height")]
        boxes.append((value["buffer"], box))
    for i, (lane, (x, y, w, h)) in enumerate(boxes):
        for other, (x2, y2, w2, h2) in boxes[i + 1:]:
            overlap = x < x2 + w2 and x2 < x + w and y < y2 + h2 and y2 < y + h
            assert lane != other or not overlap, (boxes[i], (other, (x2, y2, w2, h2)))
    # The README shows this very picture.
    picture = Path(__file__).resolve().parents[1] / "docs" / "images" / "attention-memory.svg"
    assert (report_dir / "memory.svg").read_text() == picture.read_text()


def test_a_failed_compile_leaves_no_memory_picture(qkv, tmp_path):
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    (report_dir / "memory.svg").write_text("<svg/>")
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n  oops\n}\n")
    done = run(qkv, *compile_args(qkv, tmp_path / "bad.py", "--report-dir", str(report_dir),
                                  kernel=bad))
    assert done.returncode == 1
    report = json.loads((report_dir / "report.json").read_text())
    assert (report["status"], report["program"]) == ("error", None)
    assert not (report_dir / "memory.svg").exists()


def test_verbose_prints_phases_and_candidates_and_quiet_prints_nothing(qkv, tmp_path):
    done = run(qkv, *compile_args(qkv, tmp_path / "a.py", "-v"))
    assert done.returncode == 0
    for needle in ("parse:", "select:", "e-graph", "candidate 0: 9 instructions", "chose "):
        assert needle in done.stderr, needle
    done = run(qkv, *compile_args(qkv, tmp_path / "b.py", "-q"))
    assert (done.returncode, done.stderr) == (0, "")


def compile_error(qkv, tmp_path, kernel_text: str | None, *extra: str):
    """Compiles a kernel (None: a file that does not exist) over a stale output file."""
    kernel = tmp_path / "kernel.hlo"
    if kernel_text is not None:
        kernel.write_text(kernel_text)
    out = tmp_path / "kernel.py"
    out.write_text("stale output of an earlier compile\n")
    done = run(qkv, *compile_args(qkv, out, *extra, kernel=kernel))
    assert done.returncode == 1, done.stderr
    assert not out.exists(), "a failed compile leaves no output, not even a stale one"
    return kernel, done.stderr


def test_an_unreadable_kernel(qkv, tmp_path):
    kernel, err = compile_error(qkv, tmp_path, None)
    assert f"cannot read {kernel}" in err


def test_a_syntax_error_names_file_line_and_column(qkv, tmp_path):
    text = ("HloModule m\n\nENTRY %m (p: bf16[64,64]) -> bf16[64,64] {\n"
            "  %p = bf16[64,64] parameter(0\n}\n")
    kernel, err = compile_error(qkv, tmp_path, text)
    # The unclosed call runs into the closing brace on line 5.
    assert f"error: {kernel}:5:1: " in err


def test_an_operation_no_instruction_implements_is_named(qkv, tmp_path):
    text = """HloModule twice

ENTRY %twice (p: bf16[64,64]) -> bf16[64,64] {
  %p = bf16[64,64] parameter(0)
  ROOT %s = bf16[64,64] add(bf16[64,64] %p, bf16[64,64] %p)
}
"""
    kernel, err = compile_error(qkv, tmp_path, text)
    assert f"{kernel}:5" in err and "add" in err


def test_a_time_limit_that_fires_before_any_candidate_is_an_error(qkv, tmp_path):
    _, err = compile_error(qkv, tmp_path, qkv.kernel.read_text(), "--time-limit", "0.000001")
    assert "time limit" in err


def test_an_output_in_a_missing_folder_is_an_error(qkv, tmp_path):
    done = run(qkv, *compile_args(qkv, tmp_path / "no" / "such" / "dir" / "k.py"))
    assert done.returncode == 1
    assert "cannot write" in done.stderr
