"""check_hlo reports every problem of a kernel, each with a code and the span at fault;
load_kernel raises the first one as ``file:line:col: message``."""

from __future__ import annotations

from pathlib import Path

import pytest

from act_backend.hlo.ir import Span
from act_backend.kernel import HloSyntaxError, KernelError, check_hlo, load_kernel
from act_backend.kernel.opcodes import SUPPORTED_OPCODES

ROOT = Path(__file__).resolve().parents[1]
KERNELS = Path(__file__).resolve().parent / "kernels"
ATTENTION = (ROOT / "examples" / "QKV" / "kernels" / "attention.hlo").read_text()

GOOD = sorted([*KERNELS.glob("*.hlo"), *ROOT.glob("examples/*/kernels/*.hlo")])


def codes(text: str) -> list[tuple[str, int, int]]:
    return [(p.code, p.span.line, p.span.column) for p in check_hlo(text, "k.hlo")]


def only(text: str):
    problems = check_hlo(text, "k.hlo")
    assert len(problems) == 1, problems
    return problems[0]


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_the_fixture_and_example_kernels_have_no_problem(path):
    assert check_hlo(path.read_text(), str(path)) == []
    assert load_kernel(path).entry.root.is_root


BAD_FIXTURES = [
    ("syntax_error.hlo", "hlo-syntax", 6, 34, "expected an operand name after '('"),
    ("unknown_operator.hlo", "unknown-operator", 5, 30, "unknown operator 'frobnicate' in 'C'"),
    ("unsupported_operator.hlo", "unsupported-operator", 5, 30,
     "'C' uses erf, an XLA operator kernels may not use yet"),
    ("undefined_operand.hlo", "undefined-operand", 6, 55,
     "operand 1 of 'C', 'Bt', is not defined in computation 'main'"),
    ("shape_mismatch.hlo", "dot-contracting-mismatch", 6, 103,
     "lhs contracting dimension 1 has size 32 but rhs contracting dimension 0 has size 64"),
    ("signature_parameter_name.hlo", "signature-mismatch", 3, 14,
     "declares parameter 0 as 'a', but parameter(0) is named 'A'"),
    ("signature_parameter_count.hlo", "signature-mismatch", 3, 13,
     "declares 2 parameter(s) but defines 1"),
    ("signature_parameter_type.hlo", "signature-mismatch", 3, 14,
     "declares parameter 0 as bf16[64,32], but 'A' is bf16[64,64]"),
    ("signature_result.hlo", "signature-mismatch", 3, 33,
     "declares its result as f32[64,64], but ROOT 'C' is bf16[64,64]"),
    ("entry_layout_syntax.hlo", "entry-layout-syntax", 1, 76,
     "expected '->' after the parameter types"),
    ("entry_layout_mismatch.hlo", "entry-layout-mismatch", 1, 80,
     "gives the result the type bf16[64,32], but ROOT 'C' of the ENTRY computation is "
     "bf16[64,64]"),
    ("name_start.hlo", "bad-name", 4, 3, "'%1A' is not a name"),
    ("name_character.hlo", "bad-name", 4, 5, "'%A$1' is not a name"),
    ("unknown_attribute.hlo", "unknown-attribute", 6, 129,
     "dot 'C' does not take the attribute 'lhs_contracting_dim' (accepted: "
     "lhs_batch_dims, lhs_contracting_dims"),
    ("duplicate_attribute.hlo", "duplicate-attribute", 5, 80,
     "attribute 'dimensions' is given twice in 'C'"),
]


@pytest.mark.parametrize("name, code, line, column, words", BAD_FIXTURES)
def test_bad_fixtures_are_reported_at_the_fault(name, code, line, column, words):
    path = KERNELS / "bad" / name
    problem = only(path.read_text())
    assert (problem.code, problem.span.line, problem.span.column) == (code, line, column)
    assert problem.severity == "error"
    assert words in problem.message
    with pytest.raises(KernelError) as caught:
        load_kernel(path)
    assert str(caught.value) == f"{path}:{line}:{column}: {problem.message}"
    assert isinstance(caught.value, ValueError)
    parse_errors = {"hlo-syntax", "bad-name", "entry-layout-syntax", "duplicate-attribute"}
    assert isinstance(caught.value, HloSyntaxError) == (code in parse_errors)


def test_every_bad_fixture_is_in_the_table_and_the_crate_holds_the_same_copy():
    # The crate's tests refuse the same files at the same places (select_parse.rs); they
    # read copies, since the crate is tested wherever it is copied.
    fixtures = sorted(p.name for p in (KERNELS / "bad").glob("*.hlo"))
    tested = sorted(row[0] for row in BAD_FIXTURES)
    assert fixtures == tested
    crate_copies = ROOT / "act_backend" / "backend" / "crate" / "tests" / "data" / "bad"
    for name in fixtures:
        assert (crate_copies / name).read_text() == (KERNELS / "bad" / name).read_text(), name


def test_an_unknown_operator_lists_the_supported_ones():
    problem = only(ATTENTION.replace("exponential(", "frobnicate("))
    listed = problem.message.split("supported operators: ")[1].split(", ")
    assert sorted(listed) == sorted(SUPPORTED_OPCODES)
    assert problem.span == Span("k.hlo", 15, 25, 15, 35)


def test_all_problems_are_reported_in_order_of_position():
    text = ATTENTION.replace("%K)", "%Kx)").replace("exponential(", "frobnicate(")
    assert codes(text) == [("undefined-operand", 13, 36), ("unknown-operator", 15, 25)]


def test_an_operand_defined_later_is_named_as_such():
    problem = only(ATTENTION.replace("(bf16[64,64]{1,0} %Q,", "(bf16[64,64]{1,0} %P,"))
    assert problem.code == "undefined-operand"
    assert "'P', is defined later (line 19)" in problem.message


def test_entry_and_root_are_required():
    assert codes(ATTENTION.replace("ENTRY ", "")) == [("missing-entry", 9, 1)]
    assert codes(ATTENTION.replace("ROOT %O", "%O")) == [("missing-root", 9, 7)]
    assert codes("") == [("missing-entry", 1, 1)]
    two_roots = ATTENTION.replace("  %P =", "  ROOT %P =")
    assert codes(two_roots) == [("duplicate-root", 20, 8)]


def test_names_and_parameter_indices_are_unique():
    dup = ATTENTION.replace("%E = bf16[64,64]{1,0} exponential(bf16[64,64]{1,0} %S)",
                            "%E = bf16[64,64]{1,0} exponential(bf16[64,64]{1,0} %S)\n"
                            "  %E = bf16[64,64]{1,0} negate(bf16[64,64]{1,0} %S)")
    assert [c for c, _, _ in codes(dup)] == ["duplicate-instruction"]
    reuse = ATTENTION.replace("%V = bf16[64,64]{1,0} parameter(2)",
                              "%V = bf16[64,64]{1,0} parameter(1)")
    assert codes(reuse) == [("duplicate-parameter", 12, 35)]
    gap = ATTENTION.replace("%V = bf16[64,64]{1,0} parameter(2)",
                            "%V = bf16[64,64]{1,0} parameter(3)")
    assert codes(gap) == [("missing-parameter", 9, 7)]


def test_a_reducer_must_exist_and_fit_the_reduce():
    missing = only(ATTENTION.replace("to_apply=%add_bf16", "to_apply=%mul"))
    assert missing.code == "unknown-computation"
    assert missing.span.column == 84

    widened = ATTENTION.replace("(x: bf16[], y: bf16[]) -> bf16[]", "").replace(
        "%x = bf16[] parameter(0)", "%x = f32[] parameter(0)").replace(
        "%y = bf16[] parameter(1)", "%y = f32[] parameter(1)").replace(
        "ROOT %sum = bf16[] add(bf16[] %x, bf16[] %y)", "ROOT %sum = f32[] add(%x, %y)")
    problem = only(widened)
    assert problem.code == "reducer-signature"
    assert "must take two bf16[] parameters and return bf16[]; it is (f32[], f32[]) -> f32[]" \
        in problem.message


def test_type_errors_come_from_inference_with_their_span():
    text = ATTENTION.replace("%Kt = bf16[64,64]{1,0} transpose(bf16[64,64]{1,0} %K), "
                             "dimensions={1,0}",
                             "%Kt = bf16[64,64]{1,0} transpose(bf16[64,64]{1,0} %K), "
                             "dimensions={1,1}")
    problem = only(text)
    assert problem.span.line == 13 and problem.code == "bad-attribute"
    assert "is not a permutation" in problem.message

    # Each instruction is checked against the declared types of its operands, so the wrong
    # declaration is reported where it is written and again where it is used.
    shrunk = ATTENTION.replace("%rowsum = bf16[64]{0}", "%rowsum = bf16[32]{0}").replace(
        "broadcast(bf16[64]{0} %rowsum)", "broadcast(bf16[32]{0} %rowsum)")
    assert codes(shrunk) == [("declared-type-mismatch", 17, 13), ("bad-attribute", 18, 61)]


def test_typed_operands_and_signatures_must_agree_with_the_definitions():
    operand = only(ATTENTION.replace("transpose(bf16[64,64]{1,0} %K)",
                                     "transpose(bf16[64,32]{1,0} %K)"))
    assert (operand.code, operand.span.line, operand.span.column) == (
        "operand-type-mismatch", 13, 36)
    assert operand.message == "operand 0 of 'Kt' is written as bf16[64,32], but 'K' is " \
        "bf16[64,64]"
    result = only(ATTENTION.replace("-> bf16[64,64] {", "-> bf16[64,32] {"))
    assert (result.code, result.span.line, result.span.column) == ("signature-mismatch", 9, 64)
    assert "declares its result as bf16[64,32], but ROOT 'O' is bf16[64,64]" in result.message
    param = only(ATTENTION.replace("K: bf16[64,64]", "K: bf16[64,32]"))
    assert (param.code, param.span.column) == ("signature-mismatch", 29)
    assert codes(ATTENTION.replace(", V: bf16[64,64])", ")")) == [("signature-mismatch", 9, 12)]


def test_a_wrong_declared_type_is_reported_where_written_and_where_used():
    # %E's type is wrong; every use of %E that writes its type disagrees with it as well.
    text = ATTENTION.replace("%E = bf16[64,64]{1,0} exponential",
                             "%E = bf16[64,32]{1,0} exponential")
    assert codes(text) == [("declared-type-mismatch", 15, 8), ("operand-type-mismatch", 17, 32),
                           ("operand-type-mismatch", 19, 32)]


def test_calls_tuples_and_get_tuple_element_are_typed():
    text = """HloModule k
sq {
  a = f32[4] parameter(0)
  ROOT m = f32[4] multiply(a, a)
}
ENTRY main {
  x = f32[4] parameter(0)
  c = f32[4] call(x), to_apply=sq
  t = (f32[4], f32[4]) tuple(x, c)
  ROOT g = f32[4] get-tuple-element(t), index=1
}
"""
    assert check_hlo(text) == []
    assert codes(text.replace("index=1", "index=2")) == [("bad-attribute", 10, 41)]
    assert codes(text.replace("c = f32[4] call", "c = f32[2] call")) == [
        ("declared-type-mismatch", 8, 7), ("declared-type-mismatch", 9, 7)]
    assert codes(text.replace("call(x)", "call(x, x)")) == [("operand-count", 8, 14)]
    assert codes(text.replace("ROOT g = f32[4] get-tuple-element(t), index=1",
                              "ROOT g = f32[4] add(t, x)")) == [
        ("operand-type-mismatch", 10, 23)]


def test_recursion_and_variadic_reduce_are_refused():
    recursive = """HloModule k
f {
  a = f32[] parameter(0)
  ROOT b = f32[] call(a), to_apply=f
}
ENTRY main {
  x = f32[] parameter(0)
  ROOT y = f32[] call(x), to_apply=f
}
"""
    assert [c for c, _, _ in codes(recursive)] == ["recursive-call"]
    variadic = """HloModule k
r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  e = f32[] add(a, c)
  f = f32[] add(b, d)
  ROOT t = (f32[], f32[]) tuple(e, f)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT s = (f32[], f32[]) reduce(x, x, z, z), dimensions={0}, to_apply=r
}
"""
    assert codes(variadic) == [("variadic-reduce", 14, 12)]


def test_the_problem_list_of_a_syntax_error_is_that_error():
    problems = check_hlo("ENTRY e { ROOT x = f32[] add(,) }", "k.hlo")
    assert len(problems) == 1
    assert problems[0].code == "hlo-syntax"
    assert problems[0].span == Span("k.hlo", 1, 30, 1, 31)



def test_a_computation_an_attribute_names_must_be_named_like_one():
    # select_parse.rs refuses the same text at the same place.
    text = ("HloModule m\nENTRY e {\n  x = f32[4,8] parameter(0)\n  z = f32[] constant(0)\n  "
            "ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=%1add\n}\n")
    assert codes(text) == [("bad-name", 5, 58)]
