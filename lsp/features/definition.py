"""Go to definition: a data model name (in a slice, or anywhere in a spec string that names
one) goes to its ``add_data_model`` call; in a kernel, a value name goes to the
instruction that defines it and a ``to_apply`` name to its computation."""

from __future__ import annotations

import re

from lsp.spec.model import SpecModel
from lsp.text_map import Position, TextRange, word_at


def spec_definition(model: SpecModel, lines: list[str], pos: Position) -> TextRange | None:
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


_DEFINES = r"^\s*(?:ROOT\s+)?%?{name}\s*="
_COMPUTATION = r"^\s*(?:ENTRY\s+)?%?{name}\s*[({{]"


def kernel_definition(lines: list[str], pos: Position) -> TextRange | None:
    line, column = pos
    if not 0 <= line < len(lines):
        return None
    text = lines[line]
    word, start, _ = word_at(text, column, ".-")
    if not word:
        return None
    defining = re.compile(_DEFINES.format(name=re.escape(word)))
    computation = re.compile(_COMPUTATION.format(name=re.escape(word)))
    pattern = computation if re.search(r"to_apply\s*=\s*%?$", text[:start]) else defining
    # The definition that governs a use is the nearest one above it in the same computation;
    # searching upwards first finds it, then the whole file (computations come first).
    order = list(range(line, -1, -1)) + list(range(line + 1, len(lines)))
    for index in order:
        match = pattern.match(lines[index])
        if match is not None:
            found = lines[index].find(word, match.start())
            return TextRange((index, found), (index, found + len(word)))
    return None
