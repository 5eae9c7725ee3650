"""Navigation between a kernel and the assembly compiled from it: from an ``api.`` call to the
HLO instructions it implements (go to definition, hover, a code lens) and back (go to
implementation, and a code lens on each HLO instruction naming the calls that cover it).

Which call implements which instruction is the backend's answer (``lsp.compiled``); where
each is written comes from the kernel parser (``hlo_outline``) and Python's parser.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from lsp.compiled import AssemblyCall, Compilation, Compilations, assembly_calls, pair
from lsp.features.hover import HoverResult, code
from lsp.features.lenses import Lens
from lsp.hlo_outline import Computation, Outline, Value, kernel_outline
from lsp.text_map import Position, TextRange, lines_of

# At most this many line numbers are listed per instruction in a lens title.
LINES_SHOWN = 4


@dataclass(frozen=True)
class Pairing:
    """A kernel and its assembly as they are now, and which calls implement what."""

    compiled: Compilation
    kernel_lines: list[str]
    assembly_lines: list[str]
    pairs: list[tuple[AssemblyCall, tuple[str, ...]]]

    def outline(self) -> Outline:
        return kernel_outline(self.kernel_lines)

    def entry(self) -> Computation | None:
        outline = self.outline()
        return next((c for c in outline.computations if c.is_entry), None)

    def value(self, name: str) -> Value | None:
        """The kernel value an HLO name of the report names (the entry's first)."""
        outline = self.outline()
        entry = self.entry()
        if entry is not None:
            return outline.definition_of(name, entry)
        return next((v for _, v in outline.values() if v.name == name), None)

    def calls_of(self, name: str) -> list[AssemblyCall]:
        return [call for call, names in self.pairs if name in names]


def pairing(compilations: Compilations, compiled: Compilation | None,
            read: Callable[[str], str]) -> Pairing | None:
    """The pairing of a compile's kernel and assembly, read with ``read(path)`` (the editor's
    text when open); None without a usable report."""
    if compiled is None:
        return None
    records = compilations.records(compiled)
    if records is None:
        return None
    try:
        kernel, assembly = read(compiled.kernel), read(compiled.assembly)
    except OSError:
        return None
    pairs = pair(assembly_calls(assembly), records)
    if pairs is None:
        return None
    return Pairing(compiled, lines_of(kernel), lines_of(assembly), pairs)


# ---- from the assembly --------------------------------------------------------------------


def call_at(pairing: Pairing, pos: Position) -> tuple[AssemblyCall, tuple[str, ...]] | None:
    return next(((c, names) for c, names in pairing.pairs if c.range.contains(pos)), None)


def assembly_definition(pairing: Pairing, pos: Position) -> list[TextRange]:
    """The kernel instructions the call under the cursor implements (their names)."""
    found = call_at(pairing, pos)
    if found is None:
        return []
    values = [pairing.value(name) for name in found[1]]
    return [v.name_range for v in values if v is not None]


def assembly_hover(pairing: Pairing, pos: Position) -> HoverResult | None:
    found = call_at(pairing, pos)
    if found is None:
        return None
    call, names = found
    kernel = os.path.basename(pairing.compiled.kernel)
    rows = []
    for name in names:
        value = pairing.value(name)
        if value is None:
            rows.append(f"- `%{name}` (not in the kernel as it is now)")
        else:
            rows.append(f"- `%{value.name}` = {code(value.type)} `{value.opcode}` "
                        f"(line {value.range.start[0] + 1})")
    what = "\n".join(rows) if rows else "- nothing the report names"
    return HoverResult(f"**api.{call.instruction}** implements, in `{kernel}`:\n\n{what}",
                       call.name_range)


def assembly_lenses(pairing: Pairing) -> list[Lens]:
    kernel = os.path.basename(pairing.compiled.kernel)
    lenses = []
    for call, names in pairing.pairs:
        line = call.range.start[0]
        shown = ", ".join(f"%{name}" for name in names) or "nothing the report names"
        lenses.append(Lens(TextRange((line, 0), (line, 0)), f"Implements {shown} ({kernel})"))
    return lenses


# ---- from the kernel ----------------------------------------------------------------------


def kernel_implementation(pairing: Pairing, pos: Position) -> list[TextRange]:
    """The assembly calls that implement the kernel instruction under the cursor."""
    found = pairing.outline().value_at(pos)
    if found is None:
        return []
    return [call.name_range for call in pairing.calls_of(found[1].name)]


def kernel_lenses(pairing: Pairing) -> list[Lens]:
    """On each instruction of the entry computation but its parameters: the calls that
    implement it, or that none does (a value folded into a constant, or a view)."""
    entry = pairing.entry()
    if entry is None:
        return []
    assembly = os.path.basename(pairing.compiled.assembly)
    lenses = []
    for value in entry.values:
        if value.parameter is not None:
            continue
        line = value.range.start[0]
        where = TextRange((line, 0), (line, 0))
        calls = pairing.calls_of(value.name)
        if calls:
            lenses.append(Lens(where, f"Implemented by {_calls_text(calls)} in {assembly}"))
        else:
            lenses.append(Lens(where, f"Implemented by no instruction of {assembly}"))
    return lenses


def _calls_text(calls: list[AssemblyCall]) -> str:
    """``api.load_rm (line 9), api.gemm (lines 12, 15)``: calls by instruction, in order."""
    lines: dict[str, list[int]] = {}
    for call in calls:
        lines.setdefault(call.instruction, []).append(call.range.start[0] + 1)
    parts = []
    for name, numbers in lines.items():
        shown = ", ".join(str(n) for n in numbers[:LINES_SHOWN])
        if len(numbers) > LINES_SHOWN:
            shown += f", … ({len(numbers)} calls)"
        noun = "line" if len(numbers) == 1 else "lines"
        parts.append(f"api.{name} ({noun} {shown})")
    return ", ".join(parts)
