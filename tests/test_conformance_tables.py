"""The shared case tables of the conformance corpus, run through the Python side: type
inference (``infer_cases.json`` through ``act_backend.hlo.infer.infer_type``) and the ISA
table's integer expressions (``expr_cases.json`` through ``act_backend.hlo.expr``). The
crate's ``tests/conformance_tables.rs`` runs the same rows through ``src/infer.rs`` and
``src/isa.rs``."""

from __future__ import annotations

import json
import re

import pytest

from act_backend.backend import crate_dir
from act_backend.hlo import expr as ex
from act_backend.hlo.infer import HloTypeError, infer_type
from act_backend.hlo.ir import Instruction, TensorType

CORPUS = crate_dir() / "tests" / "conformance"
INFER = json.loads((CORPUS / "infer_cases.json").read_text())["cases"]
EXPR = json.loads((CORPUS / "expr_cases.json").read_text())["cases"]


def tensor(text: str) -> TensorType:
    found = re.fullmatch(r"(\w+)\[([\d,]*)\]", text)
    assert found, f"not a tensor type: {text}"
    dims = tuple(int(d) for d in found[2].split(",") if d)
    return TensorType(found[1], dims)


def infer_row(row: dict) -> str:
    """``<type>`` or ``<code> @ <where>``, what infer_type answers for the row."""
    instr = Instruction(name="r", opcode=row["op"], type=tensor(row["declared"]),
                        operands=[f"x{i}" for i in range(len(row["operands"]))],
                        attrs=dict(row["attrs"]))
    try:
        return str(infer_type(instr, [tensor(t) for t in row["operands"]]))
    except HloTypeError as err:
        return f"{err.code} @ {err.where}"


def expected_infer(row: dict) -> str:
    return row["type"] if "type" in row else f"{row['error']} @ {row['at']}"


@pytest.mark.parametrize("index", range(len(INFER)),
                         ids=[f"{r['op']}-{i}" for i, r in enumerate(INFER)])
def test_type_inference_gives_the_recorded_answer(index):
    row = INFER[index]
    assert infer_row(row) == expected_infer(row), row


def affine(expr, env: dict) -> dict | str:
    """``{"constant": c, "terms": {attr: coef}}`` once the attributes in ``env`` are known,
    or ``not-affine``: what validation's ``is_affine`` reads through ``to_poly``."""
    poly = ex.to_poly(ex.substitute(expr, env))
    terms = {}
    for mono, coef in poly.terms:
        if not mono:
            continue
        if len(mono) != 1 or mono[0][1] != 1 or mono[0][0].startswith("("):
            return "not-affine"
        terms[mono[0][0]] = coef
    return {"constant": poly.constant, "terms": terms}


@pytest.mark.parametrize("row", EXPR, ids=[r["id"] for r in EXPR])
def test_expressions_give_the_recorded_answer(row):
    expr = ex.from_json(row["expr"])
    if "affine" in row:
        assert affine(expr, row["env"]) == row["affine"]
        return
    if "error" in row:
        with pytest.raises(ex.ExprError) as caught:
            ex.evaluate(expr, row["env"])
        assert caught.value.code == row["error"]
        return
    assert ex.evaluate(expr, row["env"]) == row["value"]


def test_the_tables_cover_every_typed_family_and_python_floor_division():
    ops = {row["op"] for row in INFER}
    assert {"add", "tanh", "not", "compare", "select", "select_lt", "convert",
            "bitcast_convert", "reshape", "transpose", "broadcast", "slice", "concatenate",
            "dot", "reduce", "reduce_add", "iota", "dynamic_slice",
            "dynamic_update_slice"} <= ops
    values = {(row["id"], row.get("value")) for row in EXPR}
    assert ("floor-division-negative-dividend", -4) in values
    assert ("modulo-negative-dividend", 1) in values
    assert ("modulo-negative-divisor", -1) in values
