//! The ISA table (`act-isa-table/1`): buffers, instructions and their semantics, as written by
//! the Python generator, plus the integer expressions its shapes and slices are made of.

use crate::lang::{DType, OpCode};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

pub const FORMAT: &str = "act-isa-table/1";

/// The table of one accelerator.
#[derive(Debug, Clone)]
pub struct Isa {
    pub format: String,
    pub name: String,
    pub buffers: Vec<Buffer>,
    pub instructions: Vec<Instruction>,
}

/// A data model: `access_dims` addressable positions, each holding a `dtype[unit_dims]` unit.
/// `d0` (HBM) is byte addressed and unbounded: `access_dims == [None]`, no unit dims.
#[derive(Debug, Clone, Deserialize)]
pub struct Buffer {
    pub name: String,
    pub access_dims: Vec<Option<i64>>,
    pub unit_dims: Vec<i64>,
    #[serde(deserialize_with = "element_type")]
    pub dtype: DType,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Instruction {
    pub name: String,
    pub comp_attrs: Vec<String>,
    pub addr_attrs: Vec<String>,
    pub inputs: Vec<Slice>,
    pub outputs: Vec<Slice>,
    pub semantics: Vec<Op>,
    /// What one call costs, over `c.*` (the default cost model's weight of the call).
    #[serde(default = "unit_cost")]
    pub cost: Expr,
    /// Conditions every call's attribute values meet.
    #[serde(default)]
    pub constraints: Vec<Constraint>,
}

fn unit_cost() -> Expr {
    Expr::Int(1)
}

/// A comparison operator of a constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CmpOp {
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl CmpOp {
    pub fn holds(self, lhs: i64, rhs: i64) -> bool {
        match self {
            CmpOp::Eq => lhs == rhs,
            CmpOp::Ne => lhs != rhs,
            CmpOp::Lt => lhs < rhs,
            CmpOp::Le => lhs <= rhs,
            CmpOp::Gt => lhs > rhs,
            CmpOp::Ge => lhs >= rhs,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// `lhs op rhs` over the instruction's attributes (`{"op": "<=", "args": [EXPR, EXPR]}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawConstraint")]
pub struct Constraint {
    pub op: CmpOp,
    pub lhs: Expr,
    pub rhs: Expr,
}

#[derive(Deserialize)]
struct RawConstraint {
    op: CmpOp,
    args: Vec<Expr>,
}

impl TryFrom<RawConstraint> for Constraint {
    type Error = String;

    fn try_from(raw: RawConstraint) -> Result<Constraint, String> {
        match <[Expr; 2]>::try_from(raw.args) {
            Ok([lhs, rhs]) => Ok(Constraint { op: raw.op, lhs, rhs }),
            Err(args) => Err(format!("a constraint compares two expressions, found {}", args.len())),
        }
    }
}

impl Constraint {
    /// Whether the constraint mentions computational attributes only (selection checks it).
    pub fn is_computational(&self) -> bool {
        self.lhs.attrs().iter().chain(&self.rhs.attrs()).all(|a| a.starts_with("c."))
    }

    /// Whether it holds for `env`; `None` when an attribute it mentions has no value.
    pub fn holds(&self, env: &BTreeMap<String, i64>) -> Option<bool> {
        Some(self.op.holds(self.lhs.eval(env).ok()?, self.rhs.eval(env).ok()?))
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.lhs, self.op.symbol(), self.rhs)
    }
}

/// The part of a buffer an operand occupies: `[start_k, start_k + size_k)` along access dim k.
#[derive(Debug, Clone, Deserialize)]
pub struct Slice {
    pub buffer: String,
    pub start: Vec<Expr>,
    pub size: Vec<Expr>,
}

/// One SSA instruction of a semantics program; the last one is the ROOT.
#[derive(Debug, Clone, Deserialize)]
pub struct Op {
    pub name: String,
    /// The operator, one TAIDL semantics may use (the vocabulary's `semantics` column).
    #[serde(deserialize_with = "semantics_operator")]
    pub op: OpCode,
    #[serde(deserialize_with = "element_type")]
    pub dtype: DType,
    pub shape: Vec<Expr>,
    pub operands: Vec<String>,
    #[serde(default)]
    pub attrs: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub root: bool,
}

/// An integer expression over attributes (`c.n`, `a.addr_in`); `/` is floor division.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Expr {
    Int(i64),
    Attr(String),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Mul(Box<Expr>, Box<Expr>),
    Div(Box<Expr>, Box<Expr>),
    Rem(Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
}

/// `const + sum(coef * attr)`: an expression once the attributes it is not affine in are known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Affine {
    pub constant: i64,
    pub terms: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprError {
    Unbound(String),
    NotAffine(String),
    DivisionByZero,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExprError::Unbound(a) => write!(f, "attribute @{a} has no value"),
            ExprError::NotAffine(e) => write!(f, "expression `{e}` is not affine"),
            ExprError::DivisionByZero => write!(f, "division by zero"),
        }
    }
}

/// Division rounding toward negative infinity, as Python's `//` and the table's `/` do.
pub fn floor_div(x: i64, y: i64) -> i64 {
    let q = x / y;
    if x % y != 0 && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

impl Expr {
    /// Evaluates with every attribute it mentions bound in `env`.
    pub fn eval(&self, env: &BTreeMap<String, i64>) -> Result<i64, ExprError> {
        let bin = |a: &Expr, b: &Expr| -> Result<(i64, i64), ExprError> {
            Ok((a.eval(env)?, b.eval(env)?))
        };
        Ok(match self {
            Expr::Int(v) => *v,
            Expr::Attr(name) => *env.get(name).ok_or_else(|| ExprError::Unbound(name.clone()))?,
            Expr::Add(a, b) => bin(a, b).map(|(x, y)| x + y)?,
            Expr::Sub(a, b) => bin(a, b).map(|(x, y)| x - y)?,
            Expr::Mul(a, b) => bin(a, b).map(|(x, y)| x * y)?,
            Expr::Div(a, b) => {
                let (x, y) = bin(a, b)?;
                if y == 0 {
                    return Err(ExprError::DivisionByZero);
                }
                floor_div(x, y)
            }
            Expr::Rem(a, b) => {
                let (x, y) = bin(a, b)?;
                if y == 0 {
                    return Err(ExprError::DivisionByZero);
                }
                x - y * floor_div(x, y)
            }
            Expr::Neg(a) => -a.eval(env)?,
        })
    }

    /// Evaluates with the attributes in `env` known and the others kept symbolic; fails when
    /// the result is not affine in the unknown attributes.
    pub fn affine(&self, env: &BTreeMap<String, i64>) -> Result<Affine, ExprError> {
        Ok(match self {
            Expr::Int(v) => Affine::constant(*v),
            Expr::Attr(name) => match env.get(name) {
                Some(v) => Affine::constant(*v),
                None => Affine::var(name),
            },
            Expr::Add(a, b) => a.affine(env)?.plus(&b.affine(env)?, 1),
            Expr::Sub(a, b) => a.affine(env)?.plus(&b.affine(env)?, -1),
            Expr::Neg(a) => Affine::constant(0).plus(&a.affine(env)?, -1),
            Expr::Mul(a, b) => {
                let (x, y) = (a.affine(env)?, b.affine(env)?);
                if let Some(k) = x.as_constant() {
                    y.scaled(k)
                } else if let Some(k) = y.as_constant() {
                    x.scaled(k)
                } else {
                    return Err(ExprError::NotAffine(self.to_string()));
                }
            }
            Expr::Div(a, b) => {
                let (x, y) = (a.affine(env)?, b.affine(env)?);
                match y.as_constant() {
                    Some(0) => return Err(ExprError::DivisionByZero),
                    // An affine form every coefficient of which the divisor divides.
                    Some(k) if x.constant % k == 0 && x.terms.values().all(|c| c % k == 0) => {
                        Affine { constant: x.constant / k, terms: x.terms.iter().map(|(n, c)| (n.clone(), c / k)).collect() }
                    }
                    _ => match self.eval(env) {
                        Ok(v) => Affine::constant(v),
                        Err(ExprError::Unbound(_)) => return Err(ExprError::NotAffine(self.to_string())),
                        Err(e) => return Err(e),
                    },
                }
            }
            Expr::Rem(_, _) => match self.eval(env) {
                Ok(v) => Affine::constant(v),
                Err(ExprError::Unbound(_)) => return Err(ExprError::NotAffine(self.to_string())),
                Err(e) => return Err(e),
            },
        })
    }

    /// Attribute names the expression mentions, sorted.
    pub fn attrs(&self) -> Vec<String> {
        fn walk(e: &Expr, out: &mut Vec<String>) {
            match e {
                Expr::Int(_) => {}
                Expr::Attr(a) => out.push(a.clone()),
                Expr::Neg(a) => walk(a, out),
                Expr::Add(a, b)
                | Expr::Sub(a, b)
                | Expr::Mul(a, b)
                | Expr::Div(a, b)
                | Expr::Rem(a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out.sort();
        out.dedup();
        out
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Attr(a) => write!(f, "@{a}"),
            Expr::Add(a, b) => write!(f, "({a} + {b})"),
            Expr::Sub(a, b) => write!(f, "({a} - {b})"),
            Expr::Mul(a, b) => write!(f, "({a} * {b})"),
            Expr::Div(a, b) => write!(f, "({a} / {b})"),
            Expr::Rem(a, b) => write!(f, "({a} % {b})"),
            Expr::Neg(a) => write!(f, "-{a}"),
        }
    }
}

impl Affine {
    pub fn constant(v: i64) -> Affine {
        Affine { constant: v, terms: BTreeMap::new() }
    }

    pub fn var(name: &str) -> Affine {
        Affine { constant: 0, terms: BTreeMap::from([(name.to_string(), 1)]) }
    }

    pub fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// `self + k * other`, dropping zero coefficients.
    pub fn plus(&self, other: &Affine, k: i64) -> Affine {
        let mut out = self.clone();
        out.constant += k * other.constant;
        for (name, coef) in &other.terms {
            *out.terms.entry(name.clone()).or_insert(0) += k * coef;
        }
        out.terms.retain(|_, c| *c != 0);
        out
    }

    pub fn scaled(&self, k: i64) -> Affine {
        Affine::constant(0).plus(self, k)
    }
}

// The JSON form is a tagged tree: {"int": 5} | {"attr": "c.n"} | {"op": "+", "args": [a, b]}.
impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Expr, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        Expr::from_json(&v).map_err(D::Error::custom)
    }
}

impl Expr {
    pub fn from_json(v: &serde_json::Value) -> Result<Expr, String> {
        if let Some(i) = v.get("int") {
            return i.as_i64().map(Expr::Int).ok_or_else(|| format!("bad int in {v}"));
        }
        if let Some(a) = v.get("attr") {
            return a.as_str().map(|s| Expr::Attr(s.to_string())).ok_or_else(|| format!("bad attr in {v}"));
        }
        let op = v.get("op").and_then(|o| o.as_str()).ok_or_else(|| format!("bad expression {v}"))?;
        let args: Vec<Expr> = v
            .get("args")
            .and_then(|a| a.as_array())
            .ok_or_else(|| format!("expression without args: {v}"))?
            .iter()
            .map(Expr::from_json)
            .collect::<Result<_, _>>()?;
        let mut it = args.into_iter();
        let mut next = || it.next().map(Box::new).ok_or_else(|| format!("too few args in {v}"));
        Ok(match op {
            "+" => Expr::Add(next()?, next()?),
            "-" => Expr::Sub(next()?, next()?),
            "*" => Expr::Mul(next()?, next()?),
            "/" => Expr::Div(next()?, next()?),
            "%" => Expr::Rem(next()?, next()?),
            "neg" => Expr::Neg(next()?),
            other => return Err(format!("unknown expression operator {other:?}")),
        })
    }
}

/// Why an ISA table cannot be used; every error about one instruction names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// Not JSON, or not the shape of a table (outside any instruction).
    Malformed(String),
    /// The `format` field is not [`FORMAT`].
    Format(String),
    /// The table has no HBM buffer (`d0`, unbounded).
    NoHbm,
    /// A buffer declaration the crate cannot use.
    Buffer { buffer: String, message: String },
    /// An instruction entry does not decode (a missing field, a bad expression).
    Instruction { instruction: String, message: String },
    /// An instruction names a buffer the table does not declare.
    UnknownBuffer { instruction: String, buffer: String },
    /// An instruction decodes but selection cannot use it (its semantics cannot become a
    /// pattern, or an attribute cannot be determined).
    Unusable { instruction: String, reason: String },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::Malformed(m) => write!(f, "ISA table: {m}"),
            TableError::Format(found) => {
                write!(f, "ISA table: format {found:?}, expected {FORMAT:?}")
            }
            TableError::NoHbm => write!(f, "ISA table: no HBM buffer (d0)"),
            TableError::Buffer { buffer, message } => {
                write!(f, "ISA table: buffer {buffer}: {message}")
            }
            TableError::Instruction { instruction, message } => {
                write!(f, "ISA table: instruction {instruction}: {message}")
            }
            TableError::UnknownBuffer { instruction, buffer } => {
                write!(f, "ISA table: instruction {instruction} uses unknown buffer {buffer}")
            }
            TableError::Unusable { instruction, reason } => write!(
                f,
                "ISA table: instruction {instruction} cannot be used for selection: {reason}"
            ),
        }
    }
}

impl std::error::Error for TableError {}

/// The table's outer shape; buffers and instructions are decoded one by one so that an error
/// names its buffer or instruction.
#[derive(Deserialize)]
struct RawTable {
    format: String,
    name: String,
    buffers: Vec<serde_json::Value>,
    instructions: Vec<serde_json::Value>,
}

/// The name field of a table entry, for messages about an entry that does not decode.
fn entry_name(value: &serde_json::Value, k: usize) -> String {
    value.get("name").and_then(serde_json::Value::as_str).map_or_else(|| format!("#{k}"), str::to_string)
}

fn element_type<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DType, D::Error> {
    let name = String::deserialize(d)?;
    DType::parse(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown element type {name}")))
}

fn semantics_operator<'de, D: serde::Deserializer<'de>>(d: D) -> Result<OpCode, D::Error> {
    let name = String::deserialize(d)?;
    match OpCode::parse(&name) {
        Some(code) if code.info().semantics => Ok(code),
        Some(_) => Err(serde::de::Error::custom(format!("operator {name} is not one TAIDL semantics may use"))),
        None => Err(serde::de::Error::custom(format!("unknown operator {name}"))),
    }
}

impl Isa {
    /// Decodes and checks an ISA table: its format, every instruction's fields and
    /// expressions, the buffers they name, and that there is an HBM buffer.
    pub fn from_json(text: &str) -> Result<Isa, TableError> {
        let raw: RawTable =
            serde_json::from_str(text).map_err(|e| TableError::Malformed(e.to_string()))?;
        if raw.format != FORMAT {
            return Err(TableError::Format(raw.format));
        }
        let mut buffers = Vec::with_capacity(raw.buffers.len());
        for (k, value) in raw.buffers.into_iter().enumerate() {
            let name = entry_name(&value, k);
            let buffer = Buffer::deserialize(value)
                .map_err(|e| TableError::Buffer { buffer: name, message: e.to_string() })?;
            buffers.push(buffer);
        }
        let mut instructions = Vec::with_capacity(raw.instructions.len());
        for (k, value) in raw.instructions.into_iter().enumerate() {
            let name = entry_name(&value, k);
            let instr = Instruction::deserialize(value).map_err(|e| TableError::Instruction {
                instruction: name,
                message: e.to_string(),
            })?;
            instructions.push(instr);
        }
        let isa = Isa { format: raw.format, name: raw.name, buffers, instructions };
        for instr in &isa.instructions {
            if let Some(a) = instr.cost.attrs().into_iter().find(|a| !a.starts_with("c.")) {
                return Err(TableError::Instruction {
                    instruction: instr.name.clone(),
                    message: format!("the cost {} mentions @{a}; a cost may mention @c.* only", instr.cost),
                });
            }
            for slice in instr.inputs.iter().chain(&instr.outputs) {
                if isa.buffer_index(&slice.buffer).is_none() {
                    return Err(TableError::UnknownBuffer {
                        instruction: instr.name.clone(),
                        buffer: slice.buffer.clone(),
                    });
                }
            }
        }
        if !isa.buffers.iter().any(Buffer::is_hbm) {
            return Err(TableError::NoHbm);
        }
        Ok(isa)
    }

    pub fn buffer_index(&self, name: &str) -> Option<usize> {
        self.buffers.iter().position(|b| b.name == name)
    }

    pub fn buffer(&self, name: &str) -> &Buffer {
        &self.buffers[self.buffer_index(name).expect("buffer checked in Isa::from_json")]
    }
}

impl Buffer {
    pub fn is_hbm(&self) -> bool {
        self.access_dims.iter().any(Option::is_none)
    }

    /// Number of addressable positions, `None` for unbounded HBM.
    pub fn capacity(&self) -> Option<i64> {
        self.access_dims.iter().try_fold(1i64, |acc, d| d.map(|d| acc * d))
    }
}

impl Instruction {
    /// The environment binding computational attributes `c.<name>` to `values`.
    pub fn comp_env(&self, values: &[i64]) -> BTreeMap<String, i64> {
        self.comp_attrs.iter().zip(values).map(|(n, v)| (format!("c.{n}"), *v)).collect()
    }

    /// Whether the instruction's one output is a read-modify-write of one of its inputs: the
    /// same slice of the same buffer, its semantics a `dynamic_update_slice` into that input's
    /// value (bytes reinterpreted by reshapes and bit casts only on the way in and out). Every
    /// byte of the slice outside the update is then written back as it was read (a strided
    /// store writing a tile into the rows it lies in).
    pub fn updates_in_place(&self) -> bool {
        let [out] = &self.outputs[..] else { return false };
        let same = |s: &Slice| s.buffer == out.buffer && s.start == out.start && s.size == out.size;
        let Some(input) = self.inputs.iter().position(same) else { return false };
        let ops = &self.semantics;
        // Back through reshapes and bit casts, which keep every byte where it is.
        let source = |mut k: usize| loop {
            match ops[k].op {
                OpCode::Reshape | OpCode::BitcastConvert => match ops.iter().position(|o| Some(&o.name) == ops[k].operands.first()) {
                    Some(operand) => k = operand,
                    None => return None,
                },
                _ => return Some(k),
            }
        };
        let Some(root) = ops.iter().rposition(|o| o.root).or_else(|| ops.len().checked_sub(1)) else { return false };
        let Some(update) = source(root).filter(|&k| ops[k].op == OpCode::DynamicUpdateSlice) else { return false };
        let Some(base) = ops[update].operands.first().and_then(|n| ops.iter().position(|o| &o.name == n)) else { return false };
        source(base).is_some_and(|p| {
            ops[p].op == OpCode::Parameter && ops[p].attrs.get("index").and_then(serde_json::Value::as_u64) == Some(input as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(text: &str) -> Expr {
        Expr::from_json(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn evaluates_and_linearises() {
        let x = e(r#"{"op": "+", "args": [{"attr": "a.addr"}, {"op": "*", "args": [{"attr": "c.n"}, {"int": 2}]}]}"#);
        let env = BTreeMap::from([("c.n".to_string(), 64)]);
        let aff = x.affine(&env).unwrap();
        assert_eq!(aff.constant, 128);
        assert_eq!(aff.terms, BTreeMap::from([("a.addr".to_string(), 1)]));
        assert_eq!(x.eval(&env), Err(ExprError::Unbound("a.addr".into())));
    }

    #[test]
    fn product_of_unknowns_is_not_affine() {
        let x = e(r#"{"op": "*", "args": [{"attr": "a.x"}, {"attr": "a.y"}]}"#);
        assert!(matches!(x.affine(&BTreeMap::new()), Err(ExprError::NotAffine(_))));
    }

    #[test]
    fn floor_division_rounds_down() {
        let x = e(r#"{"op": "/", "args": [{"int": -7}, {"int": 2}]}"#);
        assert_eq!(x.eval(&BTreeMap::new()), Ok(-4));
    }
}
