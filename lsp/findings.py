"""Diagnostics as plain data (``Finding``), and how problems become findings.

Checks anywhere in the server return ``Finding`` values in server units (see
``text_map``); only ``convert.py`` turns them into protocol objects. Problems come from
``act_backend`` (``Problem`` objects in-process, or their dict form from a child process)
with 1-based spans; ``from_problem`` places them, falling back to a given range (the
accelerator's creation) or the first line when a problem has no place in this document.
A finding carries the quick fixes of its problem (``lsp.fixes``), only when the problem is
placed where it was found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsp.fixes.fix import Fix, fixes_from_json
from lsp.paths import same_file
from lsp.text_map import TextRange, line_range, span_to_range

SEVERITIES = ("error", "warning", "information", "hint")


@dataclass(frozen=True)
class Finding:
    range: TextRange
    severity: str
    code: str
    message: str
    fixes: tuple[Fix, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A stable, readable form for tests and logs."""
        found = {"range": [list(self.range.start), list(self.range.end)],
                 "severity": self.severity, "code": self.code, "message": self.message}
        if self.fixes:
            found["fixes"] = [fix.as_dict() for fix in self.fixes]
        return found


def from_problem(problem: Any, lines: list[str], path: str | None,
                 fallback: TextRange | None = None, fixes: tuple[Fix, ...] = ()) -> Finding:
    """A ``Problem`` (object or dict) as a finding in the document ``lines`` of ``path``,
    with ``fixes`` (a dict brings its own, under ``fixes``)."""
    if isinstance(problem, dict):
        severity, code, message = problem["severity"], problem["code"], problem["message"]
        fixes = fixes or fixes_from_json(problem.get("fixes"))
        span = problem.get("span")
        span_tuple = None if span is None else (
            span.get("file"), span["line"], span["column"], span["end_line"], span["end_column"])
    else:
        severity, code, message = problem.severity, problem.code, problem.message
        span = problem.span
        span_tuple = None if span is None else (
            span.file, span.line, span.column, span.end_line, span.end_column)
    if severity not in SEVERITIES:
        severity = "error"
    where = None
    if span_tuple is not None:
        file, line, column, end_line, end_column = span_tuple
        if file is None or path is None or same_file(file, path):
            where = clamp(span_to_range(line, column, end_line, end_column), lines)
        else:
            message = f"{file}:{line}:{column}: {message}"
    if where is None:
        # Placed elsewhere, its fixes would edit the wrong text.
        where = fallback if fallback is not None else line_range(lines, 0)
        fixes = ()
    if where.start == where.end:
        where = _widen(where, lines)
    return Finding(where, severity, code, message, tuple(fixes))


def clamp(where: TextRange, lines: list[str]) -> TextRange:
    """Keep a range inside the document (a stale or generous span must not be rejected)."""
    if not lines:
        return TextRange((0, 0), (0, 0))

    def fix(pos: tuple[int, int]) -> tuple[int, int]:
        line = min(max(pos[0], 0), len(lines) - 1)
        length = len(lines[line].rstrip("\r\n"))
        return (line, min(max(pos[1], 0), length))

    start, end = fix(where.start), fix(where.end)
    return TextRange(start, max(start, end))


def _widen(where: TextRange, lines: list[str]) -> TextRange:
    """An empty range is hard to see: cover the character at it, or the line if none."""
    line, column = where.start
    if 0 <= line < len(lines):
        text = lines[line].rstrip("\r\n")
        if column < len(text):
            return TextRange((line, column), (line, column + 1))
        if column > 0:
            return TextRange((line, column - 1), (line, column))
    return line_range(lines, line)
