"""ByteTiles: tile registers of int8 bytes that one dot-product instruction reads as other types.

``tiles`` holds eight registers of 16 rows of 64 int8 bytes, in the style of a CPU's matrix
extension. ``tdpbusd`` reads its first register's bytes as uint8 (a 16x64 matrix A), its
second's as int8 in groups of four (B of 64x16, four consecutive rows of B interleaved in
each row of the register), and its third's as int32 (a 16x16 accumulator C, four bytes per
element), and writes `C + A.B` back as bytes. Loads and stores move one register, 1,024
consecutive bytes of HBM; ``tilezero`` clears one. A kernel's uint8 matrix, its int8
interleaved B and its int32 accumulator all live in the same int8 registers as their bytes.
Running this file generates the oracle and the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

acc = Accelerator("ByteTiles")

acc.add_data_model("tiles", [8], [16, 64], "s8")


def instruction(name, addr_attrs, inputs, outputs, body):
    instr = acc.add_instruction(name, [], addr_attrs)
    instr.set_inputs(inputs)
    instr.set_outputs(outputs)
    instr.add_semantics(f"ENTRY {name} {{\n{body}\n}}\n")


def tile(attr):
    return ["tiles", [f"@a.{attr}"], ["1"]]


HBM_TILE = ["d0", ["@a.addr"], ["1024"]]

instruction("tileloadd", ["addr", "dst"], [HBM_TILE], [tile("dst")], """
    %In1 = u8[1024] parameter(0);
    %rows = u8[1,16,64] reshape(%In1);
    ROOT %Out0 = s8[1,16,64] bitcast_convert(%rows);""")

instruction("tilestored", ["src", "addr"], [tile("src")], [HBM_TILE], """
    %In1 = s8[1,16,64] parameter(0);
    %bytes = u8[1,16,64] bitcast_convert(%In1);
    ROOT %Out0 = u8[1024] reshape(%bytes);""")

instruction("tilezero", ["dst"], [], [tile("dst")], """
    %zero = s8[] constant(0);
    ROOT %Out0 = s8[1,16,64] broadcast(%zero), dimensions={};""")

# tdpbusd: C += A.B, A as uint8, B as int8 interleaved by fours, C as int32.
instruction("tdpbusd", ["a", "b", "dst"], [tile("a"), tile("b"), tile("dst")], [tile("dst")], """
    %In1 = s8[1,16,64] parameter(0);
    %In2 = s8[1,16,64] parameter(1);
    %In3 = s8[1,16,64] parameter(2);
    %a8 = s8[16,64] reshape(%In1);
    %au = u8[16,64] bitcast_convert(%a8);
    %a = s32[16,64] convert(%au);
    %b4 = s8[16,16,4] reshape(%In2);
    %bt = s8[16,4,16] transpose(%b4), dimensions={0,2,1};
    %b8 = s8[64,16] reshape(%bt);
    %b = s32[64,16] convert(%b8);
    %c4 = s8[16,16,4] reshape(%In3);
    %c = s32[16,16] bitcast_convert(%c4);
    %ab = s32[16,16] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0};
    %sum = s32[16,16] add(%ab, %c);
    %out4 = s8[16,16,4] bitcast_convert(%sum);
    ROOT %Out0 = s8[1,16,64] reshape(%out4);""")

generate_oracle(acc)
generate_backend(acc)
