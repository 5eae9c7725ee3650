//! Constant folding before selection (`src/fold.rs`) and refusals of the operators kept by
//! name: what depends on constants only is one literal, loaded like any constant, and a
//! refusal names the operation that depends on the kernel's inputs, with its own name.

mod select_support;

use act_compiler::isa::Isa;
use act_compiler::kernel::parse_kernel;
use act_compiler::lang::{Op, Reducer};
use act_compiler::pii::PiiNode;
use select_support::{assert_candidates_compute_kernel, isa, kernel_text, multiset, run, sorted};

const DOT: &str = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";

fn qkv() -> Isa {
    isa("qkv_isa.json")
}

fn one(body: &str) -> String {
    format!("HloModule k\nENTRY e {{\n  a = bf16[64,64] parameter(0)\n{body}}}\n")
}

#[test]
fn a_subgraph_of_constants_folds_into_one_literal() {
    // -(bf16(f32 -0.75) broadcast): convert, broadcast and negate fold; the dead constants go.
    let k = parse_kernel(
        &one(&format!(
            "  c = f32[] constant(-0.75)\n  h = bf16[] convert(c)\n  b = bf16[64,64] broadcast(h), dimensions={{}}\n  \
             n = bf16[64,64] negate(b)\n  ROOT d = bf16[64,64] dot(a, n), {DOT}\n"
        )),
        "k.hlo",
    )
    .unwrap();
    let names: Vec<&str> = k.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "n", "d"]);
    let Op::Constant(lit) = &k.nodes[1].op else { panic!("n is not folded: {:?}", k.nodes[1].op) };
    assert_eq!(lit.bits, vec![0.75f64.to_bits()], "a splat keeps one value");
    assert_eq!(k.nodes[2].operands, vec![0, 1]);
    assert_eq!(k.root, 2);
}

#[test]
fn folding_rounds_as_xla_or_leaves_the_operation() {
    let fold = |body: &str| parse_kernel(&format!("HloModule k\nENTRY e {{\n{body}}}\n"), "k.hlo").unwrap();
    // bf16 arithmetic is f32 arithmetic rounded to bf16: 1 + 2^-8 and 1 + 3 * 2^-8 are ties,
    // rounded to even.
    let k = fold(
        "  one = bf16[4] constant({1, 1, 1, 1})\n  t = bf16[4] constant({0.00390625, 0.01171875, 0, -1})\n  \
         ROOT s = bf16[4] add(one, t)\n",
    );
    let Op::Constant(lit) = &k.nodes[k.root].op else { panic!("not folded") };
    assert_eq!(lit.values().collect::<Vec<_>>(), vec![1.0, 1.015625, 1.0, 0.0]);
    // iota, reverse and pad of constants are layouts of known values.
    let k = fold(
        "  i = s32[2,3] iota(), iota_dimension=1\n  r = s32[2,3] reverse(i), dimensions={1}\n  z = s32[] constant(9)\n  \
         ROOT p = s32[2,5] pad(r, z), padding=0_0x1_-1_1\n",
    );
    let Op::Constant(lit) = &k.nodes[k.root].op else { panic!("not folded") };
    assert_eq!(lit.values().collect::<Vec<_>>(), vec![9.0, 2.0, 9.0, 1.0, 9.0, 9.0, 2.0, 9.0, 1.0, 9.0]);
    // An s8 sum out of range wraps in XLA: left as written.
    let k = fold("  a = s8[] constant(100)\n  ROOT s = s8[] add(a, a)\n");
    assert_eq!(k.nodes[k.root].op, Op::Add);
    // A reduce whose folded init is +0 with an add reducer is a sum.
    let k = parse_kernel(
        "HloModule k\n%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  \
         ROOT %s = f32[] add(%x, %y)\n}\nENTRY e {\n  a = f32[4,8] parameter(0)\n  z = s32[] constant(0)\n  \
         f = f32[] convert(z)\n  ROOT r = f32[4] reduce(a, f), dimensions={1}, to_apply=%add\n}\n",
        "k.hlo",
    )
    .unwrap();
    assert_eq!(k.nodes[k.root].op, Op::ReduceAdd(vec![1]));
    assert!(!k.nodes.iter().any(|n| matches!(n.op, Op::Reduce { reducer: Reducer::Add, .. })));
}

#[test]
fn a_folded_constant_is_loaded_like_a_literal() {
    // Without folding, negate(broadcast(constant)) has no instruction on QKV; folded, it is the
    // constant 0.5 in HBM, loaded for the product.
    let k = kernel_text(&one(&format!(
        "  h = bf16[] constant(-0.5)\n  b = bf16[64,64] broadcast(h), dimensions={{}}\n  n = bf16[64,64] negate(b)\n  \
         ROOT d = bf16[64,64] dot(a, n), {DOT}\n"
    )));
    let isa = qkv();
    let sel = run(&k, &isa).unwrap();
    let best = &sel.candidates[0];
    assert_eq!(multiset(&isa, best), sorted(&["gemm", "load_rm", "load_rm", "mov", "store_rm"]));
    let constants: Vec<&PiiNode> = best.nodes.iter().filter(|n| matches!(n, PiiNode::Constant { .. })).collect();
    let [PiiNode::Constant { bits, .. }] = constants.as_slice() else { panic!("one constant: {constants:?}") };
    assert_eq!(bits, &vec![0.5f64.to_bits()]);
    assert_candidates_compute_kernel(&isa, &k, &sel);
}

#[test]
fn a_reverse_the_matrix_unit_can_do_compiles_as_a_product_with_the_exchange_matrix() {
    // Accepted by the front end and kept as `reverse`; the identities (identities.rs) then
    // compute it on QKV's gemm with a constant exchange matrix.
    let k = kernel_text(&one("  ROOT r = bf16[64,64] reverse(a), dimensions={0}\n"));
    let isa = qkv();
    let sel = run(&k, &isa).unwrap();
    assert!(multiset(&isa, &sel.candidates[0]).contains(&"gemm".to_string()));
    assert_candidates_compute_kernel(&isa, &k, &sel);
}

#[test]
fn refusals_name_the_operation_on_the_inputs() {
    let isa = qkv();
    let cases = [
        // The clamp's bounds fold to constants; the clamp of `a` is what has no instruction.
        (
            "  lo = bf16[] constant(-1)\n  l = bf16[64,64] broadcast(lo), dimensions={}\n  hi = bf16[] constant(1)\n  \
             h = bf16[64,64] broadcast(hi), dimensions={}\n  ROOT c = bf16[64,64] clamp(l, a, h)\n"
                .to_string(),
            "kernel.hlo:8: no instruction of QKV computes `clamp` (ROOT c = bf16[64,64] clamp(l, a, h))",
        ),
        (
            "  z = bf16[] constant(0)\n  ROOT p = bf16[64,64] pad(a, z), padding=1_-1x0_0\n".to_string(),
            "kernel.hlo:5: no instruction of QKV computes `pad` (ROOT p = bf16[64,64] pad(a, z), padding=1_-1x0_0)",
        ),
        (
            // A maximum with 2 * 3 (folded): the maximum of `a` is what QKV lacks.
            "  two = bf16[] constant(2)\n  three = bf16[] constant(3)\n  six = bf16[] multiply(two, three)\n  \
             s = bf16[64,64] broadcast(six), dimensions={}\n  ROOT m = bf16[64,64] maximum(a, s)\n"
                .to_string(),
            "kernel.hlo:8: no instruction of QKV computes `maximum` (ROOT m = bf16[64,64] maximum(a, s))",
        ),
    ];
    for (body, message) in cases {
        let err = run(&kernel_text(&one(&body)), &isa).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn a_reduce_of_a_region_no_semantics_names_is_kept_and_named() {
    // jnp.all: a reduce whose region is an `and` of its parameters. It is accepted, and the
    // refusal on QKV is that no instruction computes (the comparison, the first obstacle).
    let text = "HloModule k\nregion {\n  p = pred[] parameter(0)\n  q = pred[] parameter(1)\n  ROOT r = pred[] and(p, q)\n}\n\
                ENTRY e {\n  a = bf16[64,64] parameter(0)\n  z = bf16[] constant(0)\n  \
                b = bf16[64,64] broadcast(z), dimensions={}\n  c = pred[64,64] compare(a, b), direction=GT\n  \
                t = pred[] constant(true)\n  ROOT all = pred[64] reduce(c, t), dimensions={1}, to_apply=region\n}\n";
    let k = parse_kernel(text, "k.hlo").unwrap();
    assert_eq!(
        k.nodes[k.root].op,
        Op::Other { name: "reduce".into(), attrs: "dimensions={1}, to_apply=region".into() }
    );
    let err = run(&kernel_text(text), &qkv()).unwrap_err();
    assert!(err.to_string().starts_with("kernel.hlo:11: no instruction of QKV computes `compare`"), "{err}");
}

#[test]
fn operators_kept_by_name_keep_their_attributes() {
    let k = parse_kernel(
        &one("  r = bf16[64,64] reverse(a), dimensions={0,1}, metadata={op_name=\"rev\"}\n  \
              ROOT p = bf16[64,64] reduce-precision(r), exponent_bits=5, mantissa_bits=2\n"),
        "k.hlo",
    )
    .unwrap();
    assert_eq!(k.nodes[1].op, Op::Other { name: "reverse".into(), attrs: "dimensions={0,1}".into() });
    assert_eq!(
        k.nodes[2].op,
        Op::Other { name: "reduce-precision".into(), attrs: "exponent_bits=5, mantissa_bits=2".into() }
    );
}
