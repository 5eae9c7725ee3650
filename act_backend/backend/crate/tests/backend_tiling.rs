//! Identity views and concatenations in the back half: a value larger than one instruction
//! handles is tiled by views of its storage and built by concatenating tiles written in
//! place. Neither runs an instruction; allocation ties their starts to their storage.

mod backend_support;

use act_compiler::alloc::{prepare, Limits, Outcome, Prepared};
use act_compiler::driver::Status;
use act_compiler::isa::Isa;
use act_compiler::layout::{HbmLayout, Signature};
use act_compiler::pii::{PiiGraph, PiiNode};
use act_compiler::schedule::orders;
use act_compiler::value::analyse;
use backend_support::*;

fn matmul_signature() -> Signature {
    Signature {
        module: "matmul".into(),
        inputs: vec![bf16(&[128, 64]), bf16(&[64, 64])],
        outputs: vec![bf16(&[128, 64])],
    }
}

fn view(of: usize, offset: i64, size: i64) -> PiiNode {
    PiiNode::View { of, offset: vec![offset], size: vec![size] }
}

/// A[128,64] . B[64,64] on QKV: A's two 64-row halves are views of the parameter's bytes, each
/// product tile is stored straight into its half of the output.
fn matmul_128x64(isa: &Isa) -> PiiGraph {
    let nodes = vec![
        PiiNode::Input { param: 0, bytes: 16384 }, // 0 A
        PiiNode::Input { param: 1, bytes: 8192 },  // 1 B
        view(0, 0, 8192),                          // 2 A rows 0..63
        view(0, 8192, 8192),                       // 3 A rows 64..127
        instr(isa, "load_rm", &[64], &[1]),        // 4 B in d1
        instr(isa, "load_rm", &[64], &[2]),        // 5 A0 in d1
        instr(isa, "gemm", &[], &[5, 4]),          // 6 C0 in d2
        instr(isa, "mov", &[64], &[6]),            // 7 C0 in d1
        instr(isa, "store_rm", &[64], &[7]),       // 8 C0 in HBM
        instr(isa, "load_rm", &[64], &[3]),        // 9 A1 in d1
        instr(isa, "gemm", &[], &[9, 4]),          // 10 C1 in d2
        instr(isa, "mov", &[64], &[10]),           // 11 C1 in d1
        instr(isa, "store_rm", &[64], &[11]),      // 12 C1 in HBM
        PiiNode::Concat { parts: vec![8, 12], dim: 0 }, // 13 C
    ];
    PiiGraph { nodes, root: 13 }
}

#[test]
fn views_and_concatenations_take_the_buffer_and_extent_of_what_they_name() {
    let isa = qkv();
    let graph = matmul_128x64(&isa);
    let values = analyse(&graph, &isa).unwrap();
    assert_eq!((values[3].buffer, values[3].size.clone()), (0, vec![8192]));
    assert_eq!(values[3].within, Some((0, vec![8192])));
    assert_eq!(values[13].size, [16384]);
    assert_eq!(values[8].within, Some((13, vec![0])));
    assert_eq!(values[12].within, Some((13, vec![8192])));
    assert!(values[2].identity && values[13].identity && !values[8].identity);
    assert_eq!(graph.instruction_count(), 9);
}

#[test]
fn identity_nodes_never_become_steps_and_order_through_what_they_name() {
    let isa = qkv();
    let graph = matmul_128x64(&isa);
    let values = analyse(&graph, &isa).unwrap();
    for s in orders(&graph, &isa, &values).unwrap() {
        assert_eq!(s.steps.len(), 9, "{}", s.heuristic);
        assert!(s.steps.iter().all(|&n| !graph.nodes[n].is_identity()));
        // The output concatenation lasts to the end, and so do the tiles stored into it.
        assert_eq!(s.live[13].unwrap().1, s.end);
        assert_eq!(s.live[8].unwrap().1, s.end);
        // A view of a kernel input exists from the start; it lasts until its load.
        let load_a1 = s.steps.iter().position(|&n| n == 9).unwrap() as i64;
        assert_eq!(s.live[3], Some((0, 2 * load_a1 + 1)));
    }
}

#[test]
fn a_tiled_matmul_is_placed_with_views_and_tiles_in_place() {
    let isa = qkv();
    let graph = matmul_128x64(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let layout = HbmLayout::packed(&matmul_signature()).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    let placed = all.iter().find_map(|s| {
        let Prepared::Plan(plan) = prepare(&graph, &isa, &values, s, &layout, Limits::default()).unwrap()
        else {
            return None;
        };
        match plan.solve().unwrap() {
            Outcome::Solved(p) => Some((s, p)),
            _ => None,
        }
    });
    let (schedule, placement) = placed.expect("some order is placed");
    check_placement(&graph, &isa, schedule, &layout, &placement);
    // The second store writes the second half of the output, where nothing else is.
    let store = schedule.steps.iter().position(|&n| n == 12).unwrap();
    assert_eq!(placement.addrs[store][1], layout.output.addr + 8192);
    assert_eq!(placement.hbm_end, layout.output.end(), "no scratch HBM is needed");
}

#[test]
fn the_driver_compiles_the_tiled_matmul_into_nine_instructions() {
    let isa = qkv();
    let result = drive(&isa, &matmul_signature(), &[matmul_128x64(&isa)], "tiling");
    assert_eq!(result.records[0].status, Status::Solved, "{}", result.records[0].message);
    let text = result.best.unwrap().assembly;
    assert_eq!(text.matches("store_rm").count(), 2, "{text}");
    assert_eq!(text.matches("gemm").count(), 2, "{text}");
}

#[test]
fn malformed_identity_nodes_are_named() {
    let isa = qkv();
    let mut graph = matmul_128x64(&isa);
    graph.nodes[3] = view(0, 12288, 8192);
    let err = analyse(&graph, &isa).unwrap_err();
    assert!(err.0.contains("node 3 views [8192] at offset [12288] of node 0"), "{err}");

    let mut graph = matmul_128x64(&isa);
    graph.nodes[13] = PiiNode::Concat { parts: vec![8, 7], dim: 0 };
    let err = analyse(&graph, &isa).unwrap_err();
    assert!(err.0.contains("part 1 (node 7) lives in d1, part 0 in d0"), "{err}");

    let mut graph = matmul_128x64(&isa);
    graph.nodes[13] = PiiNode::Concat { parts: vec![8, 8], dim: 0 };
    let err = analyse(&graph, &isa).unwrap_err();
    assert!(err.0.contains("part 1 (node 8) is a view, or a part of another"), "{err}");

    let mut graph = matmul_128x64(&isa);
    graph.nodes.push(PiiNode::Concat { parts: vec![0, 8], dim: 0 });
    graph.root = 14;
    let err = analyse(&graph, &isa).unwrap_err();
    assert!(err.0.contains("part 0 (node 0) is a kernel parameter or constant"), "{err}");
}

#[test]
fn an_in_place_write_over_viewed_storage_is_refused() {
    let isa = qkv();
    let mut graph = attention(&isa);
    // softmax overwrites S, which a view also names.
    graph.nodes.push(view(5, 0, 32));
    let err = analyse(&graph, &isa).unwrap_err();
    assert!(err.0.contains("node 6 overwrites node 5 in place, but node 5 shares"), "{err}");
}

/// The same product with both result tiles moved side by side into d1 and stored as one
/// 128-row value: an on-chip concatenation, which needs d1 to hold B, a tile of A and the
/// first product tile at once.
fn matmul_on_chip_concat(isa: &Isa) -> PiiGraph {
    let mut graph = matmul_128x64(isa);
    graph.nodes.truncate(8);
    graph.nodes.extend([
        instr(isa, "load_rm", &[64], &[3]),             // 8 A1 in d1
        instr(isa, "gemm", &[], &[8, 4]),               // 9 C1 in d2
        instr(isa, "mov", &[64], &[9]),                 // 10 C1 in d1
        PiiNode::Concat { parts: vec![7, 10], dim: 0 }, // 11 C in d1
        instr(isa, "store_rm", &[128], &[11]),          // 12 C in HBM
    ]);
    graph.root = 12;
    graph
}

fn place(isa: &Isa, graph: &PiiGraph) -> Option<(act_compiler::schedule::Schedule, act_compiler::alloc::Placement)> {
    let values = analyse(graph, isa).unwrap();
    let layout = HbmLayout::packed(&matmul_signature()).unwrap();
    for s in orders(graph, isa, &values).unwrap() {
        if let Prepared::Plan(plan) = prepare(graph, isa, &values, &s, &layout, Limits::default()).unwrap() {
            if let Outcome::Solved(p) = plan.solve().unwrap() {
                check_placement(graph, isa, &s, &layout, &p);
                return Some((s, p));
            }
        }
    }
    None
}

#[test]
fn an_on_chip_concatenation_reserves_its_whole_extent_from_its_first_part_on() {
    // Three 64-row tiles in a two-tile d1: no placement.
    assert!(place(&qkv(), &matmul_on_chip_concat(&qkv())).is_none());
    // With room for four tiles, the two product tiles land next to each other.
    let isa = qkv_with(256);
    let graph = matmul_on_chip_concat(&isa);
    let (schedule, placement) = place(&isa, &graph).expect("placed in a four-tile d1");
    let at = |n: usize| schedule.steps.iter().position(|&x| x == n).unwrap();
    let (first, second) = (placement.addrs[at(7)][1], placement.addrs[at(10)][1]);
    assert_eq!(second, first + 64);
    // The store reads the concatenation where its first part starts.
    assert_eq!(placement.addrs[at(12)][0], first);
}
