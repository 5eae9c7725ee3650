"""Go to definition: a data model name (in a slice, or anywhere in a spec string that names
one) goes to its ``add_data_model`` call; in a kernel or a semantics string, an operand
goes to the instruction that defines it and a ``to_apply`` name to its computation, as the
parser placed them (``hlo_outline``)."""

from __future__ import annotations

from lsp.hlo_outline import Outline, kernel_outline, semantics_outline
from lsp.spec.model import SpecModel
from lsp.text_map import Position, TextRange, word_at


def spec_definition(model: SpecModel, lines: list[str], pos: Position) -> TextRange | None:
    inside = _semantics_definition(model, lines, pos)
    if inside is not None:
        return inside
    for acc in model.accelerators:
        for instr in acc.instructions:
            for item in (instr.inputs or []) + (instr.outputs or []):
                if item.buffer_range is not None and item.buffer_range.contains(pos):
                    dm = acc.data_model(item.buffer)
                    return dm.name_range if dm is not None else None
    # A data model named in a string the model does not track (a variable holding it).
    line, column = pos
    if not 0 <= line < len(lines):
        return None
    word, _, _ = word_at(lines[line], column)
    for acc in model.accelerators:
        if not acc.range.start <= pos or not _inside_string(lines[line], column):
            continue
        dm = acc.data_model(word)
        if dm is not None:
            return dm.name_range
    return None


def _inside_string(text: str, column: int) -> bool:
    before = text[:column]
    return before.count('"') % 2 == 1 or before.count("'") % 2 == 1


def kernel_definition(lines: list[str], pos: Position) -> TextRange | None:
    return _definition(kernel_outline(lines), pos)


def _semantics_definition(model: SpecModel, lines: list[str],
                          pos: Position) -> TextRange | None:
    located = model.semantics_at(pos)
    if located is None or located[1].semantics is None:
        return None
    instr = located[1]
    return _definition(semantics_outline(instr.semantics, lines, instr.semantics_range), pos)


def _definition(outline: Outline, pos: Position) -> TextRange | None:
    """An operand leads to the value it names (in its computation first), an attribute that
    names a computation (``to_apply``) to that computation, a value's name to itself."""
    found = outline.value_at(pos)
    if found is None:
        return None
    comp, value = found
    if value.name_range.contains(pos):
        return value.name_range
    for name, where in value.operands:
        if where.contains(pos):
            target = outline.definition_of(name, comp)
            return target.name_range if target is not None else None
    for name, where in value.references:
        if where.contains(pos):
            called = outline.computation(name)
            return called.name_range if called is not None else None
    return None
