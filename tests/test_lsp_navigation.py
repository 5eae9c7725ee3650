"""Navigation between a kernel and its compiled assembly: reading which HLO instructions each
``api.`` call implements from the backend's report, pairing the records with the calls as
written, and the definitions, implementations, hover and lenses built on them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lsp.compiled import (
    AssemblyCall,
    Compilations,
    Record,
    assembly_calls,
    pair,
    records_of,
    report_dir_for,
)
from lsp.features import navigation
from lsp.text_map import lines_of

ROOT = Path(__file__).resolve().parents[1]
KERNEL = (ROOT / "examples" / "QKV" / "kernels" / "attention.hlo").read_text()
ASSEMBLY = (ROOT / "tests" / "assembly" / "qkv_attention.py").read_text()
# What each of the nine calls implements (a report's "assembly" records, in call order).
IMPLEMENTS = [["Q"], ["K", "%Kt"], ["S"], ["E", "rowsum", "denom", "P"], [], ["V"], ["O"],
              [], []]
CALLS = ["load_rm", "load_cm", "gemm", "softmax", "mov", "load_rm", "gemm", "mov", "store_rm"]


def report(records: list[dict]) -> dict:
    return {"format": "act-backend-report/1", "status": "ok", "chosen": 3,
            "assembly": records}


def records(with_lines: bool = False) -> list[dict]:
    first = ASSEMBLY.splitlines().index("        api.load_rm(n=64, addr_in=0, addr_out=0)") + 1
    return [{"instruction": name, "implements": names,
             **({"line": first + k} if with_lines else {})}
            for k, (name, names) in enumerate(zip(CALLS, IMPLEMENTS, strict=True))]


def at(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    index = text.index(needle) + offset
    return text.count("\n", 0, index), index - (text.rfind("\n", 0, index) + 1)


# ---- the assembly and the report ----------------------------------------------------------


def test_the_calls_of_an_assembly_are_read_in_order_with_their_places():
    calls = assembly_calls(ASSEMBLY)
    assert [c.instruction for c in calls] == CALLS
    lines = lines_of(ASSEMBLY)
    gemm = calls[2]
    assert gemm.index == 2
    assert lines[gemm.range.start[0]][gemm.name_range.start[1]:gemm.name_range.end[1]] == \
        "api.gemm"
    assert assembly_calls("def broken(:\n") == []


@pytest.mark.parametrize(("raw", "expected"), [
    (report([{"implements": ["%S", "E"], "line": 3, "instruction": "gemm"}]),
     [Record(("S", "E"), 3, "gemm")]),
    # Where the emitted candidate's record holds them.
    ({"chosen": 2, "candidates": [{"index": 1, "assembly": [{"implements": ["X"]}]},
                                  {"index": 2, "assembly": [{"implements": ["S"]}]}]},
     [Record(("S",))]),
    ({"format": "act-backend-report/1", "chosen": 0, "candidates": [{"index": 0}]}, None),
    (report([{"implements": "S"}]), None),
    (report([{"line": 3}]), None),
    ([], None),
])
def test_records_are_read_from_the_report_or_not_at_all(raw, expected):
    assert records_of(raw) == expected


def calls_of(*names: str) -> list[AssemblyCall]:
    from lsp.text_map import TextRange

    return [AssemblyCall(k, name, TextRange((10 + k, 8), (10 + k, 30)),
                         TextRange((10 + k, 8), (10 + k, 16))) for k, name in enumerate(names)]


@pytest.mark.parametrize(("recorded", "paired"), [
    ([Record(("Q",)), Record(("S",))], [("load_rm", ("Q",)), ("gemm", ("S",))]),
    ([Record(("S",), 12, "gemm"), Record(("Q",), 11, "load_rm")],
     [("gemm", ("S",)), ("load_rm", ("Q",))]),
    ([Record(("Q",))], None),  # one record for two calls: not this assembly
    ([Record(("Q",), None, "store_rm"), Record(("S",))], None),  # another instruction
    ([Record(("Q",), 40), Record(("S",), 12)], None),  # no call on line 40
])
def test_records_pair_with_the_calls_they_describe_or_not_at_all(recorded, paired):
    found = pair(calls_of("load_rm", "gemm"), recorded)
    assert (None if found is None else [(c.instruction, n) for c, n in found]) == paired


def test_a_compile_of_an_earlier_session_is_found_by_its_layout(tmp_path):
    kernel = tmp_path / "attention.hlo"
    assembly = tmp_path / "attention.py"
    kernel.write_text(KERNEL)
    assembly.write_text(ASSEMBLY)
    compilations = Compilations()
    assert compilations.for_kernel(str(kernel)) is None
    folder = Path(report_dir_for(str(assembly)))
    assert folder == tmp_path / "attention.report"
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps(report(records())))
    found = compilations.for_kernel(str(kernel))
    assert found == compilations.for_assembly(str(assembly))
    assert found.assembly == os.path.realpath(assembly)
    assert [r.implements for r in compilations.records(found)][:2] == [("Q",), ("K", "Kt")]
    # A report written again is read again.
    (folder / "report.json").write_text(json.dumps(report(records()[:1])))
    os.utime(folder / "report.json", (1, 1))
    assert len(compilations.records(found)) == 1


def test_a_compile_of_this_session_is_remembered_wherever_it_wrote(tmp_path):
    compilations = Compilations()
    compilations.record(str(tmp_path / "k.hlo"), str(tmp_path / "out" / "a.py"),
                        str(tmp_path / "r" / "report.json"))
    assert compilations.for_assembly(str(tmp_path / "out" / "a.py")).kernel == \
        os.path.realpath(tmp_path / "k.hlo")


# ---- the features -------------------------------------------------------------------------


@pytest.fixture
def pairing(tmp_path) -> navigation.Pairing:
    kernel, assembly = tmp_path / "attention.hlo", tmp_path / "attention.py"
    kernel.write_text(KERNEL)
    assembly.write_text(ASSEMBLY)
    folder = Path(report_dir_for(str(assembly)))
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps(report(records(with_lines=True))))
    compilations = Compilations()
    found = navigation.pairing(compilations, compilations.for_kernel(str(kernel)),
                               lambda path: Path(path).read_text())
    assert found is not None
    return found


def test_an_api_call_leads_to_the_hlo_instructions_it_implements(pairing):
    targets = navigation.assembly_definition(pairing, at(ASSEMBLY, "api.load_cm", 5))
    lines = pairing.kernel_lines
    assert [lines[r.start[0]][r.start[1]:r.end[1]] for r in targets] == ["K", "Kt"]
    assert navigation.assembly_definition(pairing, at(ASSEMBLY, "def qkv_")) == []


def test_an_hlo_instruction_leads_back_to_the_calls_that_implement_it(pairing):
    found = navigation.kernel_implementation(pairing, at(KERNEL, "%Kt = bf16", 1))
    assert [r.start for r in found] == [at(ASSEMBLY, "api.load_cm")]
    assert navigation.kernel_implementation(pairing, at(KERNEL, "%zero = ", 1)) == []


def test_each_hlo_instruction_gets_a_lens_naming_what_covers_it(pairing):
    found = {pairing.kernel_lines[lens.range.start[0]].split("=")[0].strip(): lens.title
             for lens in navigation.kernel_lenses(pairing)}
    load_cm_line = at(ASSEMBLY, "api.load_cm")[0] + 1
    assert found["%Kt"] == f"Implemented by api.load_cm (line {load_cm_line}) in attention.py"
    assert found["%P"] == f"Implemented by api.softmax (line {load_cm_line + 2}) in " \
        "attention.py"
    assert found["%zero"] == "Implemented by no instruction of attention.py"
    assert "%Q" not in found  # parameters are the kernel's inputs
    assert len(found) == 8


def test_each_api_call_gets_a_lens_and_a_hover_naming_what_it_implements(pairing):
    titles = [lens.title for lens in navigation.assembly_lenses(pairing)]
    assert titles[1] == "Implements %K, %Kt (attention.hlo)"
    assert titles[4] == "Implements nothing the report names (attention.hlo)"
    shown = navigation.assembly_hover(pairing, at(ASSEMBLY, "api.gemm", 5))
    assert shown.markdown.startswith("**api.gemm** implements, in `attention.hlo`:")
    assert "- `%S` = `bf16[64,64]` `dot` (line 14)" in shown.markdown


def test_an_edited_assembly_is_not_paired_with_an_older_report(pairing, tmp_path):
    (tmp_path / "attention.py").write_text(ASSEMBLY.replace(
        "        api.mov(n=64, addr_in=0, addr_out=0)\n", "", 1))
    compilations = Compilations()
    compiled = compilations.for_kernel(str(tmp_path / "attention.hlo"))
    assert navigation.pairing(compilations, compiled, lambda path: Path(path).read_text()) \
        is None
