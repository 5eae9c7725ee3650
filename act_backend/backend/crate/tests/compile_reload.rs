//! Loads run again where an order keeps more on chip than the buffers hold: a product whose
//! operand tiles outgrow a small scratchpad still compiles, each tile loaded again when it is
//! needed again, and the program with its repeated loads computes the kernel bit for bit
//! (reference interpreter).

mod select_support;

use act_compiler::compile::{compile, CompileOptions, Target};
use act_compiler::isa::Isa;
use act_compiler::{reload, schedule, value};
use select_support::{data, eval_candidate, eval_kernel, kernel_text, random_input, run};
use std::sync::Arc;

/// Gemmini's table with a scratchpad of `rows` rows of 16 (the real one has 16,384).
fn gemmini_with_scratchpad(rows: i64) -> String {
    let mut table: serde_json::Value = serde_json::from_str(&data("gemmini_isa.json")).unwrap();
    let spad = table["buffers"].as_array_mut().unwrap().iter_mut().find(|b| b["name"] == "spad").unwrap();
    spad["access_dims"] = serde_json::json!([rows, 16]);
    table.to_string()
}

const KERNEL: &str = "tiling/gemmini_matmul_64x64x64.hlo";

#[test]
fn tiles_outgrowing_the_scratchpad_are_loaded_again_and_compute_the_kernel() {
    // Eight 16x16 tiles fit; the product reads 32 (16 of each operand), each four times.
    let table = gemmini_with_scratchpad(128);
    let isa = Isa::from_json(&table).unwrap();
    let kernel = kernel_text(&data(KERNEL));
    let selection = run(&kernel, &isa).unwrap();
    // The first candidate whose loads can be repeated (the cheapest keeps 64-row column
    // windows of the operands, which four at a time fill the scratchpad whatever the order).
    let reloaded = selection
        .candidates
        .iter()
        .find_map(|graph| {
            let values = value::analyse(graph, &isa).unwrap();
            let order = &schedule::orders(graph, &isa, &values).unwrap()[0];
            reload::reload(graph, &isa, &values, order)
        })
        .expect("loads to repeat");
    assert!(reloaded.added > 0);
    assert_eq!(reloaded.original.len(), reloaded.graph.nodes.len());
    // The order runs every needed instruction once, operands first.
    let values = value::analyse(&reloaded.graph, &isa).unwrap();
    schedule::from_order(&reloaded.graph, &values, "reloading", reloaded.order.clone()).unwrap();
    let inputs: Vec<Vec<u8>> =
        kernel.param_nodes.iter().enumerate().map(|(i, &n)| random_input(&kernel.nodes[n].ty, 11 + i as u64)).collect();
    assert_eq!(eval_candidate(&isa, &reloaded.graph, &inputs), eval_kernel(&kernel, &inputs));
}

#[test]
fn a_product_larger_than_the_scratchpad_compiles_with_repeated_loads() {
    let table = gemmini_with_scratchpad(128);
    let opts = CompileOptions::new(Arc::new(Target::from_json(&table).unwrap()), "matmul.hlo");
    let asm = compile(&data(KERNEL), &opts).unwrap_or_else(|e| panic!("{e}"));
    let loads = asm.text.lines().filter(|l| l.trim_start().starts_with("api.mvin")).count();
    let products = asm.text.lines().filter(|l| l.contains("api.matmul32") || l.contains("api.mac32")).count();
    // Every product once; more loads than the 32 distinct tiles, fewer than two per product.
    assert_eq!(products, 64);
    assert!(loads > 32 && loads <= 128, "{loads} loads");
}

#[test]
fn a_program_that_fits_is_left_as_it_is() {
    let isa = Isa::from_json(&data("gemmini_isa.json")).unwrap();
    let kernel = kernel_text(&data(KERNEL));
    let selection = run(&kernel, &isa).unwrap();
    let graph = &selection.candidates[0];
    let values = value::analyse(graph, &isa).unwrap();
    let order = &schedule::orders(graph, &isa, &values).unwrap()[0];
    let reloaded = reload::reload(graph, &isa, &values, order);
    assert!(reloaded.is_none_or(|r| r.added == 0));
}

#[test]
fn of_several_orders_the_one_that_repeats_the_fewest_loads_is_reloaded() {
    // The 40x40x40 product's shorter last tiles give its orders different reloads.
    let table = gemmini_with_scratchpad(128);
    let isa = Isa::from_json(&table).unwrap();
    let selection = run(&kernel_text(&data("tiling/gemmini_matmul_40x40x40.hlo")), &isa).unwrap();
    let mut first_was_not_best = 0;
    for graph in &selection.candidates {
        let values = value::analyse(graph, &isa).unwrap();
        let orders = schedule::orders(graph, &isa, &values).unwrap();
        let added: Vec<usize> = orders.iter().filter_map(|o| reload::reload(graph, &isa, &values, o)).map(|r| r.added).collect();
        let fewest = reload::fewest(graph, &isa, &values, &orders).map(|r| r.added);
        assert_eq!(fewest, added.iter().min().copied());
        first_was_not_best += usize::from(added.first() != added.iter().min());
    }
    // Some candidate's first order repeats more loads than another of its orders.
    assert!(first_was_not_best > 0);
}
