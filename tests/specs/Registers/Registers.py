"""Registers: a CPU-style matrix and vector extension whose every instruction moves or computes
one register.

``tmm`` holds eight int32 tile registers of 16x16 and ``zmm`` thirty-two float32 vector
registers of 16 lanes. Each transfer moves one register, consecutive bytes in HBM (1,024 for a
tile, 64 for a vector); ``vbroadcast`` reads one float32 from HBM into every lane. The tile unit
multiplies and accumulates in place (``C += A.B``, int32); the vector unit adds, subtracts,
multiplies, takes maxima and minima, and fuses a multiply with an add into its third register.
Both units add, at different sizes and types: an operation is tiled by the instructions of its
own element type (a float32 add of 2x16 is two vector adds, not one 16x16 tile add, which
takes int32 only). Vectors of a kernel are rows of one register: a 64-element sum is four
vector adds. Running this file generates the oracle and the backend beside it.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

regs = Accelerator("Registers")

regs.add_data_model("tmm", [8], [16, 16], "s32")
regs.add_data_model("zmm", [32], [16], "f32")


def instruction(name, addr_attrs, inputs, outputs, body):
    instr = regs.add_instruction(name, [], addr_attrs)
    instr.set_inputs(inputs)
    instr.set_outputs(outputs)
    instr.add_semantics(f"ENTRY {name} {{\n{body}\n}}\n")


def tile(attr):
    return ["tmm", [f"@a.{attr}"], ["1"]]


def vector(attr):
    return ["zmm", [f"@a.{attr}"], ["1"]]


instruction("tload", ["addr", "dst"], [["d0", ["@a.addr"], ["1024"]]], [tile("dst")], """
    %In1 = u8[1024] parameter(0);
    %bytes = u8[1,16,16,4] reshape(%In1);
    ROOT %Out0 = s32[1,16,16] bitcast_convert(%bytes);""")

instruction("tstore", ["src", "addr"], [tile("src")], [["d0", ["@a.addr"], ["1024"]]], """
    %In1 = s32[1,16,16] parameter(0);
    %bytes = u8[1,16,16,4] bitcast_convert(%In1);
    ROOT %Out0 = u8[1024] reshape(%bytes);""")

instruction("tzero", ["dst"], [], [tile("dst")], """
    %zero = s32[] constant(0);
    ROOT %Out0 = s32[1,16,16] broadcast(%zero), dimensions={};""")

# tmac: C += A.B on three tile registers, the accumulator read and written in place.
instruction("tmac", ["a", "b", "dst"], [tile("a"), tile("b"), tile("dst")], [tile("dst")], """
    %In1 = s32[1,16,16] parameter(0);
    %In2 = s32[1,16,16] parameter(1);
    %In3 = s32[1,16,16] parameter(2);
    %a = s32[16,16] reshape(%In1);
    %b = s32[16,16] reshape(%In2);
    %c = s32[16,16] reshape(%In3);
    %ab = s32[16,16] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0};
    %sum = s32[16,16] add(%ab, %c);
    ROOT %Out0 = s32[1,16,16] reshape(%sum);""")

instruction("vload", ["addr", "dst"], [["d0", ["@a.addr"], ["64"]]], [vector("dst")], """
    %In1 = u8[64] parameter(0);
    %bytes = u8[1,16,4] reshape(%In1);
    ROOT %Out0 = f32[1,16] bitcast_convert(%bytes);""")

instruction("vstore", ["src", "addr"], [vector("src")], [["d0", ["@a.addr"], ["64"]]], """
    %In1 = f32[1,16] parameter(0);
    %bytes = u8[1,16,4] bitcast_convert(%In1);
    ROOT %Out0 = u8[64] reshape(%bytes);""")

# vbroadcast: one float32 of HBM in every lane.
instruction("vbroadcast", ["addr", "dst"], [["d0", ["@a.addr"], ["4"]]], [vector("dst")], """
    %In1 = u8[4] parameter(0);
    %bytes = u8[1,4] reshape(%In1);
    %one = f32[1] bitcast_convert(%bytes);
    %scalar = f32[] reshape(%one);
    ROOT %Out0 = f32[1,16] broadcast(%scalar), dimensions={};""")

for name, op in [("vadd", "add"), ("vsub", "subtract"), ("vmul", "multiply"),
                 ("vmax", "maximum"), ("vmin", "minimum")]:
    instruction(name, ["src1", "src2", "dst"], [vector("src1"), vector("src2")],
                [vector("dst")], f"""
    %In1 = f32[1,16] parameter(0);
    %In2 = f32[1,16] parameter(1);
    ROOT %Out0 = f32[1,16] {op}(%In1, %In2);""")

# vfmadd: dst = src1 * src2 + dst, rounded after the multiply and after the add.
instruction("vfmadd", ["src1", "src2", "dst"], [vector("src1"), vector("src2"), vector("dst")],
            [vector("dst")], """
    %In1 = f32[1,16] parameter(0);
    %In2 = f32[1,16] parameter(1);
    %In3 = f32[1,16] parameter(2);
    %product = f32[1,16] multiply(%In1, %In2);
    ROOT %Out0 = f32[1,16] add(%product, %In3);""")

generate_oracle(regs)
generate_backend(regs)
