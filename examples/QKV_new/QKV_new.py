"""QKV_new: the QKV accelerator with a third on-chip buffer and ten instructions.

d1 and d3 hold operands (128 rows of 64 bf16 each), d2 holds matrix-unit results. Transposes
happen on chip (transpose_13) instead of during loads. Running this file generates the
accelerator's oracle and compiler backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

qkv = Accelerator("QKV_new")

qkv.add_data_model("d1", [128], [64], "bf16")
qkv.add_data_model("d3", [128], [64], "bf16")
qkv.add_data_model("d2", [64], [64], "bf16")

LOAD = """
ENTRY {name} {{
    %In1 = u8[`@c.n * 128`] parameter(0);
    %a = u8[`@c.n`,64,2] reshape(%In1);
    ROOT %Out0 = bf16[`@c.n`,64] bitcast_convert(%a);
}}
"""

STORE = """
ENTRY {name} {{
    %In1 = bf16[`@c.n`,64] parameter(0);
    %a = u8[`@c.n`,64,2] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.n*128`] reshape(%a);
}}
"""

MOV = """
ENTRY {name} {{
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
}}
"""

GEMM = """
ENTRY {name} {{
    %In1 = bf16[64,64] parameter(0);
    %In2 = bf16[64,64] parameter(1);
    ROOT %Out0 = bf16[64,64] dot(%In1, %In2),
        lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}};
}}
"""

# Loads from HBM (row-major) into d1 or d3.
for name, buf in (("load_01", "d1"), ("load_03", "d3")):
    instr = qkv.add_instruction(name, ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d0", ["@a.addr_in"], ["@c.n * 128"]]])
    instr.set_outputs([[buf, ["@a.addr_out"], ["@c.n"]]])
    instr.add_semantics(LOAD.format(name=name))

# Stores to HBM (row-major) from d1 or d3.
for name, buf in (("store_10", "d1"), ("store_30", "d3")):
    instr = qkv.add_instruction(name, ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([[buf, ["@a.addr_in"], ["@c.n"]]])
    instr.set_outputs([["d0", ["@a.addr_out"], ["@c.n * 128"]]])
    instr.add_semantics(STORE.format(name=name))

# transpose_13: a 64x64 tile of d1 into d3, transposed.
instr = qkv.add_instruction("transpose_13", [], ["addr_in", "addr_out"])
instr.set_inputs([["d1", ["@a.addr_in"], ["64"]]])
instr.set_outputs([["d3", ["@a.addr_out"], ["64"]]])
instr.add_semantics("""
ENTRY transpose_13 {
    %In1 = bf16[64,64] parameter(0);
    %a = bf16[64,64] transpose(%In1), dimensions={1,0};
    ROOT %Out0 = bf16[64,64] copy(%a);
}
""")

# Moves of n rows out of d2 into d1 or d3.
for name, buf in (("mov_21", "d1"), ("mov_23", "d3")):
    instr = qkv.add_instruction(name, ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d2", ["@a.addr_in"], ["@c.n"]]])
    instr.set_outputs([[buf, ["@a.addr_out"], ["@c.n"]]])
    instr.add_semantics(MOV.format(name=name))

# Matrix products into d2: both operands in d3, or the left one in d1.
for name, lhs in (("gemm_33", "d3"), ("gemm_13", "d1")):
    instr = qkv.add_instruction(name, [], ["addr_1", "addr_2", "addr_out"])
    instr.set_inputs([[lhs, ["@a.addr_1"], ["64"]], ["d3", ["@a.addr_2"], ["64"]]])
    instr.set_outputs([["d2", ["@a.addr_out"], ["64"]]])
    instr.add_semantics(GEMM.format(name=name))

# softmax: row-wise softmax of n rows of d2, in place.
instr = qkv.add_instruction("softmax", ["n"], ["addr"])
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

generate_oracle(qkv)
generate_backend(qkv)
