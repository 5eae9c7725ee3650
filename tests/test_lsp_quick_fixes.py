"""Quick fixes as plain data: each refusal with a clear repair offers it, and applying the
fix makes the spec (or kernel) pass its checks. The fixes travel with the findings of the
static check, of a run of the spec, and of the kernel check."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.lsp_session import apply_edits

from lsp import fork_server
from lsp.findings import Finding
from lsp.fixes.fix import Fix, closest
from lsp.fixes.skeleton import semantics_text
from lsp.kernel_check import check_kernel
from lsp.spec.check import check_running, check_static
from lsp.spec.runner import ForkChecker, SpawnChecker

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QKV = (EXAMPLES / "QKV" / "QKV.py").read_text()
KERNEL = (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text()
SPEC_PATH = "/specs/QKV.py"
KERNEL_PATH = "/kernels/attention.hlo"


def applied(text: str, fix: Fix) -> str:
    return apply_edits(text, [(e.range.start, e.range.end, e.text) for e in fix.edits])


def fix_titled(findings: list[Finding], code: str, title: str) -> Fix:
    offered = {f.title: f for finding in findings if finding.code == code
               for f in finding.fixes}
    assert title in offered, f"{code}: {title!r} not among {sorted(offered)}"
    return offered[title]


def mistake(old: str, new: str, text: str = QKV) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


# ---- every fix of a spec makes it validate -----------------------------------------------

SEMANTICS_OF = 'instr.add_semantics("""\nENTRY {}'

SPEC_CASES = [
    # (what, old text, new text, code, fix title)
    ("an unknown buffer", '["d1", ["@a.addr_out"], ["@c.n"]]])\ninstr.add_semantics("""\n'
     'ENTRY load_rm', '["d9", ["@a.addr_out"], ["@c.n"]]])\ninstr.add_semantics("""\n'
     'ENTRY load_rm', "unknown-buffer", "Change to 'd1'"),
    ("an unknown operator", "transpose(%b), dimensions={1,0};",
     "transpos(%b), dimensions={1,0};", "unknown-operator", "Change to 'transpose'"),
    ("an unknown operator attribute", "broadcast(%reduced), dimensions={0}",
     "broadcast(%reduced), dimension={0}", "unknown-attribute", "Change to 'dimensions'"),
    ("an undefined value", "divide(%a, %b)", "divide(%a, %bb)", "undefined-value",
     "Change to 'b'"),
    ("an attribute not declared, like a declared one", "ROOT %Out0 = bf16[`@c.n`,64] copy",
     "ROOT %Out0 = bf16[`@c.m`,64] copy", "undeclared-attribute", "Change to '@c.n'"),
    ("an attribute used but not declared", 'add_instruction("mov", ["n"]',
     'add_instruction("mov", []', "undeclared-attribute",
     "Declare 'n' as a computational attribute of 'mov'"),
    ("an addressing attribute used but not declared", '"softmax", ["n"], ["addr"]',
     '"softmax", ["n"], []', "undeclared-attribute",
     "Declare 'addr' as an addressing attribute of 'softmax'"),
    ("a misspelled element type of a data model", '"d2", [64], [64], "bf16"',
     '"d2", [64], [64], "bf17"', "unknown-dtype", "Change to 'bf16'"),
    ("a misspelled element type in semantics", "ROOT %Out0 = bf16[`@c.n`,64] copy",
     "ROOT %Out0 = bfl6[`@c.n`,64] copy", "unknown-dtype", "Change to 'bf16'"),
    ("a missing ROOT", "ROOT %Out0 = bf16[64,`@c.n`] transpose",
     "%Out0 = bf16[64,`@c.n`] transpose", "root-count", "Mark '%Out0' as the ROOT"),
    ("no semantics, one buffer to another", SEMANTICS_OF.format("mov"),
     'unused = ("""\nENTRY mov', "no-semantics", "Add semantics to 'mov' (typed from its slices)"),
    ("no semantics, a load from HBM", SEMANTICS_OF.format("load_rm"),
     'unused = ("""\nENTRY load_rm', "no-semantics",
     "Add semantics to 'load_rm' (typed from its slices)"),
    ("no semantics, a store to HBM", SEMANTICS_OF.format("store_rm"),
     'unused = ("""\nENTRY store_rm', "no-semantics",
     "Add semantics to 'store_rm' (typed from its slices)"),
]


@pytest.mark.parametrize(("what", "old", "new", "code", "title"), SPEC_CASES,
                         ids=[case[0] for case in SPEC_CASES])
def test_each_spec_fix_makes_the_spec_validate(what, old, new, code, title):
    broken = mistake(old, new)
    found = check_static(broken, SPEC_PATH).findings
    assert code in [f.code for f in found]
    repaired = applied(broken, fix_titled(found, code, title))
    assert check_static(repaired, SPEC_PATH).findings == []


def test_did_you_mean_offers_the_closest_names_and_prefers_a_unique_best():
    found = check_static(mistake("transpose(%b)", "transpos(%b)"), SPEC_PATH).findings
    [operator] = [f for f in found if f.code == "unknown-operator"]
    assert [(fix.title, fix.preferred) for fix in operator.fixes][0] == (
        "Change to 'transpose'", True)
    found = check_static(SPEC_CASES[0][2].join(QKV.split(SPEC_CASES[0][1], 1)),
                         SPEC_PATH).findings
    [buffer] = [f for f in found if f.code == "unknown-buffer"]
    # 'd9' is as like 'd0' as 'd1' and 'd2': all are offered, none is preferred.
    assert [(fix.title, fix.preferred) for fix in buffer.fixes] == [
        ("Change to 'd0'", False), ("Change to 'd1'", False), ("Change to 'd2'", False)]
    assert [e.text for e in buffer.fixes[1].edits] == ['"d1"']


@pytest.mark.parametrize(("word", "known", "expected"), [
    ("transpos", ["copy", "transpose", "reshape"], ["transpose"]),
    ("bf17", ["s8", "bf16", "f16", "f32"], ["bf16", "f16"]),
    ("d9", ["d0", "d1", "d2"], ["d0", "d1", "d2"]),
    ("sram", ["d0", "d1"], []),
    ("copy", ["copy"], []),
])
def test_closest_names(word, known, expected):
    assert closest(word, known) == expected


def test_a_skeleton_with_two_inputs_declares_both_and_leaves_the_second_to_the_user():
    broken = mistake(SEMANTICS_OF.format("gemm"), 'unused = ("""\nENTRY gemm')
    found = check_static(broken, SPEC_PATH).findings
    fix = fix_titled(found, "no-semantics", "Add semantics to 'gemm' (typed from its slices)")
    repaired = applied(broken, fix)
    assert ('instr.add_semantics("""\nENTRY gemm {\n'
            '    %in0 = bf16[64,64] parameter(0);\n'
            '    %in1 = bf16[64,64] parameter(1);\n'
            '    ROOT %out = bf16[64,64] copy(%in0);\n}\n""")') in repaired
    # What the instruction computes from its second input is the user's to write.
    assert [f.code for f in check_static(repaired, SPEC_PATH).findings] == ["unused-input"]


def test_semantics_skeleton_text_without_inputs_is_a_constant():
    from act_backend.validation.buffers import Buffer
    from act_backend.validation.slices import Slice

    d1 = Buffer("d1", (128,), (64,), "bf16")
    assert semantics_text("zero", [], Slice(d1, (0,), (2,))) == (
        "ENTRY zero {\n    ROOT %out = bf16[2,64] constant(0);\n}\n")


def test_a_problem_placed_outside_its_text_offers_no_fix():
    # The semantics string is passed in a variable: its problems are placed on the variable.
    broken = mistake('instr.add_semantics("""\nENTRY mov', 'mov_text = ("""\nENTRY mov')
    broken = mistake('copy(%In1);\n}\n""")', 'copi(%In1);\n}\n""")\n'
                     'instr.add_semantics(mov_text)', broken)
    found = [f for f in check_static(broken, SPEC_PATH).findings
             if f.code == "unknown-operator"]
    assert len(found) == 1 and found[0].fixes == ()


# ---- running the spec brings the same fixes -----------------------------------------------


def test_a_run_of_the_spec_brings_the_same_fixes(tmp_path):
    broken = mistake("transpose(%b), dimensions={1,0};", "transpos(%b), dimensions={1,0};")
    broken = mistake(SEMANTICS_OF.format("mov"), 'unused = ("""\nENTRY mov', broken)
    path = tmp_path / "QKV.py"
    kind = ForkChecker if fork_server.AVAILABLE else SpawnChecker

    async def go():
        checker = kind()
        try:
            return await check_running(broken, str(path), checker, 5.0, 1024)
        finally:
            await checker.close()

    ran = asyncio.run(go()).findings
    read = check_static(broken, str(path)).findings
    assert [f.as_dict() for f in ran] == [f.as_dict() for f in read]
    assert {f.code for f in ran if f.fixes} == {"unknown-operator", "no-semantics"}


# ---- kernels ----------------------------------------------------------------------------

KERNEL_CASES = [
    ("an unknown operator", "exponential(bf16", "exponentail(bf16", "unknown-operator",
     "Change to 'exponential'"),
    ("an unknown attribute", "dimensions={1,0}", "dimension={1,0}", "unknown-attribute",
     "Change to 'dimensions'"),
    ("an undefined operand", "%E, bf16[64,64]{1,0} %denom)", "%E, bf16[64,64]{1,0} %denon)",
     "undefined-operand", "Change to 'denom'"),
    ("an unknown computation", "to_apply=%add_bf16", "to_apply=%add_bf61",
     "unknown-computation", "Change to 'add_bf16'"),
    ("a computation without ROOT", "ROOT %O", "%O", "missing-root", "Mark '%O' as the ROOT"),
]


@pytest.mark.parametrize(("what", "old", "new", "code", "title"), KERNEL_CASES,
                         ids=[case[0] for case in KERNEL_CASES])
def test_each_kernel_fix_makes_the_kernel_pass_its_checks(what, old, new, code, title):
    broken = mistake(old, new, KERNEL)
    found = check_kernel(broken, KERNEL_PATH)
    repaired = applied(broken, fix_titled(found, code, title))
    assert check_kernel(repaired, KERNEL_PATH) == []
    assert repaired == KERNEL
