//! Constants in the back half: a literal operand is placed in d0 after the output, lives for
//! the whole program, and is listed with its value in the assembly's `constant` list.

mod backend_support;

use act_compiler::driver::Status;
use act_compiler::emit::{assembly_with_constants, Constant};
use act_compiler::lang::DType;
use act_compiler::layout::Signature;
use act_compiler::pii::{PiiGraph, PiiNode};
use act_compiler::schedule::orders;
use act_compiler::value::analyse;
use backend_support::*;

fn signature() -> Signature {
    Signature { module: "scaled".into(), inputs: vec![bf16(&[64, 64])], outputs: vec![bf16(&[64, 64])] }
}

/// A . C with C a 64x64 splat of 0.5 in HBM.
fn product_with_constant(isa: &act_compiler::isa::Isa) -> PiiGraph {
    let nodes = vec![
        input(0),
        PiiNode::Constant { dtype: DType::BF16, shape: vec![64, 64], bits: vec![0.5f64.to_bits()] },
        instr(isa, "load_rm", &[64], &[0]),
        instr(isa, "load_rm", &[64], &[1]),
        instr(isa, "gemm", &[], &[2, 3]),
        instr(isa, "mov", &[64], &[4]),
        instr(isa, "store_rm", &[64], &[5]),
    ];
    PiiGraph { nodes, root: 6 }
}

#[test]
fn a_constant_lives_in_hbm_for_the_whole_program() {
    let isa = qkv();
    let graph = product_with_constant(&isa);
    let values = analyse(&graph, &isa).unwrap();
    assert_eq!((values[1].buffer, values[1].size.clone()), (0, vec![8192]));
    for s in orders(&graph, &isa, &values).unwrap() {
        assert_eq!(s.live[1], Some((0, s.end)));
        assert!(!s.steps.contains(&1));
    }
}

#[test]
fn a_constant_with_the_wrong_number_of_values_is_malformed() {
    let isa = qkv();
    let mut graph = product_with_constant(&isa);
    graph.nodes[1] = PiiNode::Constant { dtype: DType::BF16, shape: vec![64, 64], bits: vec![0; 3] };
    let err = analyse(&graph, &isa).unwrap_err();
    assert!(err.0.contains("node 1 is a constant of shape [64, 64] with 3 values"), "{err}");
}

#[test]
fn the_driver_places_the_constant_after_the_output_and_lists_it() {
    let isa = qkv();
    let result = drive(&isa, &signature(), &[product_with_constant(&isa)], "constants");
    assert_eq!(result.records[0].status, Status::Solved, "{}", result.records[0].message);
    let text = result.best.unwrap().assembly;
    // Input at 0, output at 8192, the constant right after the output.
    assert!(text.contains("@kernel(hbm=24576,"), "{text}");
    assert!(
        text.contains(
            "constant=[{'addr': 16384, 'shape': (64, 64), 'dtype': jnp.bfloat16, \
             'value': jnp.full((64, 64), 0.5, dtype=jnp.bfloat16)}],"
        ),
        "{text}"
    );
    assert!(text.contains("api.load_rm(n=64, addr_in=16384,"), "{text}");
}

#[test]
fn constant_values_are_written_as_python_that_reads_back_exactly() {
    let layout = act_compiler::layout::HbmLayout::packed(&signature()).unwrap();
    let bits: Vec<u64> = [1.0, -0.0, 1e-5, f64::NAN, f64::NEG_INFINITY, 3.0].iter().map(|v: &f64| v.to_bits()).collect();
    let c = Constant { addr: 16384, dtype: DType::F32, shape: &[2, 3], bits: &bits };
    let text = assembly_with_constants(&signature(), &layout, 16408, &[], &[c]).unwrap();
    assert!(
        text.contains(
            "'value': jnp.array([1.0, -0.0, 1e-5, float('nan'), -float('inf'), 3.0], \
             dtype=jnp.float32).reshape((2, 3))}"
        ),
        "{text}"
    );
}
