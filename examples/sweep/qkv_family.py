"""A family of QKV accelerators for design-space sweeps: ``qkv(d1_rows=..., ...)`` returns the
``Accelerator`` of one member.

The members share ``examples/QKV/QKV.py``'s instructions (row loads and stores, ``mov``, a
64x64 ``gemm``, a fused row ``softmax``) and differ in what a sweep varies: the rows of the
operand buffer ``d1`` and of the result buffer ``d2``, and whether the fused ``softmax`` is
there. ``qkv()`` with its defaults is the QKV of ``examples/QKV``. ``sweep.toml`` beside this
file sweeps it: ``act-backend sweep examples/sweep/sweep.toml``.
"""

from act_backend import Accelerator

# The semantics of a row move between HBM (bf16 rows of 64, 128 bytes each) and a buffer.
_LOAD_ROWS = """
ENTRY {name} {{
    %In1 = u8[`@c.n * 128`] parameter(0);
    %a = u8[`@c.n`,64,2] reshape(%In1);
    ROOT %Out0 = bf16[`@c.n`,64] bitcast_convert(%a);
}}
"""
_STORE_ROWS = """
ENTRY {name} {{
    %In1 = bf16[`@c.n`,64] parameter(0);
    %a = u8[`@c.n`,64,2] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.n*128`] reshape(%a);
}}
"""


def qkv(d1_rows: int = 128, d2_rows: int = 64, softmax: bool = True,
        name: str = "QKV") -> Accelerator:
    """The QKV accelerator with ``d1_rows`` rows of operands in ``d1``, ``d2_rows`` rows of
    matrix-unit results in ``d2``, and the fused ``softmax`` instruction when ``softmax``.

    A ``gemm`` reads two 64-row tiles of ``d1`` and writes one of ``d2``: a member with fewer
    than 64 rows in either is refused by the generator (the slice does not fit the buffer).
    """
    acc = Accelerator(name)
    acc.add_data_model("d1", [d1_rows], [64], "bf16")
    acc.add_data_model("d2", [d2_rows], [64], "bf16")

    instr = acc.add_instruction("load_rm", ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d0", ["@a.addr_in"], ["@c.n * 128"]]])
    instr.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])
    instr.add_semantics(_LOAD_ROWS.format(name="load_rm"))

    instr = acc.add_instruction("load_cm", ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d0", ["@a.addr_in"], ["@c.n * 128"]]])
    instr.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])
    instr.add_semantics("""
ENTRY load_cm {
    %In1 = u8[`@c.n * 128`] parameter(0);
    %a = u8[`@c.n`,64,2] reshape(%In1);
    %b = bf16[`@c.n`,64] bitcast_convert(%a);
    ROOT %Out0 = bf16[64,`@c.n`] transpose(%b), dimensions={1,0};
}
""")

    instr = acc.add_instruction("store_rm", ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d1", ["@a.addr_in"], ["@c.n"]]])
    instr.set_outputs([["d0", ["@a.addr_out"], ["@c.n * 128"]]])
    instr.add_semantics(_STORE_ROWS.format(name="store_rm"))

    instr = acc.add_instruction("store_cm", ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d1", ["@a.addr_in"], ["@c.n"]]])
    instr.set_outputs([["d0", ["@a.addr_out"], ["@c.n * 128"]]])
    instr.add_semantics("""
ENTRY store_cm {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %a = bf16[64,`@c.n`] transpose(%In1), dimensions={1,0};
    %b = u8[64,`@c.n`,2] bitcast_convert(%a);
    ROOT %Out0 = u8[`@c.n*128`] reshape(%b);
}
""")

    instr = acc.add_instruction("mov", ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d2", ["@a.addr_in"], ["@c.n"]]])
    instr.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])
    instr.add_semantics("""
ENTRY mov {
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
}
""")

    instr = acc.add_instruction("gemm", [], ["addr_1", "addr_2", "addr_out"])
    instr.set_inputs([["d1", ["@a.addr_1"], ["64"]], ["d1", ["@a.addr_2"], ["64"]]])
    instr.set_outputs([["d2", ["@a.addr_out"], ["64"]]])
    instr.add_semantics("""
ENTRY gemm {
    %In1 = bf16[64,64] parameter(0);
    %In2 = bf16[64,64] parameter(1);
    ROOT %Out0 = bf16[64,64] dot(%In1, %In2), lhs_contracting_dims={1}, rhs_contracting_dims={0};
}
""")

    if softmax:
        instr = acc.add_instruction("softmax", ["n"], ["addr"])
        instr.set_inputs([["d2", ["@a.addr"], ["@c.n"]]])
        instr.set_outputs([["d2", ["@a.addr"], ["@c.n"]]])
        instr.add_semantics("""
ENTRY softmax {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %a = bf16[`@c.n`,64] exponential(%In1);
    %reduced = bf16[`@c.n`] reduce_add(%a), dimensions={1};
    %b = bf16[`@c.n`,64] broadcast(%reduced), dimensions={0};
    ROOT %Out0 = bf16[`@c.n`,64] divide(%a, %b);
}
""")
    return acc
