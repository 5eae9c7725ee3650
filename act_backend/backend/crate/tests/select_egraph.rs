//! Every equality the e-graph records is true: after saturation, each e-node of each class
//! computes the class's value on random inputs (IR nodes by the reference interpreter,
//! partially instantiated instructions by their semantics).

mod select_support;

use select_support::{assert_egraph_consistent, isa, kernel_file, kernel_text};

const KERNELS: &[&str] =
    &["attention.hlo", "attention_jax.hlo", "attention_dot_general.hlo", "attention_batch1_jax.hlo", "abt_jax.hlo"];

#[test]
fn attention_egraphs_are_consistent() {
    for table in ["qkv_isa.json", "qkv_new_isa.json"] {
        let isa = isa(table);
        for file in KERNELS {
            let checked = assert_egraph_consistent(&kernel_file(file), &isa);
            assert!(checked > 40, "{table} {file}: {checked} e-nodes");
        }
    }
}

#[test]
fn layout_plumbing_is_consistent() {
    let isa = isa("qkv_isa.json");
    let kernels = [
        // transposes, reshapes and broadcasts of size-1 dimensions, converts both ways.
        "HloModule k\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  b = bf16[64,64] parameter(1)\n  \
         t = bf16[64,64] transpose(a), dimensions={1,0}\n  w = f32[64,64] convert(t)\n  r = f32[64,1,64] reshape(w)\n  \
         s = f32[64,64] reshape(r)\n  n = bf16[64,64] convert(s)\n  d = bf16[64,64] dot(n, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}\n  \
         ROOT o = bf16[64,64] transpose(d), dimensions={1,0}\n}\n",
        // a batched product, a broadcast of a scalar constant, a max reduction in f32.
        "HloModule k\n%mx (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  ROOT %m = f32[] maximum(%x, %y)\n}\n\
         ENTRY e {\n  a = bf16[2,8,4] parameter(0)\n  b = bf16[2,4,8] parameter(1)\n  \
         d = bf16[2,8,8] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}\n  \
         w = f32[2,8,8] convert(d)\n  c = f32[] constant(-inf)\n  m = f32[2,8] reduce(w, c), dimensions={2}, to_apply=%mx\n  \
         n = bf16[2,8] convert(m)\n  one = bf16[] constant(1)\n  k = bf16[2,8] broadcast(one), dimensions={}\n  ROOT o = bf16[2,8] add(n, k)\n}\n",
        // a transposed operand whose free dimensions swap cannot fold into the product.
        "HloModule k\nENTRY e {\n  a = bf16[4,4,8] parameter(0)\n  b = bf16[8,4] parameter(1)\n  \
         t = bf16[4,4,8] transpose(a), dimensions={1,0,2}\n  \
         ROOT d = bf16[4,4,4] dot(t, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n}\n",
        // a softmax over columns, a product accumulated in f32.
        "HloModule k\n%add (x: bf16[], y: bf16[]) -> bf16[] {\n  %x = bf16[] parameter(0)\n  %y = bf16[] parameter(1)\n  ROOT %s = bf16[] add(%x, %y)\n}\n\
         ENTRY e {\n  q = bf16[64,64] parameter(0)\n  k = bf16[64,64] parameter(1)\n  \
         s = f32[64,64] dot(q, k), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  n = bf16[64,64] convert(s)\n  \
         e = bf16[64,64] exponential(n)\n  z = bf16[] constant(0)\n  r = bf16[64] reduce(e, z), dimensions={0}, to_apply=%add\n  \
         d = bf16[64,64] broadcast(r), dimensions={1}\n  ROOT p = bf16[64,64] divide(e, d)\n}\n",
        // reductions and broadcasts of transposed rank-3 values, where dimension order matters.
        "HloModule k\n%add (x: bf16[], y: bf16[]) -> bf16[] {\n  %x = bf16[] parameter(0)\n  %y = bf16[] parameter(1)\n  ROOT %s = bf16[] add(%x, %y)\n}\n\
         ENTRY e {\n  a = bf16[4,6,4] parameter(0)\n  t = bf16[4,6,4] transpose(a), dimensions={2,1,0}\n  z = bf16[] constant(0)\n  \
         r = bf16[4,4] reduce(t, z), dimensions={1}, to_apply=%add\n  b = bf16[4,6,4] broadcast(r), dimensions={0,2}\n  \
         u = bf16[4,6,4] transpose(b), dimensions={2,1,0}\n  x = bf16[4,6,4] exponential(u)\n  ROOT o = bf16[4,6,4] add(x, a)\n}\n",
        // size-1 dimensions everywhere: batch, contracting, free, reduced, broadcast.
        "HloModule k\n%add (x: bf16[], y: bf16[]) -> bf16[] {\n  %x = bf16[] parameter(0)\n  %y = bf16[] parameter(1)\n  ROOT %s = bf16[] add(%x, %y)\n}\n\
         ENTRY e {\n  a = bf16[1,8,1,4] parameter(0)\n  b = bf16[1,4,1] parameter(1)\n  \
         d = bf16[1,8] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={3,2}, rhs_contracting_dims={1,2}\n  \
         t = bf16[8,1] transpose(d), dimensions={1,0}\n  z = bf16[] constant(0)\n  \
         r = bf16[8] reduce(t, z), dimensions={1}, to_apply=%add\n  c = bf16[8,1,4] broadcast(r), dimensions={0}\n  \
         e = bf16[8,1,4] exponential(c)\n  f = bf16[8,1] reduce(e, z), dimensions={2}, to_apply=%add\n  \
         g = bf16[8,1,4] broadcast(f), dimensions={0,1}\n  h = bf16[8,1,4] add(e, g)\n  ROOT o = bf16[1,8,4] reshape(h)\n}\n",
        // bit casts between widths.
        "HloModule k\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  u = u8[64,64,2] bitcast-convert(a)\n  \
         v = u8[64,128] reshape(u)\n  w = u8[64,64,2] reshape(v)\n  ROOT o = bf16[64,64] bitcast-convert(w)\n}\n",
    ];
    for text in kernels {
        assert!(assert_egraph_consistent(&kernel_text(text), &isa) > 10);
    }
}
