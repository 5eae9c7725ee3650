//! The kernel front end on real files: the hand-written style, what JAX prints, and errors
//! that point at the offending line and column.

mod select_support;

use act_compiler::kernel::{parse_kernel, KernelErrorKind};
use act_compiler::lang::{DType, Ty};
use act_compiler::lang::{Op, Reducer};
use select_support::{data, kernel_file};

fn bf16(shape: &[i64]) -> Ty {
    Ty::new(DType::BF16, shape.to_vec())
}

#[test]
fn hand_written_attention() {
    let k = kernel_file("attention.hlo");
    assert_eq!(k.name, "qkv");
    assert_eq!(k.params, vec![bf16(&[64, 64]); 3]);
    assert_eq!(k.outputs, vec![bf16(&[64, 64])]);
    let ops: Vec<&str> = k.nodes.iter().map(|n| n.op.hlo_name()).collect();
    assert_eq!(
        ops,
        [
            "parameter",
            "parameter",
            "parameter",
            "transpose",
            "dot",
            "exponential",
            "constant",
            "reduce",
            "broadcast",
            "divide",
            "dot"
        ]
    );
    let rowsum = k.nodes.iter().find(|n| n.name == "rowsum").unwrap();
    assert_eq!(rowsum.op, Op::ReduceAdd(vec![1]), "reduce(x, 0) with an add reducer is reduce_add");
    assert_eq!(rowsum.line, 17);
    assert_eq!(k.nodes[k.root].name, "O");
}

#[test]
fn jax_attention() {
    let k = kernel_file("attention_jax.hlo");
    assert_eq!(k.name, "jit_attention");
    assert_eq!(k.params, vec![bf16(&[64, 64]); 3]);
    let reduce = k.nodes.iter().find(|n| n.name == "reduce_sum.7").unwrap();
    assert_eq!(reduce.op, Op::ReduceAdd(vec![1]));
    assert_eq!(reduce.ty.dtype.name(), "f32");
    assert_eq!(k.nodes[k.root].name, "dot_general.3");
    assert_eq!(k.nodes[k.param_nodes[2]].name, "v.1");
}

#[test]
fn jax_with_debug_info_metadata_and_index_comments() {
    let k = kernel_file("debug_info_jax.hlo");
    assert_eq!(k.params.len(), 7);
    assert_eq!(k.outputs, vec![Ty::new(DType::F32, vec![4])]);
    let max = k.nodes.iter().find(|n| n.name == "reduce_max.7").unwrap();
    assert_eq!(max.op, Op::Reduce { dims: vec![1], reducer: Reducer::Max });
    let min = k.nodes.iter().find(|n| n.name == "reduce_min.7").unwrap();
    assert_eq!(min.op, Op::Reduce { dims: vec![1], reducer: Reducer::Min });
}

/// (kernel text, kind, "line:col: message") rows.
#[test]
fn errors_point_at_the_problem() {
    let cases: &[(&str, KernelErrorKind, &str)] = &[
        (
            "HloModule m\nENTRY e {\n  a = bf16[4] parameter(0)\n  ROOT b bf16[4] copy(a)\n}\n",
            KernelErrorKind::Syntax,
            "4:10: expected `=` after instruction name `b`, found `bf16`",
        ),
        (
            "HloModule m\nENTRY e {\n  a = bf16[4] parameter(0)\n  ROOT b = bf16[4] cosh(a)\n}\n",
            KernelErrorKind::UnknownOperator,
            "4:20: unknown operator `cosh`",
        ),
        (
            "HloModule m\nENTRY e {\n  a = bf16[4] parameter(0)\n  ROOT b = bf16[4] add(a, %c)\n}\n",
            KernelErrorKind::UndefinedOperand,
            "4:27: operand `c` is not defined",
        ),
        (
            "HloModule m\nENTRY e {\n  a = bf16[4,8] parameter(0)\n  b = bf16[8,4] parameter(1)\n  ROOT d = bf16[4,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n",
            KernelErrorKind::Shape,
            "5:59: `d`: lhs contracting dimension 1 has size 8 but rhs contracting dimension 1 has size 4",
        ),
        (
            "HloModule m\nENTRY e {\n  a = bf16[4] parameter(0)\n  t = (bf16[4], bf16[4]) tuple(a, a)\n  ROOT b = bf16[4] copy(a)\n}\n",
            KernelErrorKind::Unsupported,
            "4:7: a value has the tuple type (bf16[4], bf16[4]); only single tensors are supported",
        ),
        (
            "HloModule m\nENTRY e {\n  a = bf16[4] parameter(0)\n  ROOT b = bf16[4] copy(a)\n",
            KernelErrorKind::Syntax,
            "5:1: computation `e` is not closed with `}`",
        ),
        (
            "HloModule m\nENTRY e {\n  a = bf16[4] parameter(0)\n  ROOT b = bf16[4] while(a), body=x, condition=y\n}\n",
            KernelErrorKind::Unsupported,
            "4:20: `while` is not supported in kernels: write the kernel as one computation over tensors",
        ),
    ];
    for (text, kind, expected) in cases {
        let err = parse_kernel(text, "bad.hlo").unwrap_err();
        assert_eq!(err.kind, *kind, "{err}");
        assert_eq!(err.to_string(), format!("bad.hlo:{expected}"));
    }
}

#[test]
fn the_example_kernel_is_the_fixture() {
    // The fixture is a copy of the examples' kernel, kept beside the crate so that the crate's
    // tests run wherever the crate is copied.
    let example = format!("{}/../../../examples/QKV/kernels/attention.hlo", env!("CARGO_MANIFEST_DIR"));
    if let Ok(text) = std::fs::read_to_string(example) {
        assert_eq!(text, data("attention.hlo"));
    }
}

/// The bad fixtures of `tests/kernels/bad` (copied to `tests/data/bad`) that the Python checker
/// refuses for what XLA's parser or verifier refuses: the crate refuses them at the same
/// line and column (`tests/test_kernel_check.py` holds the Python side of this table).
#[test]
fn what_xla_refuses_is_refused_where_python_refuses_it() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("signature_parameter_name.hlo", "signature-mismatch", "3:14", "declares parameter 0 as `a`, but parameter(0) is named `A`"),
        ("signature_parameter_count.hlo", "signature-mismatch", "3:13", "declares 2 parameter(s) but defines 1"),
        ("signature_parameter_type.hlo", "signature-mismatch", "3:14", "declares parameter 0 as bf16[64,32], but `A` is bf16[64,64]"),
        ("signature_result.hlo", "signature-mismatch", "3:33", "declares its result as f32[64,64], but ROOT `C` is bf16[64,64]"),
        ("entry_layout_syntax.hlo", "entry-layout-syntax", "1:76", "expected `->` after the parameter types, found `}`"),
        (
            "entry_layout_mismatch.hlo",
            "entry-layout-mismatch",
            "1:80",
            "gives the result the type bf16[64,32], but ROOT `C` of the ENTRY computation is bf16[64,64]",
        ),
        ("name_start.hlo", "bad-name", "4:3", "`%1A` is not a name"),
        ("name_character.hlo", "bad-name", "4:5", "`%A$1` is not a name"),
        ("unknown_attribute.hlo", "unknown-attribute", "6:129", "dot `C` does not take the attribute `lhs_contracting_dim`"),
        ("duplicate_attribute.hlo", "duplicate-attribute", "5:80", "attribute `dimensions` is given twice in `C`"),
    ];
    for (name, code, at, words) in cases {
        let err = parse_kernel(&data(&format!("bad/{name}")), name).unwrap_err();
        assert_eq!(err.code, *code, "{err}");
        let prefix = format!("{name}:{at}: ");
        assert!(err.to_string().starts_with(&prefix) && err.message.contains(words), "{name}: {err}");
    }
}

#[test]
fn a_computation_an_attribute_names_must_be_named_like_one() {
    let text = "HloModule m\nENTRY e {\n  x = f32[4,8] parameter(0)\n  z = f32[] constant(0)\n  \
                ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=%1add\n}\n";
    let err = parse_kernel(text, "k.hlo").unwrap_err();
    assert!(err.to_string().starts_with("k.hlo:5:58: `%1add` is not a name"), "{err}");
}

#[test]
fn names_that_xla_accepts_are_accepted() {
    let text = "HloModule m.1\n\nregion_0.1 (Arg_0.2: f32[], Arg_1-3: f32[]) -> f32[] {\n  Arg_0.2 = f32[] parameter(0)\n  \
                Arg_1-3 = f32[] parameter(1)\n  ROOT add.4 = f32[] add(Arg_0.2, Arg_1-3)\n}\n\n\
                ENTRY %_main.5 (x: f32[4,8]) -> f32[4] {\n  %x = f32[4,8]{1,0} parameter(0)\n  %zero = f32[] constant(0)\n  \
                ROOT %r = f32[4]{0} reduce(%x, %zero), dimensions={1}, to_apply=region_0.1, metadata={op_name=\"r\"}\n}\n";
    let k = parse_kernel(text, "names.hlo").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(k.name, "m.1");
    assert_eq!(k.nodes[k.root].op, Op::ReduceAdd(vec![1]));
}

/// A node as selection sees it: its operator, type and operands.
type GraphNode = (Op, Ty, Vec<usize>);

/// A kernel's graph without names and positions: its nodes, parameter nodes and root.
fn graph(k: &act_compiler::kernel::Kernel) -> (Vec<GraphNode>, Vec<usize>, usize) {
    let nodes = k.nodes.iter().map(|n| (n.op.clone(), n.ty.clone(), n.operands.clone())).collect();
    (nodes, k.param_nodes.clone(), k.root)
}

/// `jnp.clip` as JAX prints it: a `call` of a computation holding the bounds' broadcasts,
/// maximum and minimum. Inlined, it is the graph of the same instructions written in the
/// entry, the called computation's parameters being the call's operands.
#[test]
fn a_call_is_its_computation_inlined() {
    let called = "HloModule jit_clip\n\nclip.1 {\n  Arg_2.1 = s32[] parameter(2)\n  \
                  min.2 = s32[16,16]{1,0} broadcast(Arg_2.1), dimensions={}\n  Arg_1.1 = s32[] parameter(1)\n  \
                  max.2 = s32[16,16]{1,0} broadcast(Arg_1.1), dimensions={}\n  Arg_0.1 = s32[16,16]{1,0} parameter(0)\n  \
                  max.3 = s32[16,16]{1,0} maximum(max.2, Arg_0.1)\n  ROOT min.3 = s32[16,16]{1,0} minimum(min.2, max.3)\n}\n\n\
                  ENTRY main.2 {\n  a.1 = s32[16,16]{1,0} parameter(0)\n  b.1 = s32[16,16]{1,0} parameter(1)\n  \
                  lo = s32[] constant(-128)\n  hi = s32[] constant(127)\n  s = s32[16,16]{1,0} add(a.1, b.1)\n  \
                  clipped = s32[16,16]{1,0} call(s, lo, hi), to_apply=clip.1\n  \
                  ROOT twice = s32[16,16]{1,0} call(clipped, lo, hi), to_apply=clip.1\n}\n";
    let inlined = "HloModule jit_clip\n\nENTRY main.2 {\n  a.1 = s32[16,16]{1,0} parameter(0)\n  \
                   b.1 = s32[16,16]{1,0} parameter(1)\n  lo = s32[] constant(-128)\n  hi = s32[] constant(127)\n  \
                   s = s32[16,16]{1,0} add(a.1, b.1)\n  min.2 = s32[16,16]{1,0} broadcast(hi), dimensions={}\n  \
                   max.2 = s32[16,16]{1,0} broadcast(lo), dimensions={}\n  max.3 = s32[16,16]{1,0} maximum(max.2, s)\n  \
                   min.3 = s32[16,16]{1,0} minimum(min.2, max.3)\n  min.4 = s32[16,16]{1,0} broadcast(hi), dimensions={}\n  \
                   max.4 = s32[16,16]{1,0} broadcast(lo), dimensions={}\n  max.5 = s32[16,16]{1,0} maximum(max.4, min.3)\n  \
                   ROOT min.5 = s32[16,16]{1,0} minimum(min.4, max.5)\n}\n";
    let k = parse_kernel(called, "clip.hlo").unwrap_or_else(|e| panic!("{e}"));
    let flat = parse_kernel(inlined, "flat.hlo").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(graph(&k), graph(&flat));
    assert_eq!((k.params.clone(), k.outputs.clone()), (flat.params.clone(), flat.outputs.clone()));
    // No `call` is left for selection, and the inlined nodes point into the called text.
    assert!(k.nodes.iter().all(|n| !matches!(&n.op, Op::Other { name, .. } if name == "call")));
    let root = &k.nodes[k.root];
    assert_eq!((root.name.as_str(), root.line), ("min.3", 10));
}

#[test]
fn calls_nest_and_errors_inside_them_point_into_the_called_text() {
    let nested = "HloModule m\n\ninner {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n\n\
                  outer {\n  y = f32[4] parameter(0)\n  z = f32[4] call(y), to_apply=inner\n  \
                  ROOT e = f32[4] exponential(z)\n}\n\n\
                  ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT c = f32[4] call(p), to_apply=outer\n}\n";
    let k = parse_kernel(nested, "nested.hlo").unwrap_or_else(|e| panic!("{e}"));
    let ops: Vec<&str> = k.nodes.iter().map(|n| n.op.hlo_name()).collect();
    assert_eq!(ops, ["parameter", "negate", "exponential"]);
    assert_eq!(k.nodes[1].operands, vec![k.param_nodes[0]]);
    assert_eq!(k.nodes[k.root].operands, vec![1]);
    // The type error is the called computation's, at its line (5), not the call's (17).
    let bad = nested.replace("ROOT n = f32[4] negate(x)", "ROOT n = f32[8] negate(x)");
    let err = parse_kernel(&bad, "nested.hlo").unwrap_err();
    assert_eq!((err.code, err.line, err.col), ("declared-type-mismatch", 5, 12), "{err}");
    // inner applies outer, which applies inner: refused at the application that closes the
    // cycle, found from the first computation of the text (as the checker finds it).
    let recursive = nested.replace("negate(x)", "call(x), to_apply=outer");
    let err = parse_kernel(&recursive, "nested.hlo").unwrap_err();
    assert_eq!((err.code, err.kind, err.line), ("recursive-call", KernelErrorKind::Unsupported, 10), "{err}");
}
