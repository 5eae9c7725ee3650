//! Spilling, selection to placement: kernels whose values do not fit QKV's operand buffer (two
//! 64-row tiles) at once select candidates that store a value to HBM and load it back where
//! it is read again, and the candidate loop places one of them. Every candidate computes the
//! kernel (reference interpreter).

mod backend_support;
mod select_support;

use act_compiler::driver::Status;
use act_compiler::layout::Signature;
use backend_support::{bf16, drive};
use select_support::{assert_candidates_compute_kernel, isa, kernel_file, multiset, run};

/// `kernel file, inputs => instructions of the program chosen`.
const ROWS: &[(&str, usize, usize)] = &[
    // dot2 = p0.p0^T is read by dot3 = dot2.p0 and again, transposed, by dot5; dot5 is read
    // by dot7 and, transposed, by dot7 too. The cheapest program stores one value to HBM and
    // loads it back, and loads p0^T again where its order lets it go (25 instructions when
    // reloading followed the first order only).
    ("spill_across_products.hlo", 1, 18),
    // Both softmax inputs pass through the matrix unit with the identity, which stays
    // loaded for the second; the two results then meet in a product of each with the other
    // transposed.
    ("spill_softmax_of_inputs.hlo", 2, 28),
    // Reloading the readers of one value changes which instances the others share: spilling
    // everything takes rounds until no on-chip value is read where it was made.
    ("spill_reloads_move_readers.hlo", 3, 30),
];

#[test]
fn kernels_that_need_spilling_compile() {
    let isa = isa("qkv_isa.json");
    for &(file, inputs, instructions) in ROWS {
        let k = kernel_file(file);
        let sel = run(&k, &isa).unwrap();
        assert_candidates_compute_kernel(&isa, &k, &sel);
        // Without spilling nothing fits: the best candidate keeps three tiles in d1 at once.
        let best_alone = drive(&isa, &signature(&k.name, inputs), &sel.candidates[..1], file);
        assert_eq!(best_alone.records[0].status, Status::Infeasible, "{file}");
        let result = drive(&isa, &signature(&k.name, inputs), &sel.candidates, file);
        let best = result.best.clone().unwrap_or_else(|| panic!("{file}: {}", result.failure_summary()));
        let chosen = &sel.candidates[best.index];
        let stores = multiset(&isa, chosen).iter().filter(|n| n.starts_with("store")).count();
        assert!(stores > 1, "{file}: the chosen program spills: {:?}", multiset(&isa, chosen));
        assert_eq!(best.cost as usize, instructions, "{file}");
    }
}

fn signature(module: &str, inputs: usize) -> Signature {
    Signature { module: module.into(), inputs: vec![bf16(&[64, 64]); inputs], outputs: vec![bf16(&[64, 64])] }
}
