"""OnChipTranspose: an accelerator whose loads and stores move rows as they are and whose only
transpose is a move between its two buffers, for transposes no load or store performs.

``d1`` holds 128 rows of 64 bf16 and ``d2`` 64 rows. ``load`` and ``store`` move ``n`` whole
rows between HBM and ``d1``; ``mov_t`` moves ``n`` rows of ``d1`` into ``d2`` transposed,
writing the ``[64, n]`` transpose row-major into ``n`` rows of 64 (for ``n`` other than 64 its
rows are not the matrix's); ``mov`` copies rows of ``d2`` back into ``d1``; ``gemm`` multiplies
two 64 x 64 tiles of ``d1`` into ``d2``. A transpose of 32 rows is then read back as 32 rows of
64 elements, and one of 128 rows (more than ``d2`` holds) is transposed 64 rows at a time.
Running this file generates the oracle and the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

acc = Accelerator("OnChipTranspose")

acc.add_data_model("d1", [128], [64], "bf16")
acc.add_data_model("d2", [64], [64], "bf16")

instr = acc.add_instruction("load", ["n"], ["hbm_addr", "d1_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.n * 128"]]])
instr.set_outputs([["d1", ["@a.d1_addr"], ["@c.n"]]])
instr.add_semantics("""
ENTRY load {
    %In1 = u8[`@c.n * 128`] parameter(0);
    %bytes = u8[`@c.n`,64,2] reshape(%In1);
    ROOT %Out0 = bf16[`@c.n`,64] bitcast_convert(%bytes);
}
""")

instr = acc.add_instruction("store", ["n"], ["d1_addr", "hbm_addr"])
instr.set_inputs([["d1", ["@a.d1_addr"], ["@c.n"]]])
instr.set_outputs([["d0", ["@a.hbm_addr"], ["@c.n * 128"]]])
instr.add_semantics("""
ENTRY store {
    %In1 = bf16[`@c.n`,64] parameter(0);
    %bytes = u8[`@c.n`,64,2] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.n * 128`] reshape(%bytes);
}
""")

instr = acc.add_instruction("mov_t", ["n"], ["d1_addr", "d2_addr"])
instr.set_inputs([["d1", ["@a.d1_addr"], ["@c.n"]]])
instr.set_outputs([["d2", ["@a.d2_addr"], ["@c.n"]]])
instr.add_semantics("""
ENTRY mov_t {
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[64,`@c.n`] transpose(%In1), dimensions={1,0};
}
""")

instr = acc.add_instruction("mov", ["n"], ["d2_addr", "d1_addr"])
instr.set_inputs([["d2", ["@a.d2_addr"], ["@c.n"]]])
instr.set_outputs([["d1", ["@a.d1_addr"], ["@c.n"]]])
instr.add_semantics("""
ENTRY mov {
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
}
""")

# gemm: a 64x64 matrix product of two d1 tiles into d2 (with it, the identity rewrites make
# every input a product with I: its transposes are still those of an input).
instr = acc.add_instruction("gemm", [], ["lhs_addr", "rhs_addr", "d2_addr"])
instr.set_inputs([["d1", ["@a.lhs_addr"], ["64"]], ["d1", ["@a.rhs_addr"], ["64"]]])
instr.set_outputs([["d2", ["@a.d2_addr"], ["64"]]])
instr.add_semantics("""
ENTRY gemm {
    %In1 = bf16[64,64] parameter(0);
    %In2 = bf16[64,64] parameter(1);
    ROOT %Out0 = bf16[64,64] dot(%In1, %In2), lhs_contracting_dims={1}, rhs_contracting_dims={0};
}
""")

generate_oracle(acc)
generate_backend(acc)
