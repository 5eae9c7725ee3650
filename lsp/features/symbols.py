"""Document symbols: a spec's accelerators with their data models and instructions, and a
kernel's computations with their instructions."""

from __future__ import annotations

from dataclasses import dataclass, field

from lsp.hlo_outline import kernel_outline
from lsp.spec.model import SpecModel
from lsp.text_map import TextRange


@dataclass
class Symbol:
    name: str
    kind: str  # "accelerator" | "data_model" | "instruction" | "computation" | "value"
    detail: str
    range: TextRange
    selection_range: TextRange
    children: list[Symbol] = field(default_factory=list)


def spec_symbols(model: SpecModel) -> list[Symbol]:
    symbols = []
    for acc in model.accelerators:
        children = []
        for dm in acc.data_models:
            children.append(Symbol(dm.name, "data_model", _data_model_detail(dm), dm.range,
                                   dm.name_range))
        for instr in acc.instructions:
            detail = _attrs_detail(instr.comp_attrs, instr.addr_attrs)
            if instr.semantics is None:
                detail += " (no semantics)"
            whole = _union([instr.range, *instr.call_ranges])
            children.append(Symbol(instr.name, "instruction", detail, whole, instr.name_range))
        whole = _union([acc.range] + [c.range for c in children])
        detail = f"{len(acc.data_models)} data models, {len(acc.instructions)} instructions"
        symbols.append(Symbol(acc.name, "accelerator", detail, whole, acc.name_range, children))
    return symbols


def _data_model_detail(dm) -> str:
    return f"{dm.dtype} access {dm.access_dims} unit {dm.unit_dims}"


def _attrs_detail(comp: list[str], addr: list[str]) -> str:
    return f"comp [{', '.join(comp)}] addr [{', '.join(addr)}]"


def _union(ranges: list[TextRange]) -> TextRange:
    """One range covering all of ``ranges`` (calls of a loop body may repeat)."""
    return TextRange(min(r.start for r in ranges), max(r.end for r in ranges))


def kernel_symbols(lines: list[str]) -> list[Symbol]:
    """Computations and their instructions, as the kernel parser reads them; a kernel with a
    syntax error further down still has an outline (``hlo_outline``: the lines that do not
    parse are left out)."""
    found = []
    for comp in kernel_outline(lines).computations:
        children = [Symbol(value.name, "value", f"{value.type} {value.opcode}", value.range,
                           value.name_range) for value in comp.values]
        found.append(Symbol(comp.name, "computation",
                            "entry computation" if comp.is_entry else "computation",
                            comp.range, comp.name_range, children))
    return found
