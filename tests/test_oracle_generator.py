"""generate_oracle writes targets/<name>/oracle/: the ISA table and a self-contained runtime.

It validates first (a refused spec writes nothing), replaces an earlier oracle whole, names
the instructions it left out, and what it writes runs without act_backend installed.
"""

from __future__ import annotations

import hashlib
import json
import runpy
import subprocess
import sys
import textwrap

import pytest
from assembly.probe_tables import qkv_table
from helpers.oracle_harness import (
    ASSEMBLY_DIR,
    EXAMPLES_DIR,
    generate_example_oracle,
    load_bf16,
    load_oracle,
    run_assembly,
)

from act_backend import generate_oracle
from act_backend.oracle import write_oracle
from act_backend.oracle.generator import runtime_files
from act_backend.table import isa_table

RUNTIME = {"api.py", "bits.py", "decorator.py", "executable.py", "semantics.py", "state.py",
           "table.py", "tracing.py"}

SPEC = '''
from act_backend import Accelerator

acc = Accelerator("Tiny")
acc.add_data_model("d1", [16], [8], "f32")

instr = acc.add_instruction("load", ["n"], ["addr_in", "addr_out"])
instr.set_inputs([["d0", ["@a.addr_in"], ["@c.n * 32"]]])
instr.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])
instr.add_semantics("""
ENTRY load {
    %In1 = u8[`@c.n * 32`] parameter(0);
    %a = u8[`@c.n`,8,4] reshape(%In1);
    ROOT %Out0 = f32[`@c.n`,8] bitcast_convert(%a);
}
""")

instr = acc.add_instruction("flush", [], ["addr"])
instr.set_inputs([["d1", ["@a.addr"], ["1"]]])
instr.set_outputs([["d1", ["@a.addr"], ["1"]]])
'''


def spec_accelerator(tmp_path, text=SPEC):
    """Runs spec ``text`` from a file in ``tmp_path`` (its base_dir) and returns ``acc``."""
    path = tmp_path / "tiny.py"
    path.write_text(textwrap.dedent(text))
    return runpy.run_path(str(path))["acc"]


def test_the_oracle_holds_the_table_and_the_runtime(tmp_path, capsys):
    oracle_dir = generate_example_oracle(EXAMPLES_DIR / "QKV" / "QKV.py", tmp_path)
    assert oracle_dir == tmp_path / "targets" / "QKV" / "oracle"
    assert {p.name for p in oracle_dir.iterdir()} == RUNTIME | {"isa.json", "__init__.py"}
    assert {p.name for p in runtime_files()} == RUNTIME
    printed = capsys.readouterr().out
    assert f"oracle for QKV written to {oracle_dir}; no instruction left out" in printed


def test_the_written_table_is_isa_table_of_the_spec(tmp_path):
    acc = spec_accelerator(tmp_path)
    oracle_dir = generate_oracle(acc)
    assert json.loads((oracle_dir / "isa.json").read_text()) == isa_table(acc)


def test_the_hand_written_qkv_table_is_what_the_generator_writes(tmp_path):
    # The runtime tests run on tests/assembly/qkv_isa.json: it must stay the real table.
    oracle_dir = generate_example_oracle(EXAMPLES_DIR / "QKV" / "QKV.py", tmp_path)
    assert json.loads((oracle_dir / "isa.json").read_text()) == qkv_table()


def test_instructions_without_semantics_are_left_out_and_named(tmp_path, capsys):
    acc = spec_accelerator(tmp_path)
    oracle_dir = generate_oracle(acc)
    assert f"oracle for Tiny written to {oracle_dir}; left out (no semantics): flush" in (
        capsys.readouterr().out)
    table = json.loads((oracle_dir / "isa.json").read_text())
    assert [i["name"] for i in table["instructions"]] == ["load"]
    api = sys.modules[f"{load_oracle(oracle_dir).__name__}.api"]
    assert callable(api.load) and not hasattr(api, "flush")


def test_regenerating_replaces_the_whole_oracle(tmp_path):
    acc = spec_accelerator(tmp_path)
    oracle_dir = generate_oracle(acc)
    (oracle_dir / "stale.py").write_text("raise SystemExit('stale')\n")
    assert generate_oracle(acc) == oracle_dir
    assert not (oracle_dir / "stale.py").exists()
    # No staging or retired copy is left beside it.
    assert [p.name for p in oracle_dir.parent.iterdir()] == ["oracle"]


def test_a_refused_spec_writes_nothing(tmp_path):
    bad = SPEC.replace('[["d1", ["@a.addr_out"], ["@c.n"]]]', '[["d9", ["@a.addr_out"], ["@c.n"]]]')
    acc = spec_accelerator(tmp_path, bad)
    with pytest.raises(ValueError, match="d9"):
        generate_oracle(acc)
    assert not (tmp_path / "targets").exists()


def test_a_refused_spec_keeps_the_previous_oracle(tmp_path):
    acc = spec_accelerator(tmp_path)
    oracle_dir = generate_oracle(acc)
    before = (oracle_dir / "isa.json").read_bytes()
    acc.add_data_model("d1", [16], [8], "f32")  # defined twice: refused
    with pytest.raises(ValueError):
        generate_oracle(acc)
    assert (oracle_dir / "isa.json").read_bytes() == before


def test_a_table_the_runtime_cannot_simulate_is_refused_before_writing(tmp_path):
    table = qkv_table()
    table["buffers"][1]["dtype"] = "f64"
    with pytest.raises(ValueError, match=r"buffer d1: element type 'f64' is not supported"):
        write_oracle(table, tmp_path / "oracle")
    assert not (tmp_path / "oracle").exists()
    assert list(tmp_path.iterdir()) == []


BLOCKED_RUN = '''
import hashlib, importlib.abc, runpy, sys

class NoActBackend(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "act_backend" or name.startswith("act_backend."):
            raise ImportError("the oracle imported " + name)

sys.meta_path.insert(0, NoActBackend())
oracle_parent, assembly, data = sys.argv[1:4]
sys.path.insert(0, oracle_parent)
import ml_dtypes
import numpy as np
from oracle import api
from oracle.decorator import kernel

k = runpy.run_path(assembly)["qkv"](kernel, api)
k("fsim-compile")()
inputs = [np.fromfile(f"{data}/{n}.dat", "<u2").view(ml_dtypes.bfloat16).reshape(64, 64)
          for n in "QKV"]
(out,), _ = k("fsim")(*inputs)
print("cost", k("cost")(), "sha256", hashlib.sha256(np.asarray(out).tobytes()).hexdigest())
'''


def test_the_generated_oracle_runs_without_act_backend(tmp_path):
    oracle_dir = generate_example_oracle(EXAMPLES_DIR / "QKV" / "QKV.py", tmp_path)
    script = tmp_path / "blocked.py"
    script.write_text(BLOCKED_RUN)
    assembly = ASSEMBLY_DIR / "qkv_attention.py"
    data = EXAMPLES_DIR / "QKV" / "data"
    result = subprocess.run(
        [sys.executable, str(script), str(oracle_dir.parent), str(assembly), str(data)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    inputs = [load_bf16(data / f"{n}.dat", (64, 64)) for n in "QKV"]
    (out,) = run_assembly(oracle_dir, assembly, inputs)
    digest = hashlib.sha256(out.tobytes()).hexdigest()
    assert f"cost 9 sha256 {digest}" in result.stdout
