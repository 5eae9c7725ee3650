"""Small hand-written ISA tables (``act-isa-table/1``) for oracle runtime tests.

``qkv_table()`` is the QKV example's table as written by hand beside this file;
``probe_table()`` extends it with instructions made to exercise the runtime's checks: one
whose semantics only fit some computational attribute values, and a two-dimensional buffer.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

ASSEMBLY_DIR = Path(__file__).resolve().parent


def qkv_table() -> dict:
    return json.loads((ASSEMBLY_DIR / "qkv_isa.json").read_text())


def _i(v: int) -> dict:
    return {"int": v}


def _a(name: str) -> dict:
    return {"attr": name}


def _mul(*args: dict) -> dict:
    out = args[0]
    for arg in args[1:]:
        out = {"op": "*", "args": [out, arg]}
    return out


def _op(name, opcode, dtype, shape, operands, root=False, **attrs) -> dict:
    return {"name": name, "op": opcode, "dtype": dtype, "shape": list(shape),
            "operands": list(operands), "attrs": attrs, "root": root}


def probe_table() -> dict:
    table = copy.deepcopy(qkv_table())
    table["name"] = "Probe"
    # d4: a 4 x 8 grid of f32[16] units, addressed by (row, column).
    table["buffers"].append({"name": "d4", "access_dims": [4, 8], "unit_dims": [16],
                             "dtype": "f32"})
    n = _a("c.n")
    table["instructions"] += [
        {   # Its parameter is always 256 bytes: only n = 2 makes the slice agree.
            "name": "load_pair", "comp_attrs": ["n"], "addr_attrs": ["addr_in", "addr_out"],
            "inputs": [{"buffer": "d0", "start": [_a("a.addr_in")], "size": [_mul(n, _i(128))]}],
            "outputs": [{"buffer": "d1", "start": [_a("a.addr_out")], "size": [_i(2)]}],
            "semantics": [
                _op("In1", "parameter", "u8", [_i(256)], [], index=0),
                _op("a", "reshape", "u8", [_i(2), _i(64), _i(2)], ["In1"]),
                _op("Out0", "bitcast_convert", "bf16", [_i(2), _i(64)], ["a"], root=True)],
        },
        {   # Its reshape is fixed at 2 rows: any other n makes the semantics disagree.
            "name": "load_two", "comp_attrs": ["n"], "addr_attrs": ["addr_in", "addr_out"],
            "inputs": [{"buffer": "d0", "start": [_a("a.addr_in")], "size": [_mul(n, _i(128))]}],
            "outputs": [{"buffer": "d1", "start": [_a("a.addr_out")], "size": [n]}],
            "semantics": [
                _op("In1", "parameter", "u8", [_mul(n, _i(128))], [], index=0),
                _op("a", "reshape", "u8", [_i(2), _i(64), _i(2)], ["In1"]),
                _op("Out0", "bitcast_convert", "bf16", [_i(2), _i(64)], ["a"], root=True)],
        },
        {   # An h x w block of f32[16] units from HBM into d4 at (row, col).
            "name": "load_block", "comp_attrs": ["h", "w"],
            "addr_attrs": ["addr_in", "row", "col"],
            "inputs": [{"buffer": "d0", "start": [_a("a.addr_in")],
                        "size": [_mul(_a("c.h"), _a("c.w"), _i(64))]}],
            "outputs": [{"buffer": "d4", "start": [_a("a.row"), _a("a.col")],
                         "size": [_a("c.h"), _a("c.w")]}],
            "semantics": [
                _op("In1", "parameter", "u8", [_mul(_a("c.h"), _a("c.w"), _i(64))], [], index=0),
                _op("a", "reshape", "u8", [_a("c.h"), _a("c.w"), _i(16), _i(4)], ["In1"]),
                _op("Out0", "bitcast_convert", "f32", [_a("c.h"), _a("c.w"), _i(16)], ["a"],
                    root=True)],
        },
        {   # The same block back to HBM, doubled on the way.
            "name": "store_block_x2", "comp_attrs": ["h", "w"],
            "addr_attrs": ["row", "col", "addr_out"],
            "inputs": [{"buffer": "d4", "start": [_a("a.row"), _a("a.col")],
                        "size": [_a("c.h"), _a("c.w")]}],
            "outputs": [{"buffer": "d0", "start": [_a("a.addr_out")],
                         "size": [_mul(_a("c.h"), _a("c.w"), _i(64))]}],
            "semantics": [
                _op("In1", "parameter", "f32", [_a("c.h"), _a("c.w"), _i(16)], [], index=0),
                _op("a", "add", "f32", [_a("c.h"), _a("c.w"), _i(16)], ["In1", "In1"]),
                _op("b", "bitcast_convert", "u8", [_a("c.h"), _a("c.w"), _i(16), _i(4)], ["a"]),
                _op("Out0", "reshape", "u8", [_mul(_a("c.h"), _a("c.w"), _i(64))], ["b"],
                    root=True)],
        },
    ]
    return table
