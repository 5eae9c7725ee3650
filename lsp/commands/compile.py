"""``act.compileKernel [kernelUri, backendPath, outputPath?]``: compile a kernel with a
generated backend (``backendPath --input kernel.hlo --output kernel.py``).

The kernel compiled is the editor's text (written to a scratch copy with the same name
when the document is open), so that error locations match what the user sees. The output
goes next to the kernel, with a ``.py`` suffix, unless ``outputPath`` says where. Errors
the backend prints as ``file:line:col: message`` become diagnostics on the kernel. The
backend's report folder (``--report-dir``) is kept beside the output, ``<name>.report/``:
its ``report.json`` gives the emitted candidate's cost, and the result names it
(``report``) and the memory picture (``memory_svg``) for the editor's compile report view.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from typing import Any

from lsprotocol import types

from lsp.commands.arguments import Arguments
from lsp.commands.running import CommandRun
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


def report_dir_for(output: str) -> str:
    """The backend's report folder for the assembly ``output``: ``<output stem>.report``."""
    return os.path.splitext(output)[0] + ".report"


REPORT_FILES = {"report": "report.json", "memory_svg": "memory.svg"}


def report_files(report_dir: str) -> dict[str, str]:
    """The report and the memory picture the backend left in ``report_dir``, by result key."""
    return {key: os.path.join(report_dir, name) for key, name in REPORT_FILES.items()
            if os.path.isfile(os.path.join(report_dir, name))}


def clear_report(report_dir: str) -> None:
    """Removes an earlier compile's report, so that one this compile did not write is never
    taken for its own."""
    for name in REPORT_FILES.values():
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(report_dir, name))


def read_report(report_dir: str) -> dict[str, Any]:
    """The backend's ``report.json`` (what it tried, what it chose), if it wrote one."""
    try:
        with open(os.path.join(report_dir, "report.json"), encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


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
        report_dir = report_dir_for(output)
        clear_report(report_dir)
        async with CommandRun(server, NAME, title, token) as running:
            status = await running.process(
                [backend, "--input", source, "--output", output, "--report-dir", report_dir],
                cwd=os.path.dirname(kernel))
        lines = [line.replace(source, kernel) for line in running.lines]
    report = read_report(report_dir)
    files = report_files(report_dir)
    if status == 0:
        server.set_command_findings(uri, NAME, [])
        summary = {"ok": True, "output": output,
                   "message": f"Compiled {os.path.basename(kernel)} -> {output}"}
        cost = report.get("chosen_cost")
        if isinstance(cost, (int, float)):
            summary["cost"] = cost
            summary["candidates"] = report.get("candidates_tried")
            summary["message"] += f" (cost {cost:g}, {report.get('candidates_tried')} " \
                                  "candidates tried)"
        summary.update(files)
    else:
        findings = located_errors(lines, kernel, text)
        server.set_command_findings(uri, NAME, findings)
        detail = "\n".join(line for line in lines if line.strip())[-2000:]
        summary = {"ok": False, "status": status, "errors": [f.message for f in findings],
                   "message": f"Compiling {os.path.basename(kernel)} failed (exit status "
                              f"{status})" + (f":\n{detail}" if detail else ""), **files}
    server.show(summary["message"], ok=summary["ok"])
    return summary
