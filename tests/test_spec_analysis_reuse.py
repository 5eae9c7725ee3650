"""A spec is analysed once per state: validation, the ISA table, the oracle and the backend
generators share one analysis of an unchanged accelerator, and any change made through the
API in between makes the next of them analyse again (and see the change)."""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

import pytest

import act_backend
from act_backend import Accelerator
from act_backend.backend import cargo
from act_backend.table import isa_table, write_isa_table
from act_backend.validation import analysis, check, validate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def analyses(monkeypatch) -> list[Accelerator]:
    """Every run of the analysis from now on, by accelerator."""
    runs: list[Accelerator] = []
    real = analysis.analyse

    def counting(acc):
        runs.append(acc)
        return real(acc)

    monkeypatch.setattr(analysis, "analyse", counting)
    return runs


@pytest.fixture
def no_cargo(monkeypatch) -> list[Path]:
    """``generate_backend`` writes its crate but does not build it; the crates it would build."""
    crates: list[Path] = []

    def build(crate, cost_lib, label, install_to):
        crates.append(Path(crate))
        return cargo.Built(Path(install_to), [])

    monkeypatch.setattr(cargo, "build", build)
    return crates


def tiny(base_dir: Path) -> Accelerator:
    acc = Accelerator("Tiny")
    acc.base_dir = str(base_dir)
    acc.add_data_model("d1", [16], [8], "f32")
    load = acc.add_instruction("load", ["n"], ["addr_in", "addr_out"])
    load.set_inputs([["d0", ["@a.addr_in"], ["@c.n * 32"]]])
    load.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])
    load.add_semantics("""
ENTRY load {
    %In1 = u8[`@c.n * 32`] parameter(0);
    %a = u8[`@c.n`,8,4] reshape(%In1);
    ROOT %Out0 = f32[`@c.n`,8] bitcast_convert(%a);
}
""")
    return acc


def test_the_example_spec_run_as_a_program_is_analysed_once(tmp_path, analyses, no_cargo):
    # QKV.py ends with generate_oracle(qkv) and generate_backend(qkv).
    project = tmp_path / "QKV"
    shutil.copytree(EXAMPLES / "QKV", project,
                    ignore=shutil.ignore_patterns("targets", "backends", "__pycache__"))
    namespace = runpy.run_path(str(project / "QKV.py"), run_name="__main__")
    assert analyses == [namespace["qkv"]]
    assert (project / "targets" / "QKV" / "oracle" / "isa.json").is_file()
    assert no_cargo == [project / "targets" / "QKV" / "backend"]


@pytest.mark.parametrize("calls", [
    ["generate_oracle", "generate_backend"],
    ["generate_backend", "generate_oracle"],
    ["check", "validate", "isa_table", "write_isa_table", "generate_oracle"],
])
def test_an_unchanged_accelerator_is_analysed_once(tmp_path, analyses, no_cargo, calls):
    acc = tiny(tmp_path)
    run = {
        "generate_oracle": lambda: act_backend.generate_oracle(acc),
        "generate_backend": lambda: act_backend.generate_backend(acc),
        "check": lambda: check(acc),
        "validate": lambda: validate(acc),
        "isa_table": lambda: isa_table(acc),
        "write_isa_table": lambda: write_isa_table(acc, tmp_path / "isa.json"),
    }
    for call in calls:
        run[call]()
    assert len(analyses) == 1


def _new_instruction(acc: Accelerator) -> None:
    flush = acc.add_instruction("flush", [], ["addr"])
    flush.set_inputs([["d1", ["@a.addr"], ["1"]]])
    flush.set_outputs([["d1", ["@a.addr"], ["1"]]])
    flush.add_semantics("""
ENTRY flush {
    %In1 = f32[1,8] parameter(0);
    ROOT %Out0 = f32[1,8] copy(%In1);
}
""")


def _instruction(acc: Accelerator, name: str):
    return next(i for i in acc.instructions if i.name == name)


# (what is changed, the change, what the next table shows of it)
EDITS = [
    ("a new instruction", _new_instruction,
     lambda table: [i["name"] for i in table["instructions"]] == ["load", "flush"]),
    ("a new data model", lambda acc: acc.add_data_model("d2", [4], [4], "bf16"),
     lambda table: [b["name"] for b in table["buffers"]] == ["d0", "d1", "d2"]),
    ("set_outputs again", lambda acc: _instruction(acc, "load").set_outputs(
        [["d1", ["@a.addr_out + 1"], ["@c.n"]]]),
     lambda table: table["instructions"][0]["outputs"][0]["start"][0]["op"] == "+"),
    ("an assigned attribute of an instruction",
     lambda acc: setattr(_instruction(acc, "load"), "name", "load_rows"),
     lambda table: table["instructions"][0]["name"] == "load_rows"),
    ("an assigned attribute of a data model",
     lambda acc: setattr(acc.data_models[0], "access_dims", [32]),
     lambda table: table["buffers"][1]["access_dims"] == [32]),
    ("the accelerator's name", lambda acc: setattr(acc, "name", "Small"),
     lambda table: table["name"] == "Small"),
]


@pytest.mark.parametrize("what, edit, shows", EDITS, ids=[e[0] for e in EDITS])
def test_a_change_between_generators_is_analysed_again(tmp_path, analyses, no_cargo,
                                                        what, edit, shows):
    acc = tiny(tmp_path)
    act_backend.generate_oracle(acc)
    revision = acc.revision
    edit(acc)
    assert acc.revision > revision, what
    table = isa_table(acc)
    assert len(analyses) == 2
    assert shows(table)
    act_backend.generate_backend(acc)
    assert len(analyses) == 2  # the edited state is analysed once too


def test_a_change_that_breaks_the_spec_is_refused_by_the_next_generator(tmp_path, analyses,
                                                                       no_cargo):
    acc = tiny(tmp_path)
    act_backend.generate_oracle(acc)
    _instruction(acc, "load").set_outputs([["d9", ["@a.addr_out"], ["@c.n"]]])
    with pytest.raises(ValueError, match="d9"):
        act_backend.generate_backend(acc)
    assert no_cargo == []
    assert len(analyses) == 2


def test_the_problems_handed_out_are_the_callers_own(tmp_path, analyses):
    acc = tiny(tmp_path)
    acc.add_instruction("nop", [], [])  # a warning: no semantics
    first = check(acc)
    first.clear()
    assert [p.code for p in check(acc)] == ["no-semantics"]
    assert len(analyses) == 1


def test_accelerators_are_analysed_each_on_its_own(tmp_path, analyses):
    one, two = tiny(tmp_path), tiny(tmp_path)
    isa_table(one)
    isa_table(two)
    isa_table(one)
    assert analyses == [one, two]
