"""``act.compileKernel [kernelUri, backendPath, outputPath?]``: compile a kernel with a
generated backend (``backendPath --input kernel.hlo --output kernel.py``).

The kernel compiled is the editor's text (written to a scratch copy with the same name
when the document is open), so that error locations match what the user sees. The output
goes next to the kernel, with a ``.py`` suffix, unless ``outputPath`` says where. Errors
the backend prints as ``file:line:col: message`` become diagnostics on the kernel.

The backend's report folder (``--report-dir``: ``report.json``, the memory picture
``memory.svg`` and what else the backend writes there) is kept beside the assembly,
``kernel.report/`` for ``kernel.py``, replacing the one of the previous compile; a compile that
fails leaves the previous one. The report gives the emitted candidate's cost, the result names
the report and the picture (``report``, ``memory_svg``) for the editor's compile report view,
and the server remembers the compile (``lsp.compiled``) for navigation between the kernel and
the assembly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from typing import Any

from lsprotocol import types

from lsp.commands.arguments import Arguments
from lsp.commands.running import CommandRun
from lsp.compiled import REPORT_FILE, report_dir_for
from lsp.findings import Finding, clamp
from lsp.text_map import TextRange, line_range, lines_of

NAME = "act.compileKernel"
ARGUMENTS = ("kernelUri", "backendPath", "outputPath")

_LOCATED = re.compile(
    r"^(?P<file>[^:\n]+?):(?P<line>\d+)(?::(?P<column>\d+))?:\s*(?P<message>.+)$")


def parse_arguments(values: list[Any] | None, root: str | None) -> tuple[str, str, str]:
    args = Arguments(NAME, values, root, ARGUMENTS)
    kernel = args.existing_file("kernelUri", (".hlo",))
    backend = args.executable("backendPath")
    assert kernel is not None
    output = args.path("outputPath", required=False) or os.path.splitext(kernel)[0] + ".py"
    if not os.path.isdir(os.path.dirname(output)):
        raise args.fail("outputPath", f"is in a folder that does not exist: {output}")
    return kernel, backend, output


def located_errors(output: list[str], compiled: str, kernel_text: str) -> list[Finding]:
    """``file:line:col: message`` lines about the compiled file, as findings on the kernel
    (the backend may name the scratch copy, which stands for the kernel)."""
    lines = lines_of(kernel_text)
    findings = []
    for raw in output:
        match = _LOCATED.match(raw.strip())
        if match is None or os.path.basename(match.group("file")) != os.path.basename(compiled):
            continue
        line = int(match.group("line")) - 1
        column = int(match.group("column") or 0) - 1
        if column < 0:
            where = line_range(lines, line)
        else:
            where = clamp(TextRange((line, column), (line, column + 1)), lines)
            if where.start == where.end:
                where = line_range(lines, line)
        findings.append(Finding(where, "error", "compile-error", match.group("message")))
    return findings


def read_report(report_dir: str) -> dict[str, Any]:
    """The backend's ``report.json`` (what it tried, what it chose), if it wrote one."""
    try:
        with open(os.path.join(report_dir, REPORT_FILE), encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


REPORT_FILES = {"report": REPORT_FILE, "memory_svg": "memory.svg"}


def report_files(report_dir: str) -> dict[str, str]:
    """The report and the memory picture the backend left in ``report_dir``, by result key."""
    return {key: os.path.join(report_dir, name) for key, name in REPORT_FILES.items()
            if os.path.isfile(os.path.join(report_dir, name))}


def keep_report(written: str, kept: str) -> str | None:
    """Move the report folder the backend ``written`` to ``kept`` (replacing a report folder
    there, never anything else); the kept ``report.json``, or None."""
    if not os.path.isfile(os.path.join(written, REPORT_FILE)):
        return None
    if os.path.lexists(kept):
        ours = os.path.isdir(kept) and not os.path.islink(kept) and (
            os.path.isfile(os.path.join(kept, REPORT_FILE)) or not os.listdir(kept))
        if not ours:
            return None
        shutil.rmtree(kept)
    shutil.move(written, kept)
    return os.path.join(kept, REPORT_FILE)


async def run(server: Any, values: list[Any] | None, token: types.ProgressToken | None
              ) -> dict[str, Any]:
    kernel, backend, output = parse_arguments(values, server.workspace_root())
    text = server.document_text(kernel)
    uri = server.uri_for(kernel)
    title = f"Compiling {os.path.basename(kernel)} with {os.path.basename(backend)}"
    with tempfile.TemporaryDirectory(prefix="act-compile-") as scratch:
        source = os.path.join(scratch, os.path.basename(kernel))
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(text)
        report_dir = os.path.join(scratch, "report")
        async with CommandRun(server, NAME, title, token) as running:
            status = await running.process(
                [backend, "--input", source, "--output", output, "--report-dir", report_dir],
                cwd=os.path.dirname(kernel))
        lines = [line.replace(source, kernel) for line in running.lines]
        report = read_report(report_dir)
        kept = keep_report(report_dir, report_dir_for(output)) if status == 0 else None
    if status == 0:
        server.set_command_findings(uri, NAME, [])
        summary = {"ok": True, "output": output,
                   "message": f"Compiled {os.path.basename(kernel)} -> {output}"}
        if kept is not None:
            summary.update(report_files(os.path.dirname(kept)))
            server.compilations.record(kernel, output, kept)
        # The emitted program's cost: of all of it where it is made of several programs.
        cost = report.get("program_cost", report.get("chosen_cost"))
        if isinstance(cost, (int, float)):
            summary["cost"] = cost
            summary["candidates"] = report.get("candidates_tried")
            summary["message"] += f" (cost {cost:g}, {report.get('candidates_tried')} " \
                                  "candidates tried)"
    else:
        findings = located_errors(lines, kernel, text)
        server.set_command_findings(uri, NAME, findings)
        detail = "\n".join(line for line in lines if line.strip())[-2000:]
        summary = {"ok": False, "status": status, "errors": [f.message for f in findings],
                   "message": f"Compiling {os.path.basename(kernel)} failed (exit status "
                              f"{status})" + (f":\n{detail}" if detail else "")}
    server.show(summary["message"], ok=summary["ok"])
    return summary
