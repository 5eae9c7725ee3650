"""Where an HLO instruction came from in the user's code, read from the HLO text JAX prints.

JAX records each operation's origin in its HLO metadata, in one of two forms: directly
(``metadata={op_name=... source_file="f.py" source_line=12}``, as XLA's StableHLO converter
writes it) or through a stack-frame table printed ahead of the computations
(``metadata={... stack_frame_id=4}`` with ``FileNames``, ``FileLocations`` and ``StackFrames``
tables, as ``Lowered.as_text(dialect="hlo", debug_info=True)`` prints it). ``locations(text)``
reads either into a map from instruction name to ``SourceLocation``; ``instruction_at(text,
line)`` names the instruction a line of HLO defines.

JAX records no location inside a computation it applies with ``call`` (``jnp.clip`` prints
one, applied from the user's line) or ``to_apply``: an instruction there takes the location
of the instruction that applies its computation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_DEFINITION = re.compile(r"^\s*(?:ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=")
_TABLE_ROW = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_FIELD = re.compile(r'([A-Za-z_]\w*)=("(?:[^"\\]|\\.)*"|[^\s}]+)')
# A computation's header: `name {`, `%name (p: f32[]) -> f32[] {` or `ENTRY name {`.
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?([A-Za-z_][\w.\-]*)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$")
_APPLIES = re.compile(r"\b(?:to_apply|calls)=%?([A-Za-z_][\w.\-]*)")


@dataclass(frozen=True)
class SourceLocation:
    """A line of the user's code (``file`` as JAX recorded it)."""

    file: str
    line: int
    function: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def instruction_at(text: str, line: int) -> str | None:
    """The name of the instruction defined on ``line`` (1-based) of ``text``, if any."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    match = _DEFINITION.match(lines[line - 1])
    return match.group(1) if match else None


def line_of(text: str, name: str) -> str | None:
    """The line of ``text`` that defines instruction ``name``, stripped."""
    for line in text.splitlines():
        match = _DEFINITION.match(line)
        if match and match.group(1) == name:
            return line.strip()
    return None


def locations(text: str) -> dict[str, SourceLocation]:
    """Each instruction of ``text`` whose metadata names a source line, and that line."""
    tables = _read_tables(text)
    found: dict[str, SourceLocation] = {}
    members: dict[str, list[str]] = {}     # computation -> the instructions it defines
    applied: dict[str, list[str]] = {}     # computation -> the instructions that apply it
    computation = None
    for line in text.splitlines():
        match = _DEFINITION.match(line)
        if not match:
            header = _COMPUTATION.match(line)
            if header:
                computation = header.group(1)
            continue
        name = match.group(1)
        if computation is not None:
            members.setdefault(computation, []).append(name)
        for callee in _APPLIES.findall(line):
            applied.setdefault(callee, []).append(name)
        fields = _metadata(line)
        if fields is None:
            continue
        location = _direct(fields) or _from_frames(fields, tables)
        if location is not None:
            found[name] = location
    # Inside an applied computation, the applying instruction's location (nested calls
    # included, hence the repetition until nothing changes).
    changed = True
    while changed:
        changed = False
        for callee, callers in applied.items():
            where = next((found[c] for c in callers if c in found), None)
            if where is None:
                continue
            for name in members.get(callee, []):
                if name not in found:
                    found[name] = where
                    changed = True
    return found


def _direct(fields: dict[str, str]) -> SourceLocation | None:
    if "source_file" not in fields or "source_line" not in fields:
        return None
    try:
        line = int(fields["source_line"])
    except ValueError:
        return None
    file = _unquote(fields["source_file"])
    # The converter writes "-" when the StableHLO text carried no locations of its own: the
    # line is then the operation's line in that text.
    return SourceLocation("<StableHLO>" if file == "-" else file, line)


def _from_frames(fields: dict[str, str], tables: dict[str, dict[int, str]]
                 ) -> SourceLocation | None:
    frame_id = _int(fields.get("stack_frame_id"))
    frame = tables["StackFrames"].get(frame_id) if frame_id is not None else None
    if frame is None:
        return None
    # The frame named is the innermost one JAX kept: the user's line that made the operation.
    location_id = _int(_fields(frame).get("file_location_id"))
    location = tables["FileLocations"].get(location_id) if location_id is not None else None
    if location is None:
        return None
    place = _fields(location)
    file = tables["FileNames"].get(_int(place.get("file_name_id")) or -1)
    line = _int(place.get("line"))
    if file is None or line is None:
        return None
    function = tables["FunctionNames"].get(_int(place.get("function_name_id")) or -1)
    return SourceLocation(_unquote(file), line,
                          _unquote(function) if function is not None else None)


def _read_tables(text: str) -> dict[str, dict[int, str]]:
    """The debug tables: each maps an id to the rest of its row (a quoted name or a
    ``{field=value ...}`` record). A table runs from its title to the first blank line."""
    tables: dict[str, dict[int, str]] = {name: {} for name in _TABLES}
    current: dict[int, str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in _TABLES:
            current = tables[stripped]
            continue
        if not stripped:
            current = None
            continue
        if current is not None:
            row = _TABLE_ROW.match(line)
            if row:
                current[int(row.group(1))] = row.group(2)
    return tables


def _metadata(line: str) -> dict[str, str] | None:
    """The fields of an instruction's ``metadata={...}``, or None when it has none."""
    start = line.find("metadata={")
    if start < 0:
        return None
    body_start = start + len("metadata={")
    end, quoted, i = None, False, body_start
    while i < len(line):
        char = line[i]
        if char == "\\" and quoted:
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char == "}" and not quoted:
            end = i
            break
        i += 1
    if end is None:
        return None
    return _fields(line[body_start:end])


def _fields(record: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _FIELD.finditer(record)}


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
