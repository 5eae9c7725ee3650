//! The report of a compiled kernel in the kernel's words: each step names the HLO instructions
//! it implements, each value its HLO name, buffer, positions, live interval and the step that
//! made it; the memory picture draws one rectangle per on-chip value, none overlapping another
//! in a buffer at one time. Checked on real compiles of both example ISAs, against the
//! instructions' own slices at every step.

mod select_support;

use act_compiler::compile::{compile, Assembly, CompileOptions, Target};
use act_compiler::isa::Isa;
use act_compiler::memory_map::{Made, MemoryMap};
use act_compiler::report_program::HloInstruction;
use select_support::data;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

fn target(table: &str) -> Arc<Target> {
    Arc::new(Target::from_json(&data(table)).unwrap_or_else(|e| panic!("{e}")))
}

fn compiled(table: &str, kernel: &str) -> (Arc<Target>, Assembly) {
    let target = target(table);
    let text = if kernel.ends_with(".hlo") { data(kernel) } else { kernel.to_string() };
    let asm = compile(&text, &CompileOptions::new(Arc::clone(&target), "kernel.hlo"))
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    (target, asm)
}

fn program(target: &Target, asm: &Assembly) -> Value {
    asm.report.to_json("kernel.hlo", &target.isa, "ok", None, Default::default())["program"].clone()
}

const GEMMINI_LAYER: &str = "HloModule layer
ENTRY e {
  a = s8[16,16] parameter(0)
  b = s8[16,16] parameter(1)
  c = s32[16,16] parameter(2)
  d = s32[16,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = s32[16,16] add(d, c)
  z = s32[] constant(0)
  zs = s32[16,16] broadcast(z), dimensions={}
  ROOT r = s32[16,16] maximum(s, zs)
}
";

/// Kernels whose programs move values between buffers, spill them to HBM, tile a product into
/// row tiles written in place, and use a two-dimensional scratchpad.
fn compiles() -> Vec<(&'static str, Arc<Target>, Assembly)> {
    let mut out = Vec::new();
    for kernel in [
        "attention.hlo",
        "matmul_128x64.hlo",
        "spill_across_products.hlo",
        "spill_softmax_of_inputs.hlo",
        "softmax_input_reused.hlo",
    ] {
        let (t, a) = compiled("qkv_isa.json", kernel);
        out.push((kernel, t, a));
    }
    let (t, a) = compiled("gemmini_isa.json", GEMMINI_LAYER);
    out.push(("gemmini layer", t, a));
    out
}

/// `(instruction, implements)` of every step.
fn steps(program: &Value) -> Vec<(String, Vec<String>)> {
    program["assembly"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let names =
                s["implements"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string());
            (s["instruction"].as_str().unwrap().to_string(), names.collect())
        })
        .collect()
}

/// `(label, buffer, made_by)` of every value an instruction made.
fn made_values(program: &Value) -> Vec<(String, String, u64)> {
    program["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["made"] == "step")
        .map(|v| {
            (
                v["label"].as_str().unwrap().into(),
                v["buffer"].as_str().unwrap().into(),
                v["made_by"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn owned(rows: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    rows.iter()
        .map(|(i, names)| (i.to_string(), names.iter().map(|n| n.to_string()).collect()))
        .collect()
}

#[test]
fn attention_names_each_step_by_the_hlo_it_implements() {
    let (target, asm) = compiled("qkv_isa.json", "attention.hlo");
    let program = program(&target, &asm);
    assert_eq!(
        steps(&program),
        owned(&[
            ("load_rm", &["Q"]),
            // A column-major load is the transpose.
            ("load_cm", &["Kt"]),
            ("gemm", &["S"]),
            // The exponential, the row sums and their broadcast are fused into the softmax.
            ("softmax", &["E", "rowsum", "denom", "P"]),
            ("mov", &["P"]),
            ("load_rm", &["V"]),
            ("gemm", &["O"]),
            ("mov", &["O"]),
            ("store_rm", &["O"]),
        ])
    );
    let made: Vec<(String, String, u64)> = made_values(&program);
    let expected = [
        ("Q", "d1", 0),
        ("Kt", "d1", 1),
        ("S", "d2", 2),
        ("P", "d2", 3),
        ("P", "d1", 4),
        ("V", "d1", 5),
        ("O", "d2", 6),
        ("O", "d1", 7),
        ("O", "d0", 8),
    ];
    assert_eq!(made, expected.map(|(l, b, s)| (l.to_string(), b.to_string(), s)));
    // S is made at step 2 and last read by the softmax at step 3.
    let s = program["values"].as_array().unwrap().iter().find(|v| v["label"] == "S").unwrap();
    assert_eq!(
        (s["live"].clone(), s["live_steps"].clone()),
        (serde_json::json!([5, 7]), serde_json::json!([2, 3]))
    );
    assert_eq!(
        (s["address"].clone(), s["size"].clone()),
        (serde_json::json!([0, 64]), serde_json::json!([64]))
    );
    // Each step's line is its call in the assembly.
    let lines: Vec<&str> = asm.text.lines().collect();
    for step in program["assembly"].as_array().unwrap() {
        let line = step["line"].as_u64().unwrap() as usize;
        assert_eq!(lines[line - 1].trim(), step["call"].as_str().unwrap());
    }
    // The kernel's instructions, with their lines, as `implements` names them.
    let hlo = asm.report.to_json("kernel.hlo", &target.isa, "ok", None, Default::default())["hlo"]
        .clone();
    let kt = hlo.as_array().unwrap().iter().find(|h| h["name"] == "Kt").unwrap();
    assert_eq!((kt["op"].as_str(), kt["line"].as_u64()), (Some("transpose"), Some(13)));
}

#[test]
fn row_tiles_are_parts_of_the_product_they_tile() {
    let (target, asm) = compiled("qkv_isa.json", "matmul_128x64.hlo");
    let program = program(&target, &asm);
    let tile: &[(&str, &[&str])] = &[
        ("gemm", &["dot_general.1"]),
        ("mov", &["dot_general.1"]),
        ("store_rm", &["dot_general.1"]),
    ];
    let mut expected = vec![("load_rm", &["a.1"][..]), ("load_rm", &["b.1"][..])];
    expected.extend_from_slice(tile);
    expected.push(("load_rm", &["a.1"]));
    expected.extend_from_slice(tile);
    assert_eq!(steps(&program), owned(&expected));
    let labels: Vec<String> = made_values(&program).into_iter().map(|(l, _, _)| l).collect();
    let mut want = vec!["part of a.1", "b.1"];
    want.extend(["part of dot_general.1"; 3]);
    want.push("part of a.1");
    want.extend(["part of dot_general.1"; 3]);
    assert_eq!(labels, want);
}

#[test]
fn every_computed_hlo_instruction_is_implemented_by_a_step() {
    for (what, target, asm) in compiles() {
        let json = asm.report.to_json("kernel.hlo", &target.isa, "ok", None, Default::default());
        let implemented: Vec<&str> = json["program"]["assembly"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["implements"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()))
            .collect();
        for h in json["hlo"].as_array().unwrap() {
            if h["op"] == "parameter" || h["op"] == "constant" {
                continue;
            }
            let name = h["name"].as_str().unwrap();
            assert!(
                implemented.contains(&name),
                "{what}: no step implements {name}: {implemented:?}"
            );
        }
    }
}

/// Every step's slices, evaluated at its attributes, are where the map says its operands and
/// its result are: the map reads the allocator's answer, not a second layout.
fn check_against_slices(isa: &Isa, memory: &MemoryMap, what: &str) {
    for (s, step) in memory.steps.iter().enumerate() {
        let def = &isa.instructions[step.instr];
        let mut env: BTreeMap<String, i64> = def.comp_env(&step.comp);
        env.extend(def.addr_attrs.iter().zip(&step.addr).map(|(a, v)| (format!("a.{a}"), *v)));
        // Operands as they are when the step reads them, the result as it writes it (a value
        // loaded again has a place per load).
        let t = 2 * s as i64;
        let slices = def
            .inputs
            .iter()
            .zip(step.reads.iter().map(|&r| (r, t)))
            .chain([(&def.outputs[0], (step.node, t + 1))]);
        for (slice, (node, at)) in slices {
            let value = memory
                .value_at(node, at)
                .unwrap_or_else(|| panic!("{what}: step {s} uses node {node}, which has no place then"));
            let start: Vec<i64> = slice.start.iter().map(|e| e.eval(&env).unwrap()).collect();
            let size: Vec<i64> = slice.size.iter().map(|e| e.eval(&env).unwrap()).collect();
            assert_eq!(
                isa.buffers[value.buffer].name, slice.buffer,
                "{what}: step {s} ({}), node {node}",
                def.name
            );
            assert_eq!(
                (&value.start, &value.size),
                (&start, &size),
                "{what}: step {s} ({}), node {node}",
                def.name
            );
        }
        assert_eq!(
            memory.value_at(step.node, 2 * s as i64 + 1).map(|v| v.made),
            Some(Made::Step(s)),
            "{what}: step {s}"
        );
    }
}

#[test]
fn the_memory_map_agrees_with_every_step_and_no_storage_overlaps_another() {
    for (what, target, asm) in compiles() {
        let memory = &asm.report.best.as_ref().unwrap().memory;
        check_against_slices(&target.isa, memory, what);
        let owners: Vec<_> = memory.values.iter().filter(|v| v.storage == v.node).collect();
        for (i, a) in owners.iter().enumerate() {
            for b in &owners[i + 1..] {
                let together = a.buffer == b.buffer && a.live.0 < b.live.1 && b.live.0 < a.live.1;
                let apart = a.flat.1 <= b.flat.0 || b.flat.1 <= a.flat.0;
                assert!(
                    !together || apart,
                    "{what}: nodes {} and {} overlap: {a:?} {b:?}",
                    a.node,
                    b.node
                );
            }
        }
    }
}

#[test]
fn the_picture_has_one_rectangle_per_on_chip_value_and_none_overlap() {
    for (what, target, asm) in compiles() {
        let isa = &target.isa;
        let memory = &asm.report.best.as_ref().unwrap().memory;
        let program = asm.report.program(isa).unwrap();
        let hlo = HloInstruction::list(
            &act_compiler::kernel::parse_kernel(
                &if what.ends_with(".hlo") { data(what) } else { GEMMINI_LAYER.to_string() },
                "kernel.hlo",
            )
            .unwrap(),
        );
        let drawing = program.drawing("k", &hlo);
        let on_chip: Vec<usize> = memory
            .values
            .iter()
            .filter(|v| matches!(v.made, Made::Step(_)) && !isa.buffers[v.buffer].is_hbm())
            .map(|v| v.node)
            .collect();
        let drawn: Vec<usize> = drawing.rects.iter().map(|r| r.value).collect();
        assert_eq!(drawn, on_chip, "{what}");
        assert!(!drawn.is_empty(), "{what}: nothing on chip");
        let on_chip_buffers = isa.buffers.iter().filter(|b| !b.is_hbm()).count();
        assert_eq!(drawing.lanes.len(), on_chip_buffers, "{what}");
        for (i, a) in drawing.rects.iter().enumerate() {
            for b in &drawing.rects[i + 1..] {
                let together = a.lane == b.lane && a.time.0 < b.time.1 && b.time.0 < a.time.1;
                let apart = a.positions.1 <= b.positions.0 || b.positions.1 <= a.positions.0;
                assert!(!together || apart, "{what}: {} and {} overlap", a.label, b.label);
            }
        }
        let svg = act_compiler::memory_svg::render(&drawing);
        assert_eq!(svg.matches("<rect class=\"value\"").count(), drawn.len(), "{what}");
    }
}
