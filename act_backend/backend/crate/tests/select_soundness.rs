//! Matching soundness, as a table: `kernel, ISA => instructions of the best candidate` or
//! `=> the kernel operation no instruction computes`. Every candidate of every row that
//! selects is run by the reference interpreter and must compute the kernel bit for bit.

mod select_support;

use act_compiler::isa::Isa;
use act_compiler::pii::{PiiGraph, PiiNode};
use act_compiler::select::SelectError;
use select_support::{
    assert_candidates_compute_kernel, eval_candidate, eval_kernel, isa, kernel_file, kernel_text, multiset,
    random_bf16, run, sorted, without,
};

enum Expect {
    /// The best candidate's instructions (a multiset).
    Instrs(&'static [&'static str]),
    /// Any best candidate of this many instructions.
    Count(usize),
    /// `NoInstruction` naming this operator on this line.
    Missing(&'static str, usize),
}
use Expect::*;

fn two(body: &str) -> String {
    format!("HloModule k\nENTRY e {{\n  a = bf16[64,64] parameter(0)\n  b = bf16[64,64] parameter(1)\n{body}}}\n")
}

const ADD: &str = "HloModule k\n%add (x: bf16[], y: bf16[]) -> bf16[] {\n  %x = bf16[] parameter(0)\n  %y = bf16[] parameter(1)\n  ROOT %s = bf16[] add(%x, %y)\n}\n";

const DOT: &str = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";

fn qkv() -> Isa {
    isa("qkv_isa.json")
}

/// QKV without its transposing load and store: a plain gemm is the only way to multiply.
fn qkv_plain() -> Isa {
    without(&qkv(), &["load_cm", "store_cm"])
}

fn softmax_kernel(reduce_dims: &str, bcast_dims: &str, second_exp_of: &str) -> String {
    format!(
        "HloModule k\n%add (x: bf16[], y: bf16[]) -> bf16[] {{\n  %x = bf16[] parameter(0)\n  %y = bf16[] parameter(1)\n  ROOT %s = bf16[] add(%x, %y)\n}}\n\
         ENTRY e {{\n  q = bf16[64,64] parameter(0)\n  k = bf16[64,64] parameter(1)\n  v = bf16[64,64] parameter(2)\n  \
         s1 = bf16[64,64] dot(q, k), {DOT}\n  s2 = bf16[64,64] dot(q, v), {DOT}\n  e1 = bf16[64,64] exponential(s1)\n  \
         e2 = bf16[64,64] exponential({second_exp_of})\n  z = bf16[] constant(0)\n  \
         r = bf16[64] reduce(e2, z), dimensions={reduce_dims}, to_apply=%add\n  d = bf16[64,64] broadcast(r), dimensions={bcast_dims}\n  \
         p = bf16[64,64] divide(e1, d)\n  ROOT o = bf16[64,64] dot(p, v), {DOT}\n}}\n"
    )
}

/// Row softmax of `x` (a value of `two`'s body), as the ROOT `s`.
fn softmax_of(x: &str) -> String {
    two(&format!(
        "  e = bf16[64,64] exponential({x})\n  z = bf16[] constant(0)\n  \
         r = bf16[64] reduce(e, z), dimensions={{1}}, to_apply=%add\n  d = bf16[64,64] broadcast(r), dimensions={{0}}\n  \
         ROOT s = bf16[64,64] divide(e, d)\n"
    ))
    .replace("HloModule k\n", ADD)
}

fn gemmini() -> Isa {
    isa("gemmini_isa.json")
}

/// An int8 kernel over 16x16 tiles: `a`, `b` (s8) and `c` (s32) parameters, then `body`.
fn int8(body: &str) -> String {
    format!(
        "HloModule k\nENTRY e {{\n  a = s8[16,16] parameter(0)\n  b = s8[16,16] parameter(1)\n  \
         c = s32[16,16] parameter(2)\n{body}}}\n"
    )
}

/// Mixed precision, attribute-valued constants and constraints, on the Gemmini example.
fn gemmini_rows() -> Vec<(&'static str, String, Isa, Expect)> {
    vec![
        (
            "JAX's int8 product accumulated in int32 is the widening matmul",
            int8(&format!("  ROOT d = s32[16,16] dot(a, b), {DOT}\n")),
            gemmini(),
            Instrs(&["mvin", "mvin", "matmul32", "mvout_acc"]),
        ),
        (
            "a product of widened operands is the same matmul",
            int8(&format!(
                "  wa = s32[16,16] convert(a)\n  wb = s32[16,16] convert(b)\n  ROOT d = s32[16,16] dot(wa, wb), {DOT}\n"
            )),
            gemmini(),
            Instrs(&["mvin", "mvin", "matmul32", "mvout_acc"]),
        ),
        (
            "an int8 product wraps in the scratchpad; plain loads are scaled by 1",
            int8(&format!("  ROOT d = s8[16,16] dot(a, b), {DOT}\n")),
            gemmini(),
            Instrs(&["mvin", "mvin", "matmul8", "mvout"]),
        ),
        (
            "A.B + C accumulates into int32",
            int8(&format!("  d = s32[16,16] dot(a, b), {DOT}\n  ROOT s = s32[16,16] add(d, c)\n")),
            gemmini(),
            Instrs(&["mvin", "mvin", "mvin_acc", "mac32", "mvout_acc"]),
        ),
        (
            "relu of an int32 product is the ReLU store",
            int8(&format!(
                "  d = s32[16,16] dot(a, b), {DOT}\n  z = s32[] constant(0)\n  \
                 zs = s32[16,16] broadcast(z), dimensions={{}}\n  ROOT r = s32[16,16] maximum(d, zs)\n"
            )),
            gemmini(),
            Instrs(&["mvin", "mvin", "matmul32", "mvout_acc_relu"]),
        ),
        (
            "a ReLU over 48 int32 columns runs on three column tiles, loaded and stored strided",
            "HloModule k\nENTRY e {\n  x = s32[16,48] parameter(0)\n  z = s32[] constant(0)\n  \
             zs = s32[16,48] broadcast(z), dimensions={}\n  ROOT r = s32[16,48] maximum(x, zs)\n}\n"
                .into(),
            without(&gemmini(), &["matmul8", "matmul32", "mac8", "mac32"]),
            Instrs(&[
                "mvin_acc_strided",
                "mvin_acc_strided",
                "mvin_acc_strided",
                "mvout_acc_relu_strided",
                "mvout_acc_relu_strided",
                "mvout_acc_relu_strided",
            ]),
        ),
        (
            "a multiply by a broadcast constant is a scaled load",
            int8("  k = s8[] constant(3)\n  ks = s8[16,16] broadcast(k), dimensions={}\n  ROOT m = s8[16,16] multiply(a, ks)\n"),
            gemmini(),
            Instrs(&["mvin", "mvout"]),
        ),
        (
            "a negative scale",
            int8("  k = s8[] constant(-2)\n  ks = s8[16,16] broadcast(k), dimensions={}\n  ROOT m = s8[16,16] multiply(a, ks)\n"),
            gemmini(),
            Instrs(&["mvin", "mvout"]),
        ),
        (
            "a multiply by a value no load can scale by",
            int8("  ROOT m = s8[16,16] multiply(a, b)\n"),
            gemmini(),
            Missing("multiply", 6),
        ),
        (
            "a narrowed ReLU of widened int8 values is the int8 ReLU",
            int8(
                "  w = s32[16,16] convert(a)\n  z = s32[] constant(0)\n  zs = s32[16,16] broadcast(z), dimensions={}\n  \
                 m = s32[16,16] maximum(w, zs)\n  ROOT n = s8[16,16] convert(m)\n",
            ),
            gemmini(),
            Instrs(&["mvin", "mvout_relu"]),
        ),
        (
            "an int8 maximum is b + relu(a - b) in int32, the ReLU a store's, loaded back",
            int8("  ROOT m = s8[16,16] maximum(a, b)\n"),
            gemmini(),
            Instrs(&[
                "mvin", "mvin", "mvin_acc_s8", "mac32", "mvout_acc_relu", "mvin_acc", "mvin", "mac32", "mvout_acc_s8",
            ]),
        ),
        (
            "an int8 minimum is a - relu(a - b), the ReLU loaded back negated",
            int8("  ROOT m = s8[16,16] minimum(a, b)\n"),
            gemmini(),
            Count(10),
        ),
        (
            "an int8 clamp is a minimum of a maximum",
            int8(
                "  lo = s8[] constant(-24)\n  hi = s8[] constant(2)\n  los = s8[16,16] broadcast(lo), dimensions={}\n  \
                 his = s8[16,16] broadcast(hi), dimensions={}\n  ROOT m = s8[16,16] clamp(los, a, his)\n",
            ),
            gemmini(),
            Count(16),
        ),
        (
            "an int32 value plus a widened int8 one accumulates the int8 one by a product with I",
            int8("  w = s32[16,16] convert(b)\n  ROOT s = s32[16,16] add(c, w)\n"),
            gemmini(),
            Instrs(&["mvin", "mvin", "mvin_acc", "mac32", "mvout_acc"]),
        ),
        (
            "an int8 sum wider than the array adds tile by tile, each tile through a product with I",
            "HloModule k\nENTRY e {\n  a = s8[16,32] parameter(0)\n  b = s8[16,32] parameter(1)\n  \
             ROOT s = s8[16,32] add(a, b)\n}\n"
                .into(),
            gemmini(),
            Instrs(&[
                "mvin", "mvin_strided", "mvin_strided", "mvin_strided", "mvin_strided", "mac8", "mac8",
                "mvout_strided", "mvout_strided",
            ]),
        ),
        (
            "an int8 maximum of 32 columns, each tile from a ReLU",
            "HloModule k\nENTRY e {\n  a = s8[16,32] parameter(0)\n  b = s8[16,32] parameter(1)\n  \
             ROOT m = s8[16,32] maximum(a, b)\n}\n"
                .into(),
            gemmini(),
            Count(18),
        ),
        (
            "an int8 minimum with zero is the ReLU of the negation, loaded back negated",
            int8("  z = s8[] constant(0)\n  zs = s8[16,16] broadcast(z), dimensions={}\n  ROOT m = s8[16,16] minimum(zs, a)\n"),
            gemmini(),
            Count(6),
        ),
        (
            "an int32 maximum of int32 values has no ReLU form: their difference may overflow",
            int8("  w = s32[16,16] convert(b)\n  ROOT m = s32[16,16] maximum(c, w)\n"),
            gemmini(),
            Missing("maximum", 7),
        ),
        (
            "an int32 value narrowed to int8 wraps: the saturating store narrows only values int8 holds",
            int8("  ROOT n = s8[16,16] convert(c)\n"),
            gemmini(),
            Missing("convert", 6),
        ),
        (
            "a convert round trip through a wider type cancels",
            int8("  w = s32[16,16] convert(a)\n  ROOT n = s8[16,16] convert(w)\n"),
            gemmini(),
            Instrs(&["mvin", "mvout"]),
        ),
        (
            "an integer row sum is a product with a column of ones (JAX's jnp.sum with dtype=int32)",
            "HloModule k\n%add (x: s32[], y: s32[]) -> s32[] {\n  %x = s32[] parameter(0)\n  %y = s32[] parameter(1)\n  \
             ROOT %s = s32[] add(%x, %y)\n}\nENTRY e {\n  a = s8[16,16] parameter(0)\n  w = s32[16,16] convert(a)\n  \
             z = s32[] constant(0)\n  ROOT r = s32[16] reduce(w, z), dimensions={1}, to_apply=%add\n}\n"
                .into(),
            gemmini(),
            Instrs(&["mvin", "mvin", "matmul32", "mvout_acc"]),
        ),
        (
            "an integer column sum is a product with a row of ones",
            "HloModule k\n%add (x: s32[], y: s32[]) -> s32[] {\n  %x = s32[] parameter(0)\n  %y = s32[] parameter(1)\n  \
             ROOT %s = s32[] add(%x, %y)\n}\nENTRY e {\n  a = s8[16,16] parameter(0)\n  w = s32[16,16] convert(a)\n  \
             z = s32[] constant(0)\n  ROOT r = s32[16] reduce(w, z), dimensions={0}, to_apply=%add\n}\n"
                .into(),
            gemmini(),
            Instrs(&["mvin", "mvin", "matmul32", "mvout_acc"]),
        ),
        (
            "an int8 bias column is the column times a row of ones, accumulated onto A.B",
            "HloModule k\nENTRY e {\n  a = s8[16,16] parameter(0)\n  b = s8[16,16] parameter(1)\n  \
             d = s32[16,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  v = s8[16] parameter(2)\n  \
             col = s8[16,1] reshape(v)\n  w = s32[16,1] convert(col)\n  u = s32[16,1] broadcast(w), dimensions={0,1}\n  \
             flat = s32[16] reshape(u)\n  bc = s32[16,16] broadcast(flat), dimensions={0}\n  ROOT s = s32[16,16] add(d, bc)\n}\n"
                .into(),
            gemmini(),
            Instrs(&["mvin", "mvin", "mvin", "mvin", "matmul32", "mac32", "mvout_acc"]),
        ),
        (
            "a bias column widened before it is reshaped",
            "HloModule k\nENTRY e {\n  a = s8[16,16] parameter(0)\n  b = s8[16,16] parameter(1)\n  \
             d = s32[16,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  v = s8[16] parameter(2)\n  \
             w = s32[16] convert(v)\n  col = s32[16,1] reshape(w)\n  flat = s32[16] reshape(col)\n  \
             bc = s32[16,16] broadcast(flat), dimensions={0}\n  ROOT s = s32[16,16] add(d, bc)\n}\n"
                .into(),
            gemmini(),
            Instrs(&["mvin", "mvin", "mvin", "mvin", "matmul32", "mac32", "mvout_acc"]),
        ),
        (
            "an int32 column is repeated across the columns by strided stores of it into HBM, \
             then loaded as the matrix the multiply-accumulate adds",
            "HloModule k\nENTRY e {\n  a = s8[16,16] parameter(0)\n  b = s8[16,16] parameter(1)\n  \
             d = s32[16,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  v = s32[16] parameter(2)\n  \
             col = s32[16,1] reshape(v)\n  flat = s32[16] reshape(col)\n  \
             bc = s32[16,16] broadcast(flat), dimensions={0}\n  ROOT s = s32[16,16] add(d, bc)\n}\n"
                .into(),
            gemmini(),
            Count(22),
        ),
        (
            "the array takes at most 16 rows (a constraint of the table): 32 rows run as two tiles",
            "HloModule k\nENTRY e {\n  a = s8[32,16] parameter(0)\n  b = s8[16,16] parameter(1)\n  \
             ROOT d = s32[32,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"
                .into(),
            gemmini(),
            // A loaded whole and read as two row views; both tiles side by side in the
            // accumulator, stored at once.
            Instrs(&["matmul32", "matmul32", "mvin", "mvin", "mvout_acc"]),
        ),
    ]
}


fn rows() -> Vec<(&'static str, String, Isa, Expect)> {
    vec![
        ("A.B", two(&format!("  ROOT d = bf16[64,64] dot(a, b), {DOT}\n")), qkv(), Instrs(&["load_rm", "load_rm", "gemm", "mov", "store_rm"])),
        (
            "A.B^T by dimension numbers uses the transposing load",
            two("  ROOT d = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"),
            qkv(),
            Instrs(&["load_rm", "load_cm", "gemm", "mov", "store_rm"]),
        ),
        (
            "A.B^T never compiles as A.B",
            two("  ROOT d = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"),
            qkv_plain(),
            Missing("dot", 5),
        ),
        (
            "A.transpose(B) never compiles as A.B",
            two(&format!("  t = bf16[64,64] transpose(b), dimensions={{1,0}}\n  ROOT d = bf16[64,64] dot(a, t), {DOT}\n")),
            qkv_plain(),
            Missing("transpose", 5),
        ),
        (
            "A^T.B by dimension numbers",
            two("  ROOT d = bf16[64,64] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"),
            qkv(),
            Instrs(&["load_cm", "load_rm", "gemm", "mov", "store_rm"]),
        ),
        ("(A.B)^T", two(&format!("  d = bf16[64,64] dot(a, b), {DOT}\n  ROOT t = bf16[64,64] transpose(d), dimensions={{1,0}}\n")), qkv(), Count(5)),
        ("A.A shares one load", two(&format!("  ROOT d = bf16[64,64] dot(a, a), {DOT}\n")), qkv(), Instrs(&["load_rm", "gemm", "mov", "store_rm"])),
        ("a transpose", two("  ROOT t = bf16[64,64] transpose(a), dimensions={1,0}\n"), qkv(), Count(2)),
        ("a copy", two("  ROOT c = bf16[64,64] copy(a)\n"), qkv(), Instrs(&["load_rm", "store_rm"])),
        ("the output is an input", two("  ROOT c = bf16[64,64] copy(b)\n"), qkv_plain(), Instrs(&["load_rm", "store_rm"])),
        ("the output is a parameter", two("  ROOT c = bf16[64,64] parameter(2)\n"), qkv(), Count(2)),
        (
            "a product with its own transpose reloads it transposed from HBM",
            two(&format!(
                "  d = bf16[64,64] dot(a, a), {DOT}\n  \
                 ROOT e = bf16[64,64] dot(d, d), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}\n"
            )),
            qkv(),
            Instrs(&["load_rm", "gemm", "mov", "store_rm", "load_cm", "gemm", "mov", "store_rm"]),
        ),
        ("softmax of a product", softmax_kernel("{1}", "{0}", "s1"), qkv(), Instrs(&["load_rm", "load_rm", "load_rm", "gemm", "softmax", "mov", "gemm", "mov", "store_rm"])),
        (
            "softmax of an input passes through the matrix unit with the identity",
            softmax_of("a"),
            qkv(),
            Instrs(&["load_rm", "load_rm", "gemm", "softmax", "mov", "store_rm"]),
        ),
        (
            "softmax of a softmax",
            softmax_of("a").replace("  ROOT s =", "  s =").strip_suffix("}\n").unwrap().to_string()
                + "  e2 = bf16[64,64] exponential(s)\n  r2 = bf16[64] reduce(e2, z), dimensions={1}, to_apply=%add\n  \
                   d2 = bf16[64,64] broadcast(r2), dimensions={0}\n  ROOT s2 = bf16[64,64] divide(e2, d2)\n}\n",
            qkv(),
            Instrs(&["load_rm", "load_rm", "gemm", "softmax", "softmax", "mov", "store_rm"]),
        ),
        ("softmax operands must be one value", softmax_kernel("{1}", "{0}", "s2"), qkv(), Missing("exponential", 13)),
        (
            "softmax over columns runs on the transposes",
            softmax_kernel("{0}", "{1}", "s1"),
            qkv(),
            Instrs(&["load_cm", "load_cm", "load_cm", "gemm", "softmax", "mov", "gemm", "mov", "store_cm"]),
        ),
        (
            "a softmax over columns as the output is stored transposed",
            two(&format!(
                "  s = bf16[64,64] dot(a, b), {DOT}\n  e = bf16[64,64] exponential(s)\n  z = bf16[] constant(0)\n  \
                 r = bf16[64] reduce(e, z), dimensions={{0}}, to_apply=%add\n  d = bf16[64,64] broadcast(r), dimensions={{1}}\n  \
                 ROOT p = bf16[64,64] divide(e, d)\n"
            ))
            .replace("HloModule k\n", ADD),
            qkv(),
            Instrs(&["load_cm", "load_cm", "gemm", "softmax", "mov", "store_cm"]),
        ),
        ("softmax over columns needs a transposing load", softmax_kernel("{0}", "{1}", "s1"), qkv_plain(), Missing("exponential", 13)),
        ("broadcast dimensions are compared", softmax_kernel("{1}", "{1}", "s1"), qkv(), Missing("exponential", 13)),
        (
            "a product taller than the matrix unit is tiled by rows",
            "HloModule k\nENTRY e {\n  a = bf16[128,64] parameter(0)\n  b = bf16[64,64] parameter(1)\n  ROOT d = bf16[128,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n".into(),
            qkv(),
            // A's row tiles loaded apart, the tiles side by side in d1, stored at once. Loaded
            // whole (7 instructions), A's 128 rows and B's 64 would be read together by one
            // gemm from d1's 128: such candidates are not offered.
            Count(8),
        ),
        (
            "four row tiles share one load of the right operand",
            "HloModule k\nENTRY e {\n  a = bf16[256,64] parameter(0)\n  b = bf16[64,64] parameter(1)\n  ROOT d = bf16[256,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n".into(),
            qkv(),
            Count(17),
        ),
        (
            "rows that are no multiple of the fixed-size unit end in a tile overlapping the one before",
            "HloModule k\nENTRY e {\n  a = bf16[96,64] parameter(0)\n  b = bf16[64,64] parameter(1)\n  ROOT d = bf16[96,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n".into(),
            qkv(),
            // B and rows [0, 64) and [32, 96) of A loaded and multiplied, 64 + the last 32 rows
            // moved side by side and stored at once (A loaded whole, 96 rows beside B's 64,
            // would not fit d1's 128 for either gemm).
            Instrs(&["gemm", "gemm", "load_rm", "load_rm", "load_rm", "mov", "mov", "store_rm"]),
        ),
        (
            "a value larger than the buffer is copied in row tiles: 128 rows loaded at once (all \
             that d1 holds), stored 64 rows at a time",
            "HloModule k\nENTRY e {\n  a = bf16[256,64] parameter(0)\n  ROOT c = bf16[256,64] copy(a)\n}\n".into(),
            qkv(),
            Count(6),
        ),
        (
            "a scale by a constant is a product with a multiple of the identity",
            "HloModule k\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  c = bf16[] constant(2)\n  \
             b = bf16[64,64] broadcast(c), dimensions={}\n  ROOT m = bf16[64,64] multiply(a, b)\n}\n".into(),
            qkv(),
            Instrs(&["gemm", "load_rm", "load_rm", "mov", "store_rm"]),
        ),
        (
            "an operation on a constant is what has no instruction",
            "HloModule k\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  c = bf16[] constant(2)\n  \
             b = bf16[64,64] broadcast(c), dimensions={}\n  ROOT m = bf16[64,64] maximum(a, b)\n}\n".into(),
            qkv(),
            Missing("maximum", 6),
        ),
        (
            "a constant output is loaded from HBM and stored",
            "HloModule k\nENTRY e {\n  c = bf16[] constant(2)\n  ROOT b = bf16[64,64] broadcast(c), dimensions={}\n}\n".into(),
            qkv(),
            // The broadcast of a constant is folded into one constant (fold.rs), which reaches
            // HBM and is loaded and stored.
            Instrs(&["load_rm", "store_rm"]),
        ),
        (
            "element types are compared",
            "HloModule k\nENTRY e {\n  a = f32[64,32] parameter(0)\n  ROOT c = f32[64,32] copy(a)\n}\n".into(),
            qkv(),
            Missing("parameter", 3),
        ),
        (
            // The exponential splits into 64-column tiles; the bf16 sum does not.
            "a float row sum longer than every instruction's is not split across tiles",
            format!(
                "{ADD}ENTRY e {{\n  x = bf16[64,128] parameter(0)\n  e = bf16[64,128] exponential(x)\n  \
                 z = bf16[] constant(0)\n  r = bf16[64] reduce(e, z), dimensions={{1}}, to_apply=%add\n  \
                 d = bf16[64,128] broadcast(r), dimensions={{0}}\n  ROOT s = bf16[64,128] divide(e, d)\n}}\n"
            ),
            qkv(),
            Missing("reduce", 11),
        ),
    ]
}

/// Selects `text` on `isa` and holds the result to `expect`; every candidate of a compiled
/// row is run through the reference interpreter.
fn check_row(name: &str, text: &str, isa: &Isa, expect: Expect) {
        let k = kernel_text(text);
        let result = run(&k, isa);
        match (expect, result) {
            (Instrs(names), Ok(sel)) => {
                assert_eq!(multiset(isa, &sel.candidates[0]), sorted(names), "{name}");
                assert_candidates_compute_kernel(isa, &k, &sel);
            }
            (Count(n), Ok(sel)) => {
                assert_eq!(sel.candidates[0].instruction_count(), n, "{name}");
                assert_candidates_compute_kernel(isa, &k, &sel);
            }
            (Missing(op, line), Err(SelectError::NoInstruction { op: got, line: got_line, .. })) => {
                assert_eq!((got.as_str(), got_line), (op, line), "{name}");
            }
            (_, Ok(sel)) => panic!("{name}: selected {:?}", multiset(isa, &sel.candidates[0])),
            (_, Err(e)) => panic!("{name}: {e}"),
        }
}

#[test]
fn matching_soundness_table() {
    for (name, text, isa, expect) in rows().into_iter().chain(gemmini_rows()) {
        check_row(name, &text, &isa, expect);
    }
}

#[test]
fn a_value_overwritten_in_place_and_used_again_has_spilling_alternatives() {
    // softmax overwrites S in d2, and S.V needs S too: the best candidate keeps S and P in d1
    // at once (which may not fit); alternatives store a value to HBM and load it back, into
    // the same buffer, for one of its uses.
    let isa = qkv();
    let k = kernel_file("softmax_input_reused.hlo");
    let sel = run(&k, &isa).unwrap();
    let best = &sel.candidates[0];
    assert_eq!(best.instruction_count(), 12);
    let mut reload = multiset(&isa, best);
    reload.extend(["load_rm".to_string(), "store_rm".to_string()]);
    reload.sort();
    assert!(
        sel.candidates.iter().any(|g| multiset(&isa, g) == reload),
        "some candidate spills one value with a store and a load: {:?}",
        sel.candidates.iter().map(|g| multiset(&isa, g)).collect::<Vec<_>>()
    );
    assert_candidates_compute_kernel(&isa, &k, &sel);
    assert!(select_support::assert_egraph_consistent(&k, &isa) > 100);
}

#[test]
fn tanh_has_no_instruction() {
    let err = run(&kernel_file("tanh_jax.hlo"), &qkv()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tanh_jax.hlo:5: no instruction of QKV computes `tanh` (ROOT tanh.1 = bf16[64,64]{1,0} tanh(a.1))"
    );
}

#[test]
fn a_value_no_store_reaches_is_named() {
    // Without stores nothing reaches HBM; the product itself is computable.
    let isa = without(&qkv(), &["store_rm", "store_cm"]);
    let err = run(&kernel_text(&two(&format!("  ROOT d = bf16[64,64] dot(a, b), {DOT}\n"))), &isa).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel.hlo:5: no instruction of QKV stores the result of `dot` to HBM (ROOT d = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})"
    );
}

#[test]
fn the_interpreter_tells_a_product_from_its_transpose() {
    // The harness above must be able to fail: A.B computed as B.A is caught.
    let isa = qkv();
    let k = kernel_text(&two(&format!("  ROOT d = bf16[64,64] dot(a, b), {DOT}\n")));
    let inputs = vec![random_bf16(8192, 1), random_bf16(8192, 2)];
    let index = |name: &str| isa.instructions.iter().position(|i| i.name == name).unwrap();
    let instr =
        |name: &str, comp: Vec<i64>, operands: Vec<usize>| PiiNode::Instr { instr: index(name), comp, operands };
    let graph = |lhs: usize, rhs: usize| PiiGraph {
        nodes: vec![
            PiiNode::Input { param: 0, bytes: 8192 },
            PiiNode::Input { param: 1, bytes: 8192 },
            instr("load_rm", vec![64], vec![0]),
            instr("load_rm", vec![64], vec![1]),
            instr("gemm", vec![], vec![lhs, rhs]),
            instr("mov", vec![64], vec![4]),
            instr("store_rm", vec![64], vec![5]),
        ],
        root: 6,
    };
    let expected = eval_kernel(&k, &inputs);
    assert_eq!(eval_candidate(&isa, &graph(2, 3), &inputs), expected);
    assert_ne!(eval_candidate(&isa, &graph(3, 2), &inputs), expected);
}

#[test]
fn a_product_taller_than_the_matrix_unit_is_tiled_by_rows() {
    // bf16[128,64] . bf16[64,64] on QKV, whose gemm takes 64 rows. The fewest instructions
    // would load A whole and read its two row tiles on chip as views, but a gemm reading a
    // view of A reads all of A's 128 rows beside B's 64, more than d1 holds, so no candidate
    // loads A whole. The fewest left: A's row tiles as views of its bytes in HBM, each loaded,
    // the two product tiles moved side by side into one concatenation in d1, stored at once.
    let isa = qkv();
    let k = kernel_file("matmul_128x64.hlo");
    let sel = run(&k, &isa).unwrap();
    let best = &sel.candidates[0];
    assert_eq!(
        multiset(&isa, best),
        sorted(&["gemm", "gemm", "load_rm", "load_rm", "load_rm", "mov", "mov", "store_rm"])
    );
    let whole = |g: &act_compiler::pii::PiiGraph| {
        g.nodes.iter().any(|n| {
            matches!(n, PiiNode::Instr { instr, comp, .. } if isa.instructions[*instr].name == "load_rm" && comp.as_slice() == [128])
        })
    };
    assert!(!sel.candidates.iter().any(whole));
    assert_eq!(best.nodes.iter().filter(|n| matches!(n, PiiNode::Concat { parts, dim: 0 } if parts.len() == 2)).count(), 1);
    // Among the others: A's rows as two views of its bytes in HBM, two loads, and the tiles
    // stored side by side into the output (what fits in d1).
    let fits = sel.candidates.iter().any(|g| {
        multiset(&isa, g)
            == sorted(&["gemm", "gemm", "load_rm", "load_rm", "load_rm", "mov", "mov", "store_rm", "store_rm"])
            && matches!(&g.nodes[g.root], PiiNode::Concat { parts, dim: 0 } if parts.len() == 2)
    });
    assert!(fits);
    assert_candidates_compute_kernel(&isa, &k, &sel);
}

#[test]
fn a_literal_operand_is_a_constant_in_hbm() {
    // A . broadcast(0.5): the splat becomes a constant placed in d0 and loaded like an input.
    let isa = qkv();
    let k = kernel_text(
        "HloModule k\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  h = bf16[] constant(0.5)\n  \
         b = bf16[64,64] broadcast(h), dimensions={}\n  \
         ROOT d = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
    );
    let sel = run(&k, &isa).unwrap();
    let best = &sel.candidates[0];
    assert_eq!(multiset(&isa, best), sorted(&["gemm", "load_rm", "load_rm", "mov", "store_rm"]));
    let constants: Vec<&PiiNode> = best.nodes.iter().filter(|n| matches!(n, PiiNode::Constant { .. })).collect();
    assert_eq!(constants.len(), 1);
    let PiiNode::Constant { shape, bits, .. } = constants[0] else { unreachable!() };
    assert_eq!((shape.as_slice(), bits.as_slice()), (&[64i64, 64][..], &[0.5f64.to_bits()][..]));
    assert_candidates_compute_kernel(&isa, &k, &sel);
}

#[test]
fn a_kernel_that_reads_each_value_twice_at_every_level_selects() {
    // y(i+1) = y(i) + -y(i), 48 deep: counted as a tree, the output's cost doubles per level
    // and passes 2^64 (the debug build of the tests checks every addition for overflow).
    let mut body = String::new();
    for i in 0..48 {
        body += &format!("  n{i} = s8[16,16] negate(y{i})\n");
        let root = if i == 47 { "ROOT " } else { "" };
        body += &format!("  {root}y{} = s8[16,16] add(y{i}, n{i})\n", i + 1);
    }
    let k = kernel_text(&format!("HloModule k\nENTRY e {{\n  y0 = s8[16,16] parameter(0)\n{body}}}\n"));
    let isa = gemmini();
    let sel = run(&k, &isa).unwrap_or_else(|e| panic!("{e}"));
    assert_candidates_compute_kernel(&isa, &k, &sel);
}

/// An accelerator with one bf16 buffer `v` (128 rows of 64) and the named units over it, each
/// on `n` rows: `gemm` (a 64x64 product), `multiply`, `add`, `maximum`, `minimum`; it always
/// has a row-major load and store.
fn vector_isa(units: &[&str]) -> Isa {
    use serde_json::{json, Value};
    let n = json!({"attr": "c.n"});
    let bytes = json!({"op": "*", "args": [n, {"int": 128}]});
    let slice = |buffer: &str, at: &str, size: &Value| json!({"buffer": buffer, "start": [{"attr": at}], "size": [size]});
    let op = |name: &str, op: &str, dtype: &str, shape: Value, operands: &[&str], attrs: Value, root: bool| {
        json!({"name": name, "op": op, "dtype": dtype, "shape": shape, "operands": operands, "attrs": attrs, "root": root})
    };
    let rows = json!([n, {"int": 64}]);
    let mut instructions = vec![
        json!({"name": "load", "comp_attrs": ["n"], "addr_attrs": ["addr_in", "addr_out"],
            "inputs": [slice("d0", "a.addr_in", &bytes)], "outputs": [slice("v", "a.addr_out", &n)],
            "semantics": [
                op("In1", "parameter", "u8", json!([bytes]), &[], json!({"index": 0}), false),
                op("a", "reshape", "u8", json!([n, {"int": 64}, {"int": 2}]), &["In1"], json!({}), false),
                op("Out0", "bitcast_convert", "bf16", rows.clone(), &["a"], json!({}), true)]}),
        json!({"name": "store", "comp_attrs": ["n"], "addr_attrs": ["addr_in", "addr_out"],
            "inputs": [slice("v", "a.addr_in", &n)], "outputs": [slice("d0", "a.addr_out", &bytes)],
            "semantics": [
                op("In1", "parameter", "bf16", rows.clone(), &[], json!({"index": 0}), false),
                op("a", "bitcast_convert", "u8", json!([n, {"int": 64}, {"int": 2}]), &["In1"], json!({}), false),
                op("Out0", "reshape", "u8", json!([bytes]), &["a"], json!({}), true)]}),
    ];
    for &unit in units {
        let square = json!([{"int": 64}, {"int": 64}]);
        let sixty_four = json!({"int": 64});
        instructions.push(if unit == "gemm" {
            json!({"name": "gemm", "comp_attrs": [], "addr_attrs": ["addr_1", "addr_2", "addr_out"],
                "inputs": [slice("v", "a.addr_1", &sixty_four), slice("v", "a.addr_2", &sixty_four)],
                "outputs": [slice("v", "a.addr_out", &sixty_four)],
                "semantics": [
                    op("In1", "parameter", "bf16", square.clone(), &[], json!({"index": 0}), false),
                    op("In2", "parameter", "bf16", square.clone(), &[], json!({"index": 1}), false),
                    op("Out0", "dot", "bf16", square, &["In1", "In2"],
                       json!({"lhs_contracting_dims": [1], "rhs_contracting_dims": [0], "lhs_batch_dims": [], "rhs_batch_dims": []}), true)]})
        } else {
            json!({"name": unit, "comp_attrs": ["n"], "addr_attrs": ["addr_1", "addr_2", "addr_out"],
                "inputs": [slice("v", "a.addr_1", &n), slice("v", "a.addr_2", &n)],
                "outputs": [slice("v", "a.addr_out", &n)],
                "semantics": [
                    op("In1", "parameter", "bf16", rows.clone(), &[], json!({"index": 0}), false),
                    op("In2", "parameter", "bf16", rows.clone(), &[], json!({"index": 1}), false),
                    op("Out0", unit, "bf16", rows.clone(), &["In1", "In2"], json!({}), true)]})
        });
    }
    let table = json!({"format": "act-isa-table/1", "name": "Vector",
        "buffers": [{"name": "d0", "access_dims": [null], "unit_dims": [], "dtype": "u8"},
                    {"name": "v", "access_dims": [128], "unit_dims": [64], "dtype": "bf16"}],
        "instructions": instructions});
    Isa::from_json(&table.to_string()).unwrap()
}

fn one(body: &str) -> String {
    format!("HloModule k\nENTRY e {{\n  a = bf16[64,64] parameter(0)\n{body}}}\n")
}

/// Constant-matrix rewrites on an ISA that lacks the kernel's operator: `kernel, units =>
/// the best candidate's instructions` (or the operation no instruction computes).
fn lowering_rows() -> Vec<(&'static str, String, &'static [&'static str], Expect)> {
    vec![
        ("negate as a product with -I", one("  ROOT n = bf16[64,64] negate(a)\n"), &["gemm"], Instrs(&["load", "load", "gemm", "store"])),
        ("negate as a multiply by -1", one("  ROOT n = bf16[64,64] negate(a)\n"), &["multiply"], Instrs(&["load", "load", "multiply", "store"])),
        ("negate without a product or a multiply", one("  ROOT n = bf16[64,64] negate(a)\n"), &["add"], Missing("negate", 4)),
        (
            "subtract as the add of a negation",
            two("  ROOT s = bf16[64,64] subtract(a, b)\n"),
            &["add", "multiply"],
            Instrs(&["load", "load", "load", "multiply", "add", "store"]),
        ),
        ("subtract without an add", two("  ROOT s = bf16[64,64] subtract(a, b)\n"), &["multiply", "gemm"], Missing("subtract", 5)),
        (
            "a value passes through a multiply by one",
            one("  ROOT c = bf16[64,64] copy(a)\n"),
            &["multiply"],
            Instrs(&["load", "store"]),
        ),
    ]
}

#[test]
fn constant_matrix_lowerings_table() {
    for (name, text, units, expect) in lowering_rows() {
        check_row(name, &text, &vector_isa(units), expect);
    }
}

#[test]
fn products_are_rewritten_to_the_layouts_the_matrix_units_take() {
    use act_compiler::rewrites::RuleSet;
    // Every example's unit multiplies [m, k] by [k, n]: lhs form 0, rhs form 0.
    for table in ["qkv_isa.json", "qkv_new_isa.json", "gemmini_isa.json"] {
        let rules = RuleSet::default().with_dot_forms_of(&isa(table));
        assert_eq!(rules.dot_forms.into_iter().collect::<Vec<_>>(), vec![(0, 0)], "{table}");
    }
    // A unit that takes B transposed (A.B^T): rhs form 1.
    let mut abt = qkv();
    for op in abt.instructions.iter_mut().flat_map(|i| i.semantics.iter_mut()) {
        if let Some(dims) = op.attrs.get_mut("rhs_contracting_dims") {
            *dims = serde_json::json!([1]);
        }
    }
    let rules = RuleSet::default().with_dot_forms_of(&abt);
    assert_eq!(rules.dot_forms.into_iter().collect::<Vec<_>>(), vec![(0, 1)]);
}
