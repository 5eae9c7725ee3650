"""Checks of an instruction's semantics: syntax, SSA form, parameters and ROOT, attribute
references, operator types (``act_backend.hlo.infer``), and the agreement of parameter and
ROOT types with the input and output slices.

Slices and semantics meet through types: input slice ``i`` holds
``dtype(buffer)[*size, *unit_dims]`` (``u8[bytes]`` for ``d0``) and parameter ``i`` must
have that type up to dimensions of size 1 (the runtime reshapes, which only inserts or drops
them); likewise the ROOT and the output slice. A value of ``d0`` is bytes without dimensions,
so there only the element count must agree (the semantics reshape the bytes themselves).
With symbolic sizes only what can never agree is refused: ``bf16[64, n]`` into ``n`` rows of
``bf16[64]`` agrees when ``n = 64``.
"""

from __future__ import annotations

import itertools

from act_backend.hlo import expr as ex
from act_backend.hlo.infer import HloTypeError, infer_type
from act_backend.hlo.ir import Instruction as HloInstruction
from act_backend.hlo.ir import Module, Span, TensorType
from act_backend.spec.accelerator import Instruction
from act_backend.spec.semantics import SemanticsError, attribute_problems, parse_semantics
from act_backend.spec.sites import Site, TextMap
from act_backend.validation.problem import Context, Report, quote
from act_backend.validation.slices import Attributes, Slice


def check_semantics(ctx: Context, instr: Instruction, attrs: Attributes,
                    inputs: list[Slice | None] | None, output: Slice | None,
                    report: Report) -> Module | None:
    """The parsed semantics, or None when they cannot be used; problems go to ``report``."""
    site = instr.semantics_site.arg("text") if instr.semantics_site else Site(instr.span)
    ctx = ctx.then("semantics")
    text = instr.semantics
    if not isinstance(text, str):
        report.error(ctx, "bad-semantics", f"add_semantics takes the semantics text (a string "
                     f"'ENTRY <name> {{ ... }}'), found {type(text).__name__}", site.span)
        return None
    text_map = site.text_map()
    try:
        module = parse_semantics(text, text_map)
    except SemanticsError as err:
        report.error(ctx, err.code, err.message, err.span)
        return None
    errors_before = report.error_count()
    comp = module.entry
    if isinstance(instr.name, str) and comp.name != instr.name:
        report.warning(ctx, "entry-name-mismatch", f"the computation is named "
                       f"{quote(comp.name)}, not after the instruction {quote(instr.name)}",
                       comp.span)
    types = _check_values(ctx, module, text_map, attrs, report)
    _check_root(ctx, module, report)
    _check_parameters(ctx, module, inputs, report)
    if report.error_count() > errors_before:
        return None
    _check_types(ctx, module, types, report)
    if report.error_count() > errors_before:
        return None
    _check_against_slices(ctx, module, inputs, output, report)
    return module if report.error_count() == errors_before else None


def _span(instr: HloInstruction, key: str) -> Span | None:
    return instr.spans.get(key, instr.span)


def _check_values(ctx: Context, module: Module, text_map: TextMap, attrs: Attributes,
                  report: Report) -> dict[str, TensorType]:
    """SSA names, operand references, accepted attributes and the attributes that
    dimensions mention. Returns the declared type of each value."""
    types: dict[str, TensorType] = {}
    defined_at: dict[str, HloInstruction] = {}
    names = {i.name for i in module.entry.instructions}
    for instr in module.entry.instructions:
        vctx = ctx.then(f"value {quote(instr.name)}")
        if instr.name in defined_at:
            first = defined_at[instr.name]
            at = f" (first defined at line {first.span.line})" if first.span else ""
            report.error(vctx, "duplicate-value", f"{quote(instr.name)} is defined twice{at}; "
                         "each value is assigned once", _span(instr, "name"))
        for i, operand in enumerate(instr.operands):
            if operand not in defined_at:
                later = " before it is defined" if operand in names else ""
                known = ", ".join(defined_at) or "none yet"
                report.error(vctx, "undefined-value", f"operand {i} {quote(operand)} is used"
                             f"{later} but not defined (defined so far: {known})",
                             _span(instr, f"operand:{i}"))
        for code, message, where in attribute_problems(instr):
            report.error(vctx, code, message, _span(instr, where))
        for dim, key in _symbolic_places(instr):
            _check_dim_attrs(vctx, dim, text_map, attrs, report, _span(instr, key))
        for k, dim in enumerate(instr.type.shape):
            if ex.always_positive(ex.sub(1, dim)):
                report.error(vctx, "non-positive-dim", f"dimension {k} of the type "
                             f"{instr.type} is {dim}, which is never positive; dimensions "
                             "must be positive", _span(instr, f"dim:{k}"))
        defined_at.setdefault(instr.name, instr)
        types.setdefault(instr.name, instr.type)
    return types


def _symbolic_places(instr: HloInstruction) -> list[tuple[ex.Dim, str]]:
    places = [(d, f"dim:{k}") for k, d in enumerate(instr.type.shape)]
    for bounds in instr.attrs.get("slice", []) if instr.opcode == "slice" else []:
        places.extend((d, "attr:slice") for d in bounds)
    return [(d, key) for d, key in places if not isinstance(d, int)]


def _check_dim_attrs(ctx: Context, dim: ex.Expr, text_map: TextMap, attrs: Attributes,
                     report: Report, fallback: Span | None) -> None:
    for node in ex.attr_nodes(dim):
        span = text_map.span(*node.pos) if node.pos else fallback
        if node.kind == "a":
            report.error(ctx, "address-in-semantics", f"{node} is an addressing attribute; "
                         "shapes in the semantics may mention computational attributes "
                         "(@c.*) only, since what an instruction computes cannot depend on "
                         "where its operands are", span or fallback)
        elif not attrs.declared(node.key):
            report.error(ctx, "undeclared-attribute", f"{node} is not declared "
                         f"({attrs.listing('c')})", span or fallback)


def _check_root(ctx: Context, module: Module, report: Report) -> None:
    instrs = module.entry.instructions
    roots = [i for i in instrs if i.is_root]
    if len(roots) != 1:
        found = ", ".join(quote(r.name) for r in roots) if roots else "none"
        span = _span(roots[1], "name") if len(roots) > 1 else module.entry.span
        report.error(ctx, "root-count", f"exactly one instruction must be marked ROOT (the "
                     f"value written to the output slice); found {found}", span)
    elif roots[0] is not instrs[-1]:
        report.error(ctx, "root-not-last", f"the ROOT {quote(roots[0].name)} must be the last "
                     "instruction; what follows it would compute nothing",
                     _span(instrs[instrs.index(roots[0]) + 1], "name"))


def _check_parameters(ctx: Context, module: Module, inputs: list[Slice | None] | None,
                      report: Report) -> None:
    count = len(inputs) if inputs is not None else 0
    seen: dict[int, HloInstruction] = {}
    for instr in module.entry.instructions:
        if instr.opcode != "parameter":
            continue
        index = instr.attrs.get("index")
        vctx = ctx.then(f"value {quote(instr.name)}")
        if not isinstance(index, int):
            continue  # the parser reports a malformed index
        if index in seen:
            report.error(vctx, "parameter-index", f"parameter({index}) is declared twice "
                         f"(also {quote(seen[index].name)}); each input slice is one "
                         "parameter", _span(instr, "attr:index"))
        elif index >= count:
            accepted = f"0..{count - 1}" if count else "none: the instruction has no inputs"
            report.error(vctx, "parameter-index", f"parameter({index}) has no input slice: "
                         f"the instruction has {count} input{'s' if count != 1 else ''} "
                         f"(parameter indices accepted: {accepted})",
                         _span(instr, "attr:index"))
        seen.setdefault(index, instr)
    missing = [i for i in range(count) if i not in seen]
    if missing:
        report.error(ctx, "parameter-index", f"input {missing[0]} has no parameter("
                     f"{missing[0]}); parameters must be numbered 0..{count - 1}, one per "
                     "input slice", module.entry.span)


def _check_types(ctx: Context, module: Module, types: dict[str, TensorType],
                 report: Report) -> None:
    for instr in module.entry.instructions:
        operand_types = [types[o] for o in instr.operands]
        try:
            infer_type(instr, operand_types)
        except HloTypeError as err:
            report.error(ctx, err.code, err.message, _span(instr, err.where))


def _check_against_slices(ctx: Context, module: Module, inputs: list[Slice | None] | None,
                          output: Slice | None, report: Report) -> None:
    for param in module.entry.parameters():
        index = param.attrs["index"]
        slot = inputs[index] if inputs is not None and index < len(inputs) else None
        if slot is not None:
            _agree(ctx, f"parameter {quote(param.name)}", param, slot, f"input {index}",
                   "parameter", report)
    if output is not None:
        root = module.entry.root
        _agree(ctx, f"ROOT {quote(root.name)}", root, output, "output 0", "root", report)


def _agree(ctx: Context, what: str, value: HloInstruction, slot: Slice, field: str, role: str,
           report: Report) -> None:
    """``role`` is ``parameter`` or ``root``: the codes are ``<role>-type-mismatch`` (element
    type or count) and ``<role>-shape-mismatch`` (the dimensions)."""
    have, want = value.type, slot.tensor_type()
    span = _span(value, "type")
    code = f"{role}-type-mismatch"
    if have.dtype != want.dtype:
        extra = " (d0 is HBM, addressed in bytes)" if slot.buffer.is_hbm else ""
        report.error(ctx, code, f"{what} has element type {have.dtype} but {field} is in "
                     f"{slot.buffer.name}, which holds {want.dtype}{extra}", span)
        return
    count_have, count_want = ex.product(have.shape), ex.product(want.shape)
    if ex.compare(count_have, count_want) is ex.Agreement.NEVER:
        report.error(ctx, code, f"{what} has type {have} ({count_have} elements) but {field}, "
                     f"{slot.describe()}, holds {want} ({count_want} elements); the counts "
                     "can never be equal", span)
        return
    if slot.buffer.is_hbm or _may_agree_up_to_unit_dims(have.shape, want.shape):
        return
    with_unit = TensorType(want.dtype, (1, *want.shape))
    report.error(ctx, f"{role}-shape-mismatch", f"{what} has type {have} but {field}, "
                 f"{slot.describe()}, holds {want} (its sizes, then the unit dimensions of "
                 f"{slot.buffer.name}); the shapes can never agree, even inserting or removing "
                 f"dimensions of size 1 (accepted: {want}, or such as {with_unit}). Transpose "
                 "or reshape the value in the semantics if that is what the instruction does",
                 span)


# Above this many dimensions that may be 1, the search below stays undecided (accepts).
_MAX_MAYBE_UNIT_DIMS = 8


def _may_agree_up_to_unit_dims(a: tuple[ex.Dim, ...], b: tuple[ex.Dim, ...]) -> bool:
    """Whether some attribute values make ``a`` and ``b`` equal once every dimension of size
    1 is dropped (sound: False only when they never do).

    Dimensions that are always 1 are dropped; each one that may be 1 is tried both as 1
    (dropped, with the equation ``d == 1``) and as kept, and the remaining dimensions are
    paired in order; the equations of one choice must be able to hold together
    (``ex.first_conflict``).
    """
    def kept(dims: tuple[ex.Dim, ...]) -> tuple[list[ex.Dim], list[int]]:
        sure = [d for d in dims if ex.compare(d, 1) is not ex.Agreement.ALWAYS]
        return sure, [k for k, d in enumerate(sure) if ex.compare(d, 1) is not ex.Agreement.NEVER]

    dims_a, maybe_a = kept(a)
    dims_b, maybe_b = kept(b)
    if len(maybe_a) + len(maybe_b) > _MAX_MAYBE_UNIT_DIMS:
        return True
    for drop_a in _subsets(maybe_a):
        for drop_b in _subsets(maybe_b):
            rest_a = [d for k, d in enumerate(dims_a) if k not in drop_a]
            rest_b = [d for k, d in enumerate(dims_b) if k not in drop_b]
            if len(rest_a) != len(rest_b):
                continue
            ones = [(dims_a[k], 1) for k in drop_a] + [(dims_b[k], 1) for k in drop_b]
            if ex.first_conflict(ones + list(zip(rest_a, rest_b, strict=True))) is None:
                return True
    return False


def _subsets(items: list[int]) -> list[tuple[int, ...]]:
    return [c for r in range(len(items) + 1) for c in itertools.combinations(items, r)]
