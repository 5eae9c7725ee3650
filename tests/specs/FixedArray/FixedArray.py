"""FixedArray: an int8 systolic array of a fixed 16x16 size, whose accumulator also adds int8
rows read from HBM, many rows at once.

``spad`` holds int8 rows of 16 and ``acc`` int32 rows of 16. Loads and stores move whole rows
of 16 elements, consecutive in HBM (no row pitch), so a tile of a wider matrix is read and
written a row at a time. The array multiplies exactly 16x16 by 16x16, with or without adding an
accumulator block. ``add_rows`` adds int8 rows read from HBM to as many accumulator rows (up to
the whole buffer): the instruction of ``add`` that takes the most rows, though only the array's
accumulating form adds a product, 16 rows at a time. Running this file generates the oracle and
the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

acc = Accelerator("FixedArray")

acc.add_data_model("spad", [1024 * 16], [16], "s8")
acc.add_data_model("acc", [64 * 16], [16], "s32")


def instruction(name, comp_attrs, addr_attrs, inputs, outputs, body):
    instr = acc.add_instruction(name, comp_attrs, addr_attrs)
    instr.set_inputs(inputs)
    instr.set_outputs(outputs)
    instr.add_semantics(f"ENTRY {name} {{\n{body}\n}}\n")


HBM_ROWS = ["d0", ["@a.hbm_addr"], ["@c.rows * 16"]]
HBM_ROWS_32 = ["d0", ["@a.hbm_addr"], ["@c.rows * 64"]]
SPAD_ROWS = ["spad", ["@a.sp_addr"], ["@c.rows"]]
ACC_ROWS = ["acc", ["@a.acc_addr"], ["@c.rows"]]

instruction("load", ["rows"], ["hbm_addr", "sp_addr"], [HBM_ROWS], [SPAD_ROWS], """
    %In1 = u8[`@c.rows * 16`] parameter(0);
    %rows = u8[`@c.rows`,16] reshape(%In1);
    ROOT %Out0 = s8[`@c.rows`,16] bitcast_convert(%rows);""")

instruction("load_acc", ["rows"], ["hbm_addr", "acc_addr"], [HBM_ROWS_32], [ACC_ROWS], """
    %In1 = u8[`@c.rows * 64`] parameter(0);
    %rows = u8[`@c.rows`,16,4] reshape(%In1);
    ROOT %Out0 = s32[`@c.rows`,16] bitcast_convert(%rows);""")

instruction("store_acc", ["rows"], ["hbm_addr", "acc_addr"], [ACC_ROWS], [HBM_ROWS_32], """
    %In1 = s32[`@c.rows`,16] parameter(0);
    %bytes = u8[`@c.rows`,16,4] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.rows * 64`] reshape(%bytes);""")

instruction("add_rows", ["rows"], ["hbm_addr", "acc_addr"], [ACC_ROWS, HBM_ROWS], [ACC_ROWS], """
    %In1 = s32[`@c.rows`,16] parameter(0);
    %In2 = u8[`@c.rows * 16`] parameter(1);
    %rows = u8[`@c.rows`,16] reshape(%In2);
    %values = s8[`@c.rows`,16] bitcast_convert(%rows);
    %wide = s32[`@c.rows`,16] convert(%values);
    ROOT %Out0 = s32[`@c.rows`,16] add(%In1, %wide);""")

ARRAY_IN = [["spad", ["@a.a_addr"], ["16"]], ["spad", ["@a.b_addr"], ["16"]]]
PRODUCT = """    %In1 = s8[16,16] parameter(0);
    %In2 = s8[16,16] parameter(1);
    %a = s32[16,16] convert(%In1);
    %b = s32[16,16] convert(%In2);
    %ab = s32[16,16] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0};"""

instruction("matmul", [], ["c_addr", "a_addr", "b_addr"], ARRAY_IN,
            [["acc", ["@a.c_addr"], ["16"]]], PRODUCT + """
    ROOT %Out0 = s32[16,16] copy(%ab);""")

instruction("matmul_acc", [], ["c_addr", "a_addr", "b_addr", "d_addr"],
            ARRAY_IN + [["acc", ["@a.d_addr"], ["16"]]], [["acc", ["@a.c_addr"], ["16"]]],
            PRODUCT + """
    %In3 = s32[16,16] parameter(2);
    ROOT %Out0 = s32[16,16] add(%ab, %In3);""")

generate_oracle(acc)
generate_backend(acc)
