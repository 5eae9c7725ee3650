"""Inferred types in the editor: an inlay hint after every value of a semantics string
(symbolic in the computational attributes) and of a kernel, and the same type in hover on a
value's name or an operand naming it; all from the toolchain's own inference."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lsp.features import hover, inlay_hints
from lsp.spec.model import from_reading
from lsp.spec.reader import read_spec
from lsp.text_map import TextRange, lines_of

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QKV = (EXAMPLES / "QKV" / "QKV.py").read_text()
KERNEL = (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text()
EVERYWHERE = TextRange((0, 0), (10_000, 0))


def model_of(text: str):
    lines = lines_of(text)
    return from_reading(read_spec(ast.parse(text)), lines), lines


def at(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    index = text.index(needle) + offset
    return text.count("\n", 0, index), index - (text.rfind("\n", 0, index) + 1)


def hints_by_line(hints, lines) -> dict[str, str]:
    """Each hint's label by the text of its line before it."""
    return {lines[h.position[0]][:h.position[1]].strip(): h.label for h in hints}


def test_every_value_of_a_semantics_string_gets_its_inferred_type():
    model, lines = model_of(QKV)
    found = hints_by_line(inlay_hints.spec_hints(model, lines, EVERYWHERE), lines)
    softmax = {line: label for line, label in found.items() if "`@c.n`" in line}
    assert softmax["%a = bf16[`@c.n`,64] exponential(%In1);"] == "→ bf16[@c.n, 64]"
    assert softmax["%reduced = bf16[`@c.n`] reduce_add(%a), dimensions={1};"] == \
        "→ bf16[@c.n]"
    assert found["%In1 = u8[`@c.n * 128`] parameter(0);"] == "→ u8[@c.n * 128]"
    assert found["ROOT %Out0 = bf16[64,`@c.n`] transpose(%b), dimensions={1,0};"] == \
        "→ bf16[64, @c.n]"
    gemm = "ROOT %Out0 = bf16[64,64] dot(%In1, %In2), lhs_contracting_dims={1}, " \
           "rhs_contracting_dims={0};"
    assert found[gemm] == "→ bf16[64, 64]"
    # One hint per value: 3 + 4 + 3 + 4 + 2 + 3 + 5 values in the seven instructions.
    assert len(inlay_hints.spec_hints(model, lines, EVERYWHERE)) == 24


def hint_of(text: str, line: str) -> str | None:
    model, lines = model_of(text)
    return hints_by_line(inlay_hints.spec_hints(model, lines, EVERYWHERE), lines).get(line)


REDUCED = "%reduced = bf16[`@c.n`] reduce_add(%a), dimensions={1};"


@pytest.mark.parametrize(("written", "hint"), [
    # What the operator makes from its operands, whatever the declaration says...
    ("%reduced = bf16[64] reduce_add(%a), dimensions={0};", "→ bf16[64]"),
    # ...a declared 32 may be right (when n is 32): the hint says what it must be.
    ("%reduced = bf16[32] reduce_add(%a), dimensions={1};", "→ bf16[@c.n]"),
    # A declaration inference refuses has no hint (the diagnostic says why).
    ("%reduced = bf16[32,2] reduce_add(%a), dimensions={1};", None),
])
def test_the_hint_is_the_inferred_type_not_the_declared_one(written, hint):
    text = QKV.replace(REDUCED, written)
    assert hint_of(text, written) == hint
    assert hint_of(text, "%a = bf16[`@c.n`,64] exponential(%In1);") == "→ bf16[@c.n, 64]"


def test_hints_are_given_for_the_range_asked_only():
    model, lines = model_of(QKV)
    line = at(QKV, "%a = bf16[`@c.n`,64] exponential")[0]
    found = inlay_hints.spec_hints(model, lines, TextRange((line, 0), (line + 1, 0)))
    assert [h.label for h in found] == ["→ bf16[@c.n, 64]"]


def test_every_kernel_instruction_gets_its_type():
    lines = lines_of(KERNEL)
    found = inlay_hints.kernel_hints(lines, EVERYWHERE)
    assert len(found) == 14
    by_line = hints_by_line(found, lines)
    assert by_line["%rowsum = bf16[64]{0} reduce(bf16[64,64]{1,0} %E, bf16[] %zero), "
                   "dimensions={1}, to_apply=%add_bf16"] == "→ bf16[64]"
    assert by_line["ROOT %sum = bf16[] add(bf16[] %x, bf16[] %y)"] == "→ bf16[]"


@pytest.mark.parametrize(("needle", "offset", "shown"), [
    ("%reduced = bf16", 1, "**%reduced**: `bf16[@c.n]`"),  # a value's name
    ("broadcast(%reduced)", 11, "**%reduced**: `bf16[@c.n]`"),  # an operand naming it
    ("divide(%a, %b)", 9, "**%a**: `bf16[@c.n, 64]`"),
])
def test_hover_on_a_value_or_operand_shows_its_inferred_type(needle, offset, shown):
    model, lines = model_of(QKV)
    found = hover.spec_hover(model, lines, at(QKV, needle, offset))
    assert found is not None and found.markdown.startswith(shown)


def test_kernel_hover_on_an_operand_shows_its_type():
    lines = lines_of(KERNEL)
    found = hover.kernel_hover(lines, at(KERNEL, "%rowsum), dimensions={0}", 2))
    assert found.markdown.startswith("**%rowsum**: `bf16[64]`")
