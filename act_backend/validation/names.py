"""Checks of names: buffers, instructions and attributes must be usable as Python names.

Instruction and attribute names become Python in the generated assembly
(``api.load_rm(n=64, addr_in=0)``), so they must be identifiers and not keywords, and an
instruction must not take the name of something the oracle's ``api`` module defines itself.
"""

from __future__ import annotations

import ast
import functools
import keyword
from pathlib import Path

from act_backend.hlo.ir import Span
from act_backend.validation.problem import Context, Report, quote

_API_MODULE = Path(__file__).resolve().parent.parent / "oracle" / "runtime" / "api.py"


def check_identifier(report: Report, ctx: Context, what: str, name: object,
                     span: Span | None) -> bool:
    """Reports a name that is not a string, not an identifier, or a keyword; True if good."""
    if not isinstance(name, str):
        report.error(ctx, "bad-name", f"the {what} must be a string, found {name!r}", span)
        return False
    if not name.isidentifier():
        report.error(ctx, "bad-name", f"the {what} {quote(name)} is not a Python identifier "
                     "(letters, digits and '_', not starting with a digit)", span)
        return False
    # Soft keywords (match, case, type, _) remain valid names and keyword arguments.
    if keyword.iskeyword(name):
        report.error(ctx, "keyword-name", f"the {what} {quote(name)} is a Python keyword; "
                     "choose another name", span)
        return False
    return True


def reserved_instruction_names() -> frozenset[str]:
    """Names the oracle's ``api`` module defines before it adds one function per
    instruction (read from its source, so the list follows the module)."""
    return _api_members()


@functools.cache
def _api_members() -> frozenset[str]:
    try:
        tree = ast.parse(_API_MODULE.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return frozenset(names)


def is_reserved_instruction_name(name: str) -> bool:
    # Leading underscores are the generated modules' own namespace.
    return name.startswith("_") or name in reserved_instruction_names()
