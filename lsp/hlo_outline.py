"""Where things are in HLO text, read by the real parsers: the computations of a kernel
(``act_backend.kernel.parse_hlo``) or of a semantics string (``act_backend.spec.semantics``),
each value with the ranges of its name, opcode, type, operands and attributes.

Features (symbols, hover, definition, inlay hints) read this outline instead of matching the
text themselves, so they see exactly what the toolchain sees; each value also carries the type
the toolchain's inference gives it (``lsp.inferred``).

Text being typed rarely parses. Then a line is blanked (replaced by spaces, so every other
position stays where it is) and the text parsed again, up to ``MAX_REPAIRS`` times: the
outline holds every value on the lines that do parse, with the parser's exact ranges, and
lists the lines it left out. The line blanked is the one the parser stopped at, or the line
written before it, whichever lets the parser read further: an unfinished line is often only
refused at the next one (``%e = f32[4] ex`` at the next line's ``=``). Text that still does
not parse after that (an unclosed computation, say) has an empty outline.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from act_backend.hlo.ir import Instruction, Module, Span
from lsp.text_map import Position, TextRange, lines_of, span_to_range

# How many lines may be blanked before a text is given up on.
MAX_REPAIRS = 8
# Attributes that name a computation of the module.
COMPUTATION_REFERENCES = ("to_apply", "calls")


@dataclass(frozen=True)
class Value:
    """One instruction, ``[ROOT] name = type opcode(operands), attributes``, as written."""

    name: str
    name_range: TextRange  # without the ``%``
    opcode: str  # as written (``exp``, not the normalised ``exponential``)
    opcode_range: TextRange
    type: str  # the type read (``bf16[64,64]``)
    type_text: str  # as written, layout and backquoted expressions included
    range: TextRange
    operands: tuple[tuple[str, TextRange], ...] = ()  # each name without its ``%``
    attributes: tuple[tuple[str, TextRange], ...] = ()  # each ``name=value``
    references: tuple[tuple[str, TextRange], ...] = ()  # computations named by attributes
    parameter: int | None = None  # the index of a ``parameter(i)``
    is_root: bool = False
    inferred: str | None = None  # the type ``act_backend.hlo.infer`` gives it, if any


@dataclass
class Computation:
    name: str
    name_range: TextRange
    is_entry: bool
    range: TextRange  # from the header to the closing brace
    values: list[Value] = field(default_factory=list)

    def value(self, name: str) -> Value | None:
        return next((v for v in self.values if v.name == name), None)


@dataclass
class Outline:
    computations: list[Computation] = field(default_factory=list)
    # 0-based document lines left out because they did not parse.
    skipped_lines: tuple[int, ...] = ()

    def values(self) -> list[tuple[Computation, Value]]:
        return [(c, v) for c in self.computations for v in c.values]

    def computation(self, name: str) -> Computation | None:
        return next((c for c in self.computations if c.name == name), None)

    def value_at(self, pos: Position) -> tuple[Computation, Value] | None:
        for comp, value in self.values():
            if value.range.contains(pos):
                return comp, value
        return None

    def definition_of(self, name: str, comp: Computation) -> Value | None:
        """The value ``name`` in ``comp``, else in any computation (names are module-wide in
        XLA's own printing)."""
        found = comp.value(name)
        if found is not None:
            return found
        return next((v for _, v in self.values() if v.name == name), None)


# ---- kernels -------------------------------------------------------------------------------


def kernel_outline(lines: list[str]) -> Outline:
    """The outline of a kernel's text (``lines`` as ``text_map.lines_of`` splits it)."""
    return _kernel_outline("".join(lines))


@functools.lru_cache(maxsize=8)
def _kernel_outline(text: str) -> Outline:
    try:
        from act_backend.kernel import HloSyntaxError, parse_hlo
        from lsp.inferred import kernel_types
    except ImportError:  # a server without the toolchain: no outline, no error
        return Outline()

    def parse(text: str) -> Module:
        return parse_hlo(text)

    def failed_at(error: Exception) -> Position | None:
        if isinstance(error, HloSyntaxError):
            return error.line - 1, error.column - 1
        return None

    parsed = _parse_repairing(lines_of(text), parse, failed_at)
    if parsed is None:
        return Outline()
    module, repaired, skipped = parsed
    # Blanking kept every position: the repaired lines place the same values, and the
    # closing braces are searched for where the parser read them.
    return _outline(module, lines_of(repaired), skipped, _kernel_computation_range,
                    kernel_types)


# ---- semantics strings ---------------------------------------------------------------------


def semantics_outline(text: str, lines: list[str], literal: TextRange | None,
                      file: str | None = None) -> Outline:
    """The outline of one instruction's semantics ``text``, in document positions.

    ``literal`` is where the string literal holding ``text`` is written in ``lines``; its
    characters are placed by the TAIDL front end's map of the literal (escapes and implicit
    concatenation included). When what is written there is not a plain literal with that
    value (a string built at run time), the outline is empty: nothing has a place in the
    file. Without ``literal``, positions are within ``text`` itself (``lines`` unused).
    """
    return _semantics_outline(text, "".join(lines), literal, file)


@functools.lru_cache(maxsize=32)
def _semantics_outline(text: str, document: str, literal: TextRange | None,
                       file: str | None) -> Outline:
    try:
        from act_backend.spec.semantics import SemanticsError, parse_semantics
        from act_backend.spec.sites import OwnTextMap, literal_text_map
        from lsp.inferred import semantics_types
    except ImportError:  # a server without the toolchain: no outline, no error
        return Outline()
    lines = lines_of(document)

    def parse(repaired: str) -> Module:
        return parse_semantics(repaired, OwnTextMap(repaired))

    def failed_at(error: Exception) -> Position | None:
        if isinstance(error, SemanticsError) and error.span is not None:
            return error.span.line - 1, error.span.column - 1
        return None

    parsed = _parse_repairing(lines_of(text), parse, failed_at)
    if parsed is None:
        return Outline()
    module, repaired, skipped = parsed
    if literal is None:
        return _outline(module, lines_of(repaired), skipped, _semantics_computation_range,
                        semantics_types)
    (line, column), (end_line, end_column) = literal.start, literal.end
    text_map = literal_text_map(lines, line + 1, column + 1, end_line + 1, end_column + 1,
                                text, file)
    if text_map is None:  # not a plain literal of this text: nothing has a place in the file
        return Outline()
    # The repaired text has the literal's length and line breaks: the map places it too.
    return _outline(parse_semantics(repaired, text_map), lines, (),
                    _semantics_computation_range, semantics_types)


# ---- building the outline ------------------------------------------------------------------


def _parse_repairing(lines: list[str], parse: Callable[[str], Module],
                     failed_at: Callable[[Exception], Position | None]
                     ) -> tuple[Module, str, tuple[int, ...]] | None:
    """``parse`` of the text, blanking a line at each failure (see the module's docstring):
    the module, the text it was parsed from and the lines blanked; or None."""

    def attempt(candidate: list[str]) -> tuple[Module | None, Position | None]:
        try:
            return parse("".join(candidate)), None
        except Exception as error:  # noqa: BLE001 - any refusal of the text is "not parsed"
            return None, failed_at(error)

    current = list(lines)
    skipped: list[int] = []
    module, at = attempt(current)
    for _ in range(MAX_REPAIRS):
        if module is not None or at is None:
            break
        best: tuple[tuple[int, Position], int, list[str], Module | None, Position | None] | None
        best = None
        for line in _lines_to_try(current, at):
            if line in skipped:
                continue
            trial = list(current)
            trial[line] = _blank(trial[line])
            trial_module, trial_at = attempt(trial)
            # Parsing is best; else stopping later; a failure without a place is worst.
            score = (1, (0, 0)) if trial_module is not None else (0, trial_at or (-1, -1))
            if best is None or score > best[0]:
                best = (score, line, trial, trial_module, trial_at)
        if best is None:
            return None
        _, line, current, module, at = best
        skipped.append(line)
    if module is None:
        return None
    return module, "".join(current), tuple(sorted(skipped))


def _lines_to_try(lines: list[str], at: Position) -> list[int]:
    """The line the parser stopped at and the last line written before it (the last line
    written, when the text ended too early)."""
    line = at[0]
    if line >= len(lines):
        last = _last_written(lines, len(lines))
        return [last] if last is not None else []
    if line < 0:
        return []
    before = _last_written(lines, line)
    return [line] + ([before] if before is not None else [])


def _last_written(lines: list[str], before: int) -> int | None:
    """The last line before ``before`` with text on it."""
    for index in range(before - 1, -1, -1):
        if lines[index].strip():
            return index
    return None


def _blank(line: str) -> str:
    body = line.rstrip("\r\n")
    return " " * len(body) + line[len(body):]


def _outline(module: Module, lines: list[str], skipped: tuple[int, ...],
             computation_range: Callable[[list[str], TextRange, list[Value]], TextRange],
             types_of: Callable[[Module], dict[tuple[str, str], Any]]) -> Outline:
    outline = Outline(skipped_lines=tuple(sorted(skipped)))
    for comp in module.computations:
        values = [v for v in (_value(i, lines) for i in comp.instructions) if v is not None]
        header = _range(comp.span)
        if header is None:
            continue
        name_range = _tail(header, comp.name)
        outline.computations.append(Computation(
            comp.name, name_range, comp.is_entry, computation_range(lines, header, values),
            values))
    # Inferred once every value is read: inference may rewrite the module (splats).
    from lsp.inferred import type_text

    types = types_of(module)
    for comp in outline.computations:
        comp.values = [dataclasses.replace(v, inferred=type_text(types[(comp.name, v.name)]))
                       if (comp.name, v.name) in types else v for v in comp.values]
    return outline


def _value(instr: Instruction, lines: list[str]) -> Value | None:
    spans = instr.spans
    name, opcode, whole = (_range(spans.get("name")), _range(spans.get("opcode")),
                           _range(instr.span))
    kind = _range(spans.get("type"))
    if name is None or opcode is None or whole is None or kind is None:
        return None
    operands = []
    for index, operand in enumerate(instr.operands):
        where = _range(spans.get(f"operand:{index}"))
        if where is not None:
            operands.append((operand, _tail(where, operand)))
    attributes = []
    references = []
    for key, span in spans.items():
        if not key.startswith("attr:") or key in ("attr:index", "attr:value"):
            continue
        where = _range(span)
        if where is None:
            continue
        attr = key[len("attr:"):]
        attributes.append((attr, where))
        target = instr.attrs.get(attr)
        if attr in COMPUTATION_REFERENCES and isinstance(target, str):
            references.append((target, _tail(where, target)))
    index = instr.attrs.get("index") if instr.opcode == "parameter" else None
    return Value(instr.name, _without_percent(name, lines), _text(lines, opcode), opcode,
                 str(instr.type), _text(lines, kind), whole, tuple(operands), tuple(attributes),
                 tuple(references), index if isinstance(index, int) else None, instr.is_root)


def _kernel_computation_range(lines: list[str], header: TextRange,
                              values: list[Value]) -> TextRange:
    """From the header's line to the brace that closes the body: the first ``}`` after the
    last value (after the header's ``{`` for an empty body) outside a comment."""
    line, column = values[-1].range.end if values else header.end
    if not values:
        line, column = _after(lines, (line, column), "{")
    end = _after(lines, (line, column), "}")
    return TextRange((header.start[0], 0), end)


def _semantics_computation_range(lines: list[str], header: TextRange,
                                 values: list[Value]) -> TextRange:
    end = values[-1].range.end if values else header.end
    return TextRange(header.start, end)


def _after(lines: list[str], pos: Position, char: str) -> Position:
    """Just after the first ``char`` at or after ``pos`` (``//`` comments skipped); ``pos``
    when there is none."""
    line, column = pos
    while line < len(lines):
        text = lines[line].rstrip("\r\n")
        comment = text.find("//", column)
        found = text.find(char, column, comment if comment >= 0 else len(text))
        if found >= 0:
            return line, found + 1
        line, column = line + 1, 0
    return pos


def _range(span: Span | None) -> TextRange | None:
    if span is None:
        return None
    return span_to_range(span.line, span.column, span.end_line, span.end_column)


def _text(lines: list[str], where: TextRange) -> str:
    (line, column), (end_line, end_column) = where.start, where.end
    if not 0 <= line < len(lines):
        return ""
    if line == end_line:
        return lines[line][column:end_column]
    parts = [lines[line][column:]] + lines[line + 1:end_line] + \
        [lines[end_line][:end_column] if end_line < len(lines) else ""]
    return "".join(parts)


def _without_percent(where: TextRange, lines: list[str]) -> TextRange:
    if _text(lines, where).startswith("%"):
        return TextRange((where.start[0], where.start[1] + 1), where.end)
    return where


def _tail(where: TextRange, name: str) -> TextRange:
    """The range of ``name`` written at the end of ``where`` (a typed operand ``bf16[4] %x``,
    an attribute ``to_apply=%add``)."""
    line, column = where.end
    return TextRange((line, max(column - len(name), 0)), where.end)
