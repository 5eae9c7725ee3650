"""Symbols, hover, completion, definition and code lenses as plain functions of a
document's text and the model read from it."""

from __future__ import annotations

import ast
import stat
from pathlib import Path

from lsp.features import completion, definition, hover, lenses, symbols
from lsp.spec.model import from_reading
from lsp.spec.reader import read_spec
from lsp.text_map import TextRange, lines_of

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QKV = (EXAMPLES / "QKV" / "QKV.py").read_text()
KERNEL = (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text()


def model_of(text: str):
    lines = lines_of(text)
    return from_reading(read_spec(ast.parse(text)), lines), lines


def at(text: str, needle: str, offset: int = 0, occurrence: int = 0) -> tuple[int, int]:
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    index += offset
    return text.count("\n", 0, index), index - (text.rfind("\n", 0, index) + 1)


def text_of(lines: list[str], where: TextRange) -> str:
    (line, start), (end_line, end) = where.start, where.end
    assert line == end_line
    return lines[line][start:end]


# ---- symbols -------------------------------------------------------------------------------


def test_spec_symbols_nest_data_models_and_instructions_under_their_accelerator():
    model, lines = model_of(QKV)
    [acc] = symbols.spec_symbols(model)
    assert (acc.name, acc.kind, acc.detail) == ("QKV", "accelerator",
                                                "2 data models, 7 instructions")
    assert [(c.name, c.kind) for c in acc.children[:3]] == [
        ("d1", "data_model"), ("d2", "data_model"), ("load_rm", "instruction")]
    load_rm = acc.children[2]
    assert text_of(lines, load_rm.selection_range) == '"load_rm"'
    # The instruction's range runs from add_instruction to its add_semantics call.
    assert lines[load_rm.range.end[0]].startswith('""")')


def test_an_instruction_without_semantics_says_so():
    text = QKV.replace('instr.add_semantics("""\nENTRY gemm', 'x = ("""\nENTRY gemm')
    model, _ = model_of(text)
    gemm = next(c for c in symbols.spec_symbols(model)[0].children if c.name == "gemm")
    assert gemm.detail.endswith("(no semantics)")


def test_kernel_symbols_are_computations_and_their_values():
    found = symbols.kernel_symbols(lines_of(KERNEL))
    assert [(s.name, s.detail) for s in found] == [("add_bf16", "computation"),
                                                   ("qkv", "entry computation")]
    entry = found[1]
    assert [v.name for v in entry.children][:4] == ["Q", "K", "V", "Kt"]
    assert entry.children[3].detail == "bf16[64,64] transpose"
    assert entry.range.end[0] == 20


# ---- hover ---------------------------------------------------------------------------------


def test_instruction_hover_lists_attributes_buffers_and_operand_shapes():
    model, lines = model_of(QKV)
    found = hover.spec_hover(model, lines, at(QKV, '"load_cm"', 3))
    assert found is not None and text_of(lines, found.range) == '"load_cm"'
    assert "**instruction load_cm** of `QKV`" in found.markdown
    assert "- computational attributes: `n`" in found.markdown
    assert "- `d0` `[@a.addr_in : +@c.n * 128]` — parameter 0: `` u8[`@c.n * 128`] ``" \
        in found.markdown
    assert "- `d1` `[@a.addr_out : +@c.n]` — ROOT: `` bf16[64,`@c.n`] ``" in found.markdown


def test_hover_inside_semantics_explains_operators_and_attributes():
    model, lines = model_of(QKV)
    op = hover.spec_hover(model, lines, at(QKV, "bitcast_convert(%a)", 4))
    assert op.markdown.startswith("**bitcast_convert**")
    assert text_of(lines, op.range) == "bitcast_convert"
    attr = hover.spec_hover(model, lines, at(QKV, "@c.n * 128`] parameter", 2))
    assert attr.markdown.startswith("**@c.n** — computational attribute")


def test_data_model_hover_describes_its_layout():
    model, lines = model_of(QKV)
    found = hover.spec_hover(model, lines, at(QKV, '"d1"', 1, occurrence=1))
    assert "**data model d1** of `QKV`" in found.markdown
    assert "addressable: 128" in found.markdown and "`bf16[64]` unit" in found.markdown
    hbm = hover.spec_hover(model, lines, at(QKV, '"d0"', 1))
    assert hbm.markdown.startswith("**d0** — the accelerator's HBM")


def test_kernel_hover_explains_the_operator_under_the_cursor():
    lines = lines_of(KERNEL)
    found = hover.kernel_hover(lines, at(KERNEL, "dot(bf16", 1))
    assert found.markdown.startswith("**dot**") and "contracting" in found.markdown
    # Elsewhere on the line, nothing: not the opcode, not a value's name or an operand.
    assert hover.kernel_hover(lines, at(KERNEL, "{1,0} dot(bf16", 1)) is None


# ---- completion ----------------------------------------------------------------------------


def labels(items) -> list[str]:
    return [item.label for item in items]


def test_semantics_completion_follows_the_cursor():
    text = QKV.replace("bf16[`@c.n`,64] copy(%In1)", "bf16[`@c.`,64] copy(%In1)")
    model, lines = model_of(text)
    assert labels(completion.spec_completions(model, lines, at(text, "@c.`,64] copy", 3))) \
        == ["n"]
    assert "transpose" in labels(completion.spec_completions(
        model, lines, at(text, "copy(%In1)")))
    dims = completion.spec_completions(model, lines, at(text, "lhs_contracting_dims"))
    assert labels(dims) == ["lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
                            "rhs_batch_dims"]
    assert dims[0].insert_text == "lhs_contracting_dims="


def test_slice_strings_complete_buffers_and_attributes():
    text = QKV.replace('[["d2", ["@a.addr_in"], ["@c.n"]]]', '[["d2", ["@a."], ["@c.n"]]]')
    model, lines = model_of(text)
    assert labels(completion.spec_completions(model, lines, at(text, '"d2", ["@a."]', 1))) \
        == ["d0", "d1", "d2"]
    assert labels(completion.spec_completions(model, lines, at(text, '@a."]', 3))) == [
        "addr_in", "addr_out"]


def test_kernel_completion_offers_operators_after_a_type_and_types_after_equals():
    text = KERNEL.replace("exponential(bf16[64,64]{1,0} %S)", "ex")
    lines = lines_of(text)
    offered = labels(completion.kernel_completions(lines, at(text, "ex\n", 2)))
    assert "exponential" in offered and "reduce" in offered
    assert "bf16" in labels(completion.kernel_completions(lines, at(text, "bf16[] parameter")))
    assert completion.kernel_completions(lines, (0, 3)) == []


# ---- definition ----------------------------------------------------------------------------


def test_a_buffer_name_leads_to_its_data_model():
    model, lines = model_of(QKV)
    found = definition.spec_definition(model, lines, at(QKV, '[["d2", ["@a.addr_in"]', 4))
    assert found is not None and found.start == at(QKV, '"d2", [64]')
    assert definition.spec_definition(model, lines, at(QKV, "import", 2)) is None


def test_a_kernel_value_leads_to_its_definition_and_a_reducer_to_its_computation():
    lines = lines_of(KERNEL)
    found = definition.kernel_definition(lines, at(KERNEL, "%Kt), lhs", 2))
    assert found.start == at(KERNEL, "Kt = bf16")
    reducer = definition.kernel_definition(lines, at(KERNEL, "to_apply=%add_bf16", 11))
    assert reducer.start == at(KERNEL, "add_bf16 (x")


# ---- code lenses ---------------------------------------------------------------------------


def test_each_accelerator_gets_a_generate_lens():
    model, _ = model_of(QKV)
    [lens] = lenses.spec_lenses(model, "file:///QKV.py")
    assert lens.range.start == (8, 0)
    assert (lens.title, lens.command, lens.arguments) == (
        "Generate backend QKV", "act.generateBackend", ["file:///QKV.py", "QKV"])


def test_kernel_lens_uses_the_backends_found_above_the_kernel(tmp_path):
    kernel = tmp_path / "QKV" / "kernels" / "attention.hlo"
    kernel.parent.mkdir(parents=True)
    kernel.write_text(KERNEL)
    [none] = lenses.kernel_lenses("file:///k.hlo", str(kernel))
    assert none.command is None and "no backend found" in none.title
    backends = tmp_path / "QKV" / "backends"
    backends.mkdir()
    for name in ("QKV", "QKV_fast"):
        (backends / name).write_text("#!/bin/sh\n")
        (backends / name).chmod(stat.S_IRWXU)
    (backends / "notes.txt").write_text("not a program")
    found = lenses.kernel_lenses("file:///k.hlo", str(kernel))
    assert [(lens.title, lens.arguments[1]) for lens in found] == [
        ("Compile kernel with QKV", str(backends / "QKV")),
        ("Compile kernel with QKV_fast", str(backends / "QKV_fast"))]
