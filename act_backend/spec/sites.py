"""Where each TAIDL API call and each of its arguments was written.

The API records data rather than raising, so that every problem can be reported at once and
pointed at precisely. This module finds the calling frame, reads its source (through
``linecache``, so text an editor registered there is what is read) and locates, with Python's
``ast``, the call and every argument, down to the elements of list literals and to the
characters of string literals (``TextMap``), escapes and implicit concatenation included.

Columns in spans are 1-based and count code points; ``ast`` and frames count UTF-8 bytes.
"""

from __future__ import annotations

import ast
import io
import linecache
import os
import sys
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType

from act_backend.hlo.ir import Span

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# How many frames outside this package are searched for the API call (wrappers are few).
_MAX_FRAMES = 8


# ---------------------------------------------------------------------------------------------
# Text maps: offsets in a string value -> positions in a file


class TextMap:
    """Maps character offsets of a text (a semantics string) to spans in a source file."""

    def span(self, start: int, end: int) -> Span | None:
        raise NotImplementedError


@dataclass(frozen=True)
class OwnTextMap(TextMap):
    """Positions within the text itself (the text is the whole file, or has no file)."""

    text: str
    file: str | None = None

    def span(self, start: int, end: int) -> Span:
        line, col = _offset_to_position(self.text, start)
        end_line, end_col = _offset_to_position(self.text, max(end, start))
        return Span(self.file, line, col, end_line, end_col)


@dataclass(frozen=True)
class FixedTextMap(TextMap):
    """Every offset maps to one span: the text was built (``.format``, a variable) and its
    characters have no place of their own in the source."""

    where: Span | None

    def span(self, start: int, end: int) -> Span | None:
        return self.where


@dataclass(frozen=True)
class LiteralTextMap(TextMap):
    """Character ``i`` of a string literal's value starts at ``positions[i]`` in ``file``;
    ``positions[len(value)]`` is where the literal's body ends."""

    file: str
    positions: tuple[tuple[int, int], ...]

    def span(self, start: int, end: int) -> Span:
        last = len(self.positions) - 1
        start = min(max(start, 0), last)
        end = min(max(end, start), last)
        (line, col), (end_line, end_col) = self.positions[start], self.positions[end]
        return Span(self.file, line, col, end_line, end_col)


def _offset_to_position(text: str, offset: int) -> tuple[int, int]:
    offset = min(max(offset, 0), len(text))
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return line, offset - line_start + 1


def literal_text_map(lines: Sequence[str], line: int, column: int, end_line: int,
                     end_column: int, value: str, file: str | None = None) -> TextMap | None:
    """The map of the string literal written from ``line:column`` to ``end_line:end_column``
    (1-based, end exclusive, columns in code points) of ``lines`` (a file's lines, endings
    kept), for a reader of source text that did not run it (the language server); None when
    the text there is not a plain string literal whose value is ``value``."""
    if not (0 < line <= end_line <= len(lines)):
        return None
    node = ast.Constant(value=value)
    node.lineno, node.end_lineno = line, end_line
    node.col_offset = len(lines[line - 1][:column - 1].encode("utf-8"))
    node.end_col_offset = len(lines[end_line - 1][:end_column - 1].encode("utf-8"))
    span = Span(file, line, column, end_line, end_column)
    return _Source(file or "<string>", list(lines))._literal_map(node, span)


# ---------------------------------------------------------------------------------------------
# Sites: the source of an argument, recursively


@dataclass(frozen=True)
class Site:
    """Where a value was written: its span, and where it is a literal, where its parts are.

    ``items`` holds the sites of a list or tuple literal's elements; ``text`` maps the
    characters of a string literal. Asking for a part that was not written as a literal
    (a variable, a comprehension) answers with the whole value's site, so a problem is
    still placed as precisely as the source allows.
    """

    span: Span | None
    items: tuple[Site, ...] | None = None
    text: TextMap | None = None

    def item(self, index: int) -> Site:
        if self.items is not None and 0 <= index < len(self.items):
            return self.items[index]
        return Site(self.span)

    def at(self, *path: int) -> Site:
        site = self
        for index in path:
            site = site.item(index)
        return site

    def text_map(self) -> TextMap:
        """The map of a string's characters (a fixed one when it is not a plain literal)."""
        return self.text if self.text is not None else FixedTextMap(self.span)

    def text_span(self, start: int, end: int) -> Span | None:
        return self.text_map().span(start, end)


@dataclass(frozen=True)
class CallSite:
    """One API call: the whole call's span and each argument's site by parameter name."""

    span: Span | None
    args: dict[str, Site] = field(default_factory=dict)
    file: str | None = None

    def arg(self, name: str) -> Site:
        return self.args.get(name) or Site(self.span)

    def arg_spans(self) -> dict[str, Span]:
        return {name: site.span for name, site in self.args.items() if site.span is not None}


# ---------------------------------------------------------------------------------------------
# Capturing a call


def capture(callee: str, params: Sequence[str]) -> CallSite:
    """The site of the call to ``callee`` (a function or method name) that is running now.

    Called from inside the API method. Frames of this package are skipped; among the
    others, the innermost whose current call expression calls ``callee`` is taken, so
    wrappers around the API (a tool recording calls) are skipped too. Without such a frame
    the innermost outside frame is used.
    """
    frames = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and len(frames) < _MAX_FRAMES:
        if os.path.dirname(os.path.abspath(frame.f_code.co_filename)) != _PACKAGE_DIR:
            frames.append(frame)
        frame = frame.f_back
    if not frames:
        return CallSite(None)
    for candidate in frames:
        site = _site_in_frame(candidate, callee, params, require_match=True)
        if site is not None:
            return site
    fallback = _site_in_frame(frames[0], callee, params, require_match=False)
    assert fallback is not None
    return fallback


def caller_directory(call: CallSite) -> str:
    """The directory of the file a call was written in (the working directory when the call
    came from an interactive session or a string)."""
    file = call.file
    if file and not (file.startswith("<") and file.endswith(">")) and os.path.exists(file):
        return os.path.dirname(os.path.abspath(file))
    return os.getcwd()


def _site_in_frame(frame: FrameType, callee: str, params: Sequence[str],
                   require_match: bool) -> CallSite | None:
    filename = frame.f_code.co_filename
    lines = linecache.getlines(filename, frame.f_globals)
    position = _frame_position(frame)
    tree = _parse(filename, lines)
    call = (_find_call(_calls_of(filename), position, frame.f_lineno, callee)
            if tree is not None else None)
    if call is None:
        if require_match:
            return None
        return CallSite(_frame_span(filename, lines, frame, position), file=filename)
    source = _Source(filename, lines)
    return CallSite(source.span(call), _bind_args(call, params, source), file=filename)


def _frame_position(frame: FrameType) -> tuple[int, int, int, int] | None:
    """(line, end line, byte column, end byte column) of the instruction the frame runs."""
    try:
        positions = list(frame.f_code.co_positions())
        position = positions[frame.f_lasti // 2]
    except (AttributeError, IndexError):
        return None
    if any(p is None for p in position):
        return None
    return position  # type: ignore[return-value]


def _frame_span(filename: str, lines: list[str], frame: FrameType,
                position: tuple[int, int, int, int] | None) -> Span:
    if position is None:
        line = frame.f_lineno or 1
        return Span(filename, line, 1, line, 1)
    line, end_line, col, end_col = position
    return Span(filename, line, _char_col(lines, line, col), end_line,
                _char_col(lines, end_line, end_col))


# Parsed files, keyed by name; linecache hands out the same list while a file is unchanged,
# so the list's identity tells whether the cached tree is still the file's.
_AST_CACHE: dict[str, tuple[list[str], ast.AST | None, list[ast.Call]]] = {}


def _parse(filename: str, lines: list[str]) -> ast.AST | None:
    cached = _AST_CACHE.get(filename)
    if cached is not None and cached[0] is lines:
        return cached[1]
    try:
        tree: ast.AST | None = ast.parse("".join(lines), filename) if lines else None
    except (SyntaxError, ValueError):
        tree = None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)] if tree is not None else []
    _AST_CACHE[filename] = (lines, tree, calls)
    return tree


def _calls_of(filename: str) -> list[ast.Call]:
    cached = _AST_CACHE.get(filename)
    return cached[2] if cached is not None else []


def _callee_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


def _find_call(calls: list[ast.Call], position: tuple[int, int, int, int] | None,
               lineno: int | None, callee: str) -> ast.Call | None:
    calls = [c for c in calls if _callee_name(c) == callee]
    if position is not None:
        for call in calls:
            if (call.lineno, call.end_lineno, call.col_offset, call.end_col_offset) == position:
                return call
        line = position[0]
    elif lineno is not None:
        line = lineno
    else:
        return None
    # Without an exact position, the innermost call of that name spanning the line.
    around = [c for c in calls if c.lineno <= line <= (c.end_lineno or c.lineno)]
    if not around:
        return None
    return min(around, key=lambda c: ((c.end_lineno or c.lineno) - c.lineno,
                                      (c.end_col_offset or 0) - c.col_offset))


def _bind_args(call: ast.Call, params: Sequence[str], source: _Source) -> dict[str, Site]:
    sites: dict[str, Site] = {}
    for index, node in enumerate(call.args):
        if isinstance(node, ast.Starred):
            break  # positions after *args cannot be told apart
        if index < len(params):
            sites[params[index]] = source.site(node)
    for keyword in call.keywords:
        if keyword.arg is not None and keyword.arg in params:
            sites[keyword.arg] = source.site(keyword.value)
    return sites


def _char_col(lines: list[str], line: int, byte_col: int) -> int:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")) + 1


class _Source:
    """The lines of one file, turning ``ast`` nodes into spans and sites."""

    def __init__(self, filename: str, lines: list[str]):
        self.filename = filename
        self.lines = lines

    def span(self, node: ast.AST) -> Span:
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Span(self.filename, node.lineno, _char_col(self.lines, node.lineno,
                                                          node.col_offset),
                    end_line, _char_col(self.lines, end_line, end_col))

    def site(self, node: ast.AST) -> Site:
        span = self.span(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return Site(span)
            return Site(span, items=tuple(self.site(e) for e in node.elts))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return Site(span, text=self._literal_map(node, span))
        return Site(span)

    def _literal_map(self, node: ast.Constant, span: Span) -> TextMap | None:
        segment = self._segment(node)
        if segment is None:
            return None
        # Parentheses let tokenize read literals split over lines (implicit concatenation).
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO("(" + segment + ")").readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            return None
        value: list[str] = []
        positions: list[tuple[int, int]] = []
        end = (span.line, span.column)
        for token in tokens:
            if token.type != tokenize.STRING:
                continue
            (row, col), _ = token.start, token.end
            line = span.line + row - 1
            column = (span.column + col - 1) if row == 1 else col + 1
            decoded = _decode_literal(token.string, line, column)
            if decoded is None:
                return None
            chars, places, end = decoded
            value.extend(chars)
            positions.extend(places)
        if "".join(value) != node.value:
            return None
        return LiteralTextMap(self.filename, tuple(positions) + (end,))

    def _segment(self, node: ast.AST) -> str | None:
        first, last = node.lineno, node.end_lineno or node.lineno
        if not (0 < first <= last <= len(self.lines)) or node.end_col_offset is None:
            return None
        chunk = [line.encode("utf-8") for line in self.lines[first - 1:last]]
        if len(chunk) == 1:
            chunk[0] = chunk[0][node.col_offset:node.end_col_offset]
        else:
            chunk[0] = chunk[0][node.col_offset:]
            chunk[-1] = chunk[-1][:node.end_col_offset]
        return b"".join(chunk).decode("utf-8", errors="replace")


_SIMPLE_ESCAPES = set("\\'\"abfnrtv")


def _decode_literal(token: str, line: int, column: int
                    ) -> tuple[list[str], list[tuple[int, int]], tuple[int, int]] | None:
    """Characters of one string token with the (line, column) each starts at, and where the
    body ends. None for what is not a plain string literal (bytes, f-strings)."""
    quote_at = min(i for i in (token.find("'"), token.find('"')) if i >= 0)
    prefix = token[:quote_at].lower()
    if "b" in prefix or "f" in prefix or "t" in prefix:
        return None
    raw = "r" in prefix
    quote = token[quote_at:quote_at + 3] if token[quote_at:quote_at + 3] in ('"""', "'''") \
        else token[quote_at]
    body = token[quote_at + len(quote):len(token) - len(quote)]
    line, column = line, column + quote_at + len(quote)
    chars: list[str] = []
    places: list[tuple[int, int]] = []
    i = 0

    def advance(text: str) -> None:
        nonlocal line, column
        for ch in text:
            if ch == "\n":
                line, column = line + 1, 1
            else:
                column += 1

    while i < len(body):
        ch = body[i]
        if ch != "\\" or raw:
            chars.append(ch)
            places.append((line, column))
            advance(ch)
            i += 1
            continue
        piece = _escape_at(body, i)
        if piece == "\\\n":  # a line continuation contributes nothing to the value
            advance(piece)
            i += len(piece)
            continue
        try:
            decoded = "\\" if piece == "\\" else ast.literal_eval('"' + piece + '"')
        except (SyntaxError, ValueError):
            return None
        for ch_out in decoded:
            chars.append(ch_out)
            places.append((line, column))
        advance(piece)
        i += len(piece)
    return chars, places, (line, column)


def _escape_at(body: str, i: int) -> str:
    """The source text of the escape sequence starting at ``body[i] == '\\'``."""
    nxt = body[i + 1] if i + 1 < len(body) else ""
    if nxt == "\n" or nxt in _SIMPLE_ESCAPES:
        return body[i:i + 2]
    if nxt == "x":
        return body[i:i + 4]
    if nxt == "u":
        return body[i:i + 6]
    if nxt == "U":
        return body[i:i + 10]
    if nxt == "N":
        close = body.find("}", i)
        return body[i:close + 1] if close != -1 else body[i:i + 2]
    if nxt in "01234567":
        j = i + 1
        while j < len(body) and j < i + 4 and body[j] in "01234567":
            j += 1
        return body[i:j]
    # An unknown escape keeps its backslash; the next character is read on its own.
    return body[i]
