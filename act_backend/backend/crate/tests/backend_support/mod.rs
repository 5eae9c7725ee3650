//! Hand-made ISA tables and candidate graphs shared by the back-half crate tests: the QKV
//! accelerator of examples/QKV (semantics left out: scheduling, allocation and emission never
//! read them) and the nine-instruction attention program it runs.
#![allow(dead_code)]

use act_compiler::driver::{run, Config, Run};
use act_compiler::isa::Isa;
use act_compiler::lang::{DType, Ty};
use act_compiler::layout::{HbmLayout, Signature};
use act_compiler::pii::{PiiGraph, PiiNode};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// An empty scratch directory of this test process, named after the test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("act-backend-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The candidate loop over `candidates` with the default configuration, in a scratch
/// directory removed afterwards.
pub fn drive(isa: &Isa, signature: &Signature, candidates: &[PiiGraph], name: &str) -> Run {
    let dir = scratch(name);
    let cancel = AtomicBool::new(false);
    let result = run(isa, signature, candidates, &dir, &Config::default(), &cancel, &mut |_, _| {})
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

pub fn int(v: i64) -> Value {
    json!({ "int": v })
}

pub fn attr(name: &str) -> Value {
    json!({ "attr": name })
}

pub fn mul(a: Value, b: Value) -> Value {
    json!({ "op": "*", "args": [a, b] })
}

pub fn slice(buffer: &str, start: Vec<Value>, size: Vec<Value>) -> Value {
    json!({ "buffer": buffer, "start": start, "size": size })
}

pub fn instruction(
    name: &str,
    comp: &[&str],
    addr: &[&str],
    inputs: Vec<Value>,
    output: Value,
) -> Value {
    json!({
        "name": name, "comp_attrs": comp, "addr_attrs": addr,
        "inputs": inputs, "outputs": [output], "semantics": []
    })
}

/// An n-row transfer from `from` to `to` (HBM slices count bytes: 128 per 64-wide bf16 row).
fn transfer(name: &str, from: &str, to: &str) -> Value {
    let rows = |buffer: &str| if buffer == "d0" { mul(attr("c.n"), int(128)) } else { attr("c.n") };
    instruction(
        name,
        &["n"],
        &["addr_in", "addr_out"],
        vec![slice(from, vec![attr("a.addr_in")], vec![rows(from)])],
        slice(to, vec![attr("a.addr_out")], vec![rows(to)]),
    )
}

pub fn table(name: &str, buffers: Vec<Value>, instructions: Vec<Value>) -> Isa {
    let mut all =
        vec![json!({ "name": "d0", "access_dims": [null], "unit_dims": [], "dtype": "u8" })];
    all.extend(buffers);
    let text = json!({
        "format": "act-isa-table/1", "name": name, "buffers": all, "instructions": instructions
    });
    Isa::from_json(&text.to_string()).expect("test table is well formed")
}

pub fn rows_buffer(name: &str, rows: i64) -> Value {
    json!({ "name": name, "access_dims": [rows], "unit_dims": [64], "dtype": "bf16" })
}

/// QKV with d1 of `d1_rows` rows (128 in the example).
pub fn qkv_with(d1_rows: i64) -> Isa {
    let gemm = instruction(
        "gemm",
        &[],
        &["addr_1", "addr_2", "addr_out"],
        vec![
            slice("d1", vec![attr("a.addr_1")], vec![int(64)]),
            slice("d1", vec![attr("a.addr_2")], vec![int(64)]),
        ],
        slice("d2", vec![attr("a.addr_out")], vec![int(64)]),
    );
    let softmax = instruction(
        "softmax",
        &["n"],
        &["addr"],
        vec![slice("d2", vec![attr("a.addr")], vec![attr("c.n")])],
        slice("d2", vec![attr("a.addr")], vec![attr("c.n")]),
    );
    table(
        "QKV",
        vec![rows_buffer("d1", d1_rows), rows_buffer("d2", 64)],
        vec![
            transfer("load_rm", "d0", "d1"),
            transfer("load_cm", "d0", "d1"),
            transfer("store_rm", "d1", "d0"),
            transfer("store_cm", "d1", "d0"),
            transfer("mov", "d2", "d1"),
            gemm,
            softmax,
        ],
    )
}

pub fn qkv() -> Isa {
    qkv_with(128)
}

/// Instruction index by name.
pub fn op(isa: &Isa, name: &str) -> usize {
    isa.instructions.iter().position(|i| i.name == name).expect("instruction exists")
}

pub fn input(param: usize) -> PiiNode {
    PiiNode::Input { param, bytes: 8192 }
}

pub fn instr(isa: &Isa, name: &str, comp: &[i64], operands: &[usize]) -> PiiNode {
    PiiNode::Instr { instr: op(isa, name), comp: comp.to_vec(), operands: operands.to_vec() }
}

/// softmax(Q . K^T) . V in nine instructions, as selection finds it for QKV.
pub fn attention(isa: &Isa) -> PiiGraph {
    let nodes = vec![
        input(0),                             // 0 Q
        input(1),                             // 1 K
        input(2),                             // 2 V
        instr(isa, "load_rm", &[64], &[0]),   // 3 Q in d1
        instr(isa, "load_cm", &[64], &[1]),   // 4 K^T in d1
        instr(isa, "gemm", &[], &[3, 4]),     // 5 S in d2
        instr(isa, "softmax", &[64], &[5]),   // 6 P in d2, over S
        instr(isa, "mov", &[64], &[6]),       // 7 P in d1
        instr(isa, "load_rm", &[64], &[2]),   // 8 V in d1
        instr(isa, "gemm", &[], &[7, 8]),     // 9 O in d2
        instr(isa, "mov", &[64], &[9]),       // 10 O in d1
        instr(isa, "store_rm", &[64], &[10]), // 11 O in HBM
    ];
    PiiGraph { nodes, root: 11 }
}

pub fn bf16(shape: &[i64]) -> Ty {
    Ty::new(DType::BF16, shape.to_vec())
}

/// The signature of examples/*/kernels/attention.hlo.
pub fn attention_signature() -> Signature {
    Signature {
        module: "qkv".into(),
        inputs: vec![bf16(&[64, 64]), bf16(&[64, 64]), bf16(&[64, 64])],
        outputs: vec![bf16(&[64, 64])],
    }
}

pub fn attention_layout() -> HbmLayout {
    HbmLayout::packed(&attention_signature()).expect("attention signature is valid")
}

/// Checks a placement independently of the request builder: every read finds its value
/// where it was written (or where the kernel input sits), every slice is inside its buffer,
/// and values of one buffer that are live together do not share a position.
pub fn check_placement(
    graph: &PiiGraph,
    isa: &Isa,
    schedule: &act_compiler::schedule::Schedule,
    layout: &HbmLayout,
    placement: &act_compiler::alloc::Placement,
) {
    use std::collections::BTreeMap;
    // Per node: buffer, start and size along each access dimension.
    let mut at: BTreeMap<usize, (String, Vec<i64>, Vec<i64>)> = BTreeMap::new();
    for (n, node) in graph.nodes.iter().enumerate() {
        if let PiiNode::Input { param, bytes } = node {
            at.insert(n, ("d0".into(), vec![layout.inputs[*param].addr], vec![*bytes as i64]));
        }
    }
    place_identities(graph, &mut at);
    for (s, &n) in schedule.steps.iter().enumerate() {
        let PiiNode::Instr { instr, comp, operands } = &graph.nodes[n] else { panic!() };
        let def = &isa.instructions[*instr];
        let mut env = def.comp_env(comp);
        for (a, v) in def.addr_attrs.iter().zip(&placement.addrs[s]) {
            env.insert(format!("a.{a}"), *v);
        }
        let eval = |es: &[act_compiler::isa::Expr]| -> Vec<i64> {
            es.iter().map(|e| e.eval(&env).unwrap()).collect()
        };
        for (slice, &op) in def.inputs.iter().zip(operands) {
            let (buffer, start, _) = &at[&op];
            assert_eq!(&slice.buffer, buffer, "step {s} reads the wrong buffer");
            assert_eq!(
                &eval(&slice.start),
                start,
                "step {s} ({}) reads node {op} elsewhere",
                def.name
            );
        }
        let out = &def.outputs[0];
        at.insert(n, (out.buffer.clone(), eval(&out.start), eval(&out.size)));
        // Views of what is placed now, and concatenations now complete.
        place_identities(graph, &mut at);
    }
    let (_, root_start, _) = &at[&graph.root];
    assert_eq!(
        root_start,
        &vec![layout.output.addr],
        "the output is not where the kernel expects it"
    );
    let live: Vec<(usize, (i64, i64))> =
        schedule.live.iter().enumerate().filter_map(|(n, r)| r.map(|r| (n, r))).collect();
    // Identity nodes share their storage by design; instructions' values must not.
    let live: Vec<(usize, (i64, i64))> =
        live.into_iter().filter(|&(n, _)| !graph.nodes[n].is_identity()).collect();
    for &(n, _) in &live {
        let (buffer, start, size) = &at[&n];
        let dims = &isa.buffer(buffer).access_dims;
        for k in 0..dims.len() {
            assert!(start[k] >= 0, "node {n} starts below 0");
            if let Some(d) = dims[k] {
                assert!(start[k] + size[k] <= d, "node {n} runs past the end of {buffer}");
            }
        }
    }
    for (i, &(a, (sa, ea))) in live.iter().enumerate() {
        for &(b, (sb, eb)) in &live[i + 1..] {
            let (ba, pa, za) = &at[&a];
            let (bb, pb, zb) = &at[&b];
            if ba != bb || !(sa < eb && sb < ea) {
                continue;
            }
            let disjoint = (0..pa.len()).any(|k| pa[k] + za[k] <= pb[k] || pb[k] + zb[k] <= pa[k]);
            assert!(disjoint, "nodes {a} and {b} are live together and overlap in {ba}");
        }
    }
}

/// Places every view whose viewed value is placed (at its offset) and every concatenation
/// whose parts are all placed, checking that the parts lie side by side.
fn place_identities(
    graph: &PiiGraph,
    at: &mut std::collections::BTreeMap<usize, (String, Vec<i64>, Vec<i64>)>,
) {
    for (n, node) in graph.nodes.iter().enumerate() {
        if at.contains_key(&n) {
            continue;
        }
        match node {
            PiiNode::View { of, offset, size } => {
                let Some((buffer, start, _)) = at.get(of).cloned() else { continue };
                let start = start.iter().zip(offset).map(|(s, o)| s + o).collect();
                at.insert(n, (buffer, start, size.clone()));
            }
            PiiNode::Concat { parts, dim } => {
                if !parts.iter().all(|p| at.contains_key(p)) {
                    continue;
                }
                let (buffer, start, mut size) = at[&parts[0]].clone();
                size[*dim] = 0;
                for &p in parts {
                    let (b, s, z) = &at[&p];
                    let mut expect = start.clone();
                    expect[*dim] += size[*dim];
                    assert_eq!((b, s), (&buffer, &expect), "part {p} of node {n} is out of place");
                    size[*dim] += z[*dim];
                }
                at.insert(n, (buffer, start, size));
            }
            _ => {}
        }
    }
}
