"""Positions in document text: spans and syntax-tree nodes to ranges, words at a position.

Everything here works in *server units*: 0-based lines and 0-based columns counted in
code points (Python ``str`` indices). Conversion to the client's encoding (UTF-16 by
default) happens once, at the protocol boundary (``convert.py``). Mapping characters of a
string literal to the file is the TAIDL front end's (``act_backend.spec.sites``): problems
arrive already placed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")

Position = tuple[int, int]  # (line, column), both 0-based, column in code points


@dataclass(frozen=True)
class TextRange:
    """A half-open range of document text in server units."""

    start: Position
    end: Position

    def contains(self, pos: Position) -> bool:
        return self.start <= pos <= self.end


def lines_of(text: str) -> list[str]:
    """Document lines, endings kept, split where the protocol and Python's tokenizer split
    (CR, LF, CRLF only; ``str.splitlines`` would also split at form feeds and U+2028)."""
    return _LINE.findall(text) or [""]


def span_to_range(line: int, column: int, end_line: int, end_column: int) -> TextRange:
    """A 1-based, end-exclusive span (``act_backend.hlo.ir.Span``) as a 0-based range."""
    start = (max(line - 1, 0), max(column - 1, 0))
    end = (max(end_line - 1, 0), max(end_column - 1, 0))
    if end < start:
        end = start
    return TextRange(start, end)


def line_range(lines: list[str], line: int) -> TextRange:
    """The non-blank part of a 0-based line (the whole line when it is blank)."""
    if not lines:
        return TextRange((0, 0), (0, 0))
    line = min(max(line, 0), len(lines) - 1)
    text = lines[line].rstrip("\r\n")
    stripped = text.lstrip()
    start = len(text) - len(stripped)
    return TextRange((line, start), (line, max(len(text.rstrip()), start)))


def byte_col_to_char(line_text: str, byte_col: int) -> int:
    """``ast`` columns are UTF-8 byte offsets; turn one into a code point column."""
    return len(line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def node_range(lines: list[str], node: ast.AST) -> TextRange:
    """The source range of an ``ast`` node (which must carry positions)."""
    line = node.lineno - 1
    end_line = (node.end_lineno or node.lineno) - 1
    end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
    start = (line, byte_col_to_char(_line(lines, line), node.col_offset))
    end = (end_line, byte_col_to_char(_line(lines, end_line), end_col))
    return TextRange(start, end)


def _line(lines: list[str], index: int) -> str:
    return lines[index] if 0 <= index < len(lines) else ""


def word_at(line_text: str, column: int, extra: str = "") -> tuple[str, int, int]:
    """The identifier-like word around ``column``: (word, start, end). ``extra`` lists
    characters that count as part of a word besides letters, digits and ``_``."""
    def is_word(ch: str) -> bool:
        return ch.isalnum() or ch == "_" or ch in extra

    start = column
    while start > 0 and is_word(line_text[start - 1]):
        start -= 1
    end = column
    while end < len(line_text) and is_word(line_text[end]):
        end += 1
    return line_text[start:end], start, end
