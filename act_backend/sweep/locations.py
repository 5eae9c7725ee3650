"""Where a key of a TOML document was written: ``line_of(text, path)`` finds the line of a key
path such as ``("kernels", 1, "hlo")`` (the second ``[[kernels]]`` entry's ``hlo``), so that an
error about a value can name its line. ``tomllib`` keeps no positions, so the text is scanned:
table headers, array-of-tables entries and ``key =`` lines, which is all a sweep file uses.
"""

from __future__ import annotations

import re

_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([^\[\]]+?)\s*\]\]")
_TABLE_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]")
_PART = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_KEY = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")

Path = tuple[str | int, ...]


def _parts(dotted: str) -> tuple[str, ...]:
    parts = re.findall(_PART, dotted)
    return tuple(part.strip("\"'") for part in parts)


def positions(text: str) -> dict[Path, int]:
    """Every table, array entry and key of ``text`` with the (1-based) line it starts on; the
    first occurrence wins."""
    found: dict[Path, int] = {}
    current: Path = ()
    entries: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        array = _ARRAY_HEADER.match(line)
        if array:
            name = _parts(array.group(1))
            entries[name] = entries.get(name, 0) + 1
            current = (*name, entries[name] - 1)
            found.setdefault(name, number)
            found.setdefault(current, number)
            continue
        table = _TABLE_HEADER.match(line)
        if table:
            current = _parts(table.group(1))
            found.setdefault(current, number)
            continue
        key = _KEY.match(line)
        if key:
            found.setdefault((*current, *_parts(key.group(1))), number)
    return found


def line_of(text: str, path: Path) -> int | None:
    """The line of ``path`` in ``text``, or of the nearest enclosing key or table written
    there (a value inside an inline table or array is on its key's line); None when not even
    the outermost table is written (a key that is missing altogether)."""
    found = positions(text)
    for end in range(len(path), 0, -1):
        line = found.get(tuple(path[:end]))
        if line is not None:
            return line
    return None
