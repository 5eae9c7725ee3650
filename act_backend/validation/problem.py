"""Problems (validation findings as data) and the report that collects them.

A problem's message is a full sentence that stands on its own: which accelerator, which
instruction or data model, which field, what was found and what is accepted. Its ``code`` is
a stable kebab-case name (tests and the editor key on it) and its ``span`` where it was
written, when that is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from act_backend.hlo.ir import Span


@dataclass(frozen=True)
class Problem:
    severity: str  # "error" | "warning"
    code: str
    message: str
    span: Span | None

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        return f"{where}{self.severity}: {self.message} [{self.code}]"


def quote(value: object) -> str:
    """A name as messages show it: in single quotes, whatever it is."""
    return f"'{value}'"


@dataclass(frozen=True)
class Context:
    """The 'accelerator 'QKV', instruction 'gemm', input 0' a message starts with."""

    parts: tuple[str, ...]

    def then(self, part: str) -> Context:
        return Context((*self.parts, part))

    def __str__(self) -> str:
        return ", ".join(self.parts)


@dataclass
class Report:
    """Collects problems in the order they are found (which is the order of the spec)."""

    problems: list[Problem] = field(default_factory=list)

    def error(self, ctx: Context, code: str, what: str, span: Span | None) -> None:
        self.problems.append(Problem("error", code, f"{ctx}: {what}", span))

    def warning(self, ctx: Context, code: str, what: str, span: Span | None) -> None:
        self.problems.append(Problem("warning", code, f"{ctx}: {what}", span))

    def error_count(self) -> int:
        return sum(1 for p in self.problems if p.severity == "error")
