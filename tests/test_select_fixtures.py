"""The ISA tables the backend crate's selection tests read agree with the table generator.

The crate's tests carry their own copies of the QKV and QKV_new tables (so that they run
wherever the crate is copied); these must be what ``isa_table`` makes of the examples.
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


@pytest.mark.parametrize(("example", "fixture", "variable"), [
    ("QKV", "qkv_isa.json", "qkv"),
    ("QKV_new", "qkv_new_isa.json", "qkv"),
    ("Gemmini", "gemmini_isa.json", "gemmini"),
])
def test_selection_fixture_is_the_generated_table(example, fixture, variable, monkeypatch):
    # The example scripts end by generating; only their accelerator is wanted here.
    monkeypatch.setitem(vars(act_backend), "generate_oracle", lambda *a, **k: None)
    monkeypatch.setitem(vars(act_backend), "generate_backend", lambda *a, **k: None)
    acc = runpy.run_path(str(ROOT / "examples" / example / f"{example}.py"))[variable]
    generated = json.loads(json.dumps(isa_table(acc)))
    assert generated == json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
