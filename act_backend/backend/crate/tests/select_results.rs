//! Kernels with several results (a tuple ROOT, as JAX prints `return a, b`): parsed into the
//! concatenation of the results' bytes, selected with each result stored in place, allocated
//! at the outputs' fixed offsets after the inputs, and listed one by one in the assembly.

mod backend_support;
mod select_support;

use act_compiler::kernel::parse_kernel;
use act_compiler::lang::{DType, Op, Ty};
use act_compiler::layout::{HbmLayout, Placed, Signature};
use act_compiler::pii::PiiNode;
use act_compiler::select::SelectError;
use backend_support::drive;
use select_support::{assert_candidates_compute_kernel, isa, kernel_text, multiset, run, sorted};

/// `jax.jit(lambda q, k: (q @ k, q @ k.T)).lower(...).as_text(dialect="hlo")`.
const TWO_PRODUCTS: &str = "HloModule jit_two, entry_computation_layout={(bf16[64,64]{1,0}, bf16[64,64]{1,0})->(bf16[64,64]{1,0}, bf16[64,64]{1,0})}

ENTRY main.1 {
  q.1 = bf16[64,64]{1,0} parameter(0)
  k.1 = bf16[64,64]{1,0} parameter(1)
  dot_general.2 = bf16[64,64]{1,0} dot(q.1, k.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  transpose.1 = bf16[64,64]{0,1} transpose(k.1), dimensions={1,0}
  dot_general.3 = bf16[64,64]{1,0} dot(q.1, transpose.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT tuple.1 = (bf16[64,64]{1,0}, bf16[64,64]{1,0}) tuple(dot_general.2, dot_general.3)
}
";

fn bf16(shape: &[i64]) -> Ty {
    Ty::new(DType::BF16, shape.to_vec())
}

fn tensor(dtype: DType, shape: &[i64]) -> Ty {
    Ty::new(dtype, shape.to_vec())
}

#[test]
fn a_tuple_root_is_the_concatenation_of_its_results_bytes() {
    let k = kernel_text(TWO_PRODUCTS);
    assert_eq!(k.outputs, vec![bf16(&[64, 64]), bf16(&[64, 64])]);
    let names: Vec<&str> = k.results.iter().map(|&r| k.nodes[r].name.as_str()).collect();
    assert_eq!(names, ["dot_general.2", "dot_general.3"]);
    let root = &k.nodes[k.root];
    assert_eq!(root.op, Op::Concatenate(0));
    assert_eq!(root.ty.to_string(), "u8[16384]");
    assert_eq!(root.line, 9, "the concatenation is the tuple's line");
    for (&part, &result) in root.operands.iter().zip(&k.results) {
        let reshape = &k.nodes[part];
        assert_eq!((reshape.op.clone(), reshape.ty.to_string()), (Op::Reshape, "u8[8192]".to_string()));
        let cast = &k.nodes[reshape.operands[0]];
        assert_eq!((cast.op.clone(), cast.ty.to_string()), (Op::BitcastConvert, "u8[64,64,2]".to_string()));
        assert_eq!(cast.operands, [result]);
    }
}

#[test]
fn a_one_element_tuple_is_its_element() {
    let k = kernel_text(
        "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  c = f32[4] copy(p)\n  ROOT t = (f32[4]) tuple(c)\n}\n",
    );
    assert_eq!((k.results.clone(), k.root), (vec![1], 1));
    assert_eq!(k.outputs, vec![Ty::new(DType::F32, vec![4])]);
}

#[test]
fn results_of_several_types_are_laid_end_to_end() {
    let k = kernel_text(
        "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  c = f32[4] copy(p)\n  \
         b = u8[3] constant({1, 2, 3})\n  ROOT t = (f32[4], u8[3]) tuple(c, b)\n}\n",
    );
    assert_eq!(k.outputs[1], Ty::new(DType::U8, vec![3]));
    assert_eq!(k.nodes[k.root].ty.to_string(), "u8[19]");
    // A byte result needs neither a bit cast nor a reshape.
    assert_eq!(k.nodes[k.root].operands[1], k.results[1]);
}

#[test]
fn results_keep_their_nodes_when_constants_are_folded() {
    // `h` is folded into `b` and dropped: the nodes after it move down one place.
    let k = kernel_text(
        "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  h = f32[] constant(2)\n  \
         b = f32[4] broadcast(h), dimensions={}\n  m = f32[4] multiply(p, b)\n  c = f32[4] copy(p)\n  \
         ROOT t = (f32[4], f32[4]) tuple(m, c)\n}\n",
    );
    assert!(k.nodes.iter().all(|n| n.name != "h"), "the folded scalar is dropped");
    let names: Vec<&str> = k.results.iter().map(|&r| k.nodes[r].name.as_str()).collect();
    assert_eq!(names, ["m", "c"]);
    let root = &k.nodes[k.root];
    for (&part, &result) in root.operands.iter().zip(&k.results) {
        let cast = &k.nodes[k.nodes[part].operands[0]];
        assert_eq!(cast.operands, [result]);
    }
}

/// (ROOT, code, "line:col: message") rows; the codes are the Python checker's where it has
/// the same fault.
#[test]
fn malformed_tuples_are_refused_where_they_are_wrong() {
    let kernel = |root: &str| {
        format!("HloModule m\nENTRY e {{\n  p = f32[4] parameter(0)\n  q = f32[2] parameter(1)\n  {root}\n}}\n")
    };
    let rows: &[(&str, &str, &str)] = &[
        ("ROOT t = (f32[4], f32[4]) tuple(p, r)", "undefined-operand", "5:38: operand `r` is not defined"),
        (
            "ROOT t = (f32[4], f32[4]) tuple(p, q)",
            "declared-type-mismatch",
            "5:12: tuple `t` is declared (f32[4], f32[4]) but produces (f32[4], f32[2])",
        ),
        (
            "ROOT t = (f32[4]) tuple(p, q)",
            "declared-type-mismatch",
            "5:12: tuple `t` is declared (f32[4]) but produces (f32[4], f32[2])",
        ),
        (
            "ROOT t = (f32[4], f32[2]) tuple(f32[2] p, q)",
            "operand-type-mismatch",
            "5:35: operand 0 of `t` is written as f32[2], but `p` is f32[4]",
        ),
        ("ROOT t = () tuple()", "unsupported-tuple", "5:12: the kernel's output is an empty tuple"),
        ("ROOT t = f32[4] tuple(p)", "declared-type-mismatch", "5:12: tuple `t` is declared f32[4], which is not a tuple"),
        (
            "ROOT t = ((f32[4]), f32[2]) tuple(p, q)",
            "unsupported-tuple",
            "5:13: an element of the kernel's output has the tuple type (f32[4]); only single tensors are supported",
        ),
    ];
    for (root, code, expected) in rows {
        let e = parse_kernel(&kernel(root), "k.hlo").unwrap_err();
        assert_eq!((e.code, e.to_string()), (*code, format!("k.hlo:{expected}")), "{root}");
    }
    let later = parse_kernel(
        "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT t = (f32[4], f32[4]) tuple(p, c)\n  \
         c = f32[4] copy(p)\n}\n",
        "k.hlo",
    )
    .unwrap_err();
    assert_eq!(later.to_string(), "k.hlo:4:38: operand `c` is used before it is defined");
}

#[test]
fn each_result_is_stored_in_place_and_every_candidate_computes_both() {
    let isa = isa("qkv_isa.json");
    let k = kernel_text(TWO_PRODUCTS);
    let sel = run(&k, &isa).unwrap();
    let best = &sel.candidates[0];
    assert_eq!(
        multiset(&isa, best),
        sorted(&["gemm", "gemm", "load_cm", "load_rm", "load_rm", "mov", "mov", "store_rm", "store_rm"])
    );
    let PiiNode::Concat { parts, dim: 0 } = &best.nodes[best.root] else {
        panic!("the root is not a concatenation: {:?}", best.nodes[best.root])
    };
    assert_eq!(parts.len(), 2);
    for &part in parts {
        assert!(matches!(best.nodes[part], PiiNode::Instr { .. }), "part {part} is written by an instruction");
    }
    assert_candidates_compute_kernel(&isa, &k, &sel);
}

#[test]
fn a_result_no_instruction_computes_is_named() {
    let isa = isa("qkv_isa.json");
    let k = kernel_text(
        "HloModule m\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  b = bf16[64,64] parameter(1)\n  \
         d = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
         t = bf16[64,64] tanh(a)\n  ROOT r = (bf16[64,64], bf16[64,64]) tuple(d, t)\n}\n",
    );
    let Err(SelectError::NoInstruction { line, op, .. }) = run(&k, &isa) else { panic!("tanh was selected") };
    assert_eq!((line, op.as_str()), (6, "tanh"));
}

#[test]
fn the_outputs_follow_the_inputs_end_to_end() {
    let sig = Signature {
        module: "two".into(),
        inputs: vec![tensor(DType::BF16, &[64, 64]), tensor(DType::S8, &[3])],
        outputs: vec![tensor(DType::F32, &[2]), tensor(DType::BF16, &[64, 64])],
    };
    let layout = HbmLayout::packed(&sig).unwrap();
    assert_eq!(layout.output, Placed { addr: 8195, bytes: 8 + 8192 });
    assert_eq!(layout.outputs(&sig).unwrap(), [Placed { addr: 8195, bytes: 8 }, Placed { addr: 8203, bytes: 8192 }]);
}

#[test]
fn the_assembly_lists_every_output_at_its_offset() {
    let isa = isa("qkv_isa.json");
    let k = kernel_text(TWO_PRODUCTS);
    let sel = run(&k, &isa).unwrap();
    let sig = Signature {
        module: k.name.clone(),
        inputs: vec![tensor(DType::BF16, &[64, 64]); 2],
        outputs: vec![tensor(DType::BF16, &[64, 64]); 2],
    };
    let done = drive(&isa, &sig, &sel.candidates, "two_results");
    let best = done.best.expect("a candidate is allocated");
    let output = "output=[{'addr': 16384, 'shape': (64, 64), 'dtype': jnp.bfloat16}, \
                  {'addr': 24576, 'shape': (64, 64), 'dtype': jnp.bfloat16}])";
    assert!(best.assembly.contains(output), "{}", best.assembly);
    // Each store writes one output: its address is that output's.
    let stores: Vec<&str> = best.assembly.lines().filter(|l| l.trim().starts_with("api.store_rm(")).collect();
    assert_eq!(stores.len(), 2, "{}", best.assembly);
    let mut written: Vec<bool> = ["addr_out=16384)", "addr_out=24576)"]
        .iter()
        .map(|at| stores.iter().any(|s| s.ends_with(at)))
        .collect();
    written.dedup();
    assert_eq!(written, [true], "{}", best.assembly);
}

/// A result that computes nothing (an input written out as it is, a literal of zeros), of
/// more than two dimensions and int32 elements: each moved through Gemmini's accumulator as
/// rows of 16, one load and one store, where no instruction took its shape before.
#[test]
fn a_result_that_computes_nothing_is_moved_as_rows_of_the_buffers_that_hold_its_type() {
    let isa = isa("gemmini_isa.json");
    for text in [
        "HloModule m\nENTRY e {\n  ROOT x = s32[2,16,48] parameter(0)\n}\n",
        "HloModule m\nENTRY e {\n  x = s32[4,8,16] parameter(0)\n  ROOT c = s32[4,8,16] copy(x)\n}\n",
        "HloModule m\nENTRY e {\n  x = s8[4,4] parameter(0)\n  z = s32[] constant(0)\n  \
         ROOT b = s32[2,5,6,16] broadcast(z), dimensions={}\n}\n",
    ] {
        let k = kernel_text(text);
        let sel = run(&k, &isa).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        assert_eq!(multiset(&isa, &sel.candidates[0]), sorted(&["mvin_acc", "mvout_acc"]), "{text}");
        assert_candidates_compute_kernel(&isa, &k, &sel);
    }
}
