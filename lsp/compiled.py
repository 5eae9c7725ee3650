"""What a compile produced, for navigation between a kernel and its assembly: which HLO
instructions each ``api.`` call of the assembly implements.

The backend says so in its ``report.json`` (``--report-dir``): one record per instruction of
the emitted assembly, in the order of its calls, each with ``implements``, the names of the
HLO instructions it computes (``%`` optional), and, when given, ``line`` (1-based, in the
assembly) and ``instruction`` (its name), which are checked against the assembly. The records
are read from the report's ``assembly`` list, or from the ``assembly`` list of the emitted
candidate's record (``candidates[k]`` whose ``index`` is ``chosen``). A report without them
(an older backend), or whose records no longer match the assembly (it was edited or compiled
again since), gives no pairing: navigation then offers nothing rather than something wrong.

The calls of an assembly are read with Python's own parser (the assembly is the Python the
oracle runs). ``Compilations`` remembers what each compile in this session produced, and
finds a compile of an earlier session by the layout ``act.compileKernel`` writes: the
assembly ``K.py`` beside the kernel ``K.hlo`` and the report in ``K.report/report.json``.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass
from typing import Any

from lsp.text_map import TextRange, lines_of, node_range

REPORT_SUFFIX = ".report"
REPORT_FILE = "report.json"


@dataclass(frozen=True)
class AssemblyCall:
    """One ``api.<instruction>(...)`` call of an assembly."""

    index: int  # its place among the calls, from 0
    instruction: str
    range: TextRange  # the whole call
    name_range: TextRange  # ``api.<instruction>``


@dataclass(frozen=True)
class Record:
    """What the report says of one instruction of the assembly."""

    implements: tuple[str, ...]
    line: int | None = None
    instruction: str | None = None


def assembly_calls(text: str) -> list[AssemblyCall]:
    """The ``api.`` calls of an assembly, in the order they are written; none when the text
    does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = lines_of(text)
    found = [node for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "api"]
    found.sort(key=lambda node: (node.lineno, node.col_offset))
    return [AssemblyCall(k, node.func.attr, node_range(lines, node),  # type: ignore[union-attr]
                         node_range(lines, node.func))
            for k, node in enumerate(found)]


def records_of(report: Any) -> list[Record] | None:
    """The per-instruction records of a report (see the module's docstring), or None."""
    if not isinstance(report, dict):
        return None
    raw = report.get("assembly")
    if not isinstance(raw, list):
        chosen = report.get("chosen")
        for candidate in report.get("candidates") or []:
            if isinstance(candidate, dict) and candidate.get("index") == chosen \
                    and isinstance(candidate.get("assembly"), list):
                raw = candidate["assembly"]
    if not isinstance(raw, list):
        return None
    records = []
    for item in raw:
        names = item.get("implements") if isinstance(item, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return None
        line = item.get("line")
        instruction = item.get("instruction")
        records.append(Record(tuple(n.removeprefix("%") for n in names),
                              line if isinstance(line, int) else None,
                              instruction if isinstance(instruction, str) else None))
    return records


def pair(calls: list[AssemblyCall], records: list[Record]
         ) -> list[tuple[AssemblyCall, tuple[str, ...]]] | None:
    """Each call with the HLO names it implements, or None when the records do not describe
    these calls (by line where the records give lines, else one record per call in order;
    a record's instruction name must be the call's)."""
    if records and all(r.line is not None for r in records):
        by_line: dict[int, AssemblyCall] = {}
        for call in calls:
            by_line.setdefault(call.range.start[0] + 1, call)
        matched = [(by_line.get(r.line or 0), r) for r in records]
    elif len(records) == len(calls):
        matched = list(zip(calls, records, strict=True))
    else:
        return None
    paired = []
    for call, record in matched:
        if call is None or (record.instruction is not None
                            and record.instruction != call.instruction):
            return None
        paired.append((call, record.implements))
    return paired


# ---- compiles ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Compilation:
    kernel: str
    assembly: str
    report: str  # the report.json


def report_dir_for(assembly: str) -> str:
    """Where ``act.compileKernel`` keeps the report of the compile that wrote ``assembly``."""
    return os.path.splitext(assembly)[0] + REPORT_SUFFIX


class Compilations:
    """The compiles of this session, by kernel and by assembly; else the layout on disk."""

    def __init__(self) -> None:
        # (side, real path) -> compile, for both sides ("kernel", "assembly") of each.
        self._recorded: dict[tuple[str, str], Compilation] = {}
        self._reports: dict[str, tuple[float, list[Record] | None]] = {}

    def record(self, kernel: str, assembly: str, report: str) -> None:
        compiled = Compilation(_key(kernel), _key(assembly), report)
        self._recorded["kernel", compiled.kernel] = compiled
        self._recorded["assembly", compiled.assembly] = compiled

    def for_kernel(self, kernel: str) -> Compilation | None:
        """The compile of the kernel at ``kernel`` (see ``_find``)."""
        return self._find("kernel", kernel)

    def for_assembly(self, assembly: str) -> Compilation | None:
        """The compile that wrote the assembly at ``assembly`` (see ``_find``)."""
        return self._find("assembly", assembly)

    def _find(self, side: str, path: str) -> Compilation | None:
        """The compile whose ``side`` (``"kernel"`` or ``"assembly"``) is the file at ``path``:
        the last one recorded in this session, else the one an earlier session left in the
        layout ``act.compileKernel`` writes (``K.hlo`` and ``K.py`` side by side, the report in
        ``report_dir_for(K.py)``), when the other side and the report are there."""
        found = self._recorded.get((side, _key(path)))
        if found is not None:
            return found
        stem = os.path.splitext(path)[0]
        if side == "kernel":
            kernel, assembly = path, stem + ".py"
            other = assembly
        else:
            kernel, assembly = stem + ".hlo", path
            other = kernel
        report = os.path.join(report_dir_for(assembly), REPORT_FILE)
        if os.path.isfile(other) and os.path.isfile(report):
            return Compilation(_key(kernel), _key(assembly), report)
        return None

    def records(self, compiled: Compilation) -> list[Record] | None:
        """The report's records (read again when the file changes)."""
        try:
            stamp = os.stat(compiled.report).st_mtime
        except OSError:
            return None
        cached = self._reports.get(compiled.report)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            with open(compiled.report, encoding="utf-8") as handle:
                records = records_of(json.load(handle))
        except (OSError, ValueError):
            records = None
        self._reports[compiled.report] = (stamp, records)
        return records


def _key(path: str) -> str:
    return os.path.realpath(path)
