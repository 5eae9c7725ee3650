//! Tiling through the whole pipeline: kernels larger than one instruction along their rows,
//! columns, contraction, reduced dimension or batch compile into one instruction per tile,
//! every candidate computes the kernel bit for bit (reference interpreter), and a dimension no
//! instruction can take (or a float reduction too long to compute whole) is named in the
//! refusal.

mod select_support;

use act_compiler::compile::{compile, CompileError, CompileOptions, Target};
use act_compiler::isa::Isa;
use act_compiler::select::{refusal_without_search, select, SelectLimits, StopReason};
use select_support::{assert_candidates_compute_kernel, data, isa, kernel_text, multiset, run, without};
use std::sync::Arc;

fn target(table: &str) -> Arc<Target> {
    Arc::new(Target::from_json(&data(table)).unwrap_or_else(|e| panic!("{e}")))
}

/// Instruction names of an assembly, in program order.
fn calls(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("api."))
        .map(|l| l.split('(').next().unwrap_or_default().to_string())
        .collect()
}

/// `kernel` (under tests/data/tiling) compiles for `table`; the calls of its assembly.
fn compiled(table: &str, kernel: &str) -> Vec<String> {
    let text = data(&format!("tiling/{kernel}.hlo"));
    let isa = isa(table);
    let selection = run(&kernel_text(&text), &isa).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    assert_candidates_compute_kernel(&isa, &kernel_text(&text), &selection);
    let opts = CompileOptions::new(target(table), &format!("{kernel}.hlo"));
    let asm = compile(&text, &opts).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    calls(&asm.text)
}

/// `kernel` (under tests/data/tiling) selected for `isa`, every candidate checked against the
/// kernel: the best candidate's instructions (a multiset).
fn selected(isa: &Isa, kernel: &str) -> Vec<String> {
    let text = kernel_text(&data(&format!("tiling/{kernel}.hlo")));
    let selection = run(&text, isa).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    assert_candidates_compute_kernel(isa, &text, &selection);
    multiset(isa, &selection.candidates[0])
}

/// `kernel` (under tests/data/tiling) compiled for `table` through the whole pipeline.
fn assembly(table: &str, kernel: &str) -> act_compiler::compile::Assembly {
    let text = data(&format!("tiling/{kernel}.hlo"));
    compile(&text, &CompileOptions::new(target(table), &format!("{kernel}.hlo"))).unwrap_or_else(|e| panic!("{kernel}: {e}"))
}

/// The products of tiles among `calls`: those that start a sum (`matmul32`) and those that add
/// to one (`mac32`).
fn products(calls: &[String]) -> usize {
    count(calls, "matmul32") + count(calls, "mac32")
}

/// The refusal message of `kernel` (under tests/data/tiling) for `table`.
fn refusal(table: &str, kernel: &str) -> String {
    let text = data(&format!("tiling/{kernel}.hlo"));
    match compile(&text, &CompileOptions::new(target(table), &format!("{kernel}.hlo"))) {
        Err(CompileError::Inexpressible { message, .. }) => message,
        other => panic!("{kernel}: expected a refusal, got {other:?}"),
    }
}

fn count(calls: &[String], name: &str) -> usize {
    calls.iter().filter(|c| c.as_str() == name).count()
}

#[test]
fn attention_with_256_query_rows_runs_one_softmax_and_two_products_per_64_rows() {
    let calls = compiled("qkv_isa.json", "qkv_attention_256_rows");
    assert_eq!((count(&calls, "gemm"), count(&calls, "softmax")), (8, 4), "{calls:?}");
}

#[test]
fn attention_over_a_batch_of_four_heads_runs_each_head() {
    let calls = compiled("qkv_isa.json", "qkv_attention_4_heads");
    assert_eq!((count(&calls, "gemm"), count(&calls, "softmax")), (8, 4), "{calls:?}");
}

#[test]
fn a_product_twice_as_wide_as_the_buffers_hold_stores_one_half_before_computing_the_other() {
    // B's halves are read a row at a time (QKV loads whole 64-element rows); d1 holds A beside
    // one half of B or beside one half's result, so each half is stored before the next.
    let calls = compiled("qkv_isa.json", "qkv_matmul_64x64x128");
    assert_eq!((count(&calls, "gemm"), count(&calls, "load_rm"), count(&calls, "store_rm")), (2, 129, 128), "{calls:?}");
    let first_store = calls.iter().position(|c| c == "store_rm").unwrap();
    let second_gemm = calls.iter().rposition(|c| c == "gemm").unwrap();
    assert!(first_store < second_gemm, "{calls:?}");
}

#[test]
fn a_product_taller_and_wider_than_the_buffers_hold_loads_a_tile_of_a_for_each_product() {
    // Four result tiles; d1 holds one tile of A beside one half of B, or a half beside a
    // result. The best-counted programs load A whole (128 rows, all of d1) and cannot be
    // placed; the one that is loads each half of B once, row by row, and A's tile for each
    // product, finishing the products of one half (and their stores) before the other.
    let calls = compiled("qkv_isa.json", "qkv_matmul_128x64x128");
    let counts = ["gemm", "mov", "load_rm", "store_rm"].map(|name| count(&calls, name));
    assert_eq!(counts, [4, 4, 132, 256], "{calls:?}");
    assert_eq!(calls.len(), 396, "{calls:?}");
}

#[test]
fn a_large_search_stops_once_an_iteration_finds_nothing_cheaper_with_the_program_saturation_finds() {
    // relu(A.B) at 128x128 on the 16x16 array: 128 tiles, past 10,000 e-nodes by the time its
    // program is there; run to saturation, the search takes more iterations for nothing.
    // (It saturates under the default settling size, 20,000 e-nodes, since windows of windows
    // of an input are one window.)
    let isa = isa("gemmini_isa.json");
    let text = kernel_text(&data("tiling/gemmini_relu_matmul_128x128.hlo"));
    let settling = SelectLimits { settle_nodes: 10_000, ..SelectLimits::default() };
    let settled = select(&text, &isa, &settling).unwrap();
    let patient = SelectLimits { patience: usize::MAX, ..SelectLimits::default() };
    let saturated = select(&text, &isa, &patient).unwrap();
    assert_eq!(settled.stats.stop_reason, StopReason::Settled);
    assert_eq!(saturated.stats.stop_reason, StopReason::Saturated);
    assert!(settled.stats.iterations < saturated.stats.iterations);
    let best = |s: &act_compiler::select::Selection| multiset(&isa, &s.candidates[0]);
    assert_eq!(best(&settled), best(&saturated));
}

#[test]
fn a_softmax_of_512_rows_runs_eight_64_row_softmaxes() {
    let calls = compiled("qkv_isa.json", "qkv_softmax_512_rows");
    assert_eq!(count(&calls, "softmax"), 8, "{calls:?}");
}

#[test]
fn rows_no_fixed_size_unit_divides_end_in_a_tile_overlapping_the_one_before() {
    // QKV's gemm and softmax take exactly 64 rows: 96 rows are rows [0, 64) and the last 32
    // rows of [32, 96), read from where they lie on chip.
    let calls = compiled("qkv_isa.json", "qkv_matmul_96_rows");
    assert_eq!(count(&calls, "gemm"), 2, "{calls:?}");
    let calls = compiled("qkv_isa.json", "qkv_attention_160_rows");
    assert_eq!((count(&calls, "gemm"), count(&calls, "softmax")), (6, 3), "{calls:?}");
    // Gathering both tiles' results on chip for one store would not fit beside K and V:
    // the tiles are stored one by one.
    let calls = compiled("qkv_isa.json", "qkv_attention_96_rows");
    assert_eq!((count(&calls, "gemm"), count(&calls, "softmax")), (4, 2), "{calls:?}");
}

#[test]
fn fewer_rows_than_a_fixed_size_unit_takes_are_padded_with_zero_rows() {
    // 32 rows of A and 32 rows of zeros loaded side by side, one 64-row gemm, 32 rows kept.
    let calls = compiled("qkv_isa.json", "qkv_matmul_32_rows");
    assert_eq!((count(&calls, "gemm"), count(&calls, "store_rm")), (1, 1), "{calls:?}");
    let calls = compiled("qkv_isa.json", "qkv_attention_16_rows");
    assert_eq!((count(&calls, "gemm"), count(&calls, "softmax")), (2, 1), "{calls:?}");
}

#[test]
fn int8_products_taller_than_the_array_or_batched_run_one_product_per_tile() {
    let tall = compiled("gemmini_isa.json", "gemmini_matmul_64_rows");
    assert_eq!(count(&tall, "matmul32"), 4, "{tall:?}");
    let batch = compiled("gemmini_isa.json", "gemmini_matmul_batch_4");
    assert_eq!(count(&batch, "matmul32"), 4, "{batch:?}");
    let relu = compiled("gemmini_isa.json", "gemmini_relu_matmul_128_rows");
    assert_eq!(count(&relu, "matmul32"), 8, "{relu:?}");
}

#[test]
fn a_dimension_wider_than_every_instruction_is_named_in_the_refusal() {
    let message = refusal("qkv_isa.json", "qkv_softmax_128_columns");
    // The exponential splits into column tiles; its bf16 row sum does not.
    assert!(message.contains("computes `reduce` of bf16[64,128] over its dimension 1 (128)"), "{message}");
    assert!(message.contains("at most 64"), "{message}");
}

#[test]
fn a_float_contraction_longer_than_every_product_is_named_in_the_refusal() {
    // QKV's gemm contracts 64 elements; a bf16 contraction is never split across tiles.
    let message = refusal("qkv_isa.json", "qkv_matmul_contraction_128");
    assert!(message.contains("computes `dot` of type bf16[64,64]: its contraction (128)"), "{message}");
    assert!(message.contains("at most 64"), "{message}");
}

#[test]
fn a_refusal_that_is_a_proof_by_itself_needs_no_search() {
    let refused = |table: &str, name: &str| {
        let kernel = kernel_text(&data(&format!("tiling/{name}.hlo")));
        refusal_without_search(&kernel, &isa(table)).map(|e| e.to_string())
    };
    // Nothing shortens a bf16 contraction of two inputs, or a bf16 row sum of their product's
    // exponential (a search of the first grew to its node limit for 7 s, of a 256-row
    // attention over 128 keys for 13 s).
    let message = refused("qkv_isa.json", "qkv_matmul_contraction_128").expect("refused without a search");
    assert!(message.contains("computes `dot` of type bf16[64,64]: its contraction (128)"), "{message}");
    let message = refused("qkv_isa.json", "qkv_softmax_128_columns").expect("refused without a search");
    assert!(message.contains("computes `reduce` of bf16[64,128] over its dimension 1 (128)"), "{message}");
    // Kernels some program computes are searched: an int8 contraction splits across tiles, a
    // bf16 one of 64 fits the unit.
    assert_eq!(refused("gemmini_isa.json", "gemmini_matmul_16x64x16"), None);
    assert_eq!(refused("qkv_isa.json", "qkv_matmul_128x64x128"), None);
    // A contraction padded with zeros may lose its padding to a rule: it is searched.
    let padded = kernel_text(
        "HloModule k\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  b = bf16[64,64] parameter(1)\n  \
         z = bf16[] constant(0)\n  p = bf16[64,128] pad(a, z), padding=0_0x0_64\n  \
         q = bf16[128,64] pad(b, z), padding=0_64x0_0\n  \
         ROOT d = bf16[64,64] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
    );
    assert!(refusal_without_search(&padded, &isa("qkv_isa.json")).is_none());
}

#[test]
fn a_parameter_whose_rows_no_load_writes_names_the_dimension_that_does_not_divide() {
    // Every QKV load writes whole rows of 64 elements; `a`'s rows hold 32.
    let message = refusal("qkv_isa.json", "qkv_matmul_contraction_32");
    assert!(message.contains("loads parameter 0 (`a.1`, bf16[64,32])"), "{message}");
    assert!(
        message.contains("(`load_rm`, `load_cm`) writes rows of 64 elements into `d1`, and its dimension 1 (32) is no multiple"),
        "{message}"
    );
}

#[test]
fn a_result_whose_last_tile_overlaps_the_one_before_is_written_tile_by_tile_where_they_lie() {
    // FixedArray's only store writes whole accumulator rows of 16: a 16x24 product is two
    // column tiles, at columns 0 and 8, each stored whole a row at a time (refused before:
    // "its dimension 1 (24) is no multiple of that"); the 8 columns both hold are the same
    // values twice.
    let calls = compiled("fixedarray_isa.json", "fixedarray_matmul_16x16x24");
    assert_eq!((count(&calls, "matmul"), count(&calls, "store_acc")), (2, 32), "{calls:?}");
    // 17 floats on 16-lane registers: elements 0..16, then 1..17.
    let calls = compiled("registers_isa.json", "registers_scale_17");
    assert_eq!((count(&calls, "vmul"), count(&calls, "vstore")), (2, 2), "{calls:?}");
    // A 17x8 sum is 136 elements in a row: 8 registers and the last 16.
    let calls = compiled("registers_isa.json", "registers_add_17x8");
    assert_eq!(count(&calls, "vadd"), 9, "{calls:?}");
}

#[test]
fn fewer_elements_than_every_load_moves_are_named() {
    // Registers' vector loads move 16 floats; its tile loads, 256 int32 (not the type). Eight
    // floats are no window of anything a load reads.
    let message = refusal("registers_isa.json", "registers_scale_8");
    assert!(message.contains("loads parameter 0 (`x.1`, f32[8])"), "{message}");
    assert!(
        message.contains("(`vload`, `vbroadcast`) writes rows of 16 elements into `zmm`, and its dimension 0 (8)"),
        "{message}"
    );
    assert!(message.contains("all 8 of its elements are fewer than one such row"), "{message}");
}

#[test]
fn an_operation_no_instruction_computes_is_blamed_rather_than_the_input_it_alone_reads() {
    // The input's rows load as vector registers, but only `abs` reads it, and nothing splits
    // an operation no semantics computes into the tiles a load would read.
    let message = refusal("registers_isa.json", "registers_abs_64x32");
    assert!(message.contains("no instruction of Registers computes `abs`"), "{message}");
    // Rows of 3 no load takes, but elementwise work would read its 432 elements as 27
    // registers: `abs` is still what fails.
    let message = refusal("registers_isa.json", "registers_abs_48x3x3");
    assert!(message.contains("no instruction of Registers computes `abs`"), "{message}");
}

#[test]
fn a_float_reduction_on_an_isa_whose_semantics_never_reduce_is_refused_before_any_search() {
    // No rule computes a float sum by other operations: the refusal needs no search (one grew
    // the input's windows to its node limit for 15 s and refused without proof).
    let message = refusal("registers_isa.json", "registers_row_sums_17x32");
    assert!(message.contains("no instruction of Registers computes `reduce`"), "{message}");
    assert!(message.contains("no instruction's semantics reduces, and no rule computes a f32 reduction"), "{message}");
    assert!(!message.contains("node limit"), "{message}");
}

#[test]
fn a_division_on_an_isa_whose_semantics_never_divide_is_refused_before_any_search() {
    // Only a float division by a power of two has a rule (the multiplication by its
    // reciprocal): a mean over 9 positions, or a quotient of two inputs, has no program.
    let message = refusal("registers_isa.json", "registers_avg_pool_3x3_1x6x6x16");
    assert!(message.contains("no instruction of Registers computes `divide`"), "{message}");
    assert!(message.contains("no instruction's semantics divides, and its divisor, 9, is no power of two"), "{message}");
    let message = refusal("registers_isa.json", "registers_quotient_16x16");
    assert!(message.contains("its divisor is a value of the inputs, not a constant"), "{message}");
    assert!(!message.contains("node limit"), "{message}");
    // A mean over 4 positions is a product with 0.25: searched, and compiled.
    assert_eq!(count(&compiled("registers_isa.json", "registers_avg_pool_1x8x8x16"), "vmul"), 16);
}

#[test]
fn an_integer_contraction_longer_than_every_product_where_nothing_adds_is_named() {
    // WeightStationary's array contracts 64 and nothing adds int32 values: a contraction of
    // 128 splits into two products that nothing could sum.
    let message = refusal("weightstationary_isa.json", "weightstationary_relu_layer_32x128x64");
    assert!(message.contains("computes `dot` of type s32[32,64]: its contraction (128)"), "{message}");
    assert!(message.contains("at most 64), and no instruction adds s32 values"), "{message}");
}

#[test]
fn an_operation_on_a_batch_read_item_by_item_is_blamed_rather_than_the_batch() {
    // Each 64-row window of each item of the batch loads (a window of an item squeezed out
    // of the batch); what no instruction does is an exponential outside a softmax.
    let message = refusal("qkv_isa.json", "qkv_exponential_batch_2x128");
    assert!(message.contains("no instruction of QKV computes `exponential`"), "{message}");
    assert!(!message.contains("parameter"), "{message}");
}

#[test]
fn column_windows_without_strided_loads_are_read_row_by_row_so_the_refusal_blames_the_operation() {
    // QKV has no strided loads, but each row of a 64-column window is one contiguous run that
    // `load_rm` reads: what no instruction does is an exponential outside a softmax.
    let message = refusal("qkv_isa.json", "qkv_exponential_128_columns");
    assert!(message.contains("no instruction of QKV computes `exponential`"), "{message}");
    assert!(!message.contains("parameter"), "{message}");
}

#[test]
fn an_operation_no_instruction_computes_is_blamed_rather_than_the_windows_of_its_operands() {
    // Gemmini's strided loads read every 16-column window of the int32 inputs; what no
    // instruction does is add two int32 values that are not a product's.
    let message = refusal("gemmini_isa.json", "gemmini_int32_add_64x64");
    assert!(message.contains("no instruction of Gemmini computes `add`"), "{message}");
    assert!(!message.contains("parameter"), "{message}");
}

#[test]
fn a_reader_of_a_value_produced_in_tiles_is_blamed_rather_than_the_value() {
    // The product is computed in two 16-column tiles; no instruction multiplies two values.
    let message = refusal("gemmini_isa.json", "gemmini_squared_matmul_16x32x32");
    assert!(message.contains("no instruction of Gemmini computes `multiply`"), "{message}");
    assert!(!message.contains("`dot`"), "{message}");
}

#[test]
fn a_contraction_longer_than_the_array_accumulates_its_partial_products() {
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_16x64x16");
    assert_eq!(products(&calls), 4, "{calls:?}");
}

#[test]
fn columns_wider_than_the_array_are_stored_into_their_place_by_strided_stores() {
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_16x16x64");
    assert_eq!(count(&calls, "matmul32"), 4, "{calls:?}");
    assert_eq!(count(&calls, "mvout_acc_strided"), 4, "{calls:?}");
}

#[test]
fn a_product_larger_than_the_array_in_every_dimension_computes_each_tile_once() {
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_64x64x64");
    // (64/16)^3 products, no tile computed twice.
    assert_eq!(products(&calls), 64, "{calls:?}");
}

#[test]
fn sizes_that_are_no_multiple_of_the_array_end_in_shorter_tiles() {
    // Rows 16+16+8, columns 16+8, contraction 16+4: 3 x 2 tiles, each of two products.
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_40x20x24");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (6, 6), "{calls:?}");
}

#[test]
fn last_tiles_narrower_than_the_buffer_are_placed_where_their_starts_split_into_rows() {
    // 40 = 16 + 16 + 8 in every dimension: 8-column tiles lie side by side in the 16-column
    // buffers, where a row-major start must split into a row and a column start.
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_40x40x40");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (9, 18), "{calls:?}");
}

#[test]
fn an_integer_addend_joins_the_accumulation_of_a_split_contraction() {
    // c + (P1 + P0) is P1 + (P0 + c): two multiply-accumulates onto the loaded addend.
    let first = compiled("gemmini_isa.json", "gemmini_bias_plus_matmul_16x32x16");
    assert_eq!((count(&first, "matmul32"), count(&first, "mac32")), (0, 2), "{first:?}");
    // A row bias repeated down 40 rows: each of the 3 x 3 tiles accumulates its 3 products
    // onto its part of the repeated rows.
    let row = compiled("gemmini_isa.json", "gemmini_matmul_row_bias_40x40x40");
    assert_eq!((count(&row, "matmul32"), count(&row, "mac32")), (0, 27), "{row:?}");
}

#[test]
fn a_row_bias_is_repeated_down_hbm_once_and_read_a_tile_at_a_time() {
    // Each 16 x 16 bias tile could be 16 one-row loads (64 in all); the bias is loaded once,
    // stored 16 times down HBM, and its four tiles read from there. Only every tile at once
    // saves anything: the enumeration tries one alternative for every bias tile together.
    let layer = compiled("gemmini_isa.json", "gemmini_linear_layer_64x64x64");
    assert_eq!(count(&layer, "mac32"), 64, "{layer:?}");
    assert_eq!((count(&layer, "mvin_acc"), count(&layer, "mvout_acc"), count(&layer, "mvin_acc_strided")), (1, 16, 4), "{layer:?}");
}

#[test]
fn a_window_of_a_product_multiplies_only_the_operand_windows_it_needs() {
    // The first 20 of 32 columns: a 16-column tile and a 4-column one, each over a contraction
    // of two tiles; no product of the 12 columns dropped.
    let cols = compiled("gemmini_isa.json", "gemmini_matmul_first_20_columns");
    assert_eq!((count(&cols, "matmul32"), count(&cols, "mac32")), (2, 2), "{cols:?}");
    assert_eq!(count(&cols, "mvout_acc_strided"), 2, "{cols:?}");
    // Rows 3..13 and columns 5..29 of a 16 x 32 product: 10 rows in 16 + 8 columns, each
    // computed once and stored once, never through a whole product stored and read back.
    let window = compiled("gemmini_isa.json", "gemmini_matmul_window_10x24");
    assert_eq!((count(&window, "matmul32"), count(&window, "mac32")), (2, 2), "{window:?}");
    assert_eq!(count(&window, "mvout_acc_strided"), 2, "{window:?}");
    assert_eq!(count(&window, "mvin_acc_strided"), 0, "{window:?}");
}

#[test]
fn every_other_row_of_a_product_multiplies_every_other_row_of_its_lhs() {
    // (A.B)[::2] = A[::2].B: 8 rows over a 32-deep contraction, A's rows read with a doubled
    // row pitch.
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_even_rows_16x32x16");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (1, 1), "{calls:?}");
}

#[test]
fn columns_of_a_product_on_a_unit_that_stores_whole_rows_are_stored_transposed() {
    // QKV stores rows of 64: the product is computed transposed (B^T.A^T), its first 20 rows
    // moved out and stored by the transposing store.
    let calls = compiled("qkv_isa.json", "qkv_matmul_first_20_columns");
    assert_eq!((count(&calls, "gemm"), count(&calls, "store_cm")), (1, 1), "{calls:?}");
}

#[test]
fn a_sum_of_products_is_one_chain_of_accumulations() {
    // (P1 + P0) + (Q1 + Q0) is P1 + (P0 + (Q1 + Q0)): one product, then three accumulated.
    let calls = compiled("gemmini_isa.json", "gemmini_sum_of_products_16x32x16");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (1, 3), "{calls:?}");
}

#[test]
fn the_items_of_a_batch_gathered_from_tiles_are_written_tile_by_tile_into_the_output() {
    // Two items of 17 x 17 (16 + 1 rows and columns), each tile a multiply-accumulate onto
    // its part of the addend; the batch's output is one concatenation of all the tiles.
    let calls = compiled("gemmini_isa.json", "gemmini_batched_matmul_bias_2x17x17");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (0, 8), "{calls:?}");
}

#[test]
fn a_batch_of_one_row_products_keeps_each_row_a_matrix() {
    // Dropping every dimension of one would leave vectors, which the array does not take;
    // dropping the batch of one keeps a 1 x 3 by 3 x 16 product per item.
    let calls = compiled("gemmini_isa.json", "gemmini_batched_row_products_bias_2x1x3x16");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (0, 2), "{calls:?}");
}

#[test]
fn a_quantized_layer_accumulates_every_product_onto_its_bias() {
    // 128^3 with a row bias and a saturating store: first computed past the search's per-tile
    // target, every one of the 8^3 products a multiply-accumulate onto the bias's tile.
    let calls = compiled("gemmini_isa.json", "gemmini_quantized_layer_128");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (0, 512));
}

#[test]
fn elementwise_operations_wider_than_the_array_run_on_column_tiles() {
    // A ReLU is a store's: each 16-column tile loaded and stored into its place.
    let relu = compiled("gemmini_isa.json", "gemmini_relu_16x64");
    assert_eq!((count(&relu, "mvin_acc_strided"), count(&relu, "mvout_acc_relu_strided")), (4, 4), "{relu:?}");
    let relu = compiled("gemmini_isa.json", "gemmini_relu_64x64");
    assert_eq!((count(&relu, "mvin_strided"), count(&relu, "mvout_relu_strided")), (4, 4), "{relu:?}");
    // A scale is a load's; 40 columns are 16 + 16 + 8.
    let scale = compiled("gemmini_isa.json", "gemmini_scale_16x40");
    assert_eq!((count(&scale, "mvin_strided"), count(&scale, "mvout_strided")), (3, 3), "{scale:?}");
}

#[test]
fn column_tiles_of_elementwise_operations_need_no_matrix_unit() {
    // Without the array no identity product splits a value by columns: the column split does.
    let isa = without(&isa("gemmini_isa.json"), &["matmul8", "matmul32", "mac8", "mac32"]);
    let relu = selected(&isa, "gemmini_relu_16x64");
    assert_eq!((count(&relu, "mvin_acc_strided"), count(&relu, "mvout_acc_relu_strided")), (4, 4), "{relu:?}");
    let scale = selected(&isa, "gemmini_scale_16x40");
    assert_eq!((count(&scale, "mvin_strided"), count(&scale, "mvout_strided")), (3, 3), "{scale:?}");
}

#[test]
fn an_integer_row_sum_longer_than_the_array_accumulates_the_sums_of_its_tiles() {
    let calls = compiled("gemmini_isa.json", "gemmini_row_sums_16x64");
    assert_eq!(products(&calls), 4, "{calls:?}");
}

#[test]
fn an_integer_sum_of_rows_longer_than_the_unit_adds_the_sums_of_its_column_tiles() {
    // RowReduce sums rows of at most 16: four tiles, the later three added by the
    // accumulating sum (the tile's sum first, as its semantics write it).
    let calls = compiled("rowreduce_isa.json", "rowreduce_row_sums_16x64");
    assert_eq!((count(&calls, "row_sum"), count(&calls, "row_sum_acc")), (1, 3), "{calls:?}");
    assert_eq!(count(&calls, "load_strided"), 4, "{calls:?}");
}

#[test]
fn an_integer_maximum_of_rows_longer_than_the_unit_is_the_maximum_of_its_column_tiles() {
    // 40 columns: 16 + 16 + 8, the tiles' maxima combined by two elementwise maxima.
    let calls = compiled("rowreduce_isa.json", "rowreduce_row_max_16x40");
    assert_eq!((count(&calls, "row_max"), count(&calls, "vec_max")), (3, 2), "{calls:?}");
}

/// Gemmini without its strided transfers: its loads and stores move contiguous runs of HBM
/// only.
fn contiguous_gemmini() -> Isa {
    let mut isa = isa("gemmini_isa.json");
    isa.instructions.retain(|i| !i.name.ends_with("_strided"));
    isa
}

#[test]
fn without_strided_transfers_tiles_are_read_and_results_written_row_by_row() {
    let isa = contiguous_gemmini();
    // A's four 16-column windows, read a row at a time (64 loads); B, contiguous, in one load
    // whose 16-row blocks the products read where they lie.
    let deep = selected(&isa, "gemmini_matmul_16x64x16");
    assert_eq!(deep.iter().filter(|c| c.as_str() == "mvin").count(), 64 + 1, "{deep:?}");
    assert_eq!(deep.iter().filter(|c| c.starts_with("mac32") || c.starts_with("matmul32")).count(), 4, "{deep:?}");
    // The four 16-column results, written a row at a time into their place (64 stores).
    let wide = selected(&isa, "gemmini_matmul_16x16x64");
    assert_eq!(wide.iter().filter(|c| c.starts_with("mvout")).count(), 64, "{wide:?}");
}

/// [`contiguous_gemmini`] whose array takes any number of rows (`DIM_I` unbounded, as in the
/// public ACT Gemmini spec): only the buffers' 16 columns bound its columns and depth.
fn tall_array_gemmini() -> Isa {
    let mut isa = contiguous_gemmini();
    let bounds_rows = |c: &act_compiler::isa::Constraint| c.lhs.to_string() == "@c.DIM_I";
    for instr in &mut isa.instructions {
        instr.constraints.retain(|c| !bounds_rows(c));
    }
    isa
}

#[test]
fn an_array_of_any_height_multiplies_whole_column_windows_read_and_written_row_by_row() {
    // 96x32 by 32x32: one product per (column, depth) tile, 96 rows each. A's two 16-column
    // windows are read a row at a time (192 loads), and so are B's four 16x16 tiles (64); each
    // 96x16 result column is written a row at a time into its place (192 stores). Windows of
    // more than 64 rows were never read row by row: "no instruction computes `dot`".
    let calls = selected(&tall_array_gemmini(), "gemmini_matmul_96x32x32");
    let products = calls.iter().filter(|c| c.starts_with("mac32") || c.starts_with("matmul32")).count();
    let loads = calls.iter().filter(|c| c.starts_with("mvin")).count();
    let stores = calls.iter().filter(|c| c.starts_with("mvout")).count();
    assert_eq!((products, loads, stores), (4, 192 + 64, 192), "{calls:?}");
}

#[test]
fn a_one_row_result_wider_than_the_array_is_computed_as_rows_of_one_block() {
    // A vector times a 16 x 64 matrix plus a bias: four 1 x 16 multiply-accumulates. The
    // 64-element bias is one load of 4 rows of 16, each product accumulating onto its row,
    // and the four results, side by side down the accumulator, one store of 4 rows: the same
    // bytes as the one-row result. Before, each bias tile was loaded and each result tile
    // stored alone (4 and 4); before that, the rule that writes a result a row at a time took
    // row 0 of each one-row tile as a slice the e-graph never equated with the tile: "no
    // instruction computes `add`".
    let calls = selected(&tall_array_gemmini(), "gemmini_vector_matrix_bias_16x64");
    assert_eq!(count(&calls, "mac32"), 4, "{calls:?}");
    assert_eq!(calls.iter().filter(|c| c.starts_with("mvin_acc")).count(), 1, "{calls:?}");
    assert_eq!(calls.iter().filter(|c| c.starts_with("mvout")).count(), 1, "{calls:?}");
}

#[test]
fn without_strided_loads_elementwise_work_on_a_whole_matrix_reads_it_as_rows_of_the_unit() {
    // A 16x40 int8 scale is layout-free: 640 elements as 40 contiguous rows of 16.
    let scale = selected(&contiguous_gemmini(), "gemmini_scale_16x40");
    assert_eq!(scale, ["mvin", "mvout"], "{scale:?}");
    // A ReLU of 16x64 int32 values: 64 rows of 16, read by one load and written through the
    // ReLU by one store. Every operation of the class is viewed as rows: `max(x, 0)`, which
    // the store matches, not only the `x + 0` that its identities put first (which left each
    // row of each 16-column window to a load and a store of its own, 128 instructions).
    let relu = selected(&contiguous_gemmini(), "gemmini_relu_16x64");
    assert_eq!(relu, ["mvin_acc", "mvout_acc_relu"], "{relu:?}");
}

#[test]
fn a_softmax_of_512_rows_on_a_unit_that_takes_them_all_is_one_softmax() {
    // TallQKV's buffers hold 4,096 rows, and its softmax takes any number of them. Its loads
    // read whole rows of 64 bf16 (128 bytes): the rows of a window narrower than that are no
    // run any load reads, and are not added to the e-graph. They were: the one-column
    // windows of the rewrites became concatenations of 2-byte runs, and windows of those, of
    // up to 32,768 parts, in an e-graph of 69,000 e-nodes (more than 20 s on a spec of the
    // same unit with a transposing load as well).
    let text = kernel_text(&data("tiling/qkv_softmax_512_rows.hlo"));
    let isa = isa("tallqkv_isa.json");
    let selection = run(&text, &isa).unwrap();
    assert_candidates_compute_kernel(&isa, &text, &selection);
    assert_eq!(selection.stats.stop_reason, StopReason::Saturated);
    assert!(selection.stats.egraph_nodes < 10_000, "{} e-nodes", selection.stats.egraph_nodes);
    let best = multiset(&isa, &selection.candidates[0]);
    assert_eq!(count(&best, "softmax"), 1, "{best:?}");
}

#[test]
fn runs_of_hbm_are_whole_units_of_the_buffers_loads_and_stores_move() {
    let unit = |table: &str| {
        let rules = act_compiler::rewrites::RuleSet::default().with_tiles_of(&isa(table));
        (rules.hbm_read_unit, rules.hbm_write_unit)
    };
    // Rows of 64 bf16: runs of 64 elements of at least a byte each.
    assert_eq!(unit("tallqkv_isa.json"), (64, 64));
    assert_eq!(unit("qkv_isa.json"), (64, 64));
    // Blocks of any rows and columns of single elements: any run.
    assert_eq!(unit("gemmini_isa.json"), (1, 1));
}

#[test]
fn a_transpose_a_move_writes_into_rows_is_stored_as_the_rows_it_lies_in() {
    // `mov_t` writes the [64, 32] transpose row-major into 32 rows of 64; the store reads
    // those rows as they lie, a [32, 64] reshape of the same bytes.
    let calls = compiled("onchiptranspose_isa.json", "onchiptranspose_transpose_32x64");
    assert_eq!(calls, ["load", "mov_t", "mov", "store"]);
}

#[test]
fn a_transpose_of_more_rows_than_the_transposing_move_takes_is_split_into_its_column_tiles() {
    // d2 holds 64 rows: each 64-column tile of the [64, 128] result is `mov_t` of 64 rows.
    let calls = compiled("onchiptranspose_isa.json", "onchiptranspose_transpose_128x64");
    assert_eq!(count(&calls, "mov_t"), 2, "{calls:?}");
}

#[test]
fn a_scale_wider_than_the_unit_is_a_product_on_the_matrix_seen_as_rows_of_the_unit() {
    // QKV has no multiply: x * 2 is x.(2I), and the 64x128 matrix is 128 rows of 64, two
    // 64-row blocks read whole (not its column tiles a row at a time: 261 instructions).
    let calls = compiled("qkv_isa.json", "qkv_scale_64x128");
    assert_eq!((count(&calls, "gemm"), count(&calls, "load_rm"), count(&calls, "store_rm")), (2, 3, 2), "{calls:?}");
}

#[test]
fn the_order_and_names_of_the_instructions_do_not_decide_the_program() {
    // QKV's table with its instructions listed in reverse and renamed. A 96-row product is
    // one 64-row tile and one of the last 64 rows (32 of them kept); its first tile can be
    // computed as it is or transposed (loads and a store that transpose), at the same count.
    // Only the untransposed one shares the load of B with the last tile: with ties going to
    // the instruction listed first, the reversed table took 10 instructions for 9.
    let mut table: serde_json::Value = serde_json::from_str(&data("qkv_isa.json")).unwrap();
    let instructions = table["instructions"].as_array_mut().unwrap();
    instructions.reverse();
    for instruction in instructions.iter_mut() {
        let name = format!("renamed_{}", instruction["name"].as_str().unwrap());
        instruction["name"] = name.into();
    }
    let renamed = Arc::new(Target::from_json(&table.to_string()).unwrap());
    for kernel in ["qkv_matmul_96_rows", "qkv_attention_96_rows", "qkv_matmul_first_20_columns"] {
        let text = data(&format!("tiling/{kernel}.hlo"));
        let file = format!("{kernel}.hlo");
        let listed = compile(&text, &CompileOptions::new(target("qkv_isa.json"), &file)).unwrap();
        let reversed = compile(&text, &CompileOptions::new(renamed.clone(), &file)).unwrap();
        assert_eq!(reversed.text.replace("renamed_", ""), listed.text, "{kernel}");
    }
}

#[test]
fn an_addend_on_products_taller_and_wider_than_a_fixed_array_is_added_in_the_products_tiles() {
    // FixedArray's `add_rows` adds the most rows (up to 1,024), but only int8 rows read from
    // HBM; the addend goes onto each 16x16 product tile by the array's accumulating form, the
    // sum split into the rows the product is split into.
    let calls = compiled("fixedarray_isa.json", "fixedarray_matmul_plus_32x16x32");
    assert_eq!((count(&calls, "matmul_acc"), count(&calls, "matmul")), (4, 0), "{calls:?}");
    // A linear layer: both partial products of each tile accumulate onto the repeated bias.
    let calls = compiled("fixedarray_isa.json", "fixedarray_linear_layer_32x32x32");
    assert_eq!((count(&calls, "matmul_acc"), count(&calls, "matmul")), (8, 0), "{calls:?}");
}

#[test]
fn an_addend_on_a_product_of_fewer_rows_than_a_fixed_array_is_added_to_the_padded_product() {
    // FixedArray's `add_rows` takes 8 rows (and one) but not a product: the product is padded
    // to the array's 16 rows and the addend, padded too, accumulated onto it there.
    let calls = compiled("fixedarray_isa.json", "fixedarray_linear_layer_8x16x16");
    assert_eq!((count(&calls, "matmul_acc"), count(&calls, "matmul")), (1, 0), "{calls:?}");
    // A vector times a matrix four tiles wide, plus a bias: one padded product per tile.
    let calls = compiled("fixedarray_isa.json", "gemmini_vector_matrix_bias_16x64");
    assert_eq!((count(&calls, "matmul_acc"), count(&calls, "matmul")), (4, 0), "{calls:?}");
}

#[test]
fn a_contraction_no_multiple_of_a_fixed_array_ends_in_a_full_window_against_zero_rows() {
    // FixedArray contracts exactly 16 and loads whole rows of 16 bytes. 20 = 16 + 4: the last
    // 4 are A's last 16 columns (read a row at a time) against 12 zero rows followed by B's
    // last 4 rows, the zeros a constant in HBM. Refused before ("no instruction computes
    // `dot`").
    let calls = compiled("fixedarray_isa.json", "fixedarray_matmul_16x20x16");
    assert_eq!((count(&calls, "matmul"), count(&calls, "matmul_acc")), (1, 1), "{calls:?}");
    // Every dimension at once: rows 16 + 16 + 8 (the last tile overlapping the one before,
    // its rows stored a row at a time), columns 16 + 16, contraction 16 + 16 + 4 (B's last
    // rows read a row at a time after the zeros): each of the 3 x 2 x 3 products once.
    let calls = compiled("fixedarray_isa.json", "fixedarray_matmul_40x36x32");
    assert_eq!((count(&calls, "matmul"), count(&calls, "matmul_acc")), (6, 12), "{calls:?}");
    let calls = compiled("fixedarray_isa.json", "fixedarray_linear_layer_40x24x32");
    assert_eq!((count(&calls, "matmul"), count(&calls, "matmul_acc")), (0, 12), "{calls:?}");
}

#[test]
fn an_int8_product_on_a_unit_that_multiplies_in_int32_only_is_narrowed_by_its_activation() {
    // WeightStationary's array writes int32 products and its activation unit narrows them,
    // wrapping: `jnp.matmul` of int8 matrices (an int8 product, wrapping) is the int32 product
    // narrowed. Refused before: "no instruction computes `dot`".
    let calls = compiled("weightstationary_isa.json", "weightstationary_int8_matmul_32x64x64");
    assert_eq!((count(&calls, "matmul"), count(&calls, "activate")), (1, 1), "{calls:?}");
    let calls = compiled("weightstationary_isa.json", "weightstationary_two_layers_32x64");
    assert_eq!((count(&calls, "matmul"), count(&calls, "activate_relu")), (2, 2), "{calls:?}");
}

#[test]
fn transposes_where_nothing_transposes_are_products_that_contract_one_element() {
    // No Gemmini instruction transposes. A transposed input is computed a 16x16 tile at a
    // time, each tile 16 one-element products (a row of the input loaded as a column, times a
    // row of the identity) accumulated by the int8 array; the product then runs as the array
    // takes it, each tile once: (A.B)^T = B^T.A^T (through a ReLU, a window and a
    // concatenation too), A^T.B, A.B^T, batched. Before, all but A.B^T were refused, and
    // A.B^T of 64 rows ran 256 one-column products, one per row of A and tile of B.
    for (kernel, one_element, array) in [
        ("gemmini_transposed_matmul_16x32x32", 4 * 16 + 2 * 16, 2 * 2),
        ("gemmini_transposed_relu_matmul_16x32x32", 4 * 16 + 2 * 16, 2 * 2),
        ("gemmini_matmul_transposed_lhs_16x32x48", 2 * 16, 2 * 3),
        ("gemmini_matmul_transposed_rhs_64x32x24", 2 * 24, 4 * 2 * 2),
        ("gemmini_batched_matmul_transposed_rhs_2x32x16x48", 2 * 48, 2 * 2 * 3),
        // A window of a product transposed is the product of its operands' windows, transposed
        // as windows of the inputs; two products side by side, each one's transpose, stacked.
        ("gemmini_transposed_window_of_product_16x32x48", 4 * 16 + 2 * 16, 2 * 2),
        ("gemmini_transposed_products_side_by_side_16x32x16", 2 * 16 + 2 * 16 + 2 * 16, 2 * 2),
    ] {
        let calls = compiled("gemmini_isa.json", kernel);
        assert_eq!(count(&calls, "matmul8") + count(&calls, "mac8"), one_element, "{kernel}: {calls:?}");
        assert_eq!(products(&calls), array, "{kernel}: {calls:?}");
    }
}

#[test]
fn a_transpose_written_out_is_each_column_of_its_operand_loaded_and_stored_as_a_row() {
    // [32, 48] to [48, 32]: each of the 48 rows of the result is a column of the input, loaded
    // by a strided load of one column and stored as it lies (six 16x16 tiles of one-element
    // products before, 199 instructions).
    let calls = compiled("gemmini_isa.json", "gemmini_transpose_32x48");
    assert_eq!((count(&calls, "mvin_strided"), count(&calls, "mvout"), calls.len()), (48, 48, 96), "{calls:?}");
}

#[test]
fn a_product_with_a_transposed_operand_no_taller_than_the_array_runs_a_row_at_a_time() {
    // Each row of A . B^T is B . a_i^T, row i of A loaded as a column, the one-column result
    // stored as the row it is. 16 rows, each a 24-row B in two tiles contracting 32 in two:
    // 64 products (transposing B would run 48 one-element products and 4 more).
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_transposed_rhs_16x32x24");
    assert_eq!(products(&calls), 64, "{calls:?}");
    assert_eq!(count(&calls, "matmul8") + count(&calls, "mac8"), 0, "{calls:?}");
    assert_eq!(count(&calls, "mvout_acc"), 16, "{calls:?}");
}

#[test]
fn reversed_columns_of_a_product_are_the_product_with_reversed_columns() {
    // (A.B)J = A.(BJ): B's columns reversed by the int8 array (products with the exchange
    // matrix, 2 x 2 tiles contracting 32 in two), then the product, 2 tiles contracting 32 in
    // two. Refused before: "no instruction computes `reverse`" (not on int32 values).
    let calls = compiled("gemmini_isa.json", "gemmini_reversed_matmul_16x32x32");
    assert_eq!(count(&calls, "matmul8") + count(&calls, "mac8"), 8, "{calls:?}");
    assert_eq!(products(&calls), 4, "{calls:?}");
}

#[test]
fn a_constant_added_to_a_product_with_a_split_contraction_is_accumulated_onto() {
    // Each of the four 16x16 tiles accumulates its two partial products onto one loaded tile
    // of 5s. Refused before: a constant addend never moved into the accumulation.
    let calls = compiled("gemmini_isa.json", "gemmini_matmul_plus_constant_32x32x32");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (0, 8), "{calls:?}");
    assert_eq!(count(&calls, "mvin_acc_strided"), 1, "{calls:?}");
}

#[test]
fn zero_padding_drops_out_of_a_contraction_and_a_pad_is_a_concatenation_with_zeros() {
    // pad(a, 8 zero columns) . w = a . w[:24]: 16 + 8 of the contraction, two products.
    let calls = compiled("gemmini_isa.json", "gemmini_padded_matmul_16x24x16");
    assert_eq!(products(&calls), 2, "{calls:?}");
    // A pad alone: the operand and a block of zeros, each loaded and stored into its columns.
    let calls = compiled("gemmini_isa.json", "gemmini_pad_16x8");
    assert_eq!(count(&calls, "mvout_strided"), 2, "{calls:?}");
}

#[test]
fn inputs_wider_than_the_array_side_by_side_move_a_window_at_a_time() {
    // Two 24-column inputs side by side: each as windows of 16 and 8 columns, loaded and
    // stored into their columns; a 24-column input padded with 8 zero columns likewise.
    // Refused before: "no instruction copies the result of `concatenate` to HBM", and so
    // were products side by side.
    let calls = compiled("gemmini_isa.json", "gemmini_concatenate_columns_16x24");
    assert_eq!((count(&calls, "mvin_strided"), count(&calls, "mvout_strided")), (4, 4), "{calls:?}");
    let calls = compiled("gemmini_isa.json", "gemmini_pad_16x24");
    assert_eq!(count(&calls, "mvout_strided"), 3, "{calls:?}");
    // Two products side by side, each computed in column tiles of 16 and 8: the four tiles'
    // columns stored into their place, each product's tile once.
    let calls = compiled("gemmini_isa.json", "gemmini_concatenated_products_32x16x48");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mvout_acc_strided")), (8, 4), "{calls:?}");
}

#[test]
fn a_sum_over_a_batch_of_products_accumulates_the_items_products() {
    // sum over 4 items of A_i . B_i: one product and three multiply-accumulates onto it
    // (refused before: "no instruction computes `dot`", the batch sum having none).
    let calls = compiled("gemmini_isa.json", "gemmini_batch_sum_of_products_4x16x16");
    assert_eq!((count(&calls, "matmul32"), count(&calls, "mac32")), (1, 3), "{calls:?}");
}

#[test]
fn an_int32_negation_larger_than_the_array_is_loaded_scaled_by_minus_one() {
    // Refused before: the negation's product with -I (which the int8 array cannot take from
    // an int32 matrix) chose the 16-row tiles, and no tile held the scaled load.
    let calls = compiled("gemmini_isa.json", "gemmini_negate_32x32");
    assert_eq!((count(&calls, "mvin_acc_strided"), count(&calls, "mvout_acc_strided")), (2, 2), "{calls:?}");
}

#[test]
fn a_relu_clipped_to_the_int8_range_is_saturated_by_the_int8_store() {
    // `min(relu(x), 127)` narrowed to int8: the ReLU is at least 0 > -128, so it is the
    // store's saturation `min(max(relu(x), -128), 127)` (refused before: "no instruction
    // computes `minimum`").
    let calls = compiled("gemmini_isa.json", "gemmini_relu_clipped_layer_32x32x32");
    assert_eq!(products(&calls), 8, "{calls:?}");
    assert_eq!(count(&calls, "mvout_acc_s8_strided"), 2, "{calls:?}");
}


#[test]
fn a_register_whose_semantics_add_dimensions_of_one_holds_the_kernels_value() {
    // Registers' tiles are `s32[1,16,16]` to their semantics and its vectors `f32[1,16]`: the
    // same bytes as the kernel's `s32[16,16]` and a row of its vectors. A reshape that only
    // adds or drops dimensions of one is the value itself (refused before: "no instruction
    // loads parameter 0").
    let calls = compiled("registers_isa.json", "registers_int32_linear_16x16x16");
    assert_eq!((count(&calls, "tload"), count(&calls, "tmac"), count(&calls, "tstore")), (3, 1, 1), "{calls:?}");
    // Each item of a batch of products, a tile of the kernel's product, is itself plus zero
    // where the unit only multiplies and accumulates (refused before).
    let calls = compiled("registers_isa.json", "registers_int32_batch_matmul_3x16x16x16");
    assert_eq!((count(&calls, "tzero"), count(&calls, "tmac")), (3, 3), "{calls:?}");
    // A scalar parameter is read into every lane once; a multiply and an add into a third
    // register are one fused instruction per row.
    let calls = compiled("registers_isa.json", "registers_axpy_128");
    assert_eq!((count(&calls, "vbroadcast"), count(&calls, "vfmadd")), (1, 8), "{calls:?}");
}

#[test]
fn an_operation_of_one_type_is_tiled_by_the_instructions_of_that_type() {
    // A float add of two rows of 16 is two vector adds: the int32 tile add takes 16 rows, but
    // no float instruction does (refused before, tiled by the tile's 16 rows).
    let calls = compiled("registers_isa.json", "registers_add_2x16");
    assert_eq!(count(&calls, "vadd"), 2, "{calls:?}");
    // A vector of 64 is four rows of one register each.
    let calls = compiled("registers_isa.json", "registers_add_64");
    assert_eq!(count(&calls, "vadd"), 4, "{calls:?}");
}

#[test]
fn a_tile_register_read_as_other_types_holds_each_value_as_its_bytes() {
    // ByteTiles' `tdpbusd` reads one int8 tile as uint8, one as int8 interleaved by fours and
    // one as int32: the kernel's uint8 matrix, its interleaved int8 matrix and the int32
    // accumulator each sit in a tile as their bytes (refused before: "no instruction computes
    // `convert`"). The accumulator starts as a cleared tile: zero bytes are zero in every type.
    let calls = compiled("bytetiles_isa.json", "bytetiles_product_16x64x16");
    assert_eq!(calls, ["tileloadd", "tileloadd", "tilezero", "tdpbusd", "tilestored"], "{calls:?}");
    // An int32 addend is loaded into the accumulator tile as its bytes.
    let calls = compiled("bytetiles_isa.json", "bytetiles_product_plus_16x64x16");
    assert_eq!((count(&calls, "tileloadd"), count(&calls, "tilezero"), count(&calls, "tdpbusd")), (3, 0, 1), "{calls:?}");
}

#[test]
fn tiles_moved_at_a_row_stride_are_whole_matrices_and_windows_of_wider_ones() {
    // StridedTiles moves a tile only at a stride, as AMX's `tileloadd` and `tilestored` do: a
    // whole matrix moves at its row length (refused before: "no instruction loads parameter
    // 0"), a stored one over HBM whose earlier contents do not matter.
    let calls = compiled("stridedtiles_isa.json", "stridedtiles_product_16x64x16");
    assert_eq!(calls, ["tileloadd", "tileloadd", "tilezero", "tdpbusd", "tilestored"], "{calls:?}");
    // Result columns 16..32 are those of the interleaved matrix's columns 64..128, a window
    // of it read at its row length; each result tile is written by a strided store.
    let calls = compiled("stridedtiles_isa.json", "stridedtiles_product_16x64x32");
    assert_eq!((count(&calls, "tdpbusd"), count(&calls, "tilestored")), (2, 2), "{calls:?}");
    // An int32 addend's tiles are windows of its bytes as rows of 128 bytes.
    let calls = compiled("stridedtiles_isa.json", "stridedtiles_product_plus_32x64x32");
    assert_eq!((count(&calls, "tdpbusd"), count(&calls, "tilezero"), count(&calls, "tilestored")), (4, 0, 4), "{calls:?}");
}

#[test]
fn a_kernel_of_more_tiles_than_one_search_holds_runs_one_block_of_rows_per_block() {
    // 32,768 products of 16x16 tiles: one block of 64 rows of the result is compiled, and its
    // program runs 8 times, at the rows of A and of the result each block computes.
    let asm = assembly("gemmini_isa.json", "gemmini_matmul_512x512x512");
    assert_eq!(asm.report.blocks, Some((8, vec![64, 512])));
    let calls = calls(&asm.text);
    assert_eq!(products(&calls), 32 * 32 * 32, "each product once");
    assert_eq!(asm.instructions, calls.len());
    // The blocks differ only in where they read and write: block 1 starts as block 0 did.
    let lines: Vec<&str> = asm.text.lines().filter(|l| l.trim_start().starts_with("api.")).collect();
    let block = lines.len() / 8;
    let names = |l: &str| l.split('(').next().unwrap_or_default().to_string();
    assert!(lines[..block].iter().zip(&lines[block..2 * block]).all(|(a, b)| names(a) == names(b)));
    assert_ne!(lines[..block], lines[block..2 * block]);
}

#[test]
fn a_batch_of_products_each_as_large_as_one_search_holds_runs_one_item_per_block() {
    // Each item's 4,096 tiles count (a batched product counted 4 before, one per item, and its
    // search stopped at its node limit without a program).
    let asm = assembly("gemmini_isa.json", "gemmini_batch_matmul_4x256x256x256");
    assert_eq!(asm.report.blocks, Some((4, vec![1, 256, 256])));
    let calls = calls(&asm.text);
    assert_eq!(products(&calls), 4 * 16 * 16 * 16, "each product once");
}

#[test]
fn an_item_of_a_batch_larger_than_one_search_holds_is_itself_run_in_blocks_of_its_rows() {
    // One 512^3 item is 32,768 tiles: each item runs as 8 blocks of 64 of its rows (the whole
    // batch ran out of time and memory in one search).
    let asm = assembly("gemmini_isa.json", "gemmini_batch_matmul_2x512x512x512");
    assert_eq!(asm.report.blocks, Some((16, vec![1, 64, 512])));
    let calls = calls(&asm.text);
    assert_eq!(products(&calls), 2 * 32 * 32 * 32, "each product once");
}

#[test]
fn rows_no_block_divides_run_in_blocks_the_last_of_which_computes_some_rows_again() {
    // 197 rows, a prime: 13 blocks of 16 rows, the last from row 181 (rows 181..192 computed
    // twice, the same values), not 197 blocks of one row (472,997 instructions in 48 s).
    let asm = assembly("gemmini_isa.json", "gemmini_matmul_197x768x768");
    assert_eq!(asm.report.blocks, Some((13, vec![16, 768])));
    let calls = calls(&asm.text);
    assert_eq!(products(&calls), 13 * 48 * 48);
}

#[test]
fn a_product_of_few_rows_runs_in_blocks_of_columns_written_in_place() {
    // 16 rows, one row of tiles, by 4,096 columns: 4 blocks of 16x1024, each product of
    // 16 rows once (blocks of one row would be 64, each product a row: 16 times as many).
    let asm = assembly("gemmini_isa.json", "gemmini_matmul_16x1024x4096");
    assert_eq!(asm.report.blocks, Some((4, vec![16, 1024])));
    let calls = calls(&asm.text);
    assert_eq!(products(&calls), 64 * 256);
    // The result's columns are written where they lie, by strided stores.
    assert_eq!(count(&calls, "mvout_acc_strided"), 256);
}

#[test]
fn each_item_of_a_batch_of_products_of_few_rows_runs_in_blocks_of_its_columns() {
    // An item's 16 rows are the rows its columns are written into.
    let asm = assembly("gemmini_isa.json", "gemmini_batch_matmul_2x16x1024x4096");
    assert_eq!(asm.report.blocks, Some((8, vec![1, 16, 1024])));
    let calls = calls(&asm.text);
    assert_eq!((products(&calls), count(&calls, "mvout_acc_strided")), (2 * 64 * 256, 2 * 256));
}

#[test]
fn a_vector_times_a_matrix_runs_in_blocks_of_the_matrix_columns() {
    let asm = assembly("gemmini_isa.json", "gemmini_matvec_1x4096x4096");
    assert_eq!(asm.report.blocks, Some((16, vec![1, 256])));
    assert_eq!(products(&calls(&asm.text)), 256 * 256);
}

#[test]
fn a_block_of_rows_of_a_transposed_operand_reads_columns_of_it() {
    // A^T.B: the result's rows are A's columns.
    let asm = assembly("gemmini_isa.json", "gemmini_transposed_lhs_matmul_512");
    assert_eq!(asm.report.blocks, Some((8, vec![64, 512])));
    assert_eq!(products(&calls(&asm.text)), 32 * 32 * 32);
}

#[test]
fn several_results_run_in_blocks_of_the_rows_of_each() {
    // The product saturated to int8 and the product itself: each block writes its rows of
    // both, where each result lies. 16 blocks of 32 rows: 11 of 48, the last from row 464,
    // would compute 16 rows again (more tiles in all).
    let asm = assembly("gemmini_isa.json", "gemmini_saturated_and_product_512");
    assert_eq!(asm.report.blocks, Some((16, vec![32, 512])));
}

#[test]
fn a_kernel_of_more_tiles_than_any_search_holds_that_does_not_split_is_refused_unsearched() {
    // Every block of the result's rows would compute the whole 1024^3 product D again; a
    // search of it grows for minutes and gigabytes to its node limit.
    let text = "HloModule k\nENTRY e {\n  a = s8[1024,1024] parameter(0)\n  x = s8[64,1024] parameter(1)\n  \
                d = s32[1024,1024] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
                y = s32[64,1024] convert(x)\n  \
                ROOT p = s32[64,1024] dot(y, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
    let message = match compile(text, &CompileOptions::new(target("gemmini_isa.json"), "k.hlo")) {
        Err(CompileError::Inexpressible { message, .. }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(message.contains("the kernel is not searched: it has"), "{message}");
    assert!(message.contains("no split into blocks computes it"), "{message}");
    // Where a proof that no program exists is at hand, it is what the refusal says.
    let text = "HloModule k\nENTRY e {\n  a = bf16[8192,128] parameter(0)\n  b = bf16[128,8192] parameter(1)\n  \
                d = bf16[8192,8192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
                ROOT t = bf16[8192,8192] transpose(d), dimensions={1,0}\n}\n";
    match compile(text, &CompileOptions::new(target("qkv_isa.json"), "k.hlo")) {
        Err(CompileError::Inexpressible { message, .. }) => assert!(message.contains("its contraction (128)"), "{message}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_elementwise_kernel_of_thousands_of_registers_is_compiled_a_block_at_a_time() {
    let asm = assembly("registers_isa.json", "registers_leaky_relu_32x64x64");
    assert_eq!(asm.report.blocks, Some((32, vec![1, 64, 64])));
    let calls = calls(&asm.text);
    assert_eq!((count(&calls, "vmax"), count(&calls, "vmul"), count(&calls, "vstore")), (8192, 8192, 8192));
}

#[test]
fn a_padded_convolution_runs_one_product_per_window_position_on_the_input() {
    // SAME 3x3 over 8x8 pixels of 16 features: each output row in three pieces (its first
    // pixel, the six inside, its last), which 2, 3 and 2 window columns fall on the input,
    // times the window rows on the input (2 for the first and last output rows, else 3).
    let calls = compiled("gemmini_isa.json", "gemmini_conv_same_3x3_1x8x8x16");
    assert_eq!(products(&calls), (2 + 3 + 2) * (2 + 3 * 6 + 2));
    // The input and the kernel are loaded once; every piece's rows are read where they lie.
    assert_eq!(count(&calls, "mvin") + count(&calls, "mvin_strided"), 2, "{calls:?}");
}

#[test]
fn a_strided_convolution_reads_every_other_pixel_by_strided_loads() {
    // 4x4 outputs of a 3x3 window at stride 2 over 9x9 pixels: 9 products per output row; the
    // last row's last output on its own (its pixels read two at a time would run past the
    // input's end), so 9 more.
    let calls = compiled("gemmini_isa.json", "gemmini_conv_stride_2_1x9x9x16");
    assert_eq!(products(&calls), 4 * 9 + 9);
    assert!(count(&calls, "mvin_strided") > 0, "{calls:?}");
}

#[test]
fn a_transposed_convolution_reads_only_the_input_pixels_of_each_outputs_residue() {
    // 4x4 pixels dilated by 2 (zeros between), a 3x3 window: 8x8 outputs. Per output row the
    // window rows on real pixels (1, 1, 2, 1, 2, 1, 2, 1: 11 in all), each times the window
    // columns on real pixels of its pieces: output 0 one, 1 one, 2 to 6 (outputs 2 and 4
    // two, 3 and 5 one, 6 two) five, 7 one.
    let calls = compiled("gemmini_isa.json", "gemmini_transposed_conv_1x4x4x16");
    assert_eq!(products(&calls), 11 * (1 + 1 + 5 + 1));
}

#[test]
fn grouped_and_one_dimensional_convolutions_compile() {
    // Two groups of 16 features, each its own product per window position and piece.
    let grouped = compiled("gemmini_isa.json", "gemmini_grouped_conv_1x6x6x32");
    assert_eq!(products(&grouped), 2 * (2 + 3 + 2) * (2 + 3 * 4 + 2));
    // A batch of two 10-sample signals, SAME over 3 taps: pieces of 1, 8 and 1 outputs.
    let signal = compiled("gemmini_isa.json", "gemmini_conv_1d_2x10x16");
    assert_eq!(products(&signal), 2 * (2 + 3 + 2));
}

#[test]
fn equal_parts_of_an_output_are_each_stored_by_a_chain_of_their_own() {
    // The first and last output rows lie in the padding: both are the ReLU of the bias, one
    // value, each of its two groups' columns stored by a strided store into HBM whose
    // contents do not matter. Each place gets its own chain of stores (one chain shared by
    // both places would be written over twice).
    let calls = compiled("gemmini_isa.json", "gemmini_grouped_relu_conv_padded_rows_1x2x3x2");
    // Two rows on the input, each two groups' products of its 2 window positions on it.
    assert_eq!(products(&calls), 2 * 2 * 2);
    // Four output rows of two groups.
    assert_eq!(count(&calls, "mvout_acc_relu_strided"), 4 * 2, "{calls:?}");
}

#[test]
fn a_depthwise_convolution_of_more_operations_than_a_search_compiles_in_bands_of_rows() {
    // One feature per group: a product of one column for each of the 16 features, window
    // position on the input and piece; more operations than one search is given, so bands
    // of one output row (the first and last padded, the four inside one kernel).
    let asm = assembly("gemmini_isa.json", "gemmini_depthwise_conv_1x6x6x16");
    assert_eq!(asm.report.blocks.as_ref().map(|(n, _)| *n), Some(6));
    // Window rows on the input (2 for the first and last output rows, 3 inside) times the
    // window columns on it of each row's pieces (its first pixel 2, the four inside 3, the
    // last 2) for each feature: each product once.
    let calls = calls(&asm.text);
    assert_eq!(products(&calls), (2 + 3 * 4 + 2) * (2 + 3 + 2) * 16);
}

#[test]
fn a_convolution_layer_larger_than_a_third_of_a_search_compiles_in_bands_of_rows() {
    // relu(conv + bias) saturated to int8, 16x16 pixels of 64 features: bands of 2 output
    // rows, the first and last padded, the six inside one kernel compiled once.
    let asm = assembly("gemmini_isa.json", "gemmini_conv_layer_1x16x16x64");
    assert_eq!(asm.report.blocks, Some((8, vec![1, 2, 16, 64])));
    // Per window row on the input of each output row (2 for the first and last, 3 for the 14
    // inside), 7 products (2, 3 and 2 window columns on the input for the pieces of its first
    // pixel, 14 inside and last), each of 4x4 tiles (64 features by 64); the bias is loaded
    // under each, so every tile product accumulates.
    let calls = calls(&asm.text);
    assert_eq!(products(&calls), (2 + 3 * 14 + 2) * (2 + 3 + 2) * 16);
    assert_eq!(count(&calls, "matmul32"), 0);
}
