"""The semantics language: what it parses to, where things were written, what it refuses."""

from __future__ import annotations

import math

import pytest

from act_backend.hlo import expr as ex
from act_backend.hlo.ir import TensorType
from act_backend.spec import SemanticsError, parse_semantics
from act_backend.spec.semantics import OPERATORS, reducer_of

SOFTMAX = """
ENTRY softmax {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %a = bf16[`@c.n`,64] exp(%In1);
    %reduced = bf16[`@c.n`] reduce_add(%a), dimensions={1};
    %b = bf16[`@c.n`,64] broadcast(%reduced), dimensions={0};
    ROOT %Out0 = bf16[`@c.n`,64] divide(%a, %b);
}
"""

N = ex.parse_expr("@c.n")


def parse(text: str):
    return parse_semantics(text).entry


def test_parses_an_entry_computation_to_ssa_instructions():
    comp = parse(SOFTMAX)
    assert comp.name == "softmax" and comp.is_entry
    assert [(i.name, i.opcode) for i in comp.instructions] == [
        ("In1", "parameter"), ("a", "exponential"), ("reduced", "reduce_add"),
        ("b", "broadcast"), ("Out0", "divide")]
    assert comp.instructions[0].attrs == {"index": 0}
    assert comp.instructions[2].attrs == {"dimensions": [1]}
    assert comp.instructions[4].operands == ["a", "b"]
    assert comp.root.name == "Out0" and comp.root.is_root
    assert comp.instructions[1].type == TensorType("bf16", (N, 64))


def test_backquoted_constant_expressions_fold_to_integers():
    comp = parse("ENTRY e { ROOT %x = u8[`2 * 64`, 3] parameter(0); }")
    assert comp.root.type.shape == (128, 3)


def test_semicolons_are_optional_and_comments_are_ignored():
    comp = parse("ENTRY e {\n  %x = u8[4] parameter(0) // the input\n"
                 "  ROOT %y = u8[4] copy(%x)\n}")
    assert [i.name for i in comp.instructions] == ["x", "y"]


def test_names_may_hold_dots_and_at_signs():
    comp = parse("ENTRY e { %x.1 = u8[4] parameter(0); ROOT %y@2 = u8[4] copy(%x.1); }")
    assert comp.root.operands == ["x.1"] and comp.root.name == "y@2"


def test_attribute_encodings():
    comp = parse("""
ENTRY e {
    %p = f32[8,8] parameter(0);
    %t = f32[8,8] transpose(%p), dimensions={1,0};
    %d = f32[8,8] dot(%p, %t), lhs_contracting_dims={1}, rhs_contracting_dims={0},
                               lhs_batch_dims={}, rhs_batch_dims={};
    %s = f32[4,`@c.n`] slice(%d), slice={[0:8:2], [0:`@c.n`]};
    %z = f32[] constant(-1.5);
    %l = s32[2,2] constant({{1, 2}, {3, 4}});
    %r = f32[8] reduce(%d, %z), dimensions={1}, to_apply=max;
    ROOT %c = f32[16,8] concatenate(%d, %t), dimensions={0};
}
""")
    by = comp.by_name()
    assert by["t"].attrs == {"dimensions": [1, 0]}
    assert by["d"].attrs == {"lhs_contracting_dims": [1], "rhs_contracting_dims": [0],
                             "lhs_batch_dims": [], "rhs_batch_dims": []}
    assert by["s"].attrs == {"slice": [(0, 8, 2), (0, N, 1)]}
    assert by["z"].attrs == {"value": -1.5}
    assert by["l"].attrs == {"value": [[1, 2], [3, 4]]}
    assert by["r"].attrs == {"dimensions": [1], "to_apply": "max"}
    assert by["c"].attrs == {"dimensions": [0]}


def test_every_operator_of_the_language_parses():
    for op in OPERATORS:
        if op in ("parameter", "constant"):
            continue
        comp = parse(f"ENTRY e {{ %x = u8[4] parameter(0); ROOT %y = u8[4] {op}(%x); }}")
        assert comp.root.opcode == op


def test_spans_point_at_names_opcodes_operands_and_attributes():
    text = SOFTMAX
    comp = parse(text)
    b = comp.by_name()["b"]
    line = text.splitlines().index("    %b = bf16[`@c.n`,64] broadcast(%reduced), dimensions={0};")
    assert b.spans["name"].line == line + 1 and b.spans["name"].column == 5
    assert b.spans["opcode"].column == 26
    assert b.spans["operand:0"].column == 36
    attr = b.spans["attr:dimensions"]
    assert (attr.column, attr.end_column) == (47, 61)
    assert b.spans["dim:0"].column == 15
    assert comp.span.line == 2 and comp.span.column == 1


@pytest.mark.parametrize("text, code, words, column", [
    ("gemm { %a = u8[1] parameter(0); }", "semantics-syntax",
     "must start with 'ENTRY <name> {'", 1),
    ("ENTRY e { %a = u8[1] parameter 0; }", "semantics-syntax",
     "operands go in parentheses", 32),
    ("ENTRY e { %a = u8[1] transpose(%x) dimensions={1,0}; }", "semantics-syntax",
     "attributes follow the operands as ', name=value'", 47),
    ("ENTRY e { %a = u8[1] parameter(0);", "semantics-syntax", "a '}' is missing", 35),
    ("ENTRY e { }", "semantics-syntax", "needs at least one instruction", 11),
    ("ENTRY e { %a = u8[1] parameter(0) $ }", "semantics-syntax",
     "unexpected character '$'", 35),
    ("ENTRY e { %a = u8[1] negate(%x); }", "unknown-operator",
     "unknown operator 'negate'", 22),
    ("ENTRY e { %a = u9[1] parameter(0); }", "unknown-dtype",
     "unknown element type 'u9' (accepted: s8", 16),
    ("ENTRY e { %a = u8[`@c.n *`] parameter(0); }", "expression-syntax", "ends too early", 26),
    ("ENTRY e { %a = u8[n] parameter(0); }", "semantics-syntax",
     "must be an integer or a backquoted expression", 19),
    ("ENTRY e { %a = u8[1] parameter(%x); }", "parameter-index", "takes one integer", 32),
    ("ENTRY e { %a = u8[1] copy(7); }", "semantics-syntax", "must name a value", 27),
    ("ENTRY e { %a = u8[1] transpose(%x), dimensions={a}; }", "bad-attribute",
     "lists dimension numbers", 49),
    ("ENTRY e { %a = u8[1] copy(%x), dimensions={0}, dimensions={1}; }",
     "duplicate-attribute", "given twice", 48),
])
def test_refusals_name_the_problem_and_its_place(text, code, words, column):
    with pytest.raises(SemanticsError) as info:
        parse_semantics(text)
    error = info.value
    assert error.code == code
    assert words in error.message
    assert error.span is not None and error.span.line == 1
    assert error.span.column == column


def test_syntax_errors_name_the_line_of_the_semantics():
    with pytest.raises(SemanticsError, match=r"in line 3 of the semantics, column 27"):
        parse_semantics("ENTRY e {\n  %a = u8[1] parameter(0);\n  ROOT %b = u8[1] copy(%a)) }")


def test_taidl_to_dialect_a_reduce_without_init_starts_from_its_reducers_identity():
    comp = parse("""
ENTRY e {
    %x = bf16[4,8] parameter(0);
    %top = bf16[4] reduce(%x), dimensions={1}, to_apply=%max_bf16;
    %low = bf16[4] reduce(%x), dimensions={1}, to_apply=min;
    %n = s32[4,8] parameter(1);
    %nmax = s32[4] reduce(%n), dimensions={1}, to_apply=%maximum_s32;
    %sum = s32[4] reduce(%n), dimensions={1}, to_apply=add;
    ROOT %prod = s32[4] reduce(%n), dimensions={1}, to_apply=mul;
}
""")
    by = comp.by_name()
    inits = {name: by[by[name].operands[1]] for name in ("top", "low", "nmax", "sum", "prod")}
    assert {name: init.attrs["value"] for name, init in inits.items()} == {
        "top": -math.inf, "low": math.inf, "nmax": -2**31, "sum": 0, "prod": 1}
    assert all(init.opcode == "constant" and init.type.shape == () for init in inits.values())
    assert inits["top"].type.dtype == "bf16" and inits["nmax"].type.dtype == "s32"
    # Each init comes just before its reduce, under a name the spec does not use.
    names = [i.name for i in comp.instructions]
    assert names.index("top.init") == names.index("top") - 1
    assert by["top"].attrs["to_apply"] == "max_bf16" and reducer_of("max_bf16") == "max"


def test_taidl_to_dialect_a_reduce_with_init_and_a_taken_name_are_left_alone():
    comp = parse("""
ENTRY e {
    %x = f32[4,8] parameter(0);
    %r.init = f32[] constant(3);
    %r = f32[4] reduce(%x), dimensions={1}, to_apply=add_f32;
    ROOT %s = f32[4] reduce(%x, %r.init), dimensions={1}, to_apply=add;
}
""")
    by = comp.by_name()
    assert by["r"].operands == ["x", "r.init1"] and by["r.init1"].attrs["value"] == 0
    assert by["s"].operands == ["x", "r.init"] and by["r.init"].attrs["value"] == 3


def test_taidl_to_dialect_a_backquoted_number_is_a_literal():
    comp = parse("ENTRY e { %h = bf16[1] constant(`0.5`); %k = s32[] constant(`-3`);"
                 " ROOT %e = f32[] constant(`1e-3`); }")
    assert [i.attrs["value"] for i in comp.instructions] == [0.5, -3, 1e-3]
    assert isinstance(comp.instructions[1].attrs["value"], int)


def test_reducer_names_with_an_element_type_mean_the_reducer():
    assert [reducer_of(name) for name in ("add", "sum_f32", "max_bf16", "minimum_s8",
                                          "multiply_u32", "avg", "max_f64", "add_")] == [
        "add", "add", "max", "min", "mul", None, None, None]
