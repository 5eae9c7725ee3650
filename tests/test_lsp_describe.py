"""``act.describeDocument``: the server tells clients what a file is (spec, kernel or
neither) and a kernel's entry parameters, so clients detect nothing themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp.commands.describe import describe, entry_parameters

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ATTENTION = (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text()

JAX = """HloModule jit_f, entry_computation_layout={(f32[8,4]{1,0}, f32[4]{0})->f32[8,4]{1,0}}

region_0.3 {
  Arg_0.4 = f32[] parameter(0)
  ROOT Arg_0.5 = f32[] parameter(1)
}

ENTRY main.9 {
  Arg_1.2 = f32[4]{0} parameter(1), metadata={op_name="b"}
  Arg_0.1 = f32[8,4]{1,0} parameter(0), metadata={op_name="a"}
  broadcast.5 = f32[8,4]{1,0} broadcast(Arg_1.2), dimensions={1}
  ROOT add.6 = f32[8,4]{1,0} add(Arg_0.1, broadcast.5)
}
"""

# (file, text, kind)
KINDS = [
    ("/w/QKV.py", (EXAMPLES / "QKV" / "QKV.py").read_text(), "spec"),
    ("/w/QKV_new.py", (EXAMPLES / "QKV_new" / "QKV_new.py").read_text(), "spec"),
    ("/w/more.py", "from base import acc\nacc.add_instruction('mov', ['n'], ['a'])\n", "spec"),
    ("/w/half.py", "from act_backend import Accelerator\nacc = Accelerator(", "spec"),
    ("/w/plain.py", "import numpy as np\nprint(np.zeros(3))\n", None),
    ("/w/qkv_asm.py", "def qkv(kernel, api):\n    api.load_rm(n=64, addr_in=0, addr_out=0)\n",
     None),
    ("/w/attention.hlo", ATTENTION, "kernel"),
    ("/w/ATTENTION.HLO", "not HLO at all", "kernel"),
    ("/w/notes.txt", "acc = Accelerator('x')", None),
]


@pytest.mark.parametrize("path, text, kind", KINDS, ids=[k[0] for k in KINDS])
def test_the_kind_of_a_file(path, text, kind):
    answer = describe(path, text)
    assert answer["ok"] is True and answer["kind"] == kind
    if kind != "kernel":
        assert answer["parameters"] == []


# (kernel, parameters)
PARAMETERS = [
    ("attention", ATTENTION, [(0, "Q", "bf16[64,64]"), (1, "K", "bf16[64,64]"),
                              (2, "V", "bf16[64,64]")]),
    ("what JAX prints", JAX, [(0, "Arg_0.1", "f32[8,4]"), (1, "Arg_1.2", "f32[4]")]),
    ("no entry computation", "HloModule m\n", []),
    ("a line being typed", ATTENTION.replace("  %zero = bf16[] constant(0)", "  %zero = bf"),
     [(0, "Q", "bf16[64,64]"), (1, "K", "bf16[64,64]"), (2, "V", "bf16[64,64]")]),
]


@pytest.mark.parametrize("what, text, expected", PARAMETERS, ids=[p[0] for p in PARAMETERS])
def test_the_entry_parameters_of_a_kernel(what, text, expected):
    found = entry_parameters(text)
    assert [(p["index"], p["name"], p["type"]) for p in found] == expected
    assert describe("/w/k.hlo", text)["parameters"] == found
