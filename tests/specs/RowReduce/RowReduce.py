"""RowReduce: an int32 unit that reduces rows of at most 16 elements, for reductions split
across tiles.

``mat`` holds int32 rows of 16 lanes, ``vec`` one int32 value a row. The unit sums a block of
``mat`` along its rows into ``vec`` (also adding the sums to values ``vec`` already holds), takes
their maxima, and combines two vectors elementwise; loads bring a row-major HBM matrix, or a
window of its columns, into ``mat``. A kernel that reduces rows longer than 16 elements is the
combination of the reductions of their column tiles. Running this file generates the oracle
and the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

LANES = 16

rowreduce = Accelerator("RowReduce")

rowreduce.add_data_model("mat", [256, LANES], [], "s32")
rowreduce.add_data_model("vec", [256], [], "s32")

MAT = ["mat", ["@a.mat_addr", 0], ["@c.rows", "@c.cols"]]
VEC_IN = ["vec", ["@a.acc_addr"], ["@c.rows"]]
VEC_OUT = ["vec", ["@a.vec_addr"], ["@c.rows"]]

# --- loads: a rows x cols int32 matrix, or a window of the columns of one whose rows are
# `stride` elements long, from column `col` ---------------------------------------------------

instr = rowreduce.add_instruction("load", ["rows", "cols"], ["hbm_addr", "mat_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols * 4"]]])
instr.set_outputs([MAT])
instr.add_semantics("""
ENTRY load {
    %In1 = u8[`@c.rows * @c.cols * 4`] parameter(0);
    %bytes = u8[`@c.rows`,`@c.cols`,4] reshape(%In1);
    ROOT %Out0 = s32[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
}
""")

instr = rowreduce.add_instruction("load_strided", ["rows", "cols", "stride", "col"],
                                  ["hbm_addr", "mat_addr"], cost="2",
                                  constraints=["@c.col + @c.cols <= @c.stride"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.stride * 4"]]])
instr.set_outputs([MAT])
WINDOW = "[0:`@c.rows`], [`@c.col`:`@c.col + @c.cols`], [0:4]"
instr.add_semantics(f"""
ENTRY load_strided {{
    %In1 = u8[`@c.rows * @c.stride * 4`] parameter(0);
    %grid = u8[`@c.rows`,`@c.stride`,4] reshape(%In1);
    %bytes = u8[`@c.rows`,`@c.cols`,4] slice(%grid), slice={{{WINDOW}}};
    ROOT %Out0 = s32[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
}}
""")

# --- reductions along rows, into vec -----------------------------------------------------------

instr = rowreduce.add_instruction("row_sum", ["rows", "cols"], ["mat_addr", "vec_addr"])
instr.set_inputs([MAT])
instr.set_outputs([VEC_OUT])
instr.add_semantics("""
ENTRY row_sum {
    %In1 = s32[`@c.rows`,`@c.cols`] parameter(0);
    ROOT %Out0 = s32[`@c.rows`] reduce_add(%In1), dimensions={1};
}
""")

# the sums added to values vec holds: an accumulation, the new sums first
instr = rowreduce.add_instruction("row_sum_acc", ["rows", "cols"],
                                  ["mat_addr", "acc_addr", "vec_addr"])
instr.set_inputs([MAT, VEC_IN])
instr.set_outputs([VEC_OUT])
instr.add_semantics("""
ENTRY row_sum_acc {
    %In1 = s32[`@c.rows`,`@c.cols`] parameter(0);
    %In2 = s32[`@c.rows`] parameter(1);
    %sums = s32[`@c.rows`] reduce_add(%In1), dimensions={1};
    ROOT %Out0 = s32[`@c.rows`] add(%sums, %In2);
}
""")

instr = rowreduce.add_instruction("row_max", ["rows", "cols"], ["mat_addr", "vec_addr"])
instr.set_inputs([MAT])
instr.set_outputs([VEC_OUT])
instr.add_semantics("""
ENTRY row_max {
    %In1 = s32[`@c.rows`,`@c.cols`] parameter(0);
    %lowest = s32[] constant(-2147483648);
    ROOT %Out0 = s32[`@c.rows`] reduce(%In1, %lowest), dimensions={1}, to_apply=max;
}
""")

# --- vectors: an elementwise maximum, and the store to HBM -------------------------------------

instr = rowreduce.add_instruction("vec_max", ["rows"], ["acc_addr", "other_addr", "vec_addr"])
instr.set_inputs([VEC_IN, ["vec", ["@a.other_addr"], ["@c.rows"]]])
instr.set_outputs([VEC_OUT])
instr.add_semantics("""
ENTRY vec_max {
    %In1 = s32[`@c.rows`] parameter(0);
    %In2 = s32[`@c.rows`] parameter(1);
    ROOT %Out0 = s32[`@c.rows`] maximum(%In1, %In2);
}
""")

instr = rowreduce.add_instruction("store", ["rows"], ["vec_addr", "hbm_addr"])
instr.set_inputs([["vec", ["@a.vec_addr"], ["@c.rows"]]])
instr.set_outputs([["d0", ["@a.hbm_addr"], ["@c.rows * 4"]]])
instr.add_semantics("""
ENTRY store {
    %In1 = s32[`@c.rows`] parameter(0);
    %bytes = u8[`@c.rows`,4] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.rows * 4`] reshape(%bytes);
}
""")

generate_oracle(rowreduce)
generate_backend(rowreduce)
