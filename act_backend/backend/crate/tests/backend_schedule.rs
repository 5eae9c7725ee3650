//! Scheduling: the orders a candidate may run in, in-place writers as last readers, and the
//! live ranges the allocator sees.

mod backend_support;

use act_compiler::pii::PiiGraph;
use act_compiler::schedule::{from_order, orders, Orders};
use act_compiler::value::analyse;
use backend_support::*;

#[test]
fn sethi_ullman_order_of_attention_loads_v_only_after_the_first_product() {
    let isa = qkv();
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    assert_eq!(all[0].heuristic, "sethi-ullman");
    assert_eq!(all[0].steps, [3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // Q and K^T, then P and V: a step's result may take the rows its operands free, so
    // never more than two 64-row tiles are live at once.
    assert_eq!(all[0].peak_on_chip_rows(&isa, &values), 128);
}

#[test]
fn orders_made_one_at_a_time_come_in_the_order_of_all_of_them() {
    let isa = qkv();
    let graph = two_results_side_by_side(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    assert!(all.len() > 1, "the heuristics agree on this graph: no test of the sequence");
    let mut lazy = Orders::new(&graph, &isa, &values).unwrap();
    for (i, order) in all.iter().enumerate() {
        assert_eq!(lazy.get(i), Some(order), "order {i}");
    }
    assert_eq!(lazy.get(all.len()), None);
    // A fixed list is just that list.
    let mut given = Orders::given(vec![all[1].clone()]);
    assert_eq!(given.all(), &all[1..2]);
}

/// Two results written side by side into one output: `P.V` and `Q.V` of attention's nodes,
/// each stored, the output their concatenation.
fn two_results_side_by_side(isa: &act_compiler::isa::Isa) -> PiiGraph {
    let mut graph = attention(isa);
    graph.nodes.extend([
        instr(isa, "load_rm", &[64], &[0]),    // 12 Q in d1 again
        instr(isa, "gemm", &[], &[12, 8]),     // 13 Q.V in d2
        instr(isa, "mov", &[64], &[13]),       // 14 Q.V in d1
        instr(isa, "store_rm", &[64], &[14]),  // 15 Q.V in HBM
        act_compiler::pii::PiiNode::Concat { parts: vec![11, 15], dim: 0 }, // 16 the output
    ]);
    graph.root = 16;
    graph
}

#[test]
fn an_output_written_in_parts_is_ordered_depth_first_from_each_part() {
    let isa = qkv();
    let graph = two_results_side_by_side(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    assert_eq!(all[0].heuristic, "sethi-ullman");
    assert_eq!(all[0].steps.len(), 13);
    // Stores first: each result leaves as soon as it is made, so `P.V` is stored before
    // `Q.V` is computed.
    let stores_first = all.iter().find(|s| s.heuristic == "stores-first").map_or(&all[0], |s| s);
    let at = |n: usize| stores_first.steps.iter().position(|&s| s == n).unwrap();
    assert!(at(11) < at(13), "{:?}", stores_first.steps);
}

/// Four products of 64-row tiles, two per shared operand window (`W0`, `W1`), each product
/// with a fresh load of its other operand; the output is their stores side by side, slot
/// order interleaving the windows as the tiles of a row-major result do (`W0`'s, `W1`'s,
/// `W0`'s, `W1`'s).
fn products_sharing_windows(isa: &act_compiler::isa::Isa) -> PiiGraph {
    let mut nodes = vec![
        input(0),                           // 0 A
        input(1),                           // 1 B
        instr(isa, "load_rm", &[64], &[1]), // 2 W0
        instr(isa, "load_rm", &[64], &[1]), // 3 W1
    ];
    for (a, window) in [(0, 2), (0, 3), (1, 2), (1, 3)] {
        let at = nodes.len();
        nodes.extend([
            instr(isa, "load_rm", &[64], &[a]),      // a tile of A
            instr(isa, "gemm", &[], &[at, window]),  // its product with the window, in d2
            instr(isa, "mov", &[64], &[at + 1]),     // moved to d1
            instr(isa, "store_rm", &[64], &[at + 2]), // stored
        ]);
    }
    nodes.push(act_compiler::pii::PiiNode::Concat { parts: vec![7, 11, 15, 19], dim: 0 });
    PiiGraph { nodes, root: 20 }
}

#[test]
fn the_output_part_closest_to_done_goes_first_so_a_shared_window_dies_before_the_next_is_loaded() {
    let isa = qkv();
    let graph = products_sharing_windows(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    let order = |name: &str| all.iter().find(|s| s.heuristic == name).unwrap_or_else(|| panic!("no {name} order"));
    // In slot order, `W1` comes in while `W0` waits for its second product: three tiles.
    assert_eq!(all[0].heuristic, "sethi-ullman");
    assert_eq!(peak_per_buffer(&all[0], &values, isa.buffers.len())[1], 192);
    // Closest first: after the first part, the part that needs one load (`W0`'s second
    // product) goes before the one that needs two, so d1 never holds more than two tiles.
    let closest = order("closest-first");
    assert_eq!(peak_per_buffer(closest, &values, isa.buffers.len())[1..], [128, 64]);
    let at = |n: usize| closest.steps.iter().position(|&s| s == n).unwrap();
    assert!(at(15) < at(3), "{:?}", closest.steps);
    assert_eq!(closest.steps.len(), 18);
}

#[test]
fn every_order_is_distinct_and_valid() {
    let isa = qkv();
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    for (i, a) in all.iter().enumerate() {
        assert!(from_order(&graph, &values, a.heuristic, a.steps.clone()).is_ok());
        for b in &all[i + 1..] {
            assert_ne!(a.steps, b.steps, "{} and {} repeat an order", a.heuristic, b.heuristic);
        }
    }
}

#[test]
fn live_ranges_follow_read_before_write_time() {
    let isa = qkv();
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let s = from_order(&graph, &values, "test", vec![3, 4, 5, 6, 7, 8, 9, 10, 11]).unwrap();
    assert_eq!(s.end, 19);
    // Kernel inputs: the whole program.
    assert_eq!(s.live[0], Some((0, 19)));
    // Q tile: written by step 0 (time 1), last read by step 2 (time 5).
    assert_eq!(s.live[3], Some((1, 5)));
    // S: written by step 2, overwritten by softmax at step 3, whose result starts at 7.
    assert_eq!(s.live[5], Some((5, 7)));
    assert_eq!(s.live[6], Some((7, 9)));
    // The output: from its producer to the end.
    assert_eq!(s.live[11], Some((17, 19)));
}

#[test]
fn instructions_the_output_does_not_need_are_left_out() {
    let isa = qkv();
    let mut graph = attention(&isa);
    graph.nodes.push(instr(&isa, "load_rm", &[64], &[2]));
    let values = analyse(&graph, &isa).unwrap();
    for s in orders(&graph, &isa, &values).unwrap() {
        assert!(!s.steps.contains(&12), "{} kept a dead load", s.heuristic);
        assert_eq!(s.live[12], None);
    }
}

/// Attention where S is also copied out before softmax overwrites it, and the root adds the
/// copy: mov(S) must run before softmax(S).
fn s_read_twice(isa: &act_compiler::isa::Isa) -> PiiGraph {
    let mut graph = attention(isa);
    graph.nodes.truncate(8); // up to mov(P)
    graph.nodes.extend([
        instr(isa, "mov", &[64], &[5]),       // 8 S in d1, read after softmax
        instr(isa, "gemm", &[], &[7, 8]),     // 9
        instr(isa, "mov", &[64], &[9]),       // 10
        instr(isa, "store_rm", &[64], &[10]), // 11
    ]);
    graph.root = 11;
    graph
}

#[test]
fn in_place_writer_runs_after_every_other_reader() {
    let isa = qkv();
    let graph = s_read_twice(&isa);
    let values = analyse(&graph, &isa).unwrap();
    assert_eq!(values[5].overwritten_by, Some(6));
    let all = orders(&graph, &isa, &values).unwrap();
    assert!(!all.is_empty());
    for s in &all {
        let at = |n| s.steps.iter().position(|&x| x == n).unwrap();
        assert!(at(8) < at(6), "{}: softmax ran before mov read S", s.heuristic);
    }
}

#[test]
fn an_order_reading_an_overwritten_value_is_rejected() {
    let isa = qkv();
    let graph = s_read_twice(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let err = from_order(&graph, &values, "test", vec![3, 4, 5, 6, 7, 8, 9, 10, 11]).unwrap_err();
    assert!(err.contains("node 8 reads node 5 after node 6 overwrote it"), "{err}");
}

#[test]
fn a_value_overwritten_in_place_twice_is_a_malformed_candidate() {
    let isa = qkv();
    let mut graph = attention(&isa);
    graph.nodes.truncate(8);
    graph.nodes.extend([
        instr(&isa, "softmax", &[64], &[5]), // 8 overwrites S as node 6 does
        instr(&isa, "mov", &[64], &[8]),     // 9
        instr(&isa, "gemm", &[], &[7, 9]),   // 10
        instr(&isa, "mov", &[64], &[10]),    // 11
        instr(&isa, "store_rm", &[64], &[11]), // 12
    ]);
    graph.root = 12;
    let err = analyse(&graph, &isa).unwrap_err();
    assert!(err.0.contains("overwritten in place by both node 6 and node 8"), "{err}");
}

#[test]
fn a_reader_that_depends_on_the_in_place_result_makes_every_order_invalid() {
    // QKV plus `acc`: d2 tile + d1 tile -> new d2 tile, so one instruction can read S and P.
    let mut isa = qkv();
    let extra = table(
        "X",
        vec![rows_buffer("d1", 128), rows_buffer("d2", 64)],
        vec![instruction(
            "acc",
            &[],
            &["addr_a", "addr_b", "addr_out"],
            vec![
                slice("d2", vec![attr("a.addr_a")], vec![int(64)]),
                slice("d1", vec![attr("a.addr_b")], vec![int(64)]),
            ],
            slice("d2", vec![attr("a.addr_out")], vec![int(64)]),
        )],
    );
    isa.instructions.extend(extra.instructions);
    let mut graph = attention(&isa);
    graph.nodes.truncate(8);
    graph.nodes.extend([
        instr(&isa, "acc", &[], &[5, 7]),     // 8 reads S and P = softmax(S)
        instr(&isa, "mov", &[64], &[8]),      // 9
        instr(&isa, "store_rm", &[64], &[9]), // 10
    ]);
    graph.root = 10;
    let values = analyse(&graph, &isa).unwrap();
    let err = orders(&graph, &isa, &values).unwrap_err();
    assert!(
        err.0.contains("node 8 reads node 5 but depends on node 6, which overwrites node 5"),
        "{err}"
    );
}

#[test]
fn overwriting_a_kernel_input_in_place_is_refused() {
    // An in-place HBM instruction over a kernel parameter.
    let inc = instruction(
        "scale",
        &["n"],
        &["addr"],
        vec![slice("d0", vec![attr("a.addr")], vec![attr("c.n")])],
        slice("d0", vec![attr("a.addr")], vec![attr("c.n")]),
    );
    let isa = table("T", vec![], vec![inc]);
    let graph = PiiGraph { nodes: vec![input(0), instr(&isa, "scale", &[8192], &[0])], root: 1 };
    let values = analyse(&graph, &isa).unwrap();
    let err = orders(&graph, &isa, &values).unwrap_err();
    assert!(err.0.contains("overwrites kernel parameter 0 in place"), "{err}");
}

#[test]
fn a_root_that_is_a_kernel_input_is_refused() {
    let isa = qkv();
    let graph = PiiGraph { nodes: vec![input(0)], root: 0 };
    let values = analyse(&graph, &isa).unwrap();
    let err = orders(&graph, &isa, &values).unwrap_err();
    assert!(err.0.contains("the output is kernel parameter 0 itself"), "{err}");
}

#[test]
fn interference_lists_same_buffer_values_live_together() {
    let isa = qkv();
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let s = from_order(&graph, &values, "test", vec![3, 4, 5, 6, 7, 8, 9, 10, 11]).unwrap();
    let pairs = s.interference(&values);
    assert!(pairs.contains(&(3, 4)), "Q and K^T are read together");
    assert!(pairs.contains(&(7, 8)), "P and V are read together");
    assert!(!pairs.contains(&(3, 7)), "Q is dead before P is made");
    assert!(!pairs.contains(&(5, 6)), "softmax writes where S was");
    // Loading V first keeps it live across the first product.
    let early = from_order(&graph, &values, "test", vec![8, 3, 4, 5, 6, 7, 9, 10, 11]).unwrap();
    let early = early.interference(&values);
    assert!(early.is_superset(&pairs), "V loaded first adds interference, removes none");
    assert!(early.contains(&(3, 8)) && early.contains(&(4, 8)));
}

/// softmax_input_reused.hlo as selection's 14-instruction spilling candidate: S is copied to
/// d1 before softmax overwrites it, P is stored to HBM and loaded back for the last product.
fn softmax_input_reused_with_spill(isa: &act_compiler::isa::Isa) -> PiiGraph {
    let nodes = vec![
        input(0),                             // 0 Q
        instr(isa, "load_rm", &[64], &[0]),   // 1 Q in d1
        input(1),                             // 2 K
        instr(isa, "load_cm", &[64], &[2]),   // 3 K^T in d1
        instr(isa, "gemm", &[], &[1, 3]),     // 4 S in d2
        instr(isa, "softmax", &[64], &[4]),   // 5 P in d2, over S
        instr(isa, "mov", &[64], &[5]),       // 6 P in d1
        instr(isa, "store_rm", &[64], &[6]),  // 7 P in HBM
        instr(isa, "load_rm", &[64], &[7]),   // 8 P in d1 again
        instr(isa, "mov", &[64], &[4]),       // 9 S in d1
        input(2),                             // 10 V
        instr(isa, "load_rm", &[64], &[10]),  // 11 V in d1
        instr(isa, "gemm", &[], &[9, 11]),    // 12 S.V in d2
        instr(isa, "mov", &[64], &[12]),      // 13 S.V in d1
        instr(isa, "gemm", &[], &[8, 13]),    // 14 O in d2
        instr(isa, "mov", &[64], &[14]),      // 15 O in d1
        instr(isa, "store_rm", &[64], &[15]), // 16 O in HBM
    ];
    PiiGraph { nodes, root: 16 }
}

/// The most positions live at once in any on-chip buffer, per buffer index.
fn peak_per_buffer(
    s: &act_compiler::schedule::Schedule,
    values: &[act_compiler::value::Value],
    buffers: usize,
) -> Vec<i64> {
    let mut peak = vec![0; buffers];
    for t in 0..s.end {
        let mut used = vec![0; buffers];
        for (n, r) in s.live.iter().enumerate() {
            if matches!(r, Some((a, b)) if *a <= t && t < *b) {
                used[values[n].buffer] += values[n].size.iter().product::<i64>();
            }
        }
        for b in 0..buffers {
            peak[b] = peak[b].max(used[b]);
        }
    }
    peak
}

#[test]
fn when_every_heuristic_overfills_a_buffer_the_search_finds_an_order_that_fits() {
    let isa = qkv();
    let graph = softmax_input_reused_with_spill(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    let (heuristics, searched): (Vec<_>, Vec<_>) =
        all.iter().partition(|s| s.heuristic != "search");
    for s in &heuristics {
        let peak = peak_per_buffer(s, &values, isa.buffers.len());
        assert!(peak[1] > 128 || peak[2] > 64, "{} fits: {peak:?}", s.heuristic);
    }
    assert_eq!(searched.len(), 1, "the search adds one order");
    let found = searched[0];
    assert!(from_order(&graph, &values, "check", found.steps.clone()).is_ok());
    assert_eq!(peak_per_buffer(found, &values, isa.buffers.len())[1..], [128, 64]);
    // The order the search finds keeps d1 at two tiles: S is copied out before softmax, P
    // goes out to HBM before V comes in, and comes back only once S and V are consumed.
    assert_eq!(found.steps, [1, 3, 4, 9, 5, 6, 7, 11, 12, 13, 8, 14, 15, 16]);
    // And the allocator places it.
    let layout = attention_layout();
    let prepared = act_compiler::alloc::prepare(
        &graph,
        &isa,
        &values,
        found,
        &layout,
        act_compiler::alloc::Limits::default(),
    )
    .unwrap();
    let act_compiler::alloc::Prepared::Plan(plan) = prepared else { panic!("{prepared:?}") };
    let act_compiler::alloc::Outcome::Solved(placement) = plan.solve().unwrap() else {
        panic!("the searched order is not placed")
    };
    check_placement(&graph, &isa, found, &layout, &placement);
}

#[test]
fn the_search_is_not_run_when_a_heuristic_order_fits() {
    let isa = qkv();
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    assert!(orders(&graph, &isa, &values).unwrap().iter().all(|s| s.heuristic != "search"));
}

#[test]
fn the_search_gives_up_when_no_order_fits() {
    // With d1 one tile tall, the product's two operands can never be live together.
    let isa = qkv_with(64);
    let graph = attention(&isa);
    let values = analyse(&graph, &isa).unwrap();
    let all = orders(&graph, &isa, &values).unwrap();
    assert!(!all.is_empty());
    assert!(all.iter().all(|s| s.heuristic != "search"));
}

#[test]
fn softmax_input_reused_compiles_through_an_order_only_the_search_finds() {
    // Selection's twelve-instruction candidates keep S, P and V in d1 at once, which never
    // fits; a fourteen-instruction candidate that spills P fits only in the searched order.
    let text = std::fs::read_to_string(format!(
        "{}/tests/data/softmax_input_reused.hlo",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let kernel = act_compiler::kernel::parse_kernel(&text, "softmax_input_reused.hlo").unwrap();
    let table = std::fs::read_to_string(format!(
        "{}/tests/data/qkv_isa.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let isa = act_compiler::isa::Isa::from_json(&table).unwrap();
    let sel = act_compiler::select::select(&kernel, &isa, &Default::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("act-search-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let config = act_compiler::driver::Config::default();
    let run = act_compiler::driver::run(
        &isa,
        &attention_signature(),
        &sel.candidates,
        &dir,
        &config,
        &cancel,
        &mut |_, _| {},
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let best = run.best.expect("some candidate compiles");
    let record = &run.records[best.index];
    assert_eq!((record.instructions, record.order), (14, Some("search")));
}

#[test]
fn interference_is_every_pair_of_same_buffer_values_whose_ranges_overlap() {
    use act_compiler::schedule::Schedule;
    use act_compiler::value::Value;
    // A small deterministic generator: ranges of all lengths, empty ones and shared starts.
    let mut state = 7u64;
    let mut next = |bound: i64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 33) % bound as u64) as i64
    };
    for _ in 0..50 {
        let n = 1 + next(30) as usize;
        let live: Vec<Option<(i64, i64)>> = (0..n)
            .map(|_| (next(5) > 0).then(|| {
                let s = next(20);
                (s, s + next(6))
            }))
            .collect();
        let values: Vec<Value> = (0..n)
            .map(|_| Value {
                buffer: next(2) as usize,
                size: vec![1],
                users: Vec::new(),
                overwritten_by: None,
                within: None,
                identity: false,
            })
            .collect();
        let schedule = Schedule { heuristic: "test", steps: Vec::new(), live: live.clone(), end: 40 };
        let mut pairs = std::collections::BTreeSet::new();
        for a in 0..n {
            for b in a + 1..n {
                if let (Some((sa, ea)), Some((sb, eb))) = (live[a], live[b]) {
                    if values[a].buffer == values[b].buffer && sa < eb && sb < ea {
                        pairs.insert((a, b));
                    }
                }
            }
        }
        assert_eq!(schedule.interference(&values), pairs, "{live:?}");
    }
}
