"""Gemmini: an int8 systolic-array accelerator with a scratchpad and an accumulator.

``spad`` holds int8 values and ``acc`` int32 values, both element addressable in two
dimensions (a row, then a column of 16); an operand is a block of ``rows x cols`` from a
row address and column 0. Loads bring row-major HBM data in and scale it on the way (TAIDL's
``constant(`@c.scale`)``); stores write it back, with or without a ReLU, and the accumulator
also narrows to int8 with saturation. The 16x16 array multiplies int8 blocks into the
scratchpad (wrapping int8 arithmetic) or into the accumulator (int32), with or without
adding a block it already holds. Running this file generates the oracle and the backend.
"""

from act_backend import Accelerator, generate_backend, generate_oracle

DIM = 16  # the systolic array's side

gemmini = Accelerator("Gemmini")

# The public Gemmini's sizes: a 256 KiB scratchpad and a 64 KiB accumulator.
gemmini.add_data_model("spad", [1024 * DIM, DIM], [], "s8")
gemmini.add_data_model("acc", [64 * DIM, DIM], [], "s32")

# Scratchpad rows are read and written by the array 16 at a time: a loaded block starts at
# a multiple of 16 rows.
ALIGNED_SPAD = "@a.sp_addr % 16 == 0"

# --- loads: HBM -> spad (s8) and acc (s32, or s8 widened), multiplied by a scale ---------

instr = gemmini.add_instruction("mvin", ["rows", "cols", "scale"], ["hbm_addr", "sp_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols"]]])
instr.set_outputs([["spad", ["@a.sp_addr", 0], ["@c.rows", "@c.cols"]]])
instr.add_constraints(ALIGNED_SPAD)
instr.add_semantics("""
ENTRY mvin {
    %In1 = u8[`@c.rows * @c.cols`] parameter(0);
    %bytes = u8[`@c.rows`,`@c.cols`] reshape(%In1);
    %x = s8[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
    %scale = s8[1] constant(`@c.scale`);
    %scales = s8[`@c.rows`,`@c.cols`] broadcast(%scale), dimensions={};
    ROOT %Out0 = s8[`@c.rows`,`@c.cols`] multiply(%x, %scales);
}
""")

instr = gemmini.add_instruction("mvin_acc", ["rows", "cols", "scale"], ["hbm_addr", "acc_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols * 4"]]])
instr.set_outputs([["acc", ["@a.acc_addr", 0], ["@c.rows", "@c.cols"]]])
instr.add_semantics("""
ENTRY mvin_acc {
    %In1 = u8[`@c.rows * @c.cols * 4`] parameter(0);
    %bytes = u8[`@c.rows`,`@c.cols`,4] reshape(%In1);
    %x = s32[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
    %scale = s32[1] constant(`@c.scale`);
    %scales = s32[`@c.rows`,`@c.cols`] broadcast(%scale), dimensions={};
    ROOT %Out0 = s32[`@c.rows`,`@c.cols`] multiply(%x, %scales);
}
""")

instr = gemmini.add_instruction("mvin_acc_s8", ["rows", "cols", "scale"],
                                ["hbm_addr", "acc_addr"])
instr.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols"]]])
instr.set_outputs([["acc", ["@a.acc_addr", 0], ["@c.rows", "@c.cols"]]])
instr.add_semantics("""
ENTRY mvin_acc_s8 {
    %In1 = u8[`@c.rows * @c.cols`] parameter(0);
    %bytes = u8[`@c.rows`,`@c.cols`] reshape(%In1);
    %x = s8[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
    %scale = s8[1] constant(`@c.scale`);
    %scales = s8[`@c.rows`,`@c.cols`] broadcast(%scale), dimensions={};
    %scaled = s8[`@c.rows`,`@c.cols`] multiply(%x, %scales);
    ROOT %Out0 = s32[`@c.rows`,`@c.cols`] convert(%scaled);
}
""")

# --- strided loads: a rows x cols window of a row-major HBM matrix whose rows are `stride`
# elements long, from element column `col` of the rows it lies in; one burst per row -------

WINDOW = "@c.col + @c.cols <= @c.stride"


def strided_load(name: str, buffer: str, addr: str, dtype: str) -> None:
    """A load of a window of a ``dtype`` matrix in HBM into ``buffer``, scaled like mvin."""
    width = {"s8": 1, "s32": 4}[dtype]
    instr = gemmini.add_instruction(name, ["rows", "cols", "stride", "col", "scale"],
                                    ["hbm_addr", addr], cost="2", constraints=[WINDOW])
    instr.set_inputs([["d0", ["@a.hbm_addr"], [f"@c.rows * @c.stride * {width}"]]])
    instr.set_outputs([[buffer, [f"@a.{addr}", 0], ["@c.rows", "@c.cols"]]])
    if buffer == "spad":
        instr.add_constraints(ALIGNED_SPAD)
    grid = "`@c.rows`,`@c.stride`" + (f",{width}" if width > 1 else "")
    window = "`@c.rows`,`@c.cols`" + (f",{width}" if width > 1 else "")
    slices = "[0:`@c.rows`], [`@c.col`:`@c.col + @c.cols`]"
    slices += f", [0:{width}]" if width > 1 else ""
    instr.add_semantics(f"""
ENTRY {name} {{
    %In1 = u8[`@c.rows * @c.stride * {width}`] parameter(0);
    %grid = u8[{grid}] reshape(%In1);
    %bytes = u8[{window}] slice(%grid), slice={{{slices}}};
    %x = {dtype}[`@c.rows`,`@c.cols`] bitcast_convert(%bytes);
    %scale = {dtype}[1] constant(`@c.scale`);
    %scales = {dtype}[`@c.rows`,`@c.cols`] broadcast(%scale), dimensions={{}};
    ROOT %Out0 = {dtype}[`@c.rows`,`@c.cols`] multiply(%x, %scales);
}}
""")


strided_load("mvin_strided", "spad", "sp_addr", "s8")
strided_load("mvin_acc_strided", "acc", "acc_addr", "s32")

# --- stores: spad -> HBM (s8), acc -> HBM (s32, or s8 saturated), with or without ReLU;
# each also strided: the window is written into the HBM rows it lies in, which are read and
# written back (TAIDL's read-modify-write form) -----------------------------------------------


def store(name: str, buffer: str, addr: str, dtype: str, body: str = "",
          out: str = "") -> None:
    """A store of ``rows x cols`` of ``buffer`` whose semantics compute ``body`` from
    ``%In1`` into ``%y`` of ``out`` (the HBM element type; ``dtype`` by default); without a
    body the value is stored as it is. Also its strided form, ``<name>_strided``."""
    out = out or dtype
    width = {"s8": 1, "s32": 4}[out]
    wide = f",{width}" if width > 1 else ""
    value = "%y" if body else "%In1"
    compute = chr(10) + body if body else ""

    instr = gemmini.add_instruction(name, ["rows", "cols"], ["hbm_addr", addr])
    instr.set_inputs([[buffer, [f"@a.{addr}", 0], ["@c.rows", "@c.cols"]]])
    instr.set_outputs([["d0", ["@a.hbm_addr"], [f"@c.rows * @c.cols * {width}"]]])
    instr.add_semantics(f"""
ENTRY {name} {{
    %In1 = {dtype}[`@c.rows`,`@c.cols`] parameter(0);{compute}
    %bytes = u8[`@c.rows`,`@c.cols`{wide}] bitcast_convert({value});
    ROOT %Out0 = u8[`@c.rows * @c.cols * {width}`] reshape(%bytes);
}}
""")

    span = f"@c.rows * @c.stride * {width}"
    instr = gemmini.add_instruction(f"{name}_strided", ["rows", "cols", "stride", "col"],
                                    ["hbm_addr", addr], cost="2", constraints=[WINDOW])
    instr.set_inputs([[buffer, [f"@a.{addr}", 0], ["@c.rows", "@c.cols"]],
                      ["d0", ["@a.hbm_addr"], [span]]])
    instr.set_outputs([["d0", ["@a.hbm_addr"], [span]]])
    indices = "%origin, %col" + (", %origin" if width > 1 else "")
    instr.add_semantics(f"""
ENTRY {name}_strided {{
    %In1 = {dtype}[`@c.rows`,`@c.cols`] parameter(0);{compute}
    %bytes = u8[`@c.rows`,`@c.cols`{wide}] bitcast_convert({value});
    %In2 = u8[`{span}`] parameter(1);
    %grid = u8[`@c.rows`,`@c.stride`{wide}] reshape(%In2);
    %origin = s32[] constant(0);
    %col = s32[] constant(`@c.col`);
    %written = u8[`@c.rows`,`@c.stride`{wide}] dynamic_update_slice(%grid, %bytes, {indices});
    ROOT %Out0 = u8[`{span}`] reshape(%written);
}}
""")


RELU = """    %zero = {t}[1] constant(0);
    %zeros = {t}[`@c.rows`,`@c.cols`] broadcast(%zero), dimensions={{}};
    %y = {t}[`@c.rows`,`@c.cols`] maximum(%In1, %zeros);"""
SATURATE = """    %lo = s32[1] constant(-128);
    %los = s32[`@c.rows`,`@c.cols`] broadcast(%lo), dimensions={};
    %hi = s32[1] constant(127);
    %his = s32[`@c.rows`,`@c.cols`] broadcast(%hi), dimensions={};
    %above = s32[`@c.rows`,`@c.cols`] maximum(%los, %In1);
    %within = s32[`@c.rows`,`@c.cols`] minimum(%his, %above);
    %y = s8[`@c.rows`,`@c.cols`] convert(%within);"""

store("mvout", "spad", "sp_addr", "s8")
store("mvout_relu", "spad", "sp_addr", "s8", RELU.format(t="s8"))
store("mvout_acc", "acc", "acc_addr", "s32")
store("mvout_acc_relu", "acc", "acc_addr", "s32", RELU.format(t="s32"))
store("mvout_acc_s8", "acc", "acc_addr", "s32", SATURATE, out="s8")

# --- the systolic array: C = A.B (+ D), A rows x K, B K x J, at most 16 each --------------

ARRAY = ["@c.DIM_I <= 16", "@c.DIM_J <= 16", "@c.DIM_K <= 16"]


def matmul(name: str, out: str, accumulate: bool) -> None:
    """``C = A.B (+ D)`` with A, B in spad and C (and D) in ``out``; into acc the int8
    operands are widened to int32 first."""
    addrs = ["C_dst", "A_src", "B_src"] + (["D_src"] if accumulate else [])
    # The array streams DIM_I rows through: a product costs its row count.
    instr = gemmini.add_instruction(name, ["DIM_I", "DIM_J", "DIM_K"], addrs,
                                    cost="@c.DIM_I", constraints=ARRAY)
    inputs = [["spad", ["@a.A_src", 0], ["@c.DIM_I", "@c.DIM_K"]],
              ["spad", ["@a.B_src", 0], ["@c.DIM_K", "@c.DIM_J"]]]
    if accumulate:
        inputs.append([out, ["@a.D_src", 0], ["@c.DIM_I", "@c.DIM_J"]])
    instr.set_inputs(inputs)
    instr.set_outputs([[out, ["@a.C_dst", 0], ["@c.DIM_I", "@c.DIM_J"]]])
    t = "s8" if out == "spad" else "s32"
    lines = ["    %A = s8[`@c.DIM_I`,`@c.DIM_K`] parameter(0);",
             "    %B = s8[`@c.DIM_K`,`@c.DIM_J`] parameter(1);"]
    a, b = "%A", "%B"
    if t == "s32":
        lines += ["    %A32 = s32[`@c.DIM_I`,`@c.DIM_K`] convert(%A);",
                  "    %B32 = s32[`@c.DIM_K`,`@c.DIM_J`] convert(%B);"]
        a, b = "%A32", "%B32"
    product = (f"{t}[`@c.DIM_I`,`@c.DIM_J`] dot({a}, {b}), lhs_contracting_dims={{1}}, "
               "rhs_contracting_dims={0}")
    if accumulate:
        lines += [f"    %D = {t}[`@c.DIM_I`,`@c.DIM_J`] parameter(2);",
                  f"    %AB = {product};",
                  f"    ROOT %Out0 = {t}[`@c.DIM_I`,`@c.DIM_J`] add(%AB, %D);"]
    else:
        lines += [f"    ROOT %Out0 = {product};"]
    body = "\n".join(lines)
    instr.add_semantics(f"ENTRY {name} {{\n{body}\n}}\n")


matmul("matmul8", "spad", accumulate=False)
matmul("matmul32", "acc", accumulate=False)
matmul("mac8", "spad", accumulate=True)
matmul("mac32", "acc", accumulate=True)

generate_oracle(gemmini)
generate_backend(gemmini)
