"""Diagnostics for ``.hlo`` kernels: syntax, unknown operators, shape and dtype errors.

All checking is ``act_backend.kernel.check_hlo``'s (the same code the backend's users get
from the command line); this module only places its problems in the document.
"""

from __future__ import annotations

from lsp.findings import Finding, from_problem
from lsp.text_map import lines_of


def check_kernel(text: str, path: str | None) -> list[Finding]:
    from act_backend.kernel import check_hlo

    lines = lines_of(text)
    return [from_problem(problem, lines, path) for problem in check_hlo(text, file=path)]
