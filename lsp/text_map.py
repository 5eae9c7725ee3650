"""Positions in document text: spans to ranges, and string literals to their source.

Everything here works in *server units*: 0-based lines and 0-based columns counted in
code points (Python ``str`` indices). Conversion to the client's encoding (UTF-16 by
default) happens once, at the protocol boundary (``convert.py``).

The literal map answers "where in the Python file is character ``i`` of this string's
value?", so that a problem found inside a semantics string (reported relative to the
string) lands on the exact token in the spec, escapes and implicit concatenation included.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

Position = tuple[int, int]  # (line, column), both 0-based, column in code points


@dataclass(frozen=True)
class TextRange:
    """A half-open range of document text in server units."""

    start: Position
    end: Position

    def contains(self, pos: Position) -> bool:
        return self.start <= pos <= self.end


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


class LiteralMap:
    """Where each character of a string constant's value sits in the source.

    ``positions[i]`` is the source position of value character ``i``; one extra entry
    marks the position just after the last character (before the closing quote).
    """

    def __init__(self, value: str, positions: list[Position]):
        self.value = value
        self.positions = positions
        self._line_starts = [0]
        for index, char in enumerate(value):
            if char == "\n":
                self._line_starts.append(index + 1)

    def offset(self, line: int, column: int) -> int:
        """The value offset of a 1-based (line, column) inside the value, clamped."""
        line = min(max(line, 1), len(self._line_starts))
        offset = self._line_starts[line - 1] + max(column - 1, 0)
        return min(offset, len(self.value))

    def position(self, offset: int) -> Position:
        return self.positions[min(max(offset, 0), len(self.positions) - 1)]

    def span_range(self, line: int, column: int, end_line: int, end_column: int) -> TextRange:
        """A 1-based, end-exclusive span relative to the value, as a source range."""
        start = self.offset(line, column)
        end = max(self.offset(end_line, end_column), start)
        return TextRange(self.position(start), self.position(end))

    def value_offset_at(self, pos: Position) -> int | None:
        """The value offset whose source position is ``pos`` (None when outside)."""
        for index, candidate in enumerate(self.positions):
            if candidate == pos:
                return index
        return None


def literal_map(lines: list[str], node: ast.Constant) -> LiteralMap | None:
    """Map a ``str`` constant back to its source; None if the source cannot be matched
    (an f-string piece, a tokenizer surprise), in which case callers fall back to the
    range of the whole node."""
    if not isinstance(node.value, str):
        return None
    whole = node_range(lines, node)
    (line0, col0), (line1, col1) = whole.start, whole.end
    segment_lines = [_line(lines, i) for i in range(line0, line1 + 1)]
    if not segment_lines:
        return None
    segment_lines[-1] = segment_lines[-1][:col1]
    segment_lines[0] = segment_lines[0][col0:]
    segment = "".join(segment_lines)
    positions: list[Position] = []
    try:
        # Parentheses let the tokenizer accept pieces split over lines.
        tokens = list(tokenize.generate_tokens(io.StringIO("(" + segment + ")").readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    for token in tokens:
        if token.type != tokenize.STRING:
            continue
        (tline, tcol) = token.start
        # Undo the "(" added on the first line and shift to document coordinates.
        doc_line = line0 + tline - 1
        doc_col = (col0 + tcol - 1) if tline == 1 else tcol
        piece = _decode_piece(token.string, doc_line, doc_col)
        if piece is None:
            return None
        positions.extend(piece)
    if len(positions) != len(node.value):
        return None
    closing = _closing_position(tokens, line0, col0)
    positions.append(closing if closing is not None else whole.end)
    return LiteralMap(node.value, positions)


def _closing_position(tokens: list[tokenize.TokenInfo], line0: int, col0: int) -> Position | None:
    strings = [t for t in tokens if t.type == tokenize.STRING]
    if not strings:
        return None
    last = strings[-1]
    quote = _quote_of(last.string)
    (eline, ecol) = last.end
    doc_line = line0 + eline - 1
    doc_col = (col0 + ecol - 1) if eline == 1 else ecol
    return (doc_line, doc_col - len(quote))


def _quote_of(token: str) -> str:
    body = token.lstrip("rRuUbBfF")
    for quote in ('"""', "'''", '"', "'"):
        if body.startswith(quote):
            return quote
    return '"'


_SIMPLE_ESCAPES = set("\\'\"abfnrtv")


def _decode_piece(token: str, line: int, col: int) -> list[Position] | None:
    """Source positions of the characters one string token contributes to the value."""
    prefix_len = len(token) - len(token.lstrip("rRuUbBfF"))
    prefix = token[:prefix_len].lower()
    if "b" in prefix or "f" in prefix:
        return None
    raw = "r" in prefix
    quote = _quote_of(token)
    body = token[prefix_len + len(quote): len(token) - len(quote)]
    col += prefix_len + len(quote)
    out: list[Position] = []
    i = 0

    def advance(text: str) -> None:
        nonlocal line, col
        for char in text:
            if char == "\n":
                line, col = line + 1, 0
            else:
                col += 1

    while i < len(body):
        char = body[i]
        if char == "\r":
            # The tokenizer turns CRLF (and a lone CR) into one newline.
            out.append((line, col))
            step = 2 if body[i + 1: i + 2] == "\n" else 1
            line, col = line + 1, 0
            i += step
            continue
        if char != "\\" or raw:
            out.append((line, col))
            advance(char)
            i += 1
            if raw and char == "\\" and i < len(body):
                # In a raw string a backslash still keeps the next character literal.
                out.append((line, col))
                advance(body[i])
                i += 1
            continue
        length, produces = _escape(body, i)
        if produces:
            out.append((line, col))
        advance(body[i: i + length])
        i += length
    return out


def _escape(body: str, i: int) -> tuple[int, bool]:
    """The length of the escape at ``body[i]`` and whether it produces a character."""
    nxt = body[i + 1: i + 2]
    if nxt in ("\n", "\r"):
        return (3 if body[i + 1: i + 3] == "\r\n" else 2), False
    if nxt in _SIMPLE_ESCAPES:
        return 2, True
    if nxt in "01234567" and nxt:
        length = 2
        while length < 4 and body[i + length: i + length + 1] in tuple("01234567"):
            length += 1
        return length, True
    if nxt == "x":
        return 4, True
    if nxt == "u":
        return 6, True
    if nxt == "U":
        return 10, True
    if nxt == "N":
        close = body.find("}", i)
        return (close - i + 1 if close >= 0 else 2), True
    # An unknown escape keeps its backslash: two characters, each its own position.
    # Only the backslash is consumed here; the next character is read normally.
    return 1, True
