"""StridedTiles: int8 tile registers loaded and stored a row at a stride, as a CPU's matrix
extension moves them, and read as other types by one dot-product instruction.

``tiles`` holds eight registers of 16 rows of 64 int8 bytes. ``tileloadd`` reads 16 rows of
64 bytes from HBM whose rows are ``stride`` bytes apart, from byte ``col`` of the first, and
``tilestored`` writes a register back the same way (it reads the 16 rows it writes into and
writes them back with the register's bytes in place): the only transfers, so a whole matrix
too moves at a stride, its row length, and a tile of a wider matrix at that matrix's row
length. ``tdpbusd`` reads its first register's bytes as uint8 (a 16x64 matrix A), its
second's as int8 in groups of four (B of 64x16, four consecutive rows of B interleaved in
each row of the register) and its third's as int32 (a 16x16 accumulator C), and writes
`C + A.B` back as bytes; ``tilezero`` clears one. Running this file generates the oracle and
the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

acc = Accelerator("StridedTiles")

acc.add_data_model("tiles", [8], [16, 64], "s8")


def tile(attr):
    return ["tiles", [f"@a.{attr}"], ["1"]]


# 16 rows `stride` bytes apart; a window of 64 bytes of each, from byte `col`.
SPAN = ["d0", ["@a.addr"], ["@c.stride * 16"]]
WINDOW = "@c.col + 64 <= @c.stride"

instr = acc.add_instruction("tileloadd", ["stride", "col"], ["addr", "dst"],
                            constraints=[WINDOW])
instr.set_inputs([SPAN])
instr.set_outputs([tile("dst")])
instr.add_semantics("""
ENTRY tileloadd {
    %In1 = u8[`@c.stride * 16`] parameter(0);
    %grid = u8[16,`@c.stride`] reshape(%In1);
    %rows = u8[16,64] slice(%grid), slice={[0:16], [`@c.col`:`@c.col + 64`]};
    %tile = u8[1,16,64] reshape(%rows);
    ROOT %Out0 = s8[1,16,64] bitcast_convert(%tile);
}
""")

instr = acc.add_instruction("tilestored", ["stride", "col"], ["src", "addr"],
                            constraints=[WINDOW])
instr.set_inputs([tile("src"), SPAN])
instr.set_outputs([SPAN])
instr.add_semantics("""
ENTRY tilestored {
    %In1 = s8[1,16,64] parameter(0);
    %bytes = u8[1,16,64] bitcast_convert(%In1);
    %rows = u8[16,64] reshape(%bytes);
    %In2 = u8[`@c.stride * 16`] parameter(1);
    %grid = u8[16,`@c.stride`] reshape(%In2);
    %origin = s32[] constant(0);
    %col = s32[] constant(`@c.col`);
    %written = u8[16,`@c.stride`] dynamic_update_slice(%grid, %rows, %origin, %col);
    ROOT %Out0 = u8[`@c.stride * 16`] reshape(%written);
}
""")

instr = acc.add_instruction("tilezero", [], ["dst"])
instr.set_inputs([])
instr.set_outputs([tile("dst")])
instr.add_semantics("""
ENTRY tilezero {
    %zero = s8[] constant(0);
    ROOT %Out0 = s8[1,16,64] broadcast(%zero), dimensions={};
}
""")

# tdpbusd: C += A.B, A as uint8, B as int8 interleaved by fours, C as int32.
instr = acc.add_instruction("tdpbusd", [], ["a", "b", "dst"])
instr.set_inputs([tile("a"), tile("b"), tile("dst")])
instr.set_outputs([tile("dst")])
instr.add_semantics("""
ENTRY tdpbusd {
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
    ROOT %Out0 = s8[1,16,64] reshape(%out4);
}
""")

generate_oracle(acc)
generate_backend(acc)
