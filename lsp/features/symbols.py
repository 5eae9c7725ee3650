"""Document symbols: a spec's accelerators with their data models and instructions, and a
kernel's computations with their instructions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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


_COMPUTATION = re.compile(r"^\s*(?P<entry>ENTRY\s+)?%?(?P<name>[\w.\-]+)\s*(\(|\{)")
_VALUE = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<type>[a-z]+[0-9]*\[[^\]]*\])"
                    r"(?:\{[^}]*\})?\s+(?P<op>[\w\-]+)")


def kernel_symbols(lines: list[str]) -> list[Symbol]:
    """Computations and their instructions, read line by line so that a kernel with a
    syntax error further down still has an outline."""
    symbols: list[Symbol] = []
    current: Symbol | None = None
    for index, line in enumerate(lines):
        text = line.rstrip("\r\n")
        if text.lstrip().startswith("HloModule"):
            continue
        value = _VALUE.match(text)
        if value is not None and current is not None:
            start = value.start("name")
            name_range = TextRange((index, start), (index, value.end("name")))
            whole = TextRange((index, len(text) - len(text.lstrip())), (index, len(text)))
            current.children.append(Symbol(value.group("name"), "value",
                                           f"{value.group('type')} {value.group('op')}",
                                           whole, name_range))
            current.range = TextRange(current.range.start, whole.end)
            continue
        computation = _COMPUTATION.match(text)
        if computation is not None and "=" not in text.split("(")[0]:
            name_range = TextRange((index, computation.start("name")),
                                   (index, computation.end("name")))
            current = Symbol(computation.group("name"), "computation",
                             "entry computation" if computation.group("entry") else "computation",
                             TextRange((index, 0), (index, len(text))), name_range)
            symbols.append(current)
        elif text.strip() == "}" and current is not None:
            current.range = TextRange(current.range.start, (index, len(text)))
            current = None
    return symbols
