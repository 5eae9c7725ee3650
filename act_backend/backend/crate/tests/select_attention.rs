//! Attention on the two example accelerators: the instruction counts the ISAs allow at best,
//! the same selection whichever way the kernel was written, every candidate computing the
//! kernel, and the same candidates on every run.

mod select_support;

use act_compiler::select::{select, SelectLimits, StopReason};
use select_support::{assert_candidates_compute_kernel, isa, kernel_file, multiset, run, sorted};
use std::collections::HashSet;

const QKV_BEST: &[&str] = &["load_rm", "load_cm", "gemm", "softmax", "mov", "load_rm", "gemm", "mov", "store_rm"];

#[test]
fn qkv_attention_takes_nine_instructions() {
    let isa = isa("qkv_isa.json");
    let k = kernel_file("attention.hlo");
    let sel = run(&k, &isa).unwrap();
    assert_eq!(multiset(&isa, &sel.candidates[0]), sorted(QKV_BEST));
    assert_candidates_compute_kernel(&isa, &k, &sel);
}

#[test]
fn jax_dot_dimension_number_and_batch_of_one_attention_select_the_same_nine() {
    let isa = isa("qkv_isa.json");
    for file in ["attention_jax.hlo", "attention_dot_general.hlo", "attention_batch1_jax.hlo"] {
        let k = kernel_file(file);
        let sel = run(&k, &isa).unwrap();
        assert_eq!(multiset(&isa, &sel.candidates[0]), sorted(QKV_BEST), "{file}");
        assert_candidates_compute_kernel(&isa, &k, &sel);
    }
}

#[test]
fn qkv_new_attention_takes_ten_instructions() {
    let isa = isa("qkv_new_isa.json");
    for file in ["attention.hlo", "attention_jax.hlo", "attention_dot_general.hlo", "attention_batch1_jax.hlo"] {
        let k = kernel_file(file);
        let sel = run(&k, &isa).unwrap();
        let best = &sel.candidates[0];
        assert_eq!(best.instruction_count(), 10, "{file}");
        let names = multiset(&isa, best);
        for needed in ["transpose_13", "softmax"] {
            assert_eq!(names.iter().filter(|n| *n == needed).count(), 1, "{file}: {names:?}");
        }
        assert_eq!(names.iter().filter(|n| n.starts_with("gemm")).count(), 2, "{file}: {names:?}");
        assert_eq!(names.iter().filter(|n| n.starts_with("load")).count(), 3, "{file}: {names:?}");
        assert_eq!(names.iter().filter(|n| n.starts_with("mov")).count(), 2, "{file}: {names:?}");
        assert_eq!(names.iter().filter(|n| n.starts_with("store")).count(), 1, "{file}: {names:?}");
        assert!(sel.candidates.len() > 1, "alternatives are offered for allocation to choose from");
        assert_candidates_compute_kernel(&isa, &k, &sel);
    }
}

#[test]
fn candidates_are_distinct_valid_and_best_first() {
    let isa = isa("qkv_new_isa.json");
    let k = kernel_file("attention.hlo");
    let limits = SelectLimits { max_candidates: 12, ..SelectLimits::default() };
    let sel = select(&k, &isa, &limits).unwrap();
    assert!(sel.candidates.len() <= 12);
    let distinct: HashSet<_> = sel.candidates.iter().collect();
    assert_eq!(distinct.len(), sel.candidates.len());
    for pair in sel.candidates.windows(2) {
        assert!(pair[0].instruction_count() <= pair[1].instruction_count());
    }
    for c in &sel.candidates {
        c.check().unwrap();
    }
}

#[test]
fn selection_is_deterministic() {
    for table in ["qkv_isa.json", "qkv_new_isa.json"] {
        let isa = isa(table);
        let k = kernel_file("attention_jax.hlo");
        let first = run(&k, &isa).unwrap();
        let second = run(&k, &isa).unwrap();
        assert_eq!(first.candidates, second.candidates, "{table}");
        assert_eq!(first.stats.egraph_nodes, second.stats.egraph_nodes);
        assert_eq!(first.stats.iterations, second.stats.iterations);
    }
}

#[test]
fn attention_saturates_within_the_default_limits() {
    let isa = isa("qkv_new_isa.json");
    // A search this small never settles: it runs on until nothing changes.
    let sel = run(&kernel_file("attention.hlo"), &isa).unwrap();
    assert_eq!(sel.stats.stop_reason, StopReason::Saturated);
    assert!(sel.stats.egraph_nodes < SelectLimits::default().node_limit);
}

#[test]
fn a_search_that_finds_nothing_cheaper_stops_with_the_program_saturation_finds() {
    for table in ["qkv_isa.json", "qkv_new_isa.json"] {
        let isa = isa(table);
        let k = kernel_file("attention.hlo");
        let eager = SelectLimits { settle_nodes: 0, ..SelectLimits::default() };
        let settled = select(&k, &isa, &eager).unwrap();
        let patient = SelectLimits { patience: usize::MAX, ..SelectLimits::default() };
        let saturated = select(&k, &isa, &patient).unwrap();
        assert_eq!(settled.stats.stop_reason, StopReason::Settled, "{table}");
        assert!(settled.stats.iterations < saturated.stats.iterations, "{table}");
        assert_eq!(settled.candidates[0], saturated.candidates[0], "{table}");
    }
}
