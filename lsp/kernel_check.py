"""Diagnostics for ``.hlo`` kernels: syntax, unknown operators, shape and dtype errors.

All checking is ``act_backend.kernel.check_hlo``'s (the same code the backend's users get
from the command line); this module only places its problems in the document, each with its
quick fixes (``lsp.fixes.kernel``).
"""

from __future__ import annotations

from lsp.findings import Finding, from_problem
from lsp.text_map import lines_of


def check_kernel(text: str, path: str | None) -> list[Finding]:
    from act_backend.kernel import check_hlo
    from lsp.fixes.kernel import kernel_fixes

    lines = lines_of(text)
    problems = check_hlo(text, file=path)
    fixes = kernel_fixes(text, path, problems)
    return [from_problem(problem, lines, path, fixes=fixed)
            for problem, fixed in zip(problems, fixes, strict=True)]
