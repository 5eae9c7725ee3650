"""Contiguous: an int8 systolic array whose loads and stores move contiguous runs of HBM only,
for tiles read and results written a row at a time.

``spad`` holds int8 values and ``acc`` int32 values, rows of 16 lanes. A load reads ``rows *
cols`` consecutive elements of HBM into a ``rows x cols`` block (scaled on the way), a store
writes such a block back as consecutive elements; nothing reads or writes a window of a wider
row-major matrix (no row pitch), so a tile of a matrix wider than 16 columns is read one row at
a time, each row being one contiguous run, and a result wider than 16 columns is written one
row at a time. The 16x16 array multiplies int8 blocks into ``acc``, with or without adding a
block it holds. Running this file generates the oracle and the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

LANES = 16

contiguous = Accelerator("Contiguous")

contiguous.add_data_model("spad", [256 * LANES, LANES], [], "s8")
contiguous.add_data_model("acc", [64 * LANES, LANES], [], "s32")

SPAD = ["spad", ["@a.sp_addr", 0], ["@c.rows", "@c.cols"]]
ACC = ["acc", ["@a.acc_addr", 0], ["@c.rows", "@c.cols"]]

# --- loads: consecutive elements of HBM, multiplied by a scale ----------------------------

instr = contiguous.add_instruction("load", ["rows", "cols", "scale"], ["hbm_addr", "sp_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols"]]])
instr.set_outputs([SPAD])
instr.add_semantics("""
ENTRY load {
    %In1 = u8[`@c.rows * @c.cols`] parameter(0);
    %bytes = u8[`@c.rows`,`@c.cols`] reshape(%In1);
    %values = s8[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
    %scale = s8[1] constant(`@c.scale`);
    %scales = s8[`@c.rows`,`@c.cols`] broadcast(%scale), dimensions={};
    ROOT %Out0 = s8[`@c.rows`,`@c.cols`] multiply(%values, %scales);
}
""")

instr = contiguous.add_instruction("load_acc", ["rows", "cols"], ["hbm_addr", "acc_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols * 4"]]])
instr.set_outputs([ACC])
instr.add_semantics("""
ENTRY load_acc {
    %In1 = u8[`@c.rows * @c.cols * 4`] parameter(0);
    %bytes = u8[`@c.rows`,`@c.cols`,4] reshape(%In1);
    ROOT %Out0 = s32[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
}
""")

# --- stores: a block as consecutive elements of HBM, the accumulator's also through a ReLU ---

instr = contiguous.add_instruction("store", ["rows", "cols"], ["hbm_addr", "sp_addr"])
instr.set_inputs([SPAD])
instr.set_outputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols"]]])
instr.add_semantics("""
ENTRY store {
    %In1 = s8[`@c.rows`,`@c.cols`] parameter(0);
    %bytes = u8[`@c.rows`,`@c.cols`] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.rows * @c.cols`] reshape(%bytes);
}
""")

for name, relu in (("store_acc", False), ("store_acc_relu", True)):
    instr = contiguous.add_instruction(name, ["rows", "cols"], ["hbm_addr", "acc_addr"])
    instr.set_inputs([ACC])
    instr.set_outputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols * 4"]]])
    value = "%In1"
    body = ""
    if relu:
        body = """
    %zero = s32[1] constant(0);
    %zeros = s32[`@c.rows`,`@c.cols`] broadcast(%zero), dimensions={};
    %relu = s32[`@c.rows`,`@c.cols`] maximum(%In1, %zeros);"""
        value = "%relu"
    instr.add_semantics(f"""
ENTRY {name} {{
    %In1 = s32[`@c.rows`,`@c.cols`] parameter(0);{body}
    %bytes = u8[`@c.rows`,`@c.cols`,4] bitcast_convert({value});
    ROOT %Out0 = u8[`@c.rows * @c.cols * 4`] reshape(%bytes);
}}
""")

# --- the array: C = A.B (+ D) into acc, A rows x K and B K x J, at most 16 each ------------

ARRAY = ["@c.I <= 16", "@c.J <= 16", "@c.K <= 16"]
OPERANDS = [["spad", ["@a.a_addr", 0], ["@c.I", "@c.K"]],
            ["spad", ["@a.b_addr", 0], ["@c.K", "@c.J"]]]
PRODUCT = """    %A = s8[`@c.I`,`@c.K`] parameter(0);
    %B = s8[`@c.K`,`@c.J`] parameter(1);
    %A32 = s32[`@c.I`,`@c.K`] convert(%A);
    %B32 = s32[`@c.K`,`@c.J`] convert(%B);"""
DOT = "s32[`@c.I`,`@c.J`] dot(%A32, %B32), lhs_contracting_dims={1}, rhs_contracting_dims={0}"

instr = contiguous.add_instruction("matmul", ["I", "J", "K"], ["c_addr", "a_addr", "b_addr"],
                                   constraints=ARRAY)
instr.set_inputs(OPERANDS)
instr.set_outputs([["acc", ["@a.c_addr", 0], ["@c.I", "@c.J"]]])
instr.add_semantics(f"ENTRY matmul {{\n{PRODUCT}\n    ROOT %Out0 = {DOT};\n}}\n")

instr = contiguous.add_instruction("matmul_acc", ["I", "J", "K"],
                                   ["c_addr", "a_addr", "b_addr", "d_addr"], constraints=ARRAY)
instr.set_inputs(OPERANDS + [["acc", ["@a.d_addr", 0], ["@c.I", "@c.J"]]])
instr.set_outputs([["acc", ["@a.c_addr", 0], ["@c.I", "@c.J"]]])
instr.add_semantics(f"""ENTRY matmul_acc {{
{PRODUCT}
    %D = s32[`@c.I`,`@c.J`] parameter(2);
    %AB = {DOT};
    ROOT %Out0 = s32[`@c.I`,`@c.J`] add(%AB, %D);
}}
""")

generate_oracle(contiguous)
generate_backend(contiguous)
