//! Allocation: the request built for a scheduled candidate (CSP1-CSP4 of the design) and the
//! answers of the linked C++ allocator.

mod backend_support;

use act_compiler::alloc::{prepare, Limits, Outcome, Plan, Prepared};
use act_compiler::isa::Isa;
use act_compiler::layout::HbmLayout;
use act_compiler::pii::PiiGraph;
use act_compiler::schedule::{from_order, orders, Schedule};
use act_compiler::value::analyse;
use backend_support::*;

fn plan(graph: &PiiGraph, isa: &Isa, schedule: &Schedule, layout: &HbmLayout) -> Plan {
    let values = analyse(graph, isa).unwrap();
    match prepare(graph, isa, &values, schedule, layout, Limits::default()).unwrap() {
        Prepared::Plan(p) => p,
        Prepared::Infeasible(why) => panic!("unexpectedly infeasible: {why}"),
    }
}

fn first_order(graph: &PiiGraph, isa: &Isa) -> Schedule {
    let values = analyse(graph, isa).unwrap();
    orders(graph, isa, &values).unwrap().remove(0)
}

fn var<'a>(plan: &'a Plan, name: &str) -> &'a act_compiler::alloc::Variable {
    plan.request.variables.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn kernel_inputs_and_output_are_fixed_in_hbm() {
    let isa = qkv();
    let graph = attention(&isa);
    let p = plan(&graph, &isa, &first_order(&graph, &isa), &attention_layout());
    for (node, addr) in [("node0", 0), ("node1", 8192), ("node2", 16384), ("node11", 24576)] {
        let v = var(&p, &format!("{node}.start"));
        assert_eq!((v.lo, v.hi), (addr, addr), "{node}");
    }
    // No scratch HBM: no HBM end to minimise.
    assert!(p.request.variables.iter().all(|v| v.name != "hbm_end"));
}

#[test]
fn attribute_domains_come_from_the_buffers_they_address() {
    let isa = qkv();
    let graph = attention(&isa);
    let p = plan(&graph, &isa, &first_order(&graph, &isa), &attention_layout());
    // Step 0 loads Q: its HBM address is pinned by Q's position, its d1 row by d1's size.
    let v = var(&p, "step0.load_rm.addr_in");
    assert_eq!((v.lo, v.hi), (0, 0));
    let v = var(&p, "step0.load_rm.addr_out");
    assert_eq!((v.lo, v.hi), (0, 64));
    let v = var(&p, "step2.gemm.addr_out");
    assert_eq!((v.lo, v.hi), (0, 0), "a 64-row tile fills d2");
}

#[test]
fn every_slice_start_is_tied_to_its_value() {
    let isa = qkv();
    let graph = attention(&isa);
    let p = plan(&graph, &isa, &first_order(&graph, &isa), &attention_layout());
    // One equality per slice: 9 outputs + 11 inputs (each gemm reads two).
    assert_eq!(p.request.equalities.len(), 20);
    let name = |i: usize| p.request.variables[i].name.as_str();
    let softmax: Vec<Vec<&str>> = p
        .request
        .equalities
        .iter()
        .filter(|e| e.terms.iter().any(|&(v, _)| name(v) == "step3.softmax.addr"))
        .map(|e| e.terms.iter().map(|&(v, _)| name(v)).collect())
        .collect();
    assert_eq!(
        softmax,
        [vec!["step3.softmax.addr", "node5.start0"], vec!["step3.softmax.addr", "node6.start0"]]
    );
}

#[test]
fn blocks_carry_live_ranges_and_capacities() {
    let isa = qkv();
    let graph = attention(&isa);
    let p = plan(&graph, &isa, &first_order(&graph, &isa), &attention_layout());
    let json: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    let blocks = json["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 12, "every live value, kernel inputs included");
    let q_tile = blocks.iter().find(|b| b["time"] == serde_json::json!([1, 5])).unwrap();
    assert_eq!(q_tile["buffer"], "d1");
    assert_eq!(q_tile["capacity"], 128);
    assert_eq!(q_tile["size"], 64);
    let q = &blocks[0];
    assert_eq!(q["capacity"], serde_json::Value::Null, "HBM is unbounded");
    assert_eq!(
        json["limits"],
        serde_json::json!({"max_deterministic_time": 10.0, "random_seed": 0})
    );
}

#[test]
fn attention_allocates_soundly() {
    let isa = qkv();
    let graph = attention(&isa);
    let layout = attention_layout();
    let schedule = first_order(&graph, &isa);
    let Outcome::Solved(placement) = plan(&graph, &isa, &schedule, &layout).solve().unwrap() else {
        panic!("attention must fit QKV")
    };
    check_placement(&graph, &isa, &schedule, &layout, &placement);
    assert_eq!(placement.hbm_end, 32768);
    // Q is loaded from HBM 0 and the output is stored at 24576.
    assert_eq!(placement.addrs[0][0], 0);
    assert_eq!(placement.addrs[8][1], 24576);
}

#[test]
fn the_same_request_gets_the_same_answer() {
    let isa = qkv();
    let graph = attention(&isa);
    let schedule = first_order(&graph, &isa);
    let p = plan(&graph, &isa, &schedule, &attention_layout());
    assert_eq!(p.solve().unwrap(), p.solve().unwrap());
}

#[test]
fn an_order_that_keeps_three_tiles_in_a_two_tile_buffer_is_infeasible() {
    let isa = qkv();
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    // V loaded first: Q, K^T and V are live together in 128 rows.
    let early_v = from_order(&graph, &values, "test", vec![8, 3, 4, 5, 6, 7, 9, 10, 11]).unwrap();
    let outcome = plan(&graph, &isa, &early_v, &attention_layout()).solve().unwrap();
    assert!(matches!(outcome, Outcome::Infeasible(_)), "{outcome:?}");
}

#[test]
fn a_value_larger_than_its_buffer_is_infeasible_before_solving() {
    let isa = qkv_with(32);
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let schedule = first_order(&graph, &isa);
    let prepared =
        prepare(&graph, &isa, &values, &schedule, &attention_layout(), Limits::default());
    let Ok(Prepared::Infeasible(why)) = prepared else { panic!("{prepared:?}") };
    assert!(
        why.contains("needs 64 positions of d1 along access dimension 0, which has 32"),
        "{why}"
    );
}

/// Attention that spills P and a copy of V to HBM and loads them back.
fn with_spills(isa: &Isa) -> PiiGraph {
    let mut graph = attention(isa);
    graph.nodes.truncate(8);
    graph.nodes.extend([
        instr(isa, "store_rm", &[64], &[7]),  // 8 P in HBM (scratch)
        instr(isa, "load_rm", &[64], &[2]),   // 9 V in d1
        instr(isa, "store_rm", &[64], &[9]),  // 10 V in HBM (scratch)
        instr(isa, "load_rm", &[64], &[8]),   // 11 P in d1 again
        instr(isa, "load_rm", &[64], &[10]),  // 12 V in d1 again
        instr(isa, "gemm", &[], &[11, 12]),   // 13
        instr(isa, "mov", &[64], &[13]),      // 14
        instr(isa, "store_rm", &[64], &[14]), // 15
    ]);
    graph.root = 15;
    graph
}

#[test]
fn scratch_hbm_goes_after_the_output_and_its_end_is_minimised() {
    let isa = qkv();
    let graph = with_spills(&isa);
    let layout = attention_layout();
    let schedule = first_order(&graph, &isa);
    let p = plan(&graph, &isa, &schedule, &layout);
    for node in ["node8", "node10"] {
        let v = var(&p, &format!("{node}.start"));
        assert_eq!((v.lo, v.hi), (32768, 32768 + 8192), "{node}: after the output");
    }
    let end = var(&p, "hbm_end");
    assert_eq!((end.lo, end.hi), (32768, 32768 + 16384));
    let end_index = p.request.variables.iter().position(|v| v.name == "hbm_end").unwrap();
    let (first, weight) = p.request.objective[0];
    assert_eq!(first, end_index);
    let on_chip_most: i64 =
        p.request.objective[1..].iter().map(|&(v, c)| c * p.request.variables[v].hi).sum();
    assert!(weight > on_chip_most, "one byte of HBM outweighs all on-chip starts together");
    let Outcome::Solved(placement) = p.solve().unwrap() else { panic!() };
    check_placement(&graph, &isa, &schedule, &layout, &placement);
    let (a, b) = (schedule.live[8].unwrap(), schedule.live[10].unwrap());
    let together = a.0 < b.1 && b.0 < a.1;
    assert_eq!(placement.hbm_end, 32768 + if together { 16384 } else { 8192 });
}

#[test]
fn a_single_scratch_value_is_pinned_right_after_the_output() {
    let isa = qkv();
    let mut graph = attention(&isa);
    graph.nodes.truncate(8);
    graph.nodes.extend([
        instr(&isa, "store_rm", &[64], &[7]),  // 8 P in HBM
        instr(&isa, "load_rm", &[64], &[8]),   // 9
        instr(&isa, "load_rm", &[64], &[2]),   // 10 V
        instr(&isa, "gemm", &[], &[9, 10]),    // 11
        instr(&isa, "mov", &[64], &[11]),      // 12
        instr(&isa, "store_rm", &[64], &[12]), // 13
    ]);
    graph.root = 13;
    let p = plan(&graph, &isa, &first_order(&graph, &isa), &attention_layout());
    let v = var(&p, "node8.start");
    assert_eq!((v.lo, v.hi), (32768, 32768));
    let Outcome::Solved(placement) = p.solve().unwrap() else { panic!() };
    assert_eq!(placement.hbm_end, 32768 + 8192);
}

#[test]
fn multi_dimensional_buffers_are_flattened_to_bounding_ranges() {
    // d4: 4 x 8 positions; `blk` copies a 2 x 8 block of d1 rows into it.
    let grid = serde_json::json!({ "name": "d4", "access_dims": [4, 8], "unit_dims": [64], "dtype": "bf16" });
    let load = instruction(
        "load",
        &[],
        &["src", "row", "col"],
        vec![slice("d0", vec![attr("a.src")], vec![int(16 * 128)])],
        slice("d4", vec![attr("a.row"), attr("a.col")], vec![int(2), int(8)]),
    );
    let store = instruction(
        "store",
        &[],
        &["row", "col", "dst"],
        vec![slice("d4", vec![attr("a.row"), attr("a.col")], vec![int(2), int(8)])],
        slice("d0", vec![attr("a.dst")], vec![int(16 * 128)]),
    );
    let isa = table("G", vec![grid], vec![load, store]);
    let graph = PiiGraph {
        nodes: vec![
            act_compiler::pii::PiiNode::Input { param: 0, bytes: 2048 },
            instr(&isa, "load", &[], &[0]),
            instr(&isa, "store", &[], &[1]),
        ],
        root: 2,
    };
    let sig = act_compiler::layout::Signature {
        module: "g".into(),
        inputs: vec![bf16(&[16, 64])],
        outputs: vec![bf16(&[16, 64])],
    };
    let layout = HbmLayout::packed(&sig).unwrap();
    let schedule = first_order(&graph, &isa);
    let p = plan(&graph, &isa, &schedule, &layout);
    let flat = var(&p, "node1.flat");
    assert_eq!((flat.lo, flat.hi), (0, 32 - 16));
    let row = var(&p, "node1.start0");
    assert_eq!((row.lo, row.hi), (0, 2));
    let Outcome::Solved(placement) = p.solve().unwrap() else { panic!() };
    check_placement(&graph, &isa, &schedule, &layout, &placement);
}

/// QKV with constraints on load_rm's addressing attributes.
fn qkv_constrained(constraints: Vec<act_compiler::isa::Constraint>) -> (Isa, usize) {
    let mut isa = qkv();
    let load = isa.instructions.iter().position(|i| i.name == "load_rm").unwrap();
    isa.instructions[load].constraints = constraints;
    (isa, load)
}

#[test]
fn constraints_on_addressing_attributes_bound_the_placement() {
    use act_compiler::isa::{CmpOp, Constraint, Expr};
    let out = || Expr::Attr("a.addr_out".into());
    let aligned = Constraint { op: CmpOp::Eq, lhs: Expr::Rem(Box::new(out()), Box::new(Expr::Int(32))), rhs: Expr::Int(0) };
    let above = Constraint { op: CmpOp::Ge, lhs: out(), rhs: Expr::Int(32) };
    let (isa, load) = qkv_constrained(vec![aligned, above]);
    let graph = attention(&isa);
    let layout = attention_layout();
    let schedule = first_order(&graph, &isa);
    let Outcome::Solved(placement) = plan(&graph, &isa, &schedule, &layout).solve().unwrap() else {
        panic!("attention fits with loads at rows 32 and 64")
    };
    check_placement(&graph, &isa, &schedule, &layout, &placement);
    let addr_out = isa.instructions[load].addr_attrs.iter().position(|a| a == "addr_out").unwrap();
    let rows: Vec<i64> = schedule
        .steps
        .iter()
        .zip(&placement.addrs)
        .filter(|(&n, _)| matches!(graph.nodes[n], act_compiler::pii::PiiNode::Instr { instr, .. } if instr == load))
        .map(|(_, addrs)| addrs[addr_out])
        .collect();
    assert!(!rows.is_empty() && rows.iter().all(|r| r % 32 == 0 && *r >= 32), "{rows:?}");
}

#[test]
fn a_constraint_no_placement_meets_is_infeasible() {
    use act_compiler::isa::{CmpOp, Constraint, Expr};
    // A 64-row value in d1's 128 rows starts at row 64 at most.
    let beyond = Constraint { op: CmpOp::Gt, lhs: Expr::Attr("a.addr_out".into()), rhs: Expr::Int(64) };
    let (isa, _) = qkv_constrained(vec![beyond]);
    let graph = attention(&isa);
    let outcome = plan(&graph, &isa, &first_order(&graph, &isa), &attention_layout()).solve().unwrap();
    assert!(matches!(outcome, Outcome::Infeasible(_)), "{outcome:?}");
}
