//! A pass of the search visits only the classes at or above a change since it last ran
//! (`changes.rs`). That is sound only if every rule and every ISA pattern reads nothing but the
//! classes below the one it starts from: on real kernels, at every iteration, whatever the
//! rules and patterns find from the classes left out is already in the e-graph.

mod select_support;

use act_compiler::changes::Changes;
use act_compiler::egraph::SelGraph;
use act_compiler::isa::Isa;
use act_compiler::isa_match::{self, Patterns};
use act_compiler::kernel::Kernel;
use act_compiler::lang::Node;
use act_compiler::rewrites::{self, Term};
use act_compiler::select::{initial_graph, rules_for};
use egg::Id;
use select_support::{data, isa, kernel_file, kernel_text};
use std::collections::BTreeSet;

/// The class `term` already is, if every node of it is in the e-graph.
fn held(eg: &SelGraph, term: &Term) -> Option<Id> {
    match term {
        Term::Class(id) => Some(eg.find(*id)),
        Term::Node(op, ty, kids) => {
            let ids = kids.iter().map(|k| held(eg, k)).collect::<Option<Vec<Id>>>()?;
            eg.lookup(Node::new(op.clone(), ty.clone(), ids))
        }
    }
}

/// Runs the search's passes on `kernel` up to `max_nodes` e-nodes, each visiting only what
/// changed, and checks the classes each pass leaves out; returns the iterations checked.
fn check_passes(kernel: &Kernel, isa: &Isa, max_nodes: usize) -> usize {
    let patterns = Patterns::compile(isa).unwrap();
    let rules = rules_for(isa, &patterns);
    let mut kg = initial_graph(kernel, isa, &rules);
    let eg = &mut kg.egraph;
    let (mut rule_changes, mut match_changes) = (Changes::new(), Changes::new());
    let mut iterations = 0;
    while eg.total_number_of_nodes() < max_nodes {
        iterations += 1;
        let visit = rule_changes.since_last(eg);
        let skipped = left_out(eg, &visit);
        for rw in rewrites::search_classes(eg, &rules, &skipped) {
            let class = eg.find(rw.class);
            assert_eq!(held(eg, &rw.term), Some(class), "iteration {iterations}: {} found anew in a class left out", rw.rule);
        }
        let rewrote = rewrites::apply(eg, &rewrites::search_classes(eg, &rules, &visit));
        let visit = match_changes.since_last(eg);
        for m in isa_match::find_in(eg, isa, &patterns, &left_out(eg, &visit)) {
            assert_eq!(eg.lookup(m.node.clone()), Some(eg.find(m.class)), "iteration {iterations}: a match anew in a class left out");
        }
        let matched = isa_match::apply(eg, &isa_match::find_in(eg, isa, &patterns, &visit));
        if !rewrote && !matched {
            break;
        }
    }
    iterations
}

/// The canonical classes not in `visit`, in increasing id order.
fn left_out(eg: &SelGraph, visit: &[Id]) -> Vec<Id> {
    let visit: BTreeSet<Id> = visit.iter().copied().collect();
    let mut ids: Vec<Id> = eg.classes().map(|c| c.id).filter(|id| !visit.contains(id)).collect();
    ids.sort();
    ids
}

#[test]
fn attention_on_qkv_finds_nothing_new_where_nothing_changed() {
    assert!(check_passes(&kernel_file("attention.hlo"), &isa("qkv_isa.json"), 20_000) >= 4);
}

#[test]
fn a_softmax_no_instruction_computes_finds_nothing_new_where_nothing_changed() {
    let kernel = kernel_text(&data("tiling/qkv_softmax_128_columns.hlo"));
    assert!(check_passes(&kernel, &isa("qkv_isa.json"), 15_000) >= 6);
}

#[test]
fn a_tiled_product_on_gemmini_finds_nothing_new_where_nothing_changed() {
    let kernel = kernel_text(&data("tiling/gemmini_matmul_40x40x40.hlo"));
    assert!(check_passes(&kernel, &isa("gemmini_isa.json"), 20_000) >= 3);
}

#[test]
fn identities_and_mixed_precision_find_nothing_new_where_nothing_changed() {
    // A clamp and a minimum (identities through the unit), a widened product (precision).
    let text = "HloModule k\nENTRY e {\n  a = s8[16,16] parameter(0)\n  b = s8[16,16] parameter(1)\n  \
                lo = s8[] constant(-3)\n  hi = s8[] constant(5)\n  l = s8[16,16] broadcast(lo), dimensions={}\n  \
                h = s8[16,16] broadcast(hi), dimensions={}\n  c = s8[16,16] clamp(l, a, h)\n  \
                m = s8[16,16] minimum(c, b)\n  wa = s32[16,16] convert(m)\n  wb = s32[16,16] convert(b)\n  \
                ROOT d = s32[16,16] dot(wa, wb), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
    assert!(check_passes(&kernel_text(text), &isa("gemmini_isa.json"), 20_000) >= 3);
}
