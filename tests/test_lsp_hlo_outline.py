"""HLO positions for the editor features come from the real parsers: the kernel parser for
``.hlo`` files and the semantics parser (through the spec front end's map of a string
literal) for semantics strings; text that does not parse keeps the lines that do."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lsp.features import definition, hover, symbols
from lsp.hlo_outline import kernel_outline, semantics_outline
from lsp.spec.model import from_reading
from lsp.spec.reader import read_spec
from lsp.text_map import TextRange, lines_of

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
KERNEL = (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text()
QKV = (EXAMPLES / "QKV" / "QKV.py").read_text()


def text_of(lines: list[str], where: TextRange) -> str:
    (line, start), (end_line, end) = where.start, where.end
    assert line == end_line
    return lines[line][start:end]


def at(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    index = text.index(needle) + offset
    return text.count("\n", 0, index), index - (text.rfind("\n", 0, index) + 1)


# ---- kernels -------------------------------------------------------------------------------


def test_a_kernel_outline_places_names_opcodes_operands_and_references():
    lines = lines_of(KERNEL)
    outline = kernel_outline(lines)
    assert outline.skipped_lines == ()
    assert [(c.name, c.is_entry) for c in outline.computations] == [("add_bf16", False),
                                                                     ("qkv", True)]
    entry = outline.computation("qkv")
    assert text_of(lines, entry.name_range) == "qkv"
    assert lines[entry.range.end[0]].strip() == "}"
    rowsum = entry.value("rowsum")
    assert text_of(lines, rowsum.name_range) == "rowsum"
    assert text_of(lines, rowsum.opcode_range) == "reduce"
    assert (rowsum.type, rowsum.type_text) == ("bf16[64]", "bf16[64]{0}")
    assert [(name, text_of(lines, where)) for name, where in rowsum.operands] == [
        ("E", "E"), ("zero", "zero")]
    assert [name for name, _ in rowsum.attributes] == ["dimensions", "to_apply"]
    assert [(name, text_of(lines, where)) for name, where in rowsum.references] == [
        ("add_bf16", "add_bf16")]
    assert [(v.name, v.parameter) for v in entry.values if v.parameter is not None] == [
        ("Q", 0), ("K", 1), ("V", 2)]


# (what is being typed, the edit, the line left out, values still outlined in the entry)
TYPING = [
    ("an operator half typed", "exponential(bf16[64,64]{1,0} %S)", "ex", "%E =", 10),
    ("an unknown element type", "%S = bf16", "%S = bxf16", "%S =", 10),
    ("a ROOT with no type yet", "ROOT %O = bf16[64,64]{1,0} dot(bf16[64,64]{1,0} %P, "
     "bf16[64,64]{1,0} %V), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     "ROOT %O = ", "ROOT %O", 10),
    ("an operand list left open", "add(bf16[] %x, bf16[] %y)", "add(bf16[] %x,", "%sum =", 11),
]


@pytest.mark.parametrize("what, before, after, skipped, count", TYPING,
                         ids=[t[0] for t in TYPING])
def test_a_kernel_being_typed_keeps_the_lines_that_parse(what, before, after, skipped, count):
    text = KERNEL.replace(before, after, 1)
    lines = lines_of(text)
    outline = kernel_outline(lines)
    assert outline.skipped_lines == (at(text, skipped)[0],), what
    assert len(outline.computation("qkv").values) == count
    # What still parses keeps the parser's exact places: an operand of the divide.
    found = definition.kernel_definition(lines, at(text, "%denom)", 2))
    assert found is not None and found.start == at(text, "denom = bf16")


def test_a_kernel_that_cannot_be_repaired_has_no_outline():
    assert kernel_outline(lines_of("HloModule m\nENTRY %e {\n")).computations == []
    assert symbols.kernel_symbols(lines_of("HloModule m\n(((\n")) == []


def test_kernel_hover_is_for_the_operator_the_parser_read_not_for_any_word():
    text = KERNEL.replace("%zero = bf16[] constant(0)", "%add = bf16[] constant(0)").replace(
        "bf16[] %zero)", "bf16[] %add)")
    lines = lines_of(text)
    # A value named add is a value: hover shows its type, not the operator add.
    for on_value in (at(text, "%add = bf16[] constant", 2), at(text, "bf16[] %add)", 9)):
        assert hover.kernel_hover(lines, on_value).markdown.startswith("**%add**: `bf16[]`")
    on_op = hover.kernel_hover(lines, at(text, "add(bf16[] %x", 1))
    assert on_op is not None and on_op.markdown.startswith("**add**")
    assert text_of(lines, on_op.range) == "add"


def test_an_alias_is_explained_as_written():
    text = KERNEL.replace("exponential(bf16", "exp(bf16")
    lines = lines_of(text)
    found = hover.kernel_hover(lines, at(text, "exp(bf16", 1))
    assert found is not None and text_of(lines, found.range) == "exp"
    [entry] = [s for s in symbols.kernel_symbols(lines) if s.name == "qkv"]
    assert next(c for c in entry.children if c.name == "E").detail == "bf16[64,64] exp"


def test_a_value_name_leads_to_itself_and_an_unknown_operand_nowhere():
    text = KERNEL.replace("divide(bf16[64,64]{1,0} %E", "divide(bf16[64,64]{1,0} %Nope")
    lines = lines_of(text)
    own = definition.kernel_definition(lines, at(text, "%P = bf16", 1))
    assert own is not None and text_of(lines, own) == "P"
    assert definition.kernel_definition(lines, at(text, "%Nope", 2)) is None


# ---- semantics strings ---------------------------------------------------------------------


def spec(text: str):
    lines = lines_of(text)
    return from_reading(read_spec(ast.parse(text)), lines), lines


def instruction(model, name):
    return next(i for a in model.accelerators for i in a.instructions if i.name == name)


def test_semantics_positions_are_placed_in_the_spec_file():
    model, lines = spec(QKV)
    softmax = instruction(model, "softmax")
    outline = semantics_outline(softmax.semantics, lines, softmax.semantics_range)
    [entry] = outline.computations
    assert [(v.name, text_of(lines, v.opcode_range)) for v in entry.values] == [
        ("In1", "parameter"), ("a", "exponential"), ("reduced", "reduce_add"),
        ("b", "broadcast"), ("Out0", "divide")]
    assert entry.value("In1").type_text == "bf16[`@c.n`,64]"


def test_a_semantics_string_with_escapes_is_placed_character_by_character():
    text = ('from act_backend import Accelerator\n'
            'acc = Accelerator("E")\n'
            'i = acc.add_instruction("mov", [], [])\n'
            'i.add_semantics("ENTRY mov {\\n  %In1 = f32[4] parameter(0);\\n'
            '  ROOT %Out0 = f32[4] copy(%In1);\\n}")\n')
    model, lines = spec(text)
    mov = instruction(model, "mov")
    outline = semantics_outline(mov.semantics, lines, mov.semantics_range)
    out0 = outline.computations[0].value("Out0")
    assert out0.opcode_range.start == at(text, "copy(")
    assert text_of(lines, out0.operands[0][1]) == "In1"
    found = definition.spec_definition(model, lines, at(text, "%In1);\\n}", 2))
    assert found is not None and found.start == at(text, "In1 = f32")


def test_a_semantics_text_that_is_not_the_literal_there_has_no_places_in_the_file():
    # A run reports the text a spec built (here: edited after the literal was written);
    # its characters have no place in the file, so nothing is placed rather than misplaced.
    model, lines = spec(QKV)
    softmax = instruction(model, "softmax")
    built = softmax.semantics.replace("exponential(", "exp(")
    assert semantics_outline(built, lines, softmax.semantics_range).computations == []
    assert semantics_outline(built, lines, None).computations[0].value("a").opcode == "exp"


def test_a_semantics_operand_leads_to_its_definition():
    model, lines = spec(QKV)
    found = definition.spec_definition(model, lines, at(QKV, "%reduced), dimensions={0}", 3))
    assert found is not None and found.start == at(QKV, "reduced = bf16")


def test_semantics_being_typed_keep_the_lines_that_parse():
    text = QKV.replace("%a = bf16[`@c.n`,64] exponential(%In1);", "%a = bf16[`@c.n`,64] expo(")
    model, lines = spec(text)
    softmax = instruction(model, "softmax")
    outline = semantics_outline(softmax.semantics, lines, softmax.semantics_range)
    assert [v.name for v in outline.computations[0].values] == ["In1", "reduced", "b", "Out0"]
    found = hover.spec_hover(model, lines, at(text, "divide(%a", 1))
    assert found is not None and found.markdown.startswith("**divide**")


def test_parameter_and_result_types_are_read_by_the_parser():
    model, _ = spec(QKV)
    load_cm = instruction(model, "load_cm")
    assert load_cm.parameter_types() == [(0, "u8[`@c.n * 128`]")]
    assert load_cm.result_type() == "bf16[64,`@c.n`]"
