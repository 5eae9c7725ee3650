"""generate_backend: what it checks before writing, what a failed build leaves behind, and
that the compiler it installs stands on its own."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cost_models import build_model, copy_example, load_spec

from act_backend import Accelerator, generate_backend


def refused_spec(base_dir: Path) -> Accelerator:
    acc = Accelerator("Broken")
    acc.base_dir = str(base_dir)
    acc.add_data_model("d1", [128], [64], "bf16")
    instr = acc.add_instruction("load", ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d0", ["@a.addr_in"], ["@c.n * 128"]]])
    instr.set_outputs([["d9", ["@a.addr_out"], ["@c.n"]]])  # no such data model
    instr.add_semantics("""
ENTRY load {
    %In1 = u8[`@c.n * 128`] parameter(0);
    %a = u8[`@c.n`,64,2] reshape(%In1);
    ROOT %Out0 = bf16[`@c.n`,64] bitcast_convert(%a);
}
""")
    return acc


def test_a_refused_spec_writes_nothing(tmp_path):
    earlier = tmp_path / "backends" / "Broken"
    earlier.parent.mkdir()
    earlier.write_text("compiler of an earlier generation")
    with pytest.raises(ValueError, match="d9"):
        generate_backend(refused_spec(tmp_path))
    assert not (tmp_path / "targets").exists()
    assert earlier.read_text() == "compiler of an earlier generation"


@pytest.mark.parametrize("cost,message", [
    ("model.txt", r"expected an object file \(\.o\), a static library \(\.a\) or a shared"),
    ("model", r"expected an object file"),
    ("missing.o", r"no such object file"),
    ("libmissing.so", r"no such shared library"),
])
def test_a_bad_cost_model_is_refused_before_anything_is_written(tmp_path, cost, message):
    acc = load_spec(copy_example("QKV", tmp_path) / "QKV.py")
    with pytest.raises(ValueError, match=message):
        generate_backend(acc, cost=cost)
    assert not (tmp_path / "QKV" / "targets").exists()
    assert not (tmp_path / "QKV" / "backends").exists()


@pytest.mark.slow
def test_a_failing_link_raises_with_the_linker_output_and_leaves_no_backend(tmp_path):
    project = copy_example("QKV", tmp_path)
    earlier = project / "backends" / "QKV"
    earlier.parent.mkdir()
    earlier.write_text("compiler of an earlier generation")
    model = build_model("missing_symbol", "o", tmp_path / "model")
    with pytest.raises(RuntimeError) as failure:
        generate_backend(load_spec(project / "QKV.py"), cost=model)
    message = str(failure.value)
    assert "building the QKV backend failed" in message
    assert "act_test_undefined_helper" in message, "the linker's own output is carried"
    assert not earlier.exists()


@pytest.mark.slow
def test_an_unusable_ortools_dir_fails_the_build(tmp_path, monkeypatch):
    project = copy_example("QKV", tmp_path)
    empty = tmp_path / "not-ortools"
    empty.mkdir()
    monkeypatch.setenv("ORTOOLS_DIR", str(empty))
    with pytest.raises(RuntimeError) as failure:
        generate_backend(load_spec(project / "QKV.py"))
    message = str(failure.value)
    assert f"ORTOOLS_DIR={empty}" in message
    assert "libortools.so" in message
    assert not (project / "backends" / "QKV").exists()


def compile_attention(backend: Path, kernel: Path, out: Path) -> bytes:
    done = subprocess.run([str(backend), "--input", str(kernel), "--output", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


@pytest.mark.slow
def test_the_compiler_stands_alone_and_two_builds_agree(tmp_path):
    first = copy_example("QKV", tmp_path / "a")
    second = copy_example("QKV", tmp_path / "b")
    outputs = []
    for project in (first, second):
        backend = generate_backend(load_spec(project / "QKV.py"))
        assert backend == project / "backends" / "QKV"
        assert os.access(backend, os.X_OK)
        shutil.rmtree(project / "targets")  # the crate is gone; the compiler still runs
        outputs.append(compile_attention(backend, project / "kernels" / "attention.hlo",
                                         project / "attention.py"))
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"        api.") == 9


@pytest.mark.slow
def test_a_base_dir_relative_to_the_working_directory(tmp_path, monkeypatch):
    project = copy_example("QKV", tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    acc = load_spec(project / "QKV.py")
    acc.base_dir = str(project.relative_to(tmp_path))
    backend = generate_backend(acc)
    assert backend == project / "backends" / "QKV"
    assert compile_attention(backend, project / "kernels" / "attention.hlo",
                             project / "attention.py").count(b"        api.") == 9


@pytest.mark.slow
def test_regenerating_after_a_spec_edit_rebuilds_the_backend(tmp_path):
    project = copy_example("QKV", tmp_path)
    spec = project / "QKV.py"
    generate_backend(load_spec(spec))
    text = spec.read_text()
    # Leave store_cm without semantics: the new backend must not know it.
    start = text.index('instr.add_semantics("""\nENTRY store_cm')
    end = text.index('""")\n', start) + len('""")\n')
    spec.write_text(text[:start] + text[end:])
    generate_backend(load_spec(spec))
    table = (project / "targets" / "QKV" / "backend" / "isa.json").read_text()
    assert '"store_cm"' not in table
    assert compile_attention(project / "backends" / "QKV", project / "kernels" / "attention.hlo",
                             project / "attention.py").count(b"        api.") == 9
