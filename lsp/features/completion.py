"""Completion: operators, element types, operator attributes, data model names, and the
``@c.``/``@a.`` attributes an instruction declares (inside its semantics string and its
slice expressions).

The context is read from the text before the cursor on its line, so completion works
while the line is half typed; the spec model only says which instruction the cursor is in
and what it declares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from act_backend.hlo import vocabulary
from lsp import hlo_ops
from lsp.spec.model import InstructionInfo, SpecModel
from lsp.text_map import Position

SPEC_DTYPES = vocabulary.element_types(spec=True)
KERNEL_DTYPES = vocabulary.element_types()


@dataclass(frozen=True)
class Item:
    label: str
    kind: str  # "operator" | "dtype" | "attribute" | "data_model" | "field"
    detail: str = ""
    documentation: str = ""
    insert_text: str | None = None


_ATTR_AFTER_AT = re.compile(r"@([ac])\.([\w]*)$")
_AT = re.compile(r"@([\w]*)$")
_AFTER_EQUALS = re.compile(r"=\s*([a-z0-9]*)$")
_AFTER_TYPE = re.compile(r"\]\s*(?:\{[^}]*\})?\s+([\w\-]*)$")
_AFTER_CALL = re.compile(r"\b([\w\-]+)\([^()]*\)\s*(?:,\s*[\w]+=(?:\{[^}]*\}|[^,]*))*,\s*([\w]*)$")


def kernel_completions(lines: list[str], pos: Position) -> list[Item]:
    before = _before(lines, pos)
    return _hlo_items(before, hlo_ops.kernel_operators(), KERNEL_DTYPES, None)


def spec_completions(model: SpecModel, lines: list[str], pos: Position) -> list[Item]:
    before = _before(lines, pos)
    located = model.semantics_at(pos)
    if located is not None:
        _, instr = located
        attrs = _attribute_items(before, instr)
        if attrs is not None:
            return attrs
        return _hlo_items(before, _semantics_operators(), SPEC_DTYPES, instr)
    for acc in model.accelerators:
        for instr in acc.instructions:
            for where, role in instr.slice_literals:
                if not where.contains(pos):
                    continue
                attrs = _attribute_items(before, instr)
                if attrs is not None:
                    return attrs
                if role == "buffer":
                    names = ["d0"] + [dm.name for dm in acc.data_models]
                    return [Item(name, "data_model", f"data model of {acc.name}")
                            for name in names]
                return []
    # A string being typed where the model has no range yet (the file did not parse).
    located_instr = model.instruction_at(pos)
    if located_instr is not None and _in_string(before):
        attrs = _attribute_items(before, located_instr[1])
        if attrs is not None:
            return attrs
    return []


def _before(lines: list[str], pos: Position) -> str:
    line, column = pos
    if not 0 <= line < len(lines):
        return ""
    return lines[line][:column]


def _in_string(before: str) -> bool:
    return (before.count('"') - before.count('\\"')) % 2 == 1 or \
        (before.count("'") - before.count("\\'")) % 2 == 1


def _attribute_items(before: str, instr: InstructionInfo) -> list[Item] | None:
    match = _ATTR_AFTER_AT.search(before)
    if match is not None:
        kind = match.group(1)
        names = instr.comp_attrs if kind == "c" else instr.addr_attrs
        role = "computational" if kind == "c" else "addressing"
        return [Item(name, "attribute", f"{role} attribute of {instr.name}") for name in names]
    match = _AT.search(before)
    if match is not None:
        items = [Item(f"c.{name}", "attribute", f"computational attribute of {instr.name}")
                 for name in instr.comp_attrs]
        items += [Item(f"a.{name}", "attribute", f"addressing attribute of {instr.name}")
                  for name in instr.addr_attrs]
        return items
    return None


def _semantics_operators() -> tuple[str, ...]:
    return hlo_ops.SEMANTICS_OPERATORS


def _operator_attributes(op: str, *, kernel: bool) -> tuple[str, ...]:
    """The attributes with a meaning that ``op`` takes (in a kernel also its kernel-only ones)."""
    found = vocabulary.operator(vocabulary.normalise_opcode(op))
    if found is None:
        return ()
    return found.attributes + (found.kernel_attributes if kernel else ())


def _hlo_items(before: str, operators, dtypes, instr: InstructionInfo | None) -> list[Item]:
    call = _AFTER_CALL.search(before)
    if call is not None:
        op = call.group(1)
        names = _operator_attributes(op, kernel=instr is None)
        return [Item(name, "field", f"attribute of {op}", insert_text=f"{name}=")
                for name in names]
    if _AFTER_TYPE.search(before):
        return [_operator_item(op) for op in operators]
    if _AFTER_EQUALS.search(before):
        return [Item(dtype, "dtype", "element type") for dtype in dtypes]
    return []


def _operator_item(op: str) -> Item:
    doc = hlo_ops.DOCS.get(op)
    return Item(op, "operator", doc.signature if doc else "operator",
                doc.meaning if doc else "")
