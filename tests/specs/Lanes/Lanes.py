"""Lanes: a 64-lane bf16 vector unit whose semantics are written in TAIDL-TO's dialect.

Specs written for TAIDL-TO's oracle generator use forms that XLA's own text does not: a
``reduce`` with no init value (it starts from its reducer's identity), a reducer named after
its element type (``%max_bf16``), a float literal in backquotes (TAIDL-TO lexes no float
outside them), ``exp`` for ``exponential`` and ``select_lt``. Its one buffer holds 64 rows,
so a sum of two tiles as large as it allows does not fit: smaller tiles do. Running this file
generates its oracle and backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

lanes = Accelerator("Lanes")

lanes.add_data_model("v", [64], [64], "bf16")


def lane_op(name: str, semantics: str) -> None:
    """An instruction from n rows of v to n rows of v."""
    instr = lanes.add_instruction(name, ["n"], ["src", "dst"])
    instr.set_inputs([["v", ["@a.src"], ["@c.n"]]])
    instr.set_outputs([["v", ["@a.dst"], ["@c.n"]]])
    instr.add_semantics(semantics)


# vload: n rows of HBM into v.
instr = lanes.add_instruction("vload", ["n"], ["hbm", "dst"])
instr.set_inputs([["d0", ["@a.hbm"], ["@c.n * 128"]]])
instr.set_outputs([["v", ["@a.dst"], ["@c.n"]]])
instr.add_semantics("""
ENTRY vload {
    %In1 = u8[`@c.n * 128`] parameter(0);
    %rows = u8[`@c.n`,64,2] reshape(%In1);
    ROOT %Out0 = bf16[`@c.n`,64] bitcast_convert(%rows);
}
""")

# vstore: n rows of v to HBM.
instr = lanes.add_instruction("vstore", ["n"], ["src", "hbm"])
instr.set_inputs([["v", ["@a.src"], ["@c.n"]]])
instr.set_outputs([["d0", ["@a.hbm"], ["@c.n * 128"]]])
instr.add_semantics("""
ENTRY vstore {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %bytes = u8[`@c.n`,64,2] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.n * 128`] reshape(%bytes);
}
""")

# vrowmax: every lane of a row holds the row's maximum.
lane_op("vrowmax", """
ENTRY vrowmax {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %top = bf16[`@c.n`] reduce(%In1), dimensions={1}, to_apply=%max_bf16;
    ROOT %Out0 = bf16[`@c.n`,64] broadcast(%top), dimensions={0};
}
""")

# vquarter: a quarter of every lane.
lane_op("vquarter", """
ENTRY vquarter {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %q = bf16[1] constant(`0.25`);
    %qs = bf16[`@c.n`,64] broadcast(%q), dimensions={};
    ROOT %Out0 = bf16[`@c.n`,64] multiply(%In1, %qs);
}
""")

# vexp: e to the power of every lane.
lane_op("vexp", """
ENTRY vexp {
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[`@c.n`,64] exp(%In1);
}
""")

# vrelu: a negative lane becomes zero.
lane_op("vrelu", """
ENTRY vrelu {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %z = bf16[1] constant(0);
    %zs = bf16[`@c.n`,64] broadcast(%z), dimensions={};
    ROOT %Out0 = bf16[`@c.n`,64] select_lt(%In1, %zs, %zs, %In1);
}
""")

# vadd: the sum of two blocks of n rows of v (which holds 64 rows: two blocks as large as
# the buffer allows do not fit beside each other).
instr = lanes.add_instruction("vadd", ["n"], ["lhs", "rhs", "dst"])
instr.set_inputs([["v", ["@a.lhs"], ["@c.n"]], ["v", ["@a.rhs"], ["@c.n"]]])
instr.set_outputs([["v", ["@a.dst"], ["@c.n"]]])
instr.add_semantics("""
ENTRY vadd {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %In2 = bf16[`@c.n`,64] parameter(1);
    ROOT %Out0 = bf16[`@c.n`,64] add(%In1, %In2);
}
""")

# vmax3: the largest of three blocks of n rows of v (three blocks fit beside each other only
# a quarter of the buffer at a time, with room for the result).
instr = lanes.add_instruction("vmax3", ["n"], ["a", "b", "c", "dst"])
instr.set_inputs([["v", ["@a.a"], ["@c.n"]], ["v", ["@a.b"], ["@c.n"]], ["v", ["@a.c"], ["@c.n"]]])
instr.set_outputs([["v", ["@a.dst"], ["@c.n"]]])
instr.add_semantics("""
ENTRY vmax3 {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %In2 = bf16[`@c.n`,64] parameter(1);
    %In3 = bf16[`@c.n`,64] parameter(2);
    %ab = bf16[`@c.n`,64] maximum(%In1, %In2);
    ROOT %Out0 = bf16[`@c.n`,64] maximum(%ab, %In3);
}
""")

generate_oracle(lanes)
generate_backend(lanes)
