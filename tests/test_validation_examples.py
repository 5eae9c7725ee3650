"""The example specs are accepted; warnings are reported without refusing."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import act_backend
from act_backend.validation import analyse, check, validate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, monkeypatch) -> act_backend.Accelerator:
    """Runs examples/<name>/<name>.py with the generators replaced by no-ops."""
    # Set in the module's namespace directly: reading the generators first would import them.
    monkeypatch.setitem(vars(act_backend), "generate_oracle", lambda *a, **k: None)
    monkeypatch.setitem(vars(act_backend), "generate_backend", lambda *a, **k: None)
    spec = runpy.run_path(str(EXAMPLES / name / f"{name}.py"), run_name="__main__")
    return spec["qkv"]


@pytest.mark.parametrize("name, count", [("QKV", 7), ("QKV_new", 10)])
def test_examples_have_no_problem(name, count, monkeypatch):
    acc = run_example(name, monkeypatch)
    assert check(acc) == []
    assert validate(acc) == []
    assert len(analyse(acc).instructions) == count


def test_example_base_dir_is_the_directory_of_the_spec(monkeypatch):
    acc = run_example("QKV", monkeypatch)
    assert Path(acc.base_dir) == EXAMPLES / "QKV"


def test_a_transposing_load_whose_counts_agree_is_accepted(monkeypatch):
    # load_cm's ROOT is bf16[64, n] written into n rows of bf16[64]: the element counts
    # agree for every n, so it is accepted.
    acc = run_example("QKV", monkeypatch)
    load_cm = next(i for i in analyse(acc).instructions if i.name == "load_cm")
    assert str(load_cm.semantics.entry.root.type) == "bf16[64,@c.n]"


def test_shapes_that_agree_only_for_some_attribute_value_are_accepted(tmp_path):
    from act_backend import Accelerator

    acc = Accelerator("T")
    acc.add_data_model("d1", [128], [64], "bf16")
    instr = acc.add_instruction("tile", ["n"], ["src", "dst"])
    instr.set_inputs([["d1", ["@a.src"], ["@c.n"]]])
    instr.set_outputs([["d1", ["@a.dst"], ["64"]]])
    # A 64-row output from n rows agrees when n = 64.
    instr.add_semantics("""
ENTRY tile {
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[64,64] copy(%In1);
}
""")
    assert validate(acc) == []


def test_an_instruction_without_semantics_is_a_warning_not_an_error():
    from act_backend import Accelerator

    acc = Accelerator("T")
    acc.add_data_model("d1", [128], [64], "bf16")
    instr = acc.add_instruction("nop", [], ["addr"])
    instr.set_inputs([["d1", ["@a.addr"], ["1"]]])
    warnings = validate(acc)
    assert [w.code for w in warnings] == ["no-semantics"]
    assert "left out of the oracle and the backend" in warnings[0].message
    assert "instruction 'nop'" in warnings[0].message
    assert analyse(acc).left_out == ["nop"]


def test_a_partially_built_accelerator_can_be_checked():
    from act_backend import Accelerator

    acc = Accelerator("T")
    acc.add_data_model("d1", [128], [64], "bf16")
    half = acc.add_instruction("half", ["n"], ["a"])
    half.set_inputs([["d1", ["@a.a"], ["@c.n"]]])
    half.add_semantics("ENTRY half { ROOT %x = bf16[`@c.n`,64] parameter(0); }")
    codes = [p.code for p in check(acc)]
    assert codes == ["output-count"]


def test_repeated_calls_are_warned_about():
    from act_backend import Accelerator

    acc = Accelerator("T")
    acc.add_data_model("d1", [128], [64], "bf16")
    instr = acc.add_instruction("mv", [], ["a", "b"])
    instr.set_inputs([["d1", ["@a.a"], ["1"]]])
    instr.set_inputs([["d1", ["@a.a"], ["1"]]])
    instr.set_outputs([["d1", ["@a.b"], ["1"]]])
    instr.add_semantics("ENTRY mv { %x = bf16[1,64] parameter(0); "
                        "ROOT %y = bf16[1,64] copy(%x); }")
    assert [p.code for p in validate(acc)] == ["repeated-call"]
