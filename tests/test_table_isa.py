"""The ISA table: the QKV snapshot, byte-identical output, and the encodings it promises."""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path

import pytest

import act_backend
from act_backend import Accelerator
from act_backend.table import FORMAT, dumps, isa_table, write_isa_table

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def run_example(name: str, monkeypatch) -> Accelerator:
    # Set in the module's namespace directly: reading the generators first would import them.
    monkeypatch.setitem(vars(act_backend), "generate_oracle", lambda *a, **k: None)
    monkeypatch.setitem(vars(act_backend), "generate_backend", lambda *a, **k: None)
    return runpy.run_path(str(ROOT / "examples" / name / f"{name}.py"))["qkv"]


@pytest.mark.parametrize("name", ["QKV", "QKV_new"])
def test_example_tables_match_their_snapshots(name, monkeypatch):
    text = dumps(isa_table(run_example(name, monkeypatch)))
    snapshot = SNAPSHOTS / f"table_{name}.json"
    if os.environ.get("ACT_UPDATE_SNAPSHOTS") == "1":
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.exists(), f"no snapshot {snapshot}; run with ACT_UPDATE_SNAPSHOTS=1"
    assert text == snapshot.read_text(encoding="utf-8")


def test_written_tables_are_byte_identical_sorted_and_newline_terminated(tmp_path, monkeypatch):
    acc = run_example("QKV_new", monkeypatch)
    first = write_isa_table(acc, tmp_path / "a" / "isa.json").read_bytes()
    second = write_isa_table(acc, tmp_path / "b" / "isa.json").read_bytes()
    assert first == second
    assert first.endswith(b"}\n")
    table = json.loads(first)
    assert list(table) == sorted(table)
    assert first.decode() == json.dumps(table, sort_keys=True, indent=2) + "\n"


def test_qkv_table_shape(monkeypatch):
    table = isa_table(run_example("QKV", monkeypatch))
    assert table["format"] == FORMAT and table["name"] == "QKV"
    assert table["buffers"][0] == {"name": "d0", "access_dims": [None], "unit_dims": [],
                                   "dtype": "u8"}
    load_rm = table["instructions"][0]
    assert load_rm["name"] == "load_rm"
    assert load_rm["inputs"] == [{"buffer": "d0", "start": [{"attr": "a.addr_in"}],
                                  "size": [{"op": "*", "args": [{"attr": "c.n"},
                                                                {"int": 128}]}]}]
    assert [op["root"] for op in load_rm["semantics"]] == [False, False, True]
    assert load_rm["semantics"][1] == {
        "name": "a", "op": "reshape", "dtype": "u8",
        "shape": [{"attr": "c.n"}, {"int": 64}, {"int": 2}], "operands": ["In1"],
        "attrs": {}, "root": False}


def build(semantics: str | None, comp=("n",), data_models=(("d1", [128], [64], "bf16"),)):
    acc = Accelerator("T")
    for model in data_models:
        acc.add_data_model(*model)
    instr = acc.add_instruction("op", list(comp), ["src", "dst"])
    instr.set_inputs([["d1", ["@a.src"], ["@c.n"]]])
    instr.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])
    if semantics is not None:
        instr.add_semantics(semantics)
    return acc


def test_buffers_list_d0_then_data_models_in_declaration_order():
    acc = build(None, data_models=(("d3", [4], [2], "f32"), ("d1", [128], [64], "bf16")))
    assert [b["name"] for b in isa_table(acc)["buffers"]] == ["d0", "d3", "d1"]


def test_instructions_without_semantics_are_left_out():
    acc = build(None)
    assert isa_table(acc)["instructions"] == []


def test_attribute_encodings():
    acc = build("""
ENTRY op {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %z = bf16[] constant(0);
    %m = bf16[`@c.n`] reduce(%In1, %z), dimensions={1}, to_apply=maximum;
    %s = bf16[`@c.n`] reduce_add(%In1), dimensions={1};
    %b = bf16[`@c.n`,64] broadcast(%m), dimensions={0};
    %t = bf16[64,`@c.n`] transpose(%b), dimensions={1,0};
    %d = bf16[`@c.n`,`@c.n`] dot(%In1, %t), lhs_contracting_dims={1}, rhs_contracting_dims={0};
    %h = bf16[`@c.n`,32] slice(%b), slice={[0:`@c.n`], [0:64:2]};
    %c = bf16[`@c.n`,64] concatenate(%h, %h), dimensions={1};
    ROOT %Out0 = bf16[`@c.n`,64] exp(%c);
}
""")
    ops = {op["name"]: op for op in isa_table(acc)["instructions"][0]["semantics"]}
    assert ops["In1"]["attrs"] == {"index": 0}
    assert ops["z"]["attrs"] == {"value": 0}
    assert ops["m"]["attrs"] == {"dimensions": [1], "computation": "max"}
    assert ops["m"]["operands"] == ["In1", "z"]
    assert ops["s"]["attrs"] == {"dimensions": [1], "computation": "add"}
    assert ops["b"]["attrs"] == {"dimensions": [0]}
    assert ops["t"]["attrs"] == {"dimensions": [1, 0]}
    assert ops["d"]["attrs"] == {"lhs_contracting_dims": [1], "rhs_contracting_dims": [0],
                                 "lhs_batch_dims": [], "rhs_batch_dims": []}
    assert ops["h"]["attrs"] == {"slice": [[{"int": 0}, {"attr": "c.n"}, {"int": 1}],
                                           [{"int": 0}, {"int": 64}, {"int": 2}]]}
    assert ops["c"]["attrs"] == {"dimensions": [1]}
    assert ops["Out0"]["op"] == "exponential" and ops["Out0"]["root"] is True


def test_attribute_order_is_comp_then_addr_as_declared():
    acc = Accelerator("T")
    acc.add_data_model("d1", [128], [64], "bf16")
    instr = acc.add_instruction("op", ["m", "k"], ["z", "a"])
    instr.set_inputs([["d1", ["@a.z"], ["@c.m * @c.k"]]])
    instr.set_outputs([["d1", ["@a.a"], ["@c.m * @c.k"]]])
    instr.add_semantics("ENTRY op { %x = bf16[`@c.m * @c.k`,64] parameter(0); "
                        "ROOT %y = bf16[`@c.m * @c.k`,64] copy(%x); }")
    entry = isa_table(acc)["instructions"][0]
    assert (entry["comp_attrs"], entry["addr_attrs"]) == (["m", "k"], ["z", "a"])
