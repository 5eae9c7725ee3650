"""The fixes of a spec's problems, computed with the accelerator the validation checked.

``spec_fixes(acc, problems, text)`` answers, for each problem, the fixes its refusal has:
"did you mean" for an unknown buffer, operator, attribute, element type or value (the names
the validation and the semantics parser accept); declaring an attribute a slice or the
semantics use; marking the last instruction ``ROOT``; and a semantics skeleton for an
instruction without one (``skeleton``). Each fix is found from the problem's code and span:
the span names the token to replace, and the same parsers the validation ran say what is
around it. A problem whose place is not a literal of the document gets no fix.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from typing import Any

from act_backend.hlo.ir import SPEC_DTYPES, Module
from act_backend.hlo.ir import Instruction as HloInstruction
from lsp import hlo_ops
from lsp.fixes.fix import Edit, Fix, insertion, replacements
from lsp.fixes.skeleton import skeleton_fix
from lsp.fixes.source import quoted, range_of, string_literal, text_at
from lsp.paths import same_file
from lsp.text_map import TextRange, lines_of

_ATTRIBUTE = re.compile(r"@([ca])\.([A-Za-z_][A-Za-z0-9_]*)")
_LISTS = {"c": ("comp_attrs", "computational"), "a": ("addr_attrs", "addressing")}


def spec_fixes(acc: Any, problems: list[Any], text: str, path: str | None
               ) -> list[tuple[Fix, ...]]:
    """The fixes of each of ``problems`` (the validation's, for ``acc``), in order; only
    problems placed in ``path`` (whose text is ``text``) get any."""
    context = _Context(acc, text, path)
    found = []
    for problem in problems:
        fixer = _FIXERS.get(problem.code)
        span = problem.span
        if fixer is None or span is None or not same_file(span.file, path):
            found.append(())
            continue
        try:
            found.append(tuple(fixer(context, problem)))
        except Exception:  # noqa: BLE001 - a fix that cannot be worked out is not offered
            found.append(())
    return found


class _Context:
    """The accelerator and the document, with what several fixes read."""

    def __init__(self, acc: Any, text: str, path: str | None):
        self.acc = acc
        self.text = text
        self.path = path
        self.lines = lines_of(text)
        self._modules: dict[int, Module | None] = {}

    def instruction_at(self, span: Any) -> Any | None:
        """The instruction whose calls (``add_instruction``, ``set_inputs``, ...) contain
        ``span``."""
        for instr in self.acc.instructions:
            sites = [instr.site] + [site for _, site in instr.calls]
            if any(_contains(site.span, span) for site in sites):
                return instr
        return None

    def in_semantics_text(self, span: Any) -> bool:
        """Whether ``span`` is inside a semantics string literal whose characters have
        their own places (not a string built at run time, placed as a whole)."""
        instr = self.instruction_at(span)
        site = instr.semantics_site.arg("text") if instr is not None and \
            instr.semantics_site is not None else None
        return site is not None and site.text is not None and _contains(site.span, span) \
            and site.span != span

    def semantics(self, instr: Any) -> Module | None:
        """The instruction's semantics as the validation parsed them, placed in the file."""
        key = id(instr)
        if key not in self._modules:
            from act_backend.spec.semantics import SemanticsError, parse_semantics

            module = None
            if isinstance(instr.semantics, str) and instr.semantics_site is not None:
                try:
                    module = parse_semantics(instr.semantics,
                                             instr.semantics_site.arg("text").text_map())
                except SemanticsError:
                    module = None
            self._modules[key] = module
        return self._modules[key]

    def hlo_at(self, span: Any, key: Callable[[HloInstruction], list[str]]
               ) -> tuple[Module, HloInstruction, str] | None:
        """The semantics instruction with a span key (from ``key``) equal to ``span``."""
        instr = self.instruction_at(span)
        module = self.semantics(instr) if instr is not None else None
        if module is None:
            return None
        for value in module.entry.instructions:
            for name in key(value):
                if value.spans.get(name) == span:
                    return module, value, name
        return None


def _contains(outer: Any, inner: Any) -> bool:
    if outer is None or inner is None:
        return False
    return (outer.line, outer.column) <= (inner.line, inner.column) and \
        (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column)


# ---- "did you mean" ---------------------------------------------------------------------


def _literal_or_word(context: _Context, problem: Any, known: list[str],
                     any_known: bool = False) -> list[Fix]:
    """Replace the name at the problem's span, a string literal (quotes kept) or a bare
    word of a semantics string, with the known names like it."""
    where = range_of(problem.span)
    written = text_at(context.lines, where)
    literal = string_literal(written)
    if literal is not None:
        quote, value = literal
        return replacements(where, value, known, lambda name: quoted(quote, name),
                            any_known)
    if re.fullmatch(r"[A-Za-z_][\w\-]*", written) and context.in_semantics_text(problem.span):
        return replacements(where, written, known, any_known=any_known)
    return []


def _unknown_buffer(context: _Context, problem: Any) -> list[Fix]:
    from act_backend.validation import analysis_of

    names = [buffer.name for buffer in analysis_of(context.acc).buffers]
    return _literal_or_word(context, problem, names, any_known=True)


def _unknown_dtype(context: _Context, problem: Any) -> list[Fix]:
    return _literal_or_word(context, problem, list(SPEC_DTYPES))


def _unknown_operator(context: _Context, problem: Any) -> list[Fix]:
    return _literal_or_word(context, problem, list(hlo_ops.SEMANTICS_OPERATORS))


def _unknown_attribute(context: _Context, problem: Any) -> list[Fix]:
    """``dimension={1,0}`` -> ``dimensions``: the span covers ``name=value``; the names
    are those the operator accepts and the instruction does not give yet."""
    from act_backend.spec.semantics import OPERATOR_ATTRS

    found = context.hlo_at(problem.span, lambda v: [k for k in v.spans if k.startswith("attr:")])
    if found is None:
        return []
    _, value, key = found
    name = key[len("attr:"):]
    where = range_of(problem.span)
    start = where.start
    if not text_at(context.lines, where).startswith(name):
        return []
    name_range = TextRange(start, (start[0], start[1] + len(name)))
    accepted = [a for a in OPERATOR_ATTRS.get(value.opcode, ()) if a not in value.attrs]
    return replacements(name_range, name, accepted, any_known=True)


def _undefined_value(context: _Context, problem: Any) -> list[Fix]:
    """An operand naming no value defined before it -> the names that are."""
    found = context.hlo_at(problem.span,
                           lambda v: [f"operand:{i}" for i in range(len(v.operands))])
    if found is None:
        return []
    module, value, key = found
    operand = value.operands[int(key.split(":")[1])]
    before = []
    for earlier in module.entry.instructions:
        if earlier is value:
            break
        before.append(earlier.name)
    where = range_of(problem.span)
    written = text_at(context.lines, where)
    prefix = "%" if written.startswith("%") else ""
    if written != prefix + operand:
        return []
    return replacements(where, operand, before, lambda name: prefix + name)


# ---- attributes -------------------------------------------------------------------------


def _undeclared_attribute(context: _Context, problem: Any) -> list[Fix]:
    """``@c.m`` used but not declared: declare it (add it to the instruction's list), or
    change it to a declared attribute of its kind."""
    where = range_of(problem.span)
    written = text_at(context.lines, where)
    match = _ATTRIBUTE.fullmatch(written)
    instr = context.instruction_at(problem.span)
    if match is None or instr is None:
        return []
    kind, name = match.groups()
    field, noun = _LISTS[kind]
    other_field = _LISTS["a" if kind == "c" else "c"][0]
    declared = _names(getattr(instr, field))
    fixes = []
    declare = _declare(context, instr, field, name)
    if declare is not None and name not in _names(getattr(instr, other_field)) \
            and not keyword.iskeyword(name):
        fixes.append(Fix(f"Declare '{name}' as {_article(noun)} {noun} attribute of "
                         f"'{instr.name}'", (declare,), preferred=not declared))
    fixes.extend(replacements(where, written, [f"@{kind}.{n}" for n in declared],
                              any_known=True))
    return fixes


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def _names(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def _declare(context: _Context, instr: Any, field: str, name: str) -> Edit | None:
    """The edit adding ``name`` to the list literal of ``field`` in ``add_instruction``."""
    site = instr.site.arg(field)
    if site.span is None or site.items is None or not same_file(site.span.file, context.path):
        return None
    whole = range_of(site.span)
    if not text_at(context.lines, whole).startswith("["):
        return None
    quote = '"'
    for item in site.items:
        literal = string_literal(text_at(context.lines, range_of(item.span))) \
            if item.span is not None else None
        if literal is not None:
            quote = literal[0]
            break
    if not site.items:
        return Edit(whole, f"[{quoted(quote, name)}]")
    last = site.items[-1].span
    if last is None:
        return None
    return insertion(range_of(last).end, f", {quoted(quote, name)}")


# ---- structure --------------------------------------------------------------------------


def _root_count(context: _Context, problem: Any) -> list[Fix]:
    """No instruction is marked ROOT: mark the last one."""
    instr = context.instruction_at(problem.span)
    module = context.semantics(instr) if instr is not None else None
    if module is None or module.entry.span != problem.span:
        return []
    values = module.entry.instructions
    if any(v.is_root for v in values) or not values or values[-1].span is None:
        return []
    last = values[-1]
    return [Fix(f"Mark '%{last.name}' as the ROOT", (insertion(range_of(last.span).start,
                                                               "ROOT "),), preferred=True)]


def _no_semantics(context: _Context, problem: Any) -> list[Fix]:
    instr = context.instruction_at(problem.span)
    if instr is None or instr.span != problem.span:
        return []
    fix = skeleton_fix(context.acc, instr, context.text, context.path)
    return [fix] if fix is not None else []


_FIXERS: dict[str, Callable[[_Context, Any], list[Fix]]] = {
    "unknown-buffer": _unknown_buffer,
    "unknown-dtype": _unknown_dtype,
    "unknown-operator": _unknown_operator,
    "unknown-attribute": _unknown_attribute,
    "undefined-value": _undefined_value,
    "undeclared-attribute": _undeclared_attribute,
    "root-count": _root_count,
    "no-semantics": _no_semantics,
}
