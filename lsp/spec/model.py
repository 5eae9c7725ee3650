"""What a spec declares, with where: the data behind symbols, hover, completion, go to
definition and code lenses.

Built either from a static reading of the file (``from_reading``: exact ranges from the
syntax tree) or from what a child process reported after running it (``from_json``:
ranges from the spans the TAIDL front end recorded). Features only read this model.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from lsp.hlo_outline import Value, semantics_outline
from lsp.paths import same_file
from lsp.spec.reader import ApiCall, Ref, SpecReading
from lsp.text_map import TextRange, lines_of, node_range, span_to_range


@dataclass
class SliceInfo:
    buffer: str
    start: list[str]
    size: list[str]
    buffer_range: TextRange | None = None


@dataclass
class DataModelInfo:
    name: str
    access_dims: Any
    unit_dims: Any
    dtype: Any
    range: TextRange
    name_range: TextRange


@dataclass
class InstructionInfo:
    name: str
    comp_attrs: list[str]
    addr_attrs: list[str]
    range: TextRange
    name_range: TextRange
    inputs: list[SliceInfo] | None = None
    outputs: list[SliceInfo] | None = None
    semantics: str | None = None
    semantics_range: TextRange | None = None
    # Ranges of every call on this instruction (set_inputs, add_semantics...).
    call_ranges: list[TextRange] = field(default_factory=list)
    # String literals inside set_inputs/set_outputs, with the role of each.
    slice_literals: list[tuple[TextRange, str]] = field(default_factory=list)

    def parameter_types(self) -> list[tuple[int, str]]:
        """(index, type as written) of each ``parameter(i)`` the semantics parser reads."""
        return sorted((value.parameter, value.type_text) for value in self._values()
                      if value.parameter is not None)

    def result_type(self) -> str | None:
        """The ROOT's type as written."""
        return next((value.type_text for value in self._values() if value.is_root), None)

    def _values(self) -> list[Value]:
        if self.semantics is None:
            return []
        outline = semantics_outline(self.semantics, lines_of(self.semantics), None)
        return [value for _, value in outline.values()]


@dataclass
class AcceleratorInfo:
    name: str
    range: TextRange
    name_range: TextRange
    data_models: list[DataModelInfo] = field(default_factory=list)
    instructions: list[InstructionInfo] = field(default_factory=list)
    incomplete: bool = False

    def data_model(self, name: str) -> DataModelInfo | None:
        for model in self.data_models:
            if model.name == name:
                return model
        return None


@dataclass
class SpecModel:
    accelerators: list[AcceleratorInfo] = field(default_factory=list)
    # Generator calls (for lenses): (method, range)
    generator_calls: list[tuple[str, TextRange]] = field(default_factory=list)

    def instruction_at(self, pos: tuple[int, int]
                       ) -> tuple[AcceleratorInfo, InstructionInfo] | None:
        for acc in self.accelerators:
            for instr in acc.instructions:
                if instr.range.contains(pos) or any(r.contains(pos) for r in instr.call_ranges):
                    return acc, instr
        return None

    def semantics_at(self, pos: tuple[int, int]) -> tuple[AcceleratorInfo, InstructionInfo] | None:
        for acc in self.accelerators:
            for instr in acc.instructions:
                if instr.semantics_range is not None and instr.semantics_range.contains(pos):
                    return acc, instr
        return None

    def data_model_names(self) -> list[str]:
        names: list[str] = []
        for acc in self.accelerators:
            for model in acc.data_models:
                if model.name not in names:
                    names.append(model.name)
        return names


# ---- from a static reading ---------------------------------------------------------------

# Positional parameter names of the TAIDL calls the model reads.
_PARAMS = {
    "Accelerator": ("name",),
    "add_data_model": ("name", "access_dims", "unit_dims", "dtype"),
    "add_instruction": ("name", "comp_attrs", "addr_attrs"),
    "set_inputs": ("slices",),
    "set_outputs": ("slices",),
    "add_semantics": ("text",),
}


def _argument(call: ApiCall, name: str) -> tuple[Any, ast.expr | None, ast.Constant | None]:
    """(value, node, literal) of a call's argument by parameter name."""
    params = _PARAMS.get(call.method, ())
    if name in call.kwargs:
        node = next((k.value for k in call.node.keywords if k.arg == name), None)
        return call.kwargs[name], node, call.literal_args.get(name)
    if name in params:
        index = params.index(name)
        positional = [a for a in call.node.args if not isinstance(a, ast.Starred)]
        if index < len(call.args) and index < len(positional):
            return call.args[index], positional[index], call.literal_args.get(index)
    return None, None, None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "?"


def _str_list(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return []


def from_reading(reading: SpecReading, lines: list[str]) -> SpecModel:
    model = SpecModel()
    accelerators: dict[int, AcceleratorInfo] = {}
    instructions: dict[int, InstructionInfo] = {}
    for call in reading.calls:
        whole = node_range(lines, call.node)
        if call.method == "Accelerator" and call.result is not None:
            value, node, _ = _argument(call, "name")
            info = AcceleratorInfo(_text(value), whole,
                                   node_range(lines, node) if node is not None else whole,
                                   incomplete=call.result.incomplete)
            accelerators[id(call.result)] = info
            model.accelerators.append(info)
        elif call.method in ("generate_backend", "generate_oracle"):
            model.generator_calls.append((call.method, whole))
        elif isinstance(call.receiver, Ref):
            _add_call(call, whole, lines, accelerators, instructions)
    return model


def _add_call(call: ApiCall, whole: TextRange, lines: list[str],
              accelerators: dict[int, AcceleratorInfo],
              instructions: dict[int, InstructionInfo]) -> None:
    receiver = call.receiver
    assert receiver is not None
    if receiver.kind == "accelerator":
        acc = accelerators.get(id(receiver))
        if acc is None:
            return
        value, node, _ = _argument(call, "name")
        name_range = node_range(lines, node) if node is not None else whole
        if call.method == "add_data_model":
            access, _, _ = _argument(call, "access_dims")
            unit, _, _ = _argument(call, "unit_dims")
            dtype, _, _ = _argument(call, "dtype")
            acc.data_models.append(DataModelInfo(_text(value), access, unit, dtype, whole,
                                                 name_range))
        elif call.method == "add_instruction" and call.result is not None:
            comp, _, _ = _argument(call, "comp_attrs")
            addr, _, _ = _argument(call, "addr_attrs")
            info = InstructionInfo(_text(value), _str_list(comp), _str_list(addr), whole,
                                   name_range)
            instructions[id(call.result)] = info
            acc.instructions.append(info)
        return
    instr = instructions.get(id(receiver))
    if instr is None:
        return
    instr.call_ranges.append(whole)
    if call.method in ("set_inputs", "set_outputs"):
        value, node, _ = _argument(call, "slices")
        slices = _slices(value, node, lines)
        if call.method == "set_inputs":
            instr.inputs = slices
        else:
            instr.outputs = slices
        if node is not None:
            instr.slice_literals.extend(_slice_literals(node, lines))
    elif call.method == "add_semantics":
        value, node, _ = _argument(call, "text")
        if isinstance(value, str):
            instr.semantics = value
        if node is not None:
            instr.semantics_range = node_range(lines, node)


def _slices(value: Any, node: ast.expr | None, lines: list[str]) -> list[SliceInfo] | None:
    if not isinstance(value, (list, tuple)):
        return None
    nodes = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [None] * len(value)
    out = []
    for item, item_node in zip(value, nodes, strict=False):
        if not (isinstance(item, (list, tuple)) and len(item) == 3):
            continue
        buffer, start, size = item
        buffer_range = None
        if isinstance(item_node, (ast.List, ast.Tuple)) and item_node.elts:
            buffer_range = node_range(lines, item_node.elts[0])
        out.append(SliceInfo(str(buffer), _str_list(start), _str_list(size), buffer_range))
    return out


def _slice_literals(node: ast.expr, lines: list[str]) -> list[tuple[TextRange, str]]:
    """String literals in a slices list: the first of each slice names a buffer, the rest
    are index expressions."""
    found: list[tuple[TextRange, str]] = []
    if not isinstance(node, (ast.List, ast.Tuple)):
        return found
    for item in node.elts:
        if not isinstance(item, (ast.List, ast.Tuple)):
            continue
        for position, part in enumerate(item.elts):
            for sub in ast.walk(part):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    role = "buffer" if position == 0 and sub is part else "expression"
                    found.append((node_range(lines, sub), role))
    return found


# ---- from a child's report ---------------------------------------------------------------


def _range(span: dict[str, Any] | None, fallback: TextRange) -> TextRange:
    if not span:
        return fallback
    return span_to_range(span["line"], span["column"], span["end_line"], span["end_column"])


def from_json(accelerators: list[dict[str, Any]], path: str) -> SpecModel:
    """The model of what a run of the spec built (``describe.describe`` dicts); parts
    recorded in other files are left without a place in this one."""
    def here(span: dict[str, Any] | None) -> dict[str, Any] | None:
        if span and span.get("file") and not same_file(span["file"], path):
            return None
        return span

    model = SpecModel()
    nowhere = TextRange((0, 0), (0, 0))
    for acc in accelerators:
        acc_range = _range(here(acc.get("span")), nowhere)
        info = AcceleratorInfo(acc["name"], acc_range,
                               _range(here(acc.get("name_span")), acc_range))
        for dm in acc.get("data_models", []):
            dm_range = _range(here(dm.get("span")), acc_range)
            info.data_models.append(DataModelInfo(
                dm["name"], dm.get("access_dims"), dm.get("unit_dims"), dm.get("dtype"),
                dm_range, _range(here(dm.get("name_span")), dm_range)))
        for ins in acc.get("instructions", []):
            ins_range = _range(here(ins.get("span")), acc_range)
            instr = InstructionInfo(
                ins["name"], list(ins.get("comp_attrs") or []), list(ins.get("addr_attrs") or []),
                ins_range, _range(here(ins.get("name_span")), ins_range),
                semantics=ins.get("semantics"))
            for key in ("inputs", "outputs"):
                if ins.get(key) is not None:
                    setattr(instr, key, [
                        SliceInfo(s["buffer"], s["start"], s["size"],
                                  _range(here(s.get("buffer_span")), ins_range)
                                  if here(s.get("buffer_span")) else None)
                        for s in ins[key]])
            semantics_span = here(ins.get("semantics_span"))
            if semantics_span:
                instr.semantics_range = _range(semantics_span, ins_range)
            info.instructions.append(instr)
        model.accelerators.append(info)
    return model
