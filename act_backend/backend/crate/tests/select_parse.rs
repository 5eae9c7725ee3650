//! The kernel front end on real files: the hand-written style, what JAX prints, and errors
//! that point at the offending line and column.

mod select_support;

use act_compiler::kernel::{parse_kernel, KernelErrorKind, TensorTy};
use act_compiler::lang::{Op, Reducer};
use select_support::{data, kernel_file};

fn bf16(shape: &[i64]) -> TensorTy {
    TensorTy { dtype: "bf16".into(), shape: shape.to_vec() }
}

#[test]
fn hand_written_attention() {
    let k = kernel_file("attention.hlo");
    assert_eq!(k.name, "qkv");
    assert_eq!(k.params, vec![bf16(&[64, 64]); 3]);
    assert_eq!(k.output, bf16(&[64, 64]));
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
    assert_eq!(k.output, TensorTy { dtype: "f32".into(), shape: vec![4] });
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
            "HloModule m\nENTRY e {\n  a = bf16[4] parameter(0)\n  ROOT t = (bf16[4], bf16[4]) tuple(a, a)\n}\n",
            KernelErrorKind::Unsupported,
            "4:12: the kernel's output has the tuple type (bf16[4], bf16[4]); only single tensors are supported",
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
