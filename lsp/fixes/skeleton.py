"""A semantics skeleton for an instruction without semantics, typed from its slices.

Parameter ``i`` gets the type input slice ``i`` holds and the ROOT the type of the output
slice, as the validation computes them (``Slice.tensor_type``: ``dtype[*size, *unit_dims]``,
flat bytes for ``d0``). The ROOT is computed from the first input by the plainest operators
that make its type: ``copy`` or ``reshape`` within an element type, ``convert`` between two
on-chip types, and through bytes (``reshape`` and ``bitcast_convert``) to or from ``d0``, as a
load or a store does. A second input is declared but left for the user to use (validation
names it until it reaches the ROOT); an instruction without inputs computes a constant 0.
"""

from __future__ import annotations

from typing import Any

from lsp.fixes.fix import Fix, insertion
from lsp.fixes.source import assigned_name, line_indent, range_of, receiver_of
from lsp.paths import same_file
from lsp.text_map import lines_of


def skeleton_fix(acc: Any, instr: Any, text: str, path: str | None) -> Fix | None:
    """"Add semantics" after the last call on ``instr``, or None when its slices do not
    all pass the validation's checks or the instruction has no name in the code."""
    slices = _slices(acc, instr)
    if slices is None:
        return None
    inputs, output = slices
    anchor, variable = _anchor(instr, text, path)
    if anchor is None or variable is None:
        return None
    lines = lines_of(text)
    end = range_of(anchor).end
    line_text = lines[end[0]].rstrip("\r\n") if end[0] < len(lines) else ""
    indent = line_indent(lines, range_of(anchor).start[0])
    body = semantics_text(instr.name, inputs, output)
    edit = insertion((end[0], len(line_text)),
                     f"\n{indent}{variable}.add_semantics(\"\"\"\n{body}\"\"\")")
    return Fix(f"Add semantics to '{instr.name}' (typed from its slices)", (edit,),
               preferred=True)


def _slices(acc: Any, instr: Any) -> tuple[list[Any], Any] | None:
    """The checked input slices and the output slice, or None if any is refused."""
    from act_backend.spec.sites import Site
    from act_backend.validation.buffers import check_data_models
    from act_backend.validation.problem import Context, Report
    from act_backend.validation.slices import Attributes, check_slices

    if not isinstance(instr.name, str) or instr.outputs is None:
        return None
    scratch = Report()
    buffers = check_data_models(acc, scratch)
    attrs = Attributes(_identifiers(instr.comp_attrs), _identifiers(instr.addr_attrs))
    context = Context((f"instruction '{instr.name}'",))
    inputs = [] if instr.inputs is None else check_slices(
        context, "input", instr.inputs, Site(None), buffers, attrs, scratch)
    outputs = check_slices(context, "output", instr.outputs, Site(None), buffers, attrs,
                           scratch)
    if inputs is None or outputs is None or len(outputs) != 1:
        return None
    if any(s is None for s in inputs) or outputs[0] is None:
        return None
    return inputs, outputs[0]


def _identifiers(names: Any) -> tuple[str, ...]:
    if not isinstance(names, (list, tuple)):
        return ()
    return tuple(n for n in names if isinstance(n, str) and n.isidentifier())


def _anchor(instr: Any, text: str, path: str | None) -> tuple[Any, str | None]:
    """The span of the last call on the instruction (the skeleton goes after it), and the
    name the code holds the instruction by (the receiver of its calls, or the variable
    ``add_instruction`` assigns)."""
    calls = [(method, site.span) for method, site in instr.calls
             if site.span is not None and same_file(site.span.file, path)]
    variable = None
    for _, span in calls:
        variable = receiver_of(text, span) or variable
    if variable is None and instr.span is not None:
        variable = assigned_name(text, instr.span)
    spans = [span for _, span in calls]
    if instr.span is not None and same_file(instr.span.file, path):
        spans.append(instr.span)
    if not spans:
        return None, variable
    return max(spans, key=lambda s: (s.end_line, s.end_column)), variable


# ---- the text -----------------------------------------------------------------------------


def semantics_text(name: str, inputs: list[Any], output: Any) -> str:
    """``ENTRY name { ... }`` with one parameter per input and a ROOT of the output's type."""
    rows = [f"%in{index} = {type_text(item.tensor_type())} parameter({index})"
            for index, item in enumerate(inputs)]
    want = output.tensor_type()
    if inputs:
        steps = _steps(inputs[0].tensor_type(), inputs[0].buffer.is_hbm, want,
                       output.buffer.is_hbm)
        operand = "%in0"
        for k, (kind, opcode) in enumerate(steps):
            last = k == len(steps) - 1
            value = "%out" if last else f"%t{k}"
            rows.append(f"{'ROOT ' if last else ''}{value} = {type_text(kind)} "
                        f"{opcode}({operand})")
            operand = value
    else:
        rows.append(f"ROOT %out = {type_text(want)} constant(0)")
    body = "".join(f"    {row};\n" for row in rows)
    return f"ENTRY {name} {{\n{body}}}\n"


def _steps(have: Any, from_hbm: bool, want: Any, to_hbm: bool) -> list[tuple[Any, str]]:
    """The type and operator of each step from a value of type ``have`` to one of type
    ``want``; each step reads the one before it."""
    from act_backend.hlo.dtypes import byte_size
    from act_backend.hlo.ir import TensorType

    if have.dtype == want.dtype:
        return [(want, "copy" if _same_shape(have.shape, want.shape) else "reshape")]
    if from_hbm and not to_hbm:
        # Bytes into typed elements: group the bytes of each element, then reinterpret them.
        width = byte_size(want.dtype)
        grouped = TensorType("u8", (*want.shape, width) if width > 1 else want.shape)
        regroup = [] if _same_shape(have.shape, grouped.shape) else [(grouped, "reshape")]
        return [*regroup, (want, "bitcast_convert")]
    if to_hbm and not from_hbm:
        width = byte_size(have.dtype)
        grouped = TensorType("u8", (*have.shape, width) if width > 1 else have.shape)
        flatten = [] if _same_shape(grouped.shape, want.shape) else [(want, "reshape")]
        return [(grouped, "bitcast_convert"), *flatten]
    if _same_shape(have.shape, want.shape):
        return [(want, "convert")]
    return [(TensorType(want.dtype, have.shape), "convert"), (want, "reshape")]


def _same_shape(a: tuple, b: tuple) -> bool:
    from act_backend.hlo import expr as ex

    return len(a) == len(b) and all(ex.compare(x, y) is ex.Agreement.ALWAYS
                                    for x, y in zip(a, b, strict=True))


def type_text(kind: Any) -> str:
    """A type as the semantics language writes it: expressions in backquotes."""
    dims = ",".join(str(d) if isinstance(d, int) else f"`{d}`" for d in kind.shape)
    return f"{kind.dtype}[{dims}]"
