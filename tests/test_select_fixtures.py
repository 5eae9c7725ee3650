"""The ISA tables the backend crate's selection tests read agree with the table generator.

The crate's tests carry their own copies of the example tables and of the RowReduce, TallQKV,
OnChipTranspose, FixedArray, WeightStationary, Registers, ByteTiles and StridedTiles test
accelerators' (so that they run wherever the crate is copied); these must be what ``isa_table``
makes of the specs.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

import act_backend
from act_backend.table import isa_table

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "act_backend" / "backend" / "crate" / "tests" / "data"


@pytest.mark.parametrize(("spec", "fixture", "variable"), [
    ("examples/QKV/QKV.py", "qkv_isa.json", "qkv"),
    ("examples/QKV_new/QKV_new.py", "qkv_new_isa.json", "qkv"),
    ("examples/Gemmini/Gemmini.py", "gemmini_isa.json", "gemmini"),
    ("tests/specs/RowReduce/RowReduce.py", "rowreduce_isa.json", "rowreduce"),
    ("tests/specs/TallQKV/TallQKV.py", "tallqkv_isa.json", "tall"),
    ("tests/specs/OnChipTranspose/OnChipTranspose.py", "onchiptranspose_isa.json", "acc"),
    ("tests/specs/FixedArray/FixedArray.py", "fixedarray_isa.json", "acc"),
    ("tests/specs/WeightStationary/WeightStationary.py", "weightstationary_isa.json", "ws"),
    ("tests/specs/Registers/Registers.py", "registers_isa.json", "regs"),
    ("tests/specs/ByteTiles/ByteTiles.py", "bytetiles_isa.json", "acc"),
    ("tests/specs/StridedTiles/StridedTiles.py", "stridedtiles_isa.json", "acc"),
])
def test_selection_fixture_is_the_generated_table(spec, fixture, variable, monkeypatch):
    # The spec scripts end by generating; only their accelerator is wanted here.
    monkeypatch.setitem(vars(act_backend), "generate_oracle", lambda *a, **k: None)
    monkeypatch.setitem(vars(act_backend), "generate_backend", lambda *a, **k: None)
    acc = runpy.run_path(str(ROOT / spec))[variable]
    generated = json.loads(json.dumps(isa_table(acc)))
    assert generated == json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
