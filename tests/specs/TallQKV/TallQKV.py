"""TallQKV: a QKV-like attention unit whose buffers hold 4,096 rows and whose every
instruction takes any number of them, for kernels whose rows no instruction needs to split.

``tile`` holds operands and ``out`` results, rows of 64 bf16 each. Loads and stores move whole
rows of a row-major HBM matrix (``n * 128`` bytes), and ``load_t`` loads a 64 x 64 block
transposed; the product multiplies ``n`` rows of
``tile`` by a 64 x 64 block of it into ``out``; ``softmax`` normalizes ``n`` rows of ``out`` in
place; ``add`` adds two blocks of ``out``; moves copy rows between the buffers. A window of a
matrix narrower than its 64 columns is no whole row, so no load reads it. Running this file
generates the oracle and the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

ROWS = 4096

tall = Accelerator("TallQKV")

tall.add_data_model("tile", [ROWS], [64], "bf16")
tall.add_data_model("out", [ROWS], [64], "bf16")

instr = tall.add_instruction("load", ["n"], ["hbm_addr", "tile_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.n * 128"]]])
instr.set_outputs([["tile", ["@a.tile_addr"], ["@c.n"]]])
instr.add_semantics("""
ENTRY load {
    %In1 = u8[`@c.n * 128`] parameter(0);
    %bytes = u8[`@c.n`,64,2] reshape(%In1);
    ROOT %Out0 = bf16[`@c.n`,64] bitcast_convert(%bytes);
}
""")

instr = tall.add_instruction("load_t", [], ["hbm_addr", "tile_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["8192"]]])
instr.set_outputs([["tile", ["@a.tile_addr"], ["64"]]])
instr.add_semantics("""
ENTRY load_t {
    %In1 = u8[8192] parameter(0);
    %bytes = u8[64,64,2] reshape(%In1);
    %rows = bf16[64,64] bitcast_convert(%bytes);
    ROOT %Out0 = bf16[64,64] transpose(%rows), dimensions={1,0};
}
""")

instr = tall.add_instruction("store", ["n"], ["tile_addr", "hbm_addr"])
instr.set_inputs([["tile", ["@a.tile_addr"], ["@c.n"]]])
instr.set_outputs([["d0", ["@a.hbm_addr"], ["@c.n * 128"]]])
instr.add_semantics("""
ENTRY store {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %bytes = u8[`@c.n`,64,2] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.n * 128`] reshape(%bytes);
}
""")

for name, source, target in (("to_out", "tile", "out"), ("to_tile", "out", "tile")):
    instr = tall.add_instruction(name, ["n"], ["from_addr", "to_addr"])
    instr.set_inputs([[source, ["@a.from_addr"], ["@c.n"]]])
    instr.set_outputs([[target, ["@a.to_addr"], ["@c.n"]]])
    instr.add_semantics(f"""
ENTRY {name} {{
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
}}
""")

instr = tall.add_instruction("matmul", ["n"], ["lhs_addr", "rhs_addr", "out_addr"])
instr.set_inputs([["tile", ["@a.lhs_addr"], ["@c.n"]], ["tile", ["@a.rhs_addr"], ["64"]]])
instr.set_outputs([["out", ["@a.out_addr"], ["@c.n"]]])
instr.add_semantics("""
ENTRY matmul {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %In2 = bf16[64,64] parameter(1);
    ROOT %Out0 = bf16[`@c.n`,64] dot(%In1, %In2),
        lhs_contracting_dims={1}, rhs_contracting_dims={0};
}
""")

instr = tall.add_instruction("softmax", ["n"], ["addr"])
instr.set_inputs([["out", ["@a.addr"], ["@c.n"]]])
instr.set_outputs([["out", ["@a.addr"], ["@c.n"]]])
instr.add_semantics("""
ENTRY softmax {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %e = bf16[`@c.n`,64] exponential(%In1);
    %sums = bf16[`@c.n`] reduce_add(%e), dimensions={1};
    %spread = bf16[`@c.n`,64] broadcast(%sums), dimensions={0};
    ROOT %Out0 = bf16[`@c.n`,64] divide(%e, %spread);
}
""")

instr = tall.add_instruction("add", ["n"], ["lhs_addr", "rhs_addr", "out_addr"])
instr.set_inputs([["out", ["@a.lhs_addr"], ["@c.n"]], ["out", ["@a.rhs_addr"], ["@c.n"]]])
instr.set_outputs([["out", ["@a.out_addr"], ["@c.n"]]])
instr.add_semantics("""
ENTRY add {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %In2 = bf16[`@c.n`,64] parameter(1);
    ROOT %Out0 = bf16[`@c.n`,64] add(%In1, %In2);
}
""")

generate_oracle(tall)
generate_backend(tall)
