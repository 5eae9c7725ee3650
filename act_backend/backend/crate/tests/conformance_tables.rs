//! The shared case tables of the conformance corpus, run through the crate: type inference
//! (`tests/conformance/infer_cases.json` through `src/infer.rs`) and the ISA table's integer
//! expressions (`tests/conformance/expr_cases.json` through `isa::Expr::eval` and `affine`).
//! `tests/test_conformance_tables.py` runs the same rows through the Python side.

use act_compiler::infer::{self, Site};
use act_compiler::isa::{Expr, ExprError};
use act_compiler::lang::{DType, DotDims, Op, Reducer, Ty};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

fn cases(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("conformance").join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let table: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    table["cases"].as_array().unwrap_or_else(|| panic!("{} has no `cases` list", path.display())).clone()
}

/// `f32[4,8]` as a type.
fn ty(text: &str) -> Ty {
    let (dtype, dims) = text.strip_suffix(']').and_then(|t| t.split_once('[')).unwrap_or_else(|| panic!("not a type: {text}"));
    let dtype = DType::parse(dtype).unwrap_or_else(|| panic!("unknown element type in {text}"));
    let shape = dims.split(',').filter(|d| !d.is_empty()).map(|d| d.parse().expect("a dimension")).collect();
    Ty::new(dtype, shape)
}

fn dims(attrs: &Value, name: &str) -> Vec<usize> {
    attrs.get(name).and_then(Value::as_array).map_or_else(Vec::new, |v| {
        v.iter().map(|d| d.as_u64().unwrap_or_else(|| panic!("{name}: {d} is not a dimension")) as usize).collect()
    })
}

/// The row's operator as the crate holds it: its own variant, or by name with its attributes
/// written as in HLO text (`direction=LT, iota_dimension=1`).
fn op_of(name: &str, attrs: &Value) -> Op {
    match name {
        "reshape" => Op::Reshape,
        "convert" => Op::Convert,
        "bitcast_convert" => Op::BitcastConvert,
        "copy" => Op::Copy,
        "exponential" => Op::Exponential,
        "add" => Op::Add,
        "subtract" => Op::Subtract,
        "multiply" => Op::Multiply,
        "divide" => Op::Divide,
        "maximum" => Op::Maximum,
        "minimum" => Op::Minimum,
        "xor" => Op::Xor,
        "select_lt" => Op::SelectLt,
        "select_eq_var" => Op::SelectEqVar,
        "dynamic_update_slice" => Op::DynamicUpdateSlice,
        "transpose" => Op::Transpose(dims(attrs, "dimensions")),
        "broadcast" => Op::Broadcast(dims(attrs, "dimensions")),
        "reduce_add" => Op::ReduceAdd(dims(attrs, "dimensions")),
        "reduce" => Op::Reduce { dims: dims(attrs, "dimensions"), reducer: Reducer::Add },
        "concatenate" => match dims(attrs, "dimensions").as_slice() {
            [d] => Op::Concatenate(*d),
            other => panic!("a concatenate row names one dimension, found {other:?}"),
        },
        "dot" => Op::Dot(DotDims {
            lhs_contracting: dims(attrs, "lhs_contracting_dims"),
            rhs_contracting: dims(attrs, "rhs_contracting_dims"),
            lhs_batch: dims(attrs, "lhs_batch_dims"),
            rhs_batch: dims(attrs, "rhs_batch_dims"),
        }),
        "slice" => Op::Slice(
            attrs["slice"]
                .as_array()
                .expect("slice ranges")
                .iter()
                .map(|r| {
                    let r: Vec<i64> = r.as_array().expect("a range").iter().map(|v| v.as_i64().expect("a bound")).collect();
                    (r[0], r[1], r[2])
                })
                .collect(),
        ),
        other => {
            let written: Vec<String> = attrs
                .as_object()
                .expect("attributes")
                .iter()
                .map(|(k, v)| match v {
                    // pad's configuration as XLA prints it: low_high_interior, joined by `x`.
                    Value::Array(dims) if k == "padding" => {
                        let dims: Vec<String> = dims
                            .iter()
                            .map(|d| {
                                let parts: Vec<String> =
                                    d.as_array().expect("low, high, interior").iter().map(ToString::to_string).collect();
                                parts.join("_")
                            })
                            .collect();
                        format!("{k}={}", dims.join("x"))
                    }
                    // A window as XLA prints it: `{size=2x2 pad=0_1x0_1 ...}`.
                    Value::Object(fields) if k == "window" => {
                        let fields: Vec<String> = fields
                            .iter()
                            .map(|(name, entries)| {
                                let entries: Vec<String> = entries
                                    .as_array()
                                    .expect("one entry per dimension")
                                    .iter()
                                    .map(|e| match e.as_array() {
                                        Some(pair) => pair.iter().map(ToString::to_string).collect::<Vec<_>>().join("_"),
                                        None => e.to_string(),
                                    })
                                    .collect();
                                format!("{name}={}", entries.join("x"))
                            })
                            .collect();
                        format!("{k}={{{}}}", fields.join(" "))
                    }
                    Value::Array(items) => {
                        let items: Vec<String> = items.iter().map(ToString::to_string).collect();
                        format!("{k}={{{}}}", items.join(","))
                    }
                    Value::String(s) => format!("{k}={s}"),
                    v => format!("{k}={v}"),
                })
                .collect();
            Op::Other { name: other.replace('_', "-"), attrs: written.join(", ") }
        }
    }
}

fn site(site: Site) -> String {
    match site {
        Site::Opcode => "opcode".into(),
        Site::Operand(i) => format!("operand:{i}"),
        Site::Attr(name) => format!("attr:{name}"),
        Site::Declared => "type".into(),
    }
}

#[test]
fn type_inference_gives_the_recorded_answer() {
    let rows = cases("infer_cases.json");
    assert!(rows.len() >= 100, "{} rows", rows.len());
    let mut wrong = Vec::new();
    for row in &rows {
        let name = row["op"].as_str().expect("an operator");
        let operands: Vec<Ty> = row["operands"].as_array().expect("operands").iter().map(|t| ty(t.as_str().expect("a type"))).collect();
        let declared = ty(row["declared"].as_str().expect("a declared type"));
        let op = op_of(name, &row["attrs"]);
        let refs: Vec<&Ty> = operands.iter().collect();
        let got = match infer::check(&op, &refs, &declared) {
            Ok(()) => infer::infer(&op, &refs, &declared).expect("checked").to_string(),
            Err(e) => format!("{} @ {}", e.code, site(e.site)),
        };
        let expected = match (row.get("type"), row.get("error")) {
            (Some(t), _) => t.as_str().expect("a type").to_string(),
            (None, Some(code)) => format!("{} @ {}", code.as_str().expect("a code"), row["at"].as_str().expect("a site")),
            _ => panic!("a row gives a type or an error: {row}"),
        };
        if got != expected {
            wrong.push(format!("{row}\n  expected `{expected}`, the crate says `{got}`"));
        }
    }
    assert!(wrong.is_empty(), "{} row(s) differ:\n{}", wrong.len(), wrong.join("\n"));
}

fn expr_answer(row: &Value) -> Value {
    let expr = Expr::from_json(&row["expr"]).unwrap_or_else(|e| panic!("{row}: {e}"));
    let env: BTreeMap<String, i64> = row["env"]
        .as_object()
        .expect("an environment")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_i64().expect("an integer")))
        .collect();
    let error = |e: ExprError| match e {
        ExprError::DivisionByZero => "division-by-zero",
        ExprError::Unbound(_) => "unbound-attribute",
        ExprError::NotAffine(_) => "not-affine",
    };
    if row.get("affine").is_some() {
        return match expr.affine(&env) {
            Ok(a) => serde_json::json!({"affine": {"constant": a.constant, "terms": a.terms}}),
            Err(e) => serde_json::json!({"affine": error(e)}),
        };
    }
    match expr.eval(&env) {
        Ok(v) => serde_json::json!({ "value": v }),
        Err(e) => serde_json::json!({ "error": error(e) }),
    }
}

#[test]
fn expressions_give_the_recorded_answer() {
    let rows = cases("expr_cases.json");
    let mut wrong = Vec::new();
    for row in &rows {
        let id = row["id"].as_str().expect("an id");
        let got = expr_answer(row);
        let key = ["value", "error", "affine"].into_iter().find(|k| row.get(*k).is_some()).expect("an answer");
        if got.get(key) != row.get(key) {
            wrong.push(format!("{id} differs: recorded {}, the crate says {got}", row[key]));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
