"""The document text a fix reads and edits: the text a span covers, the string literal
there, and the Python call written at a span (``ast``, the language's own parser)."""

from __future__ import annotations

import ast
import functools
from typing import Any

from lsp.text_map import TextRange, byte_col_to_char, span_to_range


def range_of(span: Any) -> TextRange:
    """A 1-based ``Span`` as a 0-based range."""
    return span_to_range(span.line, span.column, span.end_line, span.end_column)


def text_at(lines: list[str], where: TextRange) -> str:
    (line, column), (end_line, end_column) = where.start, where.end
    if not 0 <= line <= end_line < len(lines):
        return ""
    if line == end_line:
        return lines[line][column:end_column]
    return lines[line][column:] + "".join(lines[line + 1:end_line]) + \
        lines[end_line][:end_column]


def string_literal(text: str) -> tuple[str, str] | None:
    """(quote, value) of a plain one-line string literal written as ``text``."""
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        return None
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        return None
    if not isinstance(value, str) or text != f"{text[0]}{value}{text[0]}":
        return None
    return text[0], value


def quoted(quote: str, value: str) -> str:
    return f"{quote}{value}{quote}"


def line_indent(lines: list[str], line: int) -> str:
    text = lines[line] if 0 <= line < len(lines) else ""
    return text[:len(text) - len(text.lstrip(" \t"))]


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> tuple[tuple[tuple[tuple[int, int], ast.Call], ...],
                                 tuple[ast.Assign, ...]]:
    """The calls of ``text`` by where they start (1-based line and column in code points),
    and its assignments, from one parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return (), ()
    lines = text.splitlines(keepends=True)
    calls = []
    assignments = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
            calls.append(((node.lineno, byte_col_to_char(line, node.col_offset) + 1), node))
        elif isinstance(node, ast.Assign):
            assignments.append(node)
    return tuple(calls), tuple(assignments)


def call_at(text: str, span: Any) -> ast.Call | None:
    """The call expression that starts where ``span`` does."""
    return next((node for start, node in _parsed(text)[0] if start == (span.line, span.column)),
                None)


def receiver_of(text: str, span: Any) -> str | None:
    """``instr`` in ``instr.set_inputs(...)``, for the method call at ``span``."""
    call = call_at(text, span)
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    return ast.unparse(call.func.value)


def assigned_name(text: str, span: Any) -> str | None:
    """``instr`` in ``instr = qkv.add_instruction(...)``, for the call at ``span``."""
    call = call_at(text, span)
    if call is None:
        return None
    for node in _parsed(text)[1]:
        if node.value is call and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            return node.targets[0].id
    return None
