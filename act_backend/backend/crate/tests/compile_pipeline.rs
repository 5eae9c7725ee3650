//! The whole pipeline in-process through `compile`: a kernel that compiles, each kind of
//! refusal with what it names, and the ISA tables the compiler cannot use, reported when the
//! table is decoded rather than dropped from selection.

mod select_support;

use act_compiler::compile::{compile, CompileError, CompileOptions, Message, Target};
use act_compiler::driver::Status;
use act_compiler::isa::TableError;
use act_compiler::kernel::KernelErrorKind;
use select_support::data;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

fn table(name: &str) -> Value {
    serde_json::from_str(&data(name)).unwrap()
}

fn target(table: &Value) -> Arc<Target> {
    Arc::new(Target::from_json(&table.to_string()).unwrap_or_else(|e| panic!("{e}")))
}

fn options(target: Arc<Target>) -> CompileOptions {
    CompileOptions::new(target, "kernel.hlo")
}

fn qkv() -> Arc<Target> {
    target(&table("qkv_isa.json"))
}

/// The instruction of `table` named `name`.
fn instruction<'a>(table: &'a mut Value, name: &str) -> &'a mut Value {
    table["instructions"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no instruction {name}"))
}

const ADD: &str = "HloModule m

ENTRY %m (a: bf16[64,64], b: bf16[64,64]) -> bf16[64,64] {
  %a = bf16[64,64]{1,0} parameter(0)
  %b = bf16[64,64]{1,0} parameter(1)
  ROOT %c = bf16[64,64]{1,0} add(bf16[64,64]{1,0} %a, bf16[64,64]{1,0} %b)
}
";

#[test]
fn attention_compiles_to_nine_instructions_with_its_report() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut opts = options(qkv());
    let sink = Arc::clone(&lines);
    opts.listener = Some(Arc::new(move |m: Message<'_>| {
        if let Message::Progress(line) = m {
            sink.lock().unwrap().push(line.to_string());
        }
    }));
    let asm = compile(&data("attention.hlo"), &opts).unwrap_or_else(|e| panic!("{e}"));
    assert!(asm.text.starts_with("import jax.numpy as jnp\n\n\ndef qkv(kernel, api):\n"));
    assert_eq!(asm.instructions, 9);
    assert_eq!(asm.text.lines().filter(|l| l.trim_start().starts_with("api.")).count(), 9);
    // The default cost model counts instructions.
    assert_eq!(asm.cost, 9.0);
    assert_eq!(asm.warning, None);
    assert!(asm.free_attributes.is_empty());
    let report = &asm.report;
    assert_eq!(report.best.as_ref().map(|b| b.index), Some(asm.candidate));
    assert_eq!(report.module.as_deref(), Some("qkv"));
    assert!(report.records.iter().any(|r| r.index == asm.candidate && r.status == Status::Solved));
    let lines = lines.lock().unwrap();
    assert!(lines.iter().any(|l| l.starts_with("select: ")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("candidate 0: ")), "{lines:?}");
}

#[test]
fn kernel_refusals_are_typed_and_located() {
    let qkv = qkv();
    let syntax = ADD.replace("%a, bf16", "%a,, bf16");
    match compile(&syntax, &options(Arc::clone(&qkv))) {
        Err(e @ CompileError::Syntax(_)) => {
            let CompileError::Syntax(k) = &e else { unreachable!() };
            assert_eq!((k.file.as_str(), k.line), ("kernel.hlo", 6), "{e}");
            assert!(e.to_string().starts_with(&format!("kernel.hlo:6:{}: ", k.col)), "{e}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    let unknown = ADD.replace("add(", "frobnicate(");
    match compile(&unknown, &options(Arc::clone(&qkv))) {
        Err(CompileError::UnsupportedOperator { operator, error }) => {
            assert_eq!(operator, "frobnicate");
            assert_eq!((error.kind, error.line), (KernelErrorKind::UnknownOperator, 6));
        }
        other => panic!("expected an unsupported operator, got {other:?}"),
    }
}

#[test]
fn an_operation_no_instruction_computes_is_inexpressible() {
    match compile(ADD, &options(qkv())) {
        Err(e @ CompileError::Inexpressible { .. }) => {
            let CompileError::Inexpressible { file, line, operation, .. } = &e else {
                unreachable!()
            };
            assert_eq!((file.as_str(), *line, operation.as_str()), ("kernel.hlo", 6, "add"));
            assert!(e.to_string().starts_with("kernel.hlo:6: no instruction of QKV computes `add`"), "{e}");
        }
        other => panic!("expected an inexpressible kernel, got {other:?}"),
    }
}

#[test]
fn a_product_whose_operands_never_fit_together_has_no_placement() {
    // d1 of 64 rows: the products read two 64-row operands from it at once.
    let mut t = table("qkv_isa.json");
    let d1 = t["buffers"].as_array_mut().unwrap().iter_mut().find(|b| b["name"] == "d1").unwrap();
    d1["access_dims"] = json!([64]);
    match compile(&data("attention.hlo"), &options(target(&t))) {
        Err(e @ CompileError::NoPlacement { .. }) => {
            let CompileError::NoPlacement { found, unplaced } = &e else { unreachable!() };
            assert!(*found > 0);
            assert_eq!(unplaced.len(), *found);
            assert!(unplaced.iter().all(|u| u.status == Status::Infeasible), "{e}");
            assert!(e.to_string().starts_with(&format!(
                "the kernel does not fit in memory even with spilling: none of the {found} candidates \
                 could be placed:\n  candidate 0: infeasible: "
            )), "{e}");
        }
        other => panic!("expected no placement, got {other:?}"),
    }
}

#[test]
fn a_time_limit_that_fires_before_any_candidate_is_an_error() {
    let mut opts = options(qkv());
    opts.time_limit = Some(std::time::Duration::from_nanos(1));
    match compile(&data("attention.hlo"), &opts) {
        Err(e @ CompileError::TimeLimit { tried: 0, .. }) => {
            assert!(e.to_string().contains("time limit was reached after 0 candidates"), "{e}");
        }
        other => panic!("expected the time limit, got {other:?}"),
    }
    // The progress says how far the compile came: selection ran, no candidate was tried.
    let p = opts.progress.lock().unwrap();
    assert!(p.candidates_found.is_some_and(|n| n > 0));
    assert!(p.records.is_empty() && p.best.is_none());
}

#[test]
fn an_unused_computational_attribute_is_free_and_emitted_as_zero() {
    let mut t = table("qkv_isa.json");
    for load in ["load_rm", "load_cm"] {
        instruction(&mut t, load)["comp_attrs"] = json!(["n", "scale"]);
    }
    let target = target(&t);
    let free: Vec<(&str, &str, i64)> = target
        .patterns
        .free
        .iter()
        .map(|a| (a.instruction.as_str(), a.attribute.as_str(), a.value))
        .collect();
    assert_eq!(free, [("load_rm", "scale", 0), ("load_cm", "scale", 0)]);
    let asm =
        compile(&data("attention.hlo"), &options(Arc::clone(&target))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(asm.instructions, 9, "the loads are still selected");
    let loads: Vec<&str> =
        asm.text.lines().map(str::trim).filter(|l| l.starts_with("api.load_")).collect();
    assert_eq!(loads.len(), 3, "{}", asm.text);
    for line in loads {
        assert!(line.contains("(n=64, scale=0, addr_in="), "{line}");
    }
    let json = asm.report.to_json("kernel.hlo", &target.isa, "ok", None, Default::default());
    assert_eq!(
        json["free_attributes"][0],
        json!({"instruction": "load_rm", "attribute": "scale", "value": 0})
    );
}

/// Tables the compiler cannot use: the error names the instruction (or buffer) and says why.
#[test]
fn an_unusable_table_is_an_error_naming_the_instruction() {
    type Edit = fn(&mut Value);
    let cases: &[(&str, Edit, &str)] = &[
        (
            "an operator TAIDL semantics may not use",
            |t| {
                let sem = &mut instruction(t, "gemm")["semantics"];
                let root = sem.as_array_mut().unwrap().last_mut().unwrap();
                root["op"] = json!("sort");
            },
            "ISA table: instruction gemm: operator sort is not one TAIDL semantics may use",
        ),
        (
            "an operator the vocabulary does not know",
            |t| {
                let sem = &mut instruction(t, "gemm")["semantics"];
                sem.as_array_mut().unwrap().last_mut().unwrap()["op"] = json!("frobnicate");
            },
            "ISA table: instruction gemm: unknown operator frobnicate",
        ),
        (
            "an attribute that sizes a slice but that no semantics determine",
            |t| {
                let mov = instruction(t, "mov");
                mov["comp_attrs"] = json!(["n", "rows"]);
                mov["outputs"][0]["size"] = json!([{"attr": "c.rows"}]);
            },
            "ISA table: instruction mov cannot be used for selection: computational attribute `rows` sizes the output slice",
        ),
        (
            "an unknown buffer",
            |t| instruction(t, "mov")["outputs"][0]["buffer"] = json!("d9"),
            "ISA table: instruction mov uses unknown buffer d9",
        ),
        (
            "a bad expression",
            |t| instruction(t, "mov")["outputs"][0]["size"] = json!([{"op": "^", "args": []}]),
            "ISA table: instruction mov: unknown expression operator \"^\"",
        ),
        (
            "a buffer of an unknown element type",
            |t| t["buffers"][1]["dtype"] = json!("bf17"),
            "ISA table: buffer d1: unknown element type bf17",
        ),
    ];
    for (what, edit, expected) in cases {
        let mut t = table("qkv_isa.json");
        edit(&mut t);
        let err = Target::from_json(&t.to_string()).expect_err(what);
        let text = err.to_string();
        assert!(text.starts_with(expected), "{what}: {text}");
        let named = match &err {
            TableError::Unusable { instruction, .. }
            | TableError::UnknownBuffer { instruction, .. }
            | TableError::Instruction { instruction, .. } => instruction.as_str(),
            TableError::Buffer { buffer, .. } => buffer.as_str(),
            other => panic!("{what}: {other:?}"),
        };
        assert!(["gemm", "mov", "d1"].contains(&named), "{what}: {named}");
    }
}
