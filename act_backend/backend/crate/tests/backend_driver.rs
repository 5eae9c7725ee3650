//! The candidate loop on hand-made candidates, costed by the default model (one per
//! instruction): the cheapest wins with ties to the earlier, the search stops as soon as the
//! best meets the lower bound, or after as many candidates again as the best took (at least
//! 8, or as many instructions as the patience work for long programs), failures are recorded
//! per candidate.

mod backend_support;

use act_compiler::driver::{run, Config, Run, Status, StopReason};
use act_compiler::isa::Isa;
use act_compiler::pii::PiiGraph;
use backend_support::*;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

fn go(isa: &Isa, candidates: &[PiiGraph], config: &Config, name: &str) -> Run {
    let dir = scratch(name);
    let cancel = AtomicBool::new(false);
    let mut seen = Vec::new();
    let result =
        run(isa, &attention_signature(), candidates, &dir, config, &cancel, &mut |r, _| {
            seen.push(r.index)
        })
        .unwrap();
    assert_eq!(seen, (0..result.records.len()).collect::<Vec<_>>(), "observed in order");
    for r in &result.records {
        assert_eq!(r.file.is_some(), r.status == Status::Solved);
        if let Some(f) = &r.file {
            assert!(f.starts_with(&dir) && f.is_file());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Attention with P spilled to HBM and loaded back: eleven instructions.
fn with_spill(isa: &Isa) -> PiiGraph {
    let mut graph = attention(isa);
    graph.nodes.truncate(8);
    graph.nodes.extend([
        instr(isa, "store_rm", &[64], &[7]),
        instr(isa, "load_rm", &[64], &[8]),
        instr(isa, "load_rm", &[64], &[2]),
        instr(isa, "gemm", &[], &[9, 10]),
        instr(isa, "mov", &[64], &[11]),
        instr(isa, "store_rm", &[64], &[12]),
    ]);
    graph.root = 13;
    graph
}

/// Attention spilling P and a copy of V: thirteen instructions.
fn with_two_spills(isa: &Isa) -> PiiGraph {
    let mut graph = attention(isa);
    graph.nodes.truncate(8);
    graph.nodes.extend([
        instr(isa, "store_rm", &[64], &[7]),
        instr(isa, "load_rm", &[64], &[2]),
        instr(isa, "store_rm", &[64], &[9]),
        instr(isa, "load_rm", &[64], &[8]),
        instr(isa, "load_rm", &[64], &[10]),
        instr(isa, "gemm", &[], &[11, 12]),
        instr(isa, "mov", &[64], &[13]),
        instr(isa, "store_rm", &[64], &[14]),
    ]);
    graph.root = 15;
    graph
}

#[test]
fn the_cheapest_candidate_wins_and_ties_go_to_the_earlier() {
    let isa = qkv();
    let result = go(
        &isa,
        &[with_spill(&isa), attention(&isa), attention(&isa)],
        &Config::default(),
        "cheapest",
    );
    let best = result.best.unwrap();
    assert_eq!((best.index, best.cost), (1, 9.0));
    assert_eq!(best.assembly.matches("\n        api.").count(), 9);
    let costs: Vec<Option<f64>> = result.records.iter().map(|r| r.cost).collect();
    assert_eq!(costs, [Some(11.0), Some(9.0), Some(9.0)]);
    assert_eq!(result.stop, StopReason::AllTried);
}

#[test]
fn the_search_stops_after_as_many_candidates_again_as_the_best_took_at_least_eight() {
    let isa = qkv();
    let same: Vec<PiiGraph> = (0..20).map(|_| attention(&isa)).collect();
    let result = go(&isa, &same, &Config::default(), "patience-min");
    assert_eq!(result.records.len(), 9, "best at 0, then 8 without improvement");
    assert_eq!(result.stop, StopReason::NoImprovement);

    // Costs 13 from 0, 11 from 7 (within 8 of the first best), 9 from 14 (within 8 of that):
    // the best took 15 candidates, so 15 more without improvement are tried.
    let mut late: Vec<PiiGraph> = (0..7).map(|_| with_two_spills(&isa)).collect();
    late.extend((7..14).map(|_| with_spill(&isa)));
    late.extend((14..40).map(|_| attention(&isa)));
    let result = go(&isa, &late, &Config::default(), "patience-late");
    assert_eq!(result.best.unwrap().index, 14);
    assert_eq!(result.records.len(), 30);
    assert_eq!(result.stop, StopReason::NoImprovement);
}

#[test]
fn a_long_program_is_followed_by_as_many_instructions_again_as_the_patience_work() {
    // Attention is 9 instructions: 30 of work is 3 candidates after the best, 5 still 1.
    let isa = qkv();
    let same: Vec<PiiGraph> = (0..20).map(|_| attention(&isa)).collect();
    for (work, tried) in [(30, 4), (5, 2), (1_000, 9)] {
        let config = Config { patience_work: work, ..Config::default() };
        let result = go(&isa, &same, &config, "patience-work");
        assert_eq!((result.records.len(), result.stop), (tried, StopReason::NoImprovement), "work {work}");
    }
    // Two candidates of 11 instructions, then attention: 30 of work is 2 candidates after
    // the first and 3 after attention, which was found late and takes as many again.
    let mut late: Vec<PiiGraph> = (0..2).map(|_| with_spill(&isa)).collect();
    late.extend((2..20).map(|_| attention(&isa)));
    let config = Config { patience_work: 30, ..Config::default() };
    let result = go(&isa, &late, &config, "patience-work-late");
    assert_eq!((result.best.unwrap().index, result.records.len()), (2, 6));
}

#[test]
fn the_search_stops_at_the_first_candidate_that_costs_the_lower_bound() {
    // (bound, candidates tried, stop): a bound met at candidate 1 ends the search there; one
    // no candidate meets, or met only by the last, leaves every candidate tried.
    let isa = qkv();
    let candidates = [with_spill(&isa), attention(&isa), attention(&isa), with_spill(&isa)];
    for (bound, tried, stop) in [
        (Some(9.0), 2, StopReason::LowerBound),
        (Some(11.0), 1, StopReason::LowerBound),
        (Some(8.0), 4, StopReason::AllTried),
        (None, 4, StopReason::AllTried),
    ] {
        let config = Config { lower_bound: bound, ..Config::default() };
        let result = go(&isa, &candidates, &config, "lower-bound");
        assert_eq!((result.records.len(), result.stop), (tried, stop), "bound {bound:?}");
        assert_eq!(result.best.unwrap().index, if tried == 1 { 0 } else { 1 }, "bound {bound:?}");
    }
    let last = [with_spill(&isa), attention(&isa)];
    let result = go(&isa, &last, &Config { lower_bound: Some(9.0), ..Config::default() }, "lower-bound-last");
    assert_eq!(result.stop, StopReason::AllTried);
}

#[test]
fn a_candidate_that_cannot_fit_is_recorded_and_the_search_goes_on() {
    // d1 of 64 rows: the products need two 64-row tiles of d1 at once.
    let isa = qkv_with(64);
    let result = go(&isa, &[attention(&isa)], &Config::default(), "infeasible");
    assert!(result.best.is_none());
    let r = &result.records[0];
    assert_eq!(r.status, Status::Infeasible);
    // Every order overfills d1 at some instant: none reaches the allocator, each says where.
    assert_eq!(r.orders_tried, 0);
    assert!(r.message.contains("sethi-ullman: the values live at time"), "{}", r.message);
    assert!(r.message.contains("of buffer \"d1\", which holds 64"), "{}", r.message);
    assert!(result.failure_summary().starts_with("candidate 0: infeasible: "));
}

#[test]
fn orders_that_overfill_a_buffer_never_reach_the_allocator_and_each_is_named() {
    let isa = qkv_with(64);
    let values = act_compiler::value::analyse(&attention(&isa), &isa).unwrap();
    let orders = act_compiler::schedule::orders(&attention(&isa), &isa, &values).unwrap();
    let result = go(&isa, &[attention(&isa)], &Config::default(), "overfull");
    let r = &result.records[0];
    assert!(orders.iter().all(|o| o.overflow(&isa, &values).is_some()));
    assert_eq!((r.orders_tried, r.orders_skipped), (0, 0));
    for order in &orders {
        assert!(r.message.contains(&format!("{}: the values live at time", order.heuristic)), "{}", r.message);
    }
}

#[test]
fn a_malformed_candidate_is_recorded_and_skipped() {
    let isa = qkv();
    let mut bad = attention(&isa);
    // gemm reads d1, but node 5 (S) lives in d2.
    bad.nodes[9] = instr(&isa, "gemm", &[], &[5, 8]);
    let result = go(&isa, &[bad, attention(&isa)], &Config::default(), "malformed");
    assert_eq!(result.records[0].status, Status::Malformed);
    assert!(
        result.records[0].message.contains("node 5 lives in d2"),
        "{}",
        result.records[0].message
    );
    assert_eq!(result.best.unwrap().index, 1);
}

#[test]
fn a_passed_deadline_stops_before_the_next_candidate() {
    let isa = qkv();
    let config = Config { deadline: Some(Instant::now()), ..Config::default() };
    let result = go(&isa, &[attention(&isa)], &config, "deadline");
    assert!(result.records.is_empty());
    assert_eq!(result.stop, StopReason::TimeLimit);
}
