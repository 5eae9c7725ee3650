"""Hover: an instruction's attributes, buffers and operand shapes; a data model's layout;
an HLO operator's meaning; an ``@c.``/``@a.`` attribute's role; the inferred type of a value
of a semantics string or a kernel (on its name or on an operand naming it)."""

from __future__ import annotations

from dataclasses import dataclass

from lsp import hlo_ops
from lsp.features.inlay_hints import tooltip
from lsp.hlo_outline import Outline, kernel_outline, semantics_outline
from lsp.spec.model import AcceleratorInfo, InstructionInfo, SliceInfo, SpecModel
from lsp.text_map import Position, TextRange, word_at

_WORD_EXTRA = "-"


@dataclass(frozen=True)
class HoverResult:
    markdown: str
    range: TextRange | None = None


def spec_hover(model: SpecModel, lines: list[str], pos: Position) -> HoverResult | None:
    inside = model.semantics_at(pos)
    if inside is not None:
        found = _semantics_word(inside, lines, pos)
        if found is not None:
            return found
    for acc in model.accelerators:
        for dm in acc.data_models:
            if dm.name_range.contains(pos):
                return HoverResult(data_model_text(acc, dm.name), dm.name_range)
        for instr in acc.instructions:
            for item in (instr.inputs or []) + (instr.outputs or []):
                if item.buffer_range is not None and item.buffer_range.contains(pos):
                    return HoverResult(data_model_text(acc, item.buffer), item.buffer_range)
    located = model.instruction_at(pos)
    if located is not None:
        acc, instr = located
        return HoverResult(instruction_text(acc, instr), instr.name_range)
    for acc in model.accelerators:
        if acc.range.contains(pos):
            return HoverResult(accelerator_text(acc), acc.name_range)
    return None


def kernel_hover(lines: list[str], pos: Position) -> HoverResult | None:
    outline = kernel_outline(lines)
    return _operator_hover(outline, pos) or _value_hover(outline, pos)


def _value_hover(outline: Outline, pos: Position) -> HoverResult | None:
    """The inferred type of the value whose name, or an operand naming it, is under the
    cursor."""
    found = outline.value_at(pos)
    if found is None:
        return None
    comp, value = found
    target, where = None, None
    if value.name_range.contains(pos):
        target, where = value, value.name_range
    for name, operand in value.operands:
        if operand.contains(pos):
            target, where = outline.definition_of(name, comp), operand
    if target is None or target.inferred is None:
        return None
    return HoverResult(f"**%{target.name}**: {code(target.inferred)}\n\n"
                       f"{tooltip(target)}", where)


def _operator_hover(outline: Outline, pos: Position) -> HoverResult | None:
    """The meaning of the operator the parser read under the cursor."""
    found = outline.value_at(pos)
    if found is None or not found[1].opcode_range.contains(pos):
        return None
    value = found[1]
    text = hlo_ops.hover_text(value.opcode)
    return HoverResult(text, value.opcode_range) if text is not None else None


def _semantics_word(located: tuple[AcceleratorInfo, InstructionInfo], lines: list[str],
                    pos: Position) -> HoverResult | None:
    acc, instr = located
    line, column = pos
    text = lines[line] if 0 <= line < len(lines) else ""
    word, start, end = word_at(text, column, _WORD_EXTRA + "@.")
    where = TextRange((line, start), (line, end))
    if word.startswith("@c.") or word.startswith("@a."):
        return HoverResult(_attribute_text(instr, word), where)
    if instr.semantics is None:
        return None
    outline = semantics_outline(instr.semantics, lines, instr.semantics_range)
    return _operator_hover(outline, pos) or _value_hover(outline, pos)


def _attribute_text(instr: InstructionInfo, word: str) -> str:
    name = word[3:]
    if word.startswith("@c."):
        declared = name in instr.comp_attrs
        role = ("computational attribute: fixed when the backend selects this instruction "
                "(solved from the matched shapes)")
    else:
        declared = name in instr.addr_attrs
        role = "addressing attribute: chosen by the backend's memory allocation"
    note = "" if declared else f"\n\nNot declared by instruction `{instr.name}`."
    return f"**{word}** — {role} of `{instr.name}`.{note}"


def data_model_text(acc: AcceleratorInfo, name: str) -> str:
    if name == "d0":
        return ("**d0** — the accelerator's HBM: byte-addressed (`u8`), unbounded, implicit in "
                "every accelerator.")
    dm = acc.data_model(name)
    if dm is None:
        return f"**{name}** — not a data model of `{acc.name}`."
    rows = " x ".join(str(d) for d in dm.access_dims) if isinstance(dm.access_dims, list) \
        else str(dm.access_dims)
    unit = ",".join(str(d) for d in dm.unit_dims) if isinstance(dm.unit_dims, list) \
        else str(dm.unit_dims)
    return (f"**data model {dm.name}** of `{acc.name}`\n\n"
            f"- addressable: {rows} (access dims `{dm.access_dims}`)\n"
            f"- each address holds a `{dm.dtype}[{unit}]` unit")


def instruction_text(acc: AcceleratorInfo, instr: InstructionInfo) -> str:
    out = [f"**instruction {instr.name}** of `{acc.name}`", ""]
    out.append("- computational attributes: " + (_code_list(instr.comp_attrs) or "none"))
    out.append("- addressing attributes: " + (_code_list(instr.addr_attrs) or "none"))
    params = dict(instr.parameter_types())
    out.append("")
    out.append("**inputs**")
    out.extend(_slice_lines(
        instr.inputs, lambda i: f"parameter {i}: {code(params[i])}" if i in params else None))
    out.append("")
    out.append("**outputs**")
    result = instr.result_type()
    out.extend(_slice_lines(
        instr.outputs, lambda i: f"ROOT: {code(result)}" if result and i == 0 else None))
    if instr.semantics is None:
        out += ["", "_No semantics: this instruction is left out of the backend._"]
    return "\n".join(out)


def accelerator_text(acc: AcceleratorInfo) -> str:
    models = ", ".join(f"`{dm.name}`" for dm in acc.data_models) or "none"
    instrs = ", ".join(f"`{i.name}`" for i in acc.instructions) or "none"
    note = ("\n\n_Parts of this accelerator are built from values known only when the spec "
            "runs._" if acc.incomplete else "")
    return (f"**accelerator {acc.name}**\n\n- data models: `d0` (HBM), {models}\n"
            f"- instructions: {instrs}{note}")


def code(text: str) -> str:
    """Inline code in Markdown, also for text holding backquotes (shape expressions)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _code_list(items: list[str]) -> str:
    return ", ".join(f"`{item}`" for item in items)


def _slice_lines(slices: list[SliceInfo] | None, label_of) -> list[str]:
    if slices is None:
        return ["- not set"]
    if not slices:
        return ["- none"]
    lines = []
    for index, item in enumerate(slices):
        extent = ", ".join(f"[{s} : +{z}]" for s, z in zip(item.start, item.size, strict=False))
        label = label_of(index)
        lines.append(f"- {code(item.buffer)} {code(extent)}" + (f" — {label}" if label else ""))
    return lines
