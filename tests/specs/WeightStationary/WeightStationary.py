"""WeightStationary: an int8 array in the style of a first-generation TPU, 64 wide. Activations
live in a unified buffer ``unb`` of int8 rows of 64, one 64x64 int8 weight tile in ``weights``,
products go to an int32 accumulator ``acc``, and an activation unit narrows int32 rows back
into ``unb`` (wrapping, as ``astype(int8)`` does), with or without a ReLU. Nothing stores the
accumulator to HBM, nothing adds, and the array multiplies any number of rows by the whole
weight tile. Running this file generates the oracle and the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

ws = Accelerator("WeightStationary")

ws.add_data_model("unb", [1024 * 64], [64], "s8")
ws.add_data_model("acc", [256 * 64], [64], "s32")
ws.add_data_model("weights", [64 * 64], [64], "s8")


def instruction(name, comp_attrs, addr_attrs, inputs, outputs, body):
    instr = ws.add_instruction(name, comp_attrs, addr_attrs)
    instr.set_inputs(inputs)
    instr.set_outputs(outputs)
    instr.add_semantics(f"ENTRY {name} {{\n{body}\n}}\n")


HBM_ROWS = ["d0", ["@a.hbm_addr"], ["@c.rows * 64"]]
UNB_ROWS = ["unb", ["@a.unb_addr"], ["@c.rows"]]
ACC_ROWS = ["acc", ["@a.acc_addr"], ["@c.rows"]]
WEIGHTS = ["weights", ["@a.w_addr"], ["64"]]

instruction("read", ["rows"], ["hbm_addr", "unb_addr"], [HBM_ROWS], [UNB_ROWS], """
    %In1 = u8[`@c.rows * 64`] parameter(0);
    %rows = u8[`@c.rows`,64] reshape(%In1);
    ROOT %Out0 = s8[`@c.rows`,64] bitcast_convert(%rows);""")

instruction("write", ["rows"], ["hbm_addr", "unb_addr"], [UNB_ROWS], [HBM_ROWS], """
    %In1 = s8[`@c.rows`,64] parameter(0);
    %bytes = u8[`@c.rows`,64] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.rows * 64`] reshape(%bytes);""")

HBM_WEIGHTS = ["d0", ["@a.hbm_addr"], ["4096"]]

instruction("read_weights", [], ["hbm_addr", "w_addr"], [HBM_WEIGHTS], [WEIGHTS], """
    %In1 = u8[4096] parameter(0);
    %rows = u8[64,64] reshape(%In1);
    ROOT %Out0 = s8[64,64] bitcast_convert(%rows);""")

instruction("matmul", ["rows"], ["unb_addr", "w_addr", "acc_addr"], [UNB_ROWS, WEIGHTS],
            [ACC_ROWS], """
    %In1 = s8[`@c.rows`,64] parameter(0);
    %In2 = s8[64,64] parameter(1);
    %a = s32[`@c.rows`,64] convert(%In1);
    %w = s32[64,64] convert(%In2);
    ROOT %Out0 = s32[`@c.rows`,64] dot(%a, %w), """
            "lhs_contracting_dims={1}, rhs_contracting_dims={0};")

instruction("activate", ["rows"], ["acc_addr", "unb_addr"], [ACC_ROWS], [UNB_ROWS], """
    %In1 = s32[`@c.rows`,64] parameter(0);
    ROOT %Out0 = s8[`@c.rows`,64] convert(%In1);""")

instruction("activate_relu", ["rows"], ["acc_addr", "unb_addr"], [ACC_ROWS], [UNB_ROWS], """
    %In1 = s32[`@c.rows`,64] parameter(0);
    %zero = s32[] constant(0);
    %zeros = s32[`@c.rows`,64] broadcast(%zero), dimensions={};
    %relu = s32[`@c.rows`,64] maximum(%In1, %zeros);
    ROOT %Out0 = s8[`@c.rows`,64] convert(%relu);""")

generate_oracle(ws)
generate_backend(ws)
