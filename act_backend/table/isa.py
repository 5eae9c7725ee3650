"""The ISA table: a validated spec as plain data (format ``act-isa-table/1``).

Both generated artefacts read it, the oracle runtime (Python) and the backend crate (Rust,
serde), so its shape is the contract of docs/architecture.md, section 2: buffers with ``d0``
first, instructions with semantics in declaration order, slices and shapes as ``EXPR``
trees, semantics as SSA operators with normalised opcodes and attributes.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from act_backend.hlo import expr as ex
from act_backend.hlo.ir import Instruction as HloInstruction
from act_backend.spec.semantics import reducer_of
from act_backend.validation import (
    Analysis,
    Buffer,
    CheckedInstruction,
    Slice,
    analysis_of,
    raise_errors,
)

FORMAT = "act-isa-table/1"


def isa_table(acc) -> dict[str, Any]:
    """The table of ``acc``; ``ValueError`` (every error) when the spec does not validate."""
    analysis = analysis_of(acc)
    raise_errors(analysis)
    return table_of(acc.name, analysis)


def table_of(name: str, analysis: Analysis) -> dict[str, Any]:
    """The table of an analysis without errors."""
    return {
        "format": FORMAT,
        "name": name,
        "buffers": [_buffer(b) for b in analysis.buffers],
        "instructions": [_instruction(i) for i in analysis.instructions],
    }


def dumps(table: dict[str, Any]) -> str:
    """The table as text: sorted keys, indented, newline-terminated; identical run to run."""
    return json.dumps(table, sort_keys=True, indent=2) + "\n"


def write_isa_table(acc, path: str | os.PathLike) -> Path:
    """Validates ``acc`` and writes its table to ``path`` (nothing is written on refusal)."""
    text = dumps(isa_table(acc))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def _buffer(buffer: Buffer) -> dict[str, Any]:
    return {"name": buffer.name, "access_dims": list(buffer.access_dims),
            "unit_dims": list(buffer.unit_dims), "dtype": buffer.dtype}


def _instruction(instr: CheckedInstruction) -> dict[str, Any]:
    return {
        "name": instr.name,
        "comp_attrs": list(instr.comp_attrs),
        "addr_attrs": list(instr.addr_attrs),
        "inputs": [_slice(s) for s in instr.inputs],
        "outputs": [_slice(s) for s in instr.outputs],
        "semantics": [_operator(op) for op in instr.semantics.entry.instructions],
        "cost": ex.to_json(instr.cost if instr.cost is not None else 1),
        "constraints": [{"op": c.op, "args": [ex.to_json(c.lhs), ex.to_json(c.rhs)]}
                        for c in instr.constraints],
    }


def _slice(piece: Slice) -> dict[str, Any]:
    return {"buffer": piece.buffer.name, "start": [ex.to_json(d) for d in piece.start],
            "size": [ex.to_json(d) for d in piece.size]}


def _operator(op: HloInstruction) -> dict[str, Any]:
    return {"name": op.name, "op": op.opcode, "dtype": op.type.dtype,
            "shape": [ex.to_json(d) for d in op.type.shape], "operands": list(op.operands),
            "attrs": _attrs(op), "root": op.is_root}


def _literal(value: Any) -> Any:
    """A constant's value for JSON, which has no infinity: ``inf``, ``-inf``, ``nan``."""
    if isinstance(value, list):
        return [_literal(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _attrs(op: HloInstruction) -> dict[str, Any]:
    attrs = op.attrs
    if op.opcode == "parameter":
        return {"index": attrs["index"]}
    if op.opcode == "constant":
        value = attrs["value"]
        return {"value": ex.to_json(value) if isinstance(value, ex.Expr) else _literal(value)}
    if op.opcode in ("transpose", "broadcast", "concatenate"):
        return {"dimensions": list(attrs["dimensions"])}
    if op.opcode == "reduce":
        return {"dimensions": list(attrs["dimensions"]),
                "computation": reducer_of(attrs["to_apply"])}
    if op.opcode == "reduce_add":
        return {"dimensions": list(attrs["dimensions"]), "computation": "add"}
    if op.opcode == "dot":
        return {key: list(attrs.get(key, [])) for key in (
            "lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims")}
    if op.opcode == "slice":
        return {"slice": [[ex.to_json(d) for d in bounds] for bounds in attrs["slice"]]}
    return {}
