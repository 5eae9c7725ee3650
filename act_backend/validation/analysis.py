"""The whole check of an accelerator, and the checked spec it yields for the ISA table.

``analyse(acc)`` runs every check in spec order and returns the problems together with the
checked buffers and instructions (slices as expressions, semantics as HLO IR), so that the
table is built from exactly what was validated. ``analysis_of(acc)`` is the same analysis run
once per state of the accelerator (its ``revision``): validating, building the table,
generating the oracle and the backend all read it, so an unchanged spec is analysed once.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from act_backend.hlo import expr as ex
from act_backend.hlo.ir import Module, Span
from act_backend.spec.accelerator import Accelerator, Instruction
from act_backend.spec.sites import Site
from act_backend.validation.buffers import (
    Buffer,
    accelerator_context,
    check_accelerator_name,
    check_data_models,
)
from act_backend.validation.names import check_identifier, is_reserved_instruction_name
from act_backend.validation.problem import Context, Problem, Report, quote
from act_backend.validation.semantics import check_semantics
from act_backend.validation.slices import Attributes, Slice, check_slices


@dataclass(frozen=True)
class CheckedInstruction:
    """An instruction with semantics that passed every check."""

    name: str
    comp_attrs: tuple[str, ...]
    addr_attrs: tuple[str, ...]
    inputs: tuple[Slice, ...]
    outputs: tuple[Slice, ...]
    semantics: Module


@dataclass
class Analysis:
    problems: list[Problem]
    buffers: list[Buffer] = field(default_factory=list)  # d0 first, then declaration order
    instructions: list[CheckedInstruction] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # instructions without semantics

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


# The last analysis of each accelerator, with the revision it was made at.
_ANALYSES: weakref.WeakKeyDictionary[Accelerator, tuple[int, Analysis]] = \
    weakref.WeakKeyDictionary()


def analysis_of(acc: Accelerator) -> Analysis:
    """``analyse(acc)``, reused while the accelerator is unchanged (same ``revision``).

    The analysis is shared: read it, never change it.
    """
    revision = getattr(acc, "revision", None)
    if not isinstance(revision, int):
        return analyse(acc)  # an object that only looks like an Accelerator keeps no count
    cached = _ANALYSES.get(acc)
    if cached is not None and cached[0] == revision:
        return cached[1]
    analysis = analyse(acc)
    _ANALYSES[acc] = (revision, analysis)
    return analysis


def analyse(acc: Accelerator) -> Analysis:
    """Every problem of ``acc`` (also a partially built one) and what passed."""
    report = Report()
    check_accelerator_name(acc, report)
    buffers = check_data_models(acc, report)
    analysis = Analysis(report.problems, list(buffers.values()))
    reserved_seen: dict[str, Span | None] = {}
    for index, instr in enumerate(acc.instructions):
        checked = _check_instruction(acc, instr, index, buffers, reserved_seen, report)
        if checked is not None:
            analysis.instructions.append(checked)
        elif instr.semantics is None and isinstance(instr.name, str):
            analysis.left_out.append(instr.name)
    return analysis


def _check_instruction(acc: Accelerator, instr: Instruction, index: int,
                       buffers: dict[str, Buffer], seen: dict[str, Span | None],
                       report: Report) -> CheckedInstruction | None:
    label = quote(instr.name) if isinstance(instr.name, str) else f"#{index}"
    ctx = accelerator_context(acc).then(f"instruction {label}")
    errors_before = report.error_count()
    _check_name(ctx, instr, seen, report)
    attrs = _check_attributes(ctx, instr, report)
    _check_repeated_calls(ctx, instr, report)

    inputs_site = instr.inputs_site.arg("slices") if instr.inputs_site else Site(instr.span)
    outputs_site = instr.outputs_site.arg("slices") if instr.outputs_site else Site(instr.span)
    inputs = (check_slices(ctx, "input", instr.inputs, inputs_site, buffers, attrs, report)
              if instr.inputs is not None else [])
    outputs = (check_slices(ctx, "output", instr.outputs, outputs_site, buffers, attrs, report)
               if instr.outputs is not None else None)
    has_semantics = instr.semantics is not None
    if outputs is not None and len(outputs) > 1:
        report.error(ctx, "output-count", f"{len(outputs)} output slices; an instruction "
                     "writes exactly one (its ROOT value)", outputs_site.item(1).span)
    elif has_semantics and not outputs:
        span = outputs_site.span if instr.outputs is not None else instr.span
        report.error(ctx, "output-count", "no output slice; call set_outputs([[buffer, "
                     "[start, ...], [size, ...]]]) with the slice the ROOT value is written "
                     "to", span)
    output = outputs[0] if outputs and len(outputs) == 1 else None

    if not has_semantics:
        report.warning(ctx, "no-semantics", "no semantics (add_semantics was not called), so "
                       "the instruction is left out of the oracle and the backend",
                       instr.span)
        _warn_unused(ctx, instr, attrs, None, report)
        return None
    module = check_semantics(ctx, instr, attrs, inputs, output, report)
    _warn_unused(ctx, instr, attrs, module, report)
    if module is not None:
        _warn_unreached_inputs(ctx, module, report)
    if report.error_count() > errors_before or module is None or output is None:
        return None
    if inputs is None or any(s is None for s in inputs):
        # A slice of a data model refused on its own (say, an unknown dtype) has no type; the
        # data model's problem is already reported.
        return None
    return CheckedInstruction(instr.name, attrs.comp, attrs.addr,
                              tuple(s for s in inputs if s is not None), (output,), module)


def _check_name(ctx: Context, instr: Instruction, seen: dict[str, Span | None],
                report: Report) -> None:
    span = instr.site.arg("name").span
    if not check_identifier(report, ctx, "instruction name", instr.name, span):
        return
    name = instr.name
    if is_reserved_instruction_name(name):
        report.error(ctx, "reserved-name", f"the name {quote(name)} is taken by the oracle's "
                     "api module (or is private, starting with '_'); choose another", span)
    if name in seen:
        first = seen[name]
        at = f" (first declared at line {first.line})" if first is not None else ""
        report.error(ctx, "duplicate-instruction", f"an instruction named {quote(name)} is "
                     f"already declared{at}; names must be unique", span)
    else:
        seen[name] = instr.span


def _check_attributes(ctx: Context, instr: Instruction, report: Report) -> Attributes:
    """The valid attribute names by kind; problems for the others."""
    kept: dict[str, list[str]] = {"comp_attrs": [], "addr_attrs": []}
    first_kind: dict[str, str] = {}
    for field_name, noun in (("comp_attrs", "computational"), ("addr_attrs", "addressing")):
        names = getattr(instr, field_name)
        site = instr.site.arg(field_name)
        if not isinstance(names, (list, tuple)):
            report.error(ctx, "bad-attributes", f"{field_name} must be a list of attribute "
                         f"names such as ['n'], found {names!r}", site.span)
            continue
        for k, name in enumerate(names):
            span = site.item(k).span
            if not check_identifier(report, ctx, f"{noun} attribute", name, span):
                continue
            if name in first_kind:
                if first_kind[name] == field_name:
                    report.error(ctx, "duplicate-attribute", f"the {noun} attribute "
                                 f"{quote(name)} is declared twice in {field_name}", span)
                else:
                    report.error(ctx, "attribute-clash", f"{quote(name)} is both a "
                                 "computational and an addressing attribute; they are passed "
                                 "as keyword arguments of one call, so names must differ",
                                 span)
                continue
            first_kind[name] = field_name
            kept[field_name].append(name)
    return Attributes(tuple(kept["comp_attrs"]), tuple(kept["addr_attrs"]))


def _check_repeated_calls(ctx: Context, instr: Instruction, report: Report) -> None:
    seen: set[str] = set()
    for method, call in instr.calls:
        if method in seen:
            report.warning(ctx, "repeated-call", f"{method} is called more than once; only the "
                           "last call counts", call.span)
        seen.add(method)


def _warn_unused(ctx: Context, instr: Instruction, attrs: Attributes, module: Module | None,
                 report: Report) -> None:
    used: set[str] = set()
    for slices in (instr.inputs, instr.outputs):
        for item in slices if isinstance(slices, (list, tuple)) else []:
            if isinstance(item, (list, tuple)) and len(item) == 3:
                for exprs in item[1:]:
                    for value in exprs if isinstance(exprs, (list, tuple)) else []:
                        used |= _mentions(value)
    sizes: set[str] = set()
    for slices in (instr.inputs, instr.outputs):
        for item in slices if isinstance(slices, (list, tuple)) else []:
            if isinstance(item, (list, tuple)) and len(item) == 3:
                for value in item[2] if isinstance(item[2], (list, tuple)) else []:
                    sizes |= _mentions(value)
    in_semantics: set[str] = set()
    if module is not None:
        for value in module.entry.instructions:
            for dim in value.type.shape:
                in_semantics |= ex.free_attrs(dim)
            in_semantics |= _attribute_mentions(value.attrs)
    used |= in_semantics
    # Selection determines a computational attribute from the semantics alone (shapes and
    # attribute values it matches); one the semantics never mention is free.
    if module is not None:
        for k, name in enumerate(attrs.comp):
            key = f"c.{name}"
            if key in sizes and key not in in_semantics:
                report.error(ctx, "undetermined-attribute", f"the computational attribute "
                             f"{quote(name)} sizes a slice but no shape or attribute of the "
                             "semantics mentions it, so selection cannot determine it; use "
                             "it in the semantics (the shape of the parameter or ROOT that "
                             "slice holds)", _attr_span(instr, "comp_attrs", name, k))
                used.add(key)
            elif key in used and key not in in_semantics:
                report.warning(ctx, "unused-attribute", f"the computational attribute "
                               f"{quote(name)} appears only in slice starts and in no shape "
                               "or attribute of the semantics, so selection does not "
                               "determine it; the backend sets it to 0",
                               _attr_span(instr, "comp_attrs", name, k))
    # Nothing constrains such an attribute, so the backend gives it the value 0: selection
    # fixes a free computational attribute to 0, and allocation pins an addressing attribute
    # that no slice start mentions to 0.
    for kind, names, noun, setter in (("c", attrs.comp, "computational", "the backend"),
                                      ("a", attrs.addr, "addressing", "allocation")):
        for k, name in enumerate(names):
            if f"{kind}.{name}" not in used:
                field_name = "comp_attrs" if kind == "c" else "addr_attrs"
                report.warning(ctx, "unused-attribute", f"the {noun} attribute {quote(name)} "
                               "is used by no slice and no shape, so nothing determines it; "
                               f"{setter} sets it to 0",
                               _attr_span(instr, field_name, name, k))


def _warn_unreached_inputs(ctx: Context, module: Module, report: Report) -> None:
    """An input the ROOT does not depend on cannot be matched by instruction selection (a
    pattern has nothing to bind it to): the backend cannot use the table, so it is refused
    here, before anything is generated."""
    values = module.entry.by_name()
    reached: set[str] = set()
    pending = [module.entry.root.name]
    while pending:
        name = pending.pop()
        if name in reached or name not in values:
            continue
        reached.add(name)
        pending.extend(values[name].operands)
    for param in module.entry.parameters():
        if param.name not in reached:
            report.error(ctx, "unused-input", f"input {param.attrs.get('index')} "
                         f"({quote(param.name)}) does not reach the ROOT value, so selection "
                         "has nothing to bind it to; make the ROOT depend on it, or drop the "
                         "input slice", param.span)


def _attr_span(instr: Instruction, field_name: str, name: str, k: int) -> Span | None:
    names = getattr(instr, field_name)
    index = list(names).index(name) if isinstance(names, (list, tuple)) else k
    return instr.site.arg(field_name).item(index).span


def _attribute_mentions(value: object) -> set[str]:
    """Attributes mentioned anywhere in a semantics instruction's attribute values (slice
    bounds, constant values written as expressions...)."""
    if isinstance(value, ex.Expr):
        return set(value.attrs())
    if isinstance(value, dict):
        return set().union(*(_attribute_mentions(v) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return set().union(*(_attribute_mentions(v) for v in value))
    return set()


def _mentions(value: object) -> set[str]:
    if isinstance(value, str):
        try:
            return set(ex.parse_expr(value).attrs())
        except ex.ExprSyntaxError:
            return set()
    return set()
