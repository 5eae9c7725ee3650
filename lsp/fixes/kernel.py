"""The fixes of a kernel's problems (``act_backend.kernel.check_hlo``'s refusals).

"Did you mean" for an unknown operator (the operators kernels may use, spelled as XLA prints
them), an operator attribute (those the vocabulary lets the operator carry), an undefined
operand (the values defined before it) and an applied computation that does not exist; and
``ROOT`` on the last instruction of a computation without one. The kernel is parsed once with
the checker's own parser to find what each problem's span points at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from act_backend.hlo import vocabulary
from lsp.fixes.fix import Fix, insertion, replacements
from lsp.fixes.source import range_of, text_at
from lsp.paths import same_file
from lsp.text_map import TextRange, lines_of

# Operators as XLA prints them: words joined by hyphens.
KERNEL_SPELLINGS = tuple(sorted(name.replace("_", "-")
                                for name in vocabulary.operators(kernels=True)))


def kernel_fixes(text: str, path: str | None, problems: list[Any]) -> list[tuple[Fix, ...]]:
    """The fixes of each problem of the kernel ``text`` (at ``path``), in order."""
    context = _Context(text, path)
    found = []
    for problem in problems:
        fixer = _FIXERS.get(problem.code)
        span = problem.span
        elsewhere = span is not None and span.file is not None and path is not None \
            and not same_file(span.file, path)
        if fixer is None or span is None or elsewhere:
            found.append(())
            continue
        try:
            found.append(tuple(fixer(context, problem)))
        except Exception:  # noqa: BLE001 - a fix that cannot be worked out is not offered
            found.append(())
    return found


class _Context:
    def __init__(self, text: str, path: str | None):
        self.text = text
        self.path = path
        self.lines = lines_of(text)
        self._parsed: tuple[Any, Any] | None | bool = False

    def parsed(self) -> tuple[Any, Any] | None:
        """(module, declarations) as the checker's parser reads the kernel, or None."""
        if self._parsed is False:
            from act_backend.kernel.errors import HloSyntaxError
            from act_backend.kernel.parser import parse_with_declarations

            try:
                self._parsed = parse_with_declarations(self.text, self.path)
            except HloSyntaxError:
                self._parsed = None
        return self._parsed  # type: ignore[return-value]

    def instruction(self, test: Callable[[Any, Any], bool]) -> tuple[Any, Any] | None:
        """(computation, instruction) of the first instruction ``test(comp, instr)``."""
        parsed = self.parsed()
        if parsed is None:
            return None
        for comp in parsed[0].computations:
            for instr in comp.instructions:
                if test(comp, instr):
                    return comp, instr
        return None


def _same_place(a: Any, b: Any) -> bool:
    """Spans compared by place (the checker may name the file differently)."""
    return a is not None and b is not None and \
        (a.line, a.column, a.end_line, a.end_column) == (b.line, b.column, b.end_line,
                                                         b.end_column)


def _unknown_operator(context: _Context, problem: Any) -> list[Fix]:
    where = range_of(problem.span)
    return replacements(where, text_at(context.lines, where), KERNEL_SPELLINGS)


def _unknown_attribute(context: _Context, problem: Any) -> list[Fix]:
    """The span covers ``name=value``; the names are those the operator may carry and the
    instruction does not give yet."""
    parsed = context.parsed()
    if parsed is None:
        return []
    declarations = parsed[1]
    found = context.instruction(lambda comp, instr: any(
        _same_place(span, problem.span) for _, span in declarations.written_attributes(instr)))
    if found is None:
        return []
    _, instr = found
    written = [name for name, _ in declarations.written_attributes(instr)]
    name = next(n for n, span in declarations.written_attributes(instr)
                if _same_place(span, problem.span))
    where = range_of(problem.span)
    name_range = TextRange(where.start, (where.start[0], where.start[1] + len(name)))
    if text_at(context.lines, name_range) != name:
        return []
    accepted = sorted(a for a in vocabulary.kernel_attributes(instr.opcode)
                      if a not in written)
    own = [a for a in accepted if a not in vocabulary.GENERIC_KERNEL_ATTRIBUTES]
    return replacements(name_range, name, own + [a for a in accepted if a not in own])


def _undefined_operand(context: _Context, problem: Any) -> list[Fix]:
    """The span covers the operand as written (``bf16[64]{0} %x``); its name is replaced by
    the values defined before the instruction in its computation."""
    found = context.instruction(lambda comp, instr: any(
        _same_place(instr.spans.get(f"operand:{i}"), problem.span)
        for i in range(len(instr.operands))))
    if found is None:
        return []
    comp, instr = found
    index = next(i for i in range(len(instr.operands))
                 if _same_place(instr.spans.get(f"operand:{i}"), problem.span))
    operand = instr.operands[index]
    before = []
    for earlier in comp.instructions:
        if earlier is instr:
            break
        before.append(earlier.name)
    where = range_of(problem.span)
    written = text_at(context.lines, where)
    if not written.endswith(operand):
        return []
    prefix = "%" if written[:len(written) - len(operand)].endswith("%") else ""
    start = (where.end[0], where.end[1] - len(operand) - len(prefix))
    return replacements(TextRange(start, where.end), operand, list(reversed(before)),
                        lambda name: prefix + name)


def _unknown_computation(context: _Context, problem: Any) -> list[Fix]:
    """``to_apply=%ad`` -> the computations of the module that are not the ENTRY."""
    parsed = context.parsed()
    found = context.instruction(lambda comp, instr: _same_place(
        instr.spans.get("attr:to_apply"), problem.span))
    if parsed is None or found is None:
        return []
    _, instr = found
    name = instr.attrs.get("to_apply")
    if not isinstance(name, str):
        return []
    where = range_of(problem.span)
    written = text_at(context.lines, where)
    if not written.endswith(name):
        return []
    start = (where.end[0], where.end[1] - len(name))
    known = [c.name for c in parsed[0].computations if not c.is_entry]
    return replacements(TextRange(start, where.end), name, known)


def _missing_root(context: _Context, problem: Any) -> list[Fix]:
    """A computation without a ROOT: mark its last instruction."""
    parsed = context.parsed()
    if parsed is None:
        return []
    for comp in parsed[0].computations:
        if not _same_place(comp.span, problem.span) or not comp.instructions:
            continue
        if any(i.is_root for i in comp.instructions) or comp.instructions[-1].span is None:
            return []
        last = comp.instructions[-1]
        return [Fix(f"Mark '%{last.name}' as the ROOT",
                    (insertion(range_of(last.span).start, "ROOT "),), preferred=True)]
    return []


_FIXERS: dict[str, Callable[[_Context, Any], list[Fix]]] = {
    "unknown-operator": _unknown_operator,
    "unknown-attribute": _unknown_attribute,
    "undefined-operand": _undefined_operand,
    "unknown-computation": _unknown_computation,
    "missing-root": _missing_root,
}
