"""Inlay hints: after each value of a semantics string or a kernel, the type the toolchain
infers for it (``lsp.inferred``, read through the outline): symbolic in the computational
attributes inside a spec (``→ bf16[@c.n, 64]``), concrete in a kernel."""

from __future__ import annotations

from dataclasses import dataclass

from lsp.hlo_outline import Outline, Value, kernel_outline, semantics_outline
from lsp.spec.model import SpecModel
from lsp.text_map import Position, TextRange

ARROW = "→ "


@dataclass(frozen=True)
class Hint:
    position: Position
    label: str
    tooltip: str


def spec_hints(model: SpecModel, lines: list[str], within: TextRange) -> list[Hint]:
    hints = []
    for acc in model.accelerators:
        for instr in acc.instructions:
            where = instr.semantics_range
            if instr.semantics is None or where is None or not _overlaps(where, within):
                continue
            outline = semantics_outline(instr.semantics, lines, where)
            hints.extend(_hints(outline, within))
    return hints


def kernel_hints(lines: list[str], within: TextRange) -> list[Hint]:
    return _hints(kernel_outline(lines), within)


def _hints(outline: Outline, within: TextRange) -> list[Hint]:
    return [Hint(value.range.end, ARROW + value.inferred, tooltip(value))
            for _, value in outline.values()
            if value.inferred is not None and within.contains(value.range.end)]


def tooltip(value: Value) -> str:
    return (f"`%{value.name}` has the type `{value.inferred}`, as the toolchain infers it "
            f"from the operator and its operands (written `{value.type}`).")


def _overlaps(a: TextRange, b: TextRange) -> bool:
    return a.start <= b.end and b.start <= a.end
