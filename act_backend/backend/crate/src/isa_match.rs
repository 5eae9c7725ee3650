//! IR-to-ISA matching: each instruction's semantics, read from the ISA table at start-up,
//! becomes a pattern DAG rooted at its ROOT; a match adds a partially instantiated
//! instruction `Pii { instr, comp }(operand classes...)` to the class of the ROOT.
//!
//! A pattern node matches an e-node when the operators are equal, every attribute agrees
//! (attribute expressions over `c.*` become equations), the class's element type is the
//! node's and its shape unifies with the node's shape expressions. Parameters bind e-classes,
//! and a value the semantics use twice must bind the same class both times. The equations are
//! solved for the computational attributes (`solve.rs`), and every slice the instruction
//! touches must then be non-empty, fit its buffer, and hold exactly its value's bytes.
//!
//! A register the semantics see as `s32[1,16,16]` holds the same bytes as a kernel value of
//! `s32[16,16]`: a parameter, constant, elementwise operation, conversion, copy or reshape
//! also matches a class whose shape is its own with dimensions of one added or dropped, and
//! a reshape that only adds or drops such dimensions matches its operand's class itself.
//! Operators with dimension attributes (products, transposes, broadcasts, reductions,
//! slices, concatenations) match only the shapes their semantics give.
//!
//! On an ISA whose instructions read a register's bytes as another element type (an
//! AMX-style int8 tile read as uint8, as interleaved int8 and as an int32 accumulator by one
//! instruction: [`reinterprets_on_chip`]), an on-chip parameter and the reshapes and bit casts
//! between it and what computes with it are held to bytes only, the last of them to its
//! reader's type, and a result written into a register likewise ([`byte_views`]): a kernel's
//! uint8 matrix and int32 addend then sit in int8 tiles as their bytes.
//!
//! A constant whose value is an attribute expression (TAIDL's ``constant(`@c.scale`)``) is a
//! splat that matches a kernel splat of an integral value, binding the expression to it (an
//! attribute that only such constants mention may be negative). Constant sub-patterns fold:
//! a reshape or broadcast of a one-element constant is the splat of its result shape. An
//! elementwise operator with such a constant operand that is the identity for one value
//! (`x * 1`, `x / 1`, `x - 0`, integer `x + 0`) also gives a variant of the pattern without
//! it, the attribute fixed by that value: a scaled load then matches a plain load with
//! scale 1, and only with that scale. Likewise a slice that may keep all of its operand gives
//! a variant without it, its starts at 0 and limits at the operand's extents: a load of a
//! window of rows `stride` long (AMX's `tileloadd`) also reads a whole matrix, at its row
//! length.
//!
//! A computational attribute that no shape or attribute of the semantics mentions cannot be
//! determined by a match; it does not change what the instruction computes, so it is free and
//! every match sets it to 0. A match whose computational attributes break one of the
//! instruction's constraints on `c.*` is not made. Every instruction must become a pattern:
//! one that cannot is a [`TableError`], never a silent omission.

use crate::egraph::SelGraph;
use crate::isa::{Constraint, Expr, Isa, TableError};
use crate::lang::{DType, Node, Op, OpCode, Reducer, Ty};
use crate::solve::{self, Equation};
use egg::Id;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

/// The operator test of one pattern node.
#[derive(Debug, Clone)]
enum PKind {
    Param,
    /// A constant: one value (a splat) or every value, row-major.
    Const(Vec<f64>),
    /// A splat whose value is an integer expression over `c.*`.
    ConstExpr(Expr),
    /// An operator without attributes, compared as is.
    Plain(Op),
    Transpose(Vec<Expr>),
    Broadcast(Vec<Expr>),
    Slice(Vec<[Expr; 3]>),
    Concat(Expr),
    /// lhs contracting, rhs contracting, lhs batch, rhs batch.
    Dot([Vec<Expr>; 4]),
    Reduce(Vec<Expr>, Reducer),
    ReduceAdd(Vec<Expr>),
}

#[derive(Debug, Clone)]
struct POp {
    kind: PKind,
    dtype: DType,
    shape: Vec<Expr>,
    operands: Vec<usize>,
}

/// The pattern of one instruction.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub instr: usize,
    pub name: String,
    ops: Vec<POp>,
    root: usize,
    /// Pattern nodes in the order the search binds them (each after one of its users).
    order: Vec<usize>,
    /// Pattern node of input slice `i`.
    params: Vec<usize>,
    /// `c.<attr>` in `comp_attrs` order.
    unknowns: Vec<String>,
    /// The unknowns the semantics mention, which a match must determine.
    determined: Vec<String>,
    /// The unknowns the semantics do not mention: set to [`FREE_VALUE`] by every match.
    free: Vec<String>,
    /// Unknowns only constant values mention: their solutions may be negative.
    signed: Vec<String>,
    /// Equations every match adds: the identity values of the operators this variant of the
    /// pattern leaves out.
    fixed: Vec<Equation>,
    /// The instruction's constraints on computational attributes.
    constraints: Vec<Constraint>,
    /// How each node is held to the class it is bound to ([`Check`]).
    checks: Vec<Check>,
    /// The reshapes and bit casts that may be the bytes of the class they are bound to
    /// themselves, without an e-node of their own there ([`byte_views`]).
    transparent: Vec<bool>,
}

/// How a pattern node is held to the class it is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// The class's element type and shape are the node's (dimensions of one aside, where
    /// [`ignores_unit_dims`]).
    Shape,
    /// Only bytes matter: a value moved between a register and what computes with it through
    /// reshapes and bit casts (the slices' sizes are checked against the classes' bytes once
    /// the match is complete).
    Bytes,
}

/// The value a free computational attribute takes.
pub const FREE_VALUE: i64 = 0;

/// A computational attribute no shape or attribute of its instruction's semantics uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeAttribute {
    pub instr: usize,
    pub instruction: String,
    /// The attribute's name, without the `c.` prefix.
    pub attribute: String,
    pub value: i64,
}

/// The patterns of an ISA (one per instruction, in table order), the operators its
/// semantics use, and the free attributes.
#[derive(Debug, Clone)]
pub struct Patterns {
    pub list: Vec<Pattern>,
    pub ops: BTreeSet<OpCode>,
    pub free: Vec<FreeAttribute>,
}

fn json_expr(v: &Json) -> Result<Expr, String> {
    match v.as_i64() {
        Some(i) => Ok(Expr::Int(i)),
        None => Expr::from_json(v),
    }
}

fn json_exprs(attrs: &BTreeMap<String, Json>, key: &str) -> Result<Vec<Expr>, String> {
    match attrs.get(key) {
        None => Ok(Vec::new()),
        Some(Json::Array(items)) => items.iter().map(json_expr).collect(),
        Some(other) => Err(format!("attribute {key} must be a list, found {other}")),
    }
}

fn json_number(v: &Json) -> Result<f64, String> {
    match v {
        Json::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        Json::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Json::String(s) => match s.as_str() {
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "nan" => Ok(f64::NAN),
            _ => Err(format!("bad constant {s:?}")),
        },
        other => Err(format!("bad constant {other}")),
    }
}

fn flatten(v: &Json, out: &mut Vec<f64>) -> Result<(), String> {
    match v {
        Json::Array(items) => items.iter().try_for_each(|i| flatten(i, out)),
        other => json_number(other).map(|x| out.push(x)),
    }
}

fn kind_of(op: &crate::isa::Op) -> Result<PKind, String> {
    let a = &op.attrs;
    Ok(match op.op {
        OpCode::Parameter => PKind::Param,
        OpCode::Constant => {
            let value = a.get("value").ok_or("constant without a value")?;
            if value.is_object() {
                PKind::ConstExpr(Expr::from_json(value)?)
            } else {
                let mut values = Vec::new();
                flatten(value, &mut values)?;
                PKind::Const(values)
            }
        }
        OpCode::Transpose => PKind::Transpose(json_exprs(a, "dimensions")?),
        OpCode::Broadcast => PKind::Broadcast(json_exprs(a, "dimensions")?),
        OpCode::Concatenate => match json_exprs(a, "dimensions")?.as_slice() {
            [d] => PKind::Concat(d.clone()),
            _ => return Err("concatenate needs one dimension".into()),
        },
        OpCode::Slice => {
            let Some(Json::Array(ranges)) = a.get("slice") else { return Err("slice without ranges".into()) };
            let mut out = Vec::new();
            for r in ranges {
                let parts: Vec<Expr> = r
                    .as_array()
                    .ok_or("a slice range must be a list")?
                    .iter()
                    .map(json_expr)
                    .collect::<Result<_, _>>()?;
                match parts.as_slice() {
                    [s, l] => out.push([s.clone(), l.clone(), Expr::Int(1)]),
                    [s, l, st] => out.push([s.clone(), l.clone(), st.clone()]),
                    _ => return Err("a slice range has a start, a limit and a stride".into()),
                }
            }
            PKind::Slice(out)
        }
        OpCode::Dot => PKind::Dot([
            json_exprs(a, "lhs_contracting_dims")?,
            json_exprs(a, "rhs_contracting_dims")?,
            json_exprs(a, "lhs_batch_dims")?,
            json_exprs(a, "rhs_batch_dims")?,
        ]),
        OpCode::Reduce | OpCode::ReduceAdd => {
            let name = a.get("computation").and_then(Json::as_str).unwrap_or("add");
            let reducer =
                Reducer::from_table_name(name).ok_or_else(|| format!("unknown reduce computation {name:?}"))?;
            let dims = json_exprs(a, "dimensions")?;
            if op.op == OpCode::ReduceAdd {
                if reducer != Reducer::Add {
                    return Err(format!("reduce_add with computation {name:?}"));
                }
                PKind::ReduceAdd(dims)
            } else {
                PKind::Reduce(dims, reducer)
            }
        }
        other => match Op::plain(other) {
            Some(op) => PKind::Plain(op),
            // The table decodes only operators TAIDL semantics may use; one the vocabulary
            // gains before selection learns it is named here.
            None => return Err(format!("selection has no pattern for the semantics operator {}", other.name())),
        },
    })
}

/// The concrete operator and result type of one semantics op once the computational
/// attributes are known (parameters become [`Op::Parameter`]); used to interpret semantics.
pub fn instantiate(op: &crate::isa::Op, env: &BTreeMap<String, i64>) -> Result<(Op, Ty), String> {
    let ev = |e: &Expr| e.eval(env).map_err(|err| format!("`{}`: {e}: {err}", op.name));
    let evs = |es: &[Expr]| -> Result<Vec<usize>, String> {
        es.iter()
            .map(|e| {
                ev(e).and_then(|v| usize::try_from(v).map_err(|_| format!("`{}`: negative dimension {v}", op.name)))
            })
            .collect()
    };
    let dtype = op.dtype;
    let shape = op.shape.iter().map(ev).collect::<Result<Vec<i64>, String>>()?;
    let concrete = match kind_of(op)? {
        PKind::Param => {
            Op::Parameter(op.attrs.get("index").and_then(Json::as_u64).ok_or("parameter without index")? as usize)
        }
        PKind::Const(values) => Op::Constant(crate::lang::Literal::from_values(&values)),
        PKind::ConstExpr(e) => Op::Constant(crate::lang::Literal::from_values(&[element_value(ev(&e)?, dtype)])),
        PKind::Plain(p) => p,
        PKind::Transpose(es) => Op::Transpose(evs(&es)?),
        PKind::Broadcast(es) => Op::Broadcast(evs(&es)?),
        PKind::ReduceAdd(es) => Op::ReduceAdd(evs(&es)?),
        PKind::Reduce(es, reducer) => Op::Reduce { dims: evs(&es)?, reducer },
        PKind::Concat(e) => Op::Concatenate(evs(std::slice::from_ref(&e))?[0]),
        PKind::Slice(ranges) => Op::Slice(
            ranges.iter().map(|[s, l, st]| Ok((ev(s)?, ev(l)?, ev(st)?))).collect::<Result<Vec<_>, String>>()?,
        ),
        PKind::Dot([lc, rc, lb, rb]) => Op::Dot(crate::lang::DotDims {
            lhs_contracting: evs(&lc)?,
            rhs_contracting: evs(&rc)?,
            lhs_batch: evs(&lb)?,
            rhs_batch: evs(&rb)?,
        }),
    };
    Ok((concrete, Ty::new(dtype, shape)))
}

/// An attribute's value as an element of `dtype`: integers wrap as the element type's
/// register would hold them.
pub fn element_value(v: i64, dtype: DType) -> f64 {
    if !dtype.is_int() {
        return v as f64;
    }
    let bits = 8 * dtype.bytes();
    if bits >= 64 {
        return v as f64;
    }
    let low = (v as u64) & ((1u64 << bits) - 1);
    if dtype.is_signed() && low >> (bits - 1) == 1 {
        (low as i64 - (1i64 << bits)) as f64
    } else {
        low as f64
    }
}

/// The integer a splat literal holds, if it holds one exactly.
fn integral(v: f64) -> Option<i64> {
    (v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15).then_some(v as i64)
}

fn mentions_addressing(e: &Expr) -> bool {
    e.attrs().iter().any(|a| !a.starts_with("c."))
}

/// The attribute expressions of a pattern node's operator.
fn kind_exprs(kind: &PKind) -> Vec<&Expr> {
    match kind {
        PKind::Param | PKind::Const(_) | PKind::Plain(_) => Vec::new(),
        PKind::ConstExpr(e) => vec![e],
        PKind::Transpose(es) | PKind::Broadcast(es) | PKind::ReduceAdd(es) | PKind::Reduce(es, _) => {
            es.iter().collect()
        }
        PKind::Concat(e) => vec![e],
        PKind::Slice(ranges) => ranges.iter().flatten().collect(),
        PKind::Dot(dims) => dims.iter().flatten().collect(),
    }
}

impl Pattern {
    fn compile(isa: &Isa, index: usize) -> Result<Pattern, String> {
        let instr = &isa.instructions[index];
        if instr.outputs.len() != 1 {
            return Err(format!("has {} output slices; one is supported", instr.outputs.len()));
        }
        let mut names: BTreeMap<&str, usize> = BTreeMap::new();
        let mut ops: Vec<POp> = Vec::new();
        let mut param_of: BTreeMap<usize, usize> = BTreeMap::new();
        for op in &instr.semantics {
            let mut kind = kind_of(op).map_err(|e| format!("`{}`: {e}", op.name))?;
            let dtype = op.dtype;
            let mut operands = op
                .operands
                .iter()
                .map(|n| {
                    names
                        .get(n.as_str())
                        .copied()
                        .ok_or_else(|| format!("`{}` uses `{n}` before it is defined", op.name))
                })
                .collect::<Result<Vec<usize>, String>>()?;
            if op.shape.iter().any(mentions_addressing) {
                return Err(format!("the shape of `{}` depends on addressing attributes", op.name));
            }
            if let PKind::Param = kind {
                let i = op
                    .attrs
                    .get("index")
                    .and_then(Json::as_u64)
                    .ok_or_else(|| format!("parameter `{}` has no index", op.name))? as usize;
                if param_of.insert(i, ops.len()).is_some() {
                    return Err(format!("parameter({i}) is declared twice"));
                }
            }
            // A reshape or broadcast of a one-element constant is the splat of its result.
            if matches!(kind, PKind::Plain(Op::Reshape) | PKind::Broadcast(_)) {
                if let [k] = operands[..] {
                    let splat = match &ops[k].kind {
                        PKind::Const(v) if v.len() == 1 => Some(ops[k].kind.clone()),
                        PKind::ConstExpr(_) => Some(ops[k].kind.clone()),
                        _ => None,
                    };
                    if let Some(splat) = splat {
                        kind = splat;
                        operands.clear();
                    }
                }
            }
            // reduce(x, 0) with add is the reduce_add the kernels are normalised to.
            if let PKind::Reduce(dims, Reducer::Add) = &kind {
                let zero_init = operands
                    .get(1)
                    .is_some_and(|&k| matches!(&ops[k].kind, PKind::Const(v) if v.iter().all(|x| x.to_bits() == 0)));
                if zero_init {
                    kind = PKind::ReduceAdd(dims.clone());
                    operands.truncate(1);
                }
            }
            names.insert(op.name.as_str(), ops.len());
            ops.push(POp { kind, dtype, shape: op.shape.clone(), operands });
        }
        if ops.is_empty() {
            return Err("has empty semantics".into());
        }
        let root = instr.semantics.iter().position(|o| o.root).unwrap_or(ops.len() - 1);
        Pattern::assemble(isa, index, ops, root, &param_of, Vec::new())
    }

    /// The pattern of `ops` rooted at `root`, with the `fixed` equations every match adds.
    fn assemble(
        isa: &Isa,
        index: usize,
        ops: Vec<POp>,
        root: usize,
        param_of: &BTreeMap<usize, usize>,
        fixed: Vec<Equation>,
    ) -> Result<Pattern, String> {
        let instr = &isa.instructions[index];
        let mut order = vec![root];
        let mut seen = vec![false; ops.len()];
        seen[root] = true;
        let mut k = 0;
        while k < order.len() {
            for &o in &ops[order[k]].operands {
                if !seen[o] {
                    seen[o] = true;
                    order.push(o);
                }
            }
            k += 1;
        }
        // Attributes a match can determine: those the shapes and attributes mention.
        let mentioned: BTreeSet<String> = ops
            .iter()
            .flat_map(|o| o.shape.iter().chain(kind_exprs(&o.kind)))
            .flat_map(Expr::attrs)
            .collect();
        let unknowns: Vec<String> = instr.comp_attrs.iter().map(|a| format!("c.{a}")).collect();
        let (determined, free): (Vec<String>, Vec<String>) =
            unknowns.iter().cloned().partition(|u| mentioned.contains(u));
        let in_shapes: BTreeSet<String> = ops
            .iter()
            .flat_map(|o| o.shape.iter().chain(if matches!(o.kind, PKind::ConstExpr(_)) { vec![] } else { kind_exprs(&o.kind) }))
            .flat_map(Expr::attrs)
            .collect();
        let signed = determined.iter().filter(|u| !in_shapes.contains(*u)).cloned().collect();
        for (what, slice) in instr
            .inputs
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("input slice {i}"), s))
            .chain(std::iter::once(("the output slice".to_string(), &instr.outputs[0])))
        {
            let sized_by: Vec<String> = slice.size.iter().flat_map(Expr::attrs).collect();
            if let Some(a) = free.iter().find(|f| sized_by.contains(f)) {
                return Err(format!(
                    "computational attribute `{}` sizes {what} but no shape or attribute of the \
                     semantics uses it, so no match can determine it",
                    &a[2..]
                ));
            }
        }
        let mut params = Vec::new();
        for i in 0..instr.inputs.len() {
            match param_of.get(&i) {
                Some(&p) if seen[p] => params.push(p),
                Some(_) => return Err(format!("input slice {i} (parameter {i}) does not reach the ROOT")),
                None => return Err(format!("input slice {i} has no parameter({i})")),
            }
        }
        if let Some((&extra, _)) = param_of.iter().find(|(&i, _)| i >= instr.inputs.len()) {
            return Err(format!("parameter({extra}) has no input slice"));
        }
        let constraints = instr.constraints.iter().filter(|c| c.is_computational()).cloned().collect();
        let (checks, transparent) = if reinterprets_on_chip(isa) {
            byte_views(isa, instr, &ops, root, &params)
        } else {
            (vec![Check::Shape; ops.len()], vec![false; ops.len()])
        };
        Ok(Pattern {
            instr: index,
            name: instr.name.clone(),
            ops,
            root,
            order,
            params,
            unknowns,
            determined,
            free,
            signed,
            fixed,
            constraints,
            checks,
            transparent,
        })
    }

    /// The variant of the pattern in which every slice that may keep all of its operand does:
    /// each such slice is its operand, its starts fixed at 0, its strides at 1 and its limits
    /// at its operand's extents, and a reshape of a reshape is one reshape. A load of a window
    /// of rows `stride` long (AMX's `tileloadd`, Gemmini's strided `mvin`) then also matches a
    /// whole matrix as a load of consecutive bytes does, its stride the matrix's row length.
    /// `None` where no slice can be whole.
    fn whole_slice_variant(&self, isa: &Isa) -> Result<Option<Pattern>, String> {
        let mut ops = self.ops.clone();
        let mut fixed = self.fixed.clone();
        let mut replaced: BTreeMap<usize, usize> = BTreeMap::new();
        for (o, pop) in self.ops.iter().enumerate() {
            let (PKind::Slice(ranges), &[x]) = (&pop.kind, &pop.operands[..]) else { continue };
            let mut eqs = Vec::new();
            for (r, extent) in ranges.iter().zip(&self.ops[x].shape) {
                eqs.push((r[0].clone(), 0));
                eqs.push((r[2].clone(), 1));
                eqs.push((Expr::Sub(Box::new(extent.clone()), Box::new(r[1].clone())), 0));
            }
            // Equations without attributes must hold as they are; the rest go to every match.
            let (constant, open): (Vec<Equation>, Vec<Equation>) = eqs.into_iter().partition(|(e, _)| e.attrs().is_empty());
            if constant.iter().any(|(e, v)| e.eval(&BTreeMap::new()) != Ok(*v)) {
                continue;
            }
            fixed.extend(open);
            replaced.insert(o, x);
        }
        if replaced.is_empty() {
            return Ok(None);
        }
        let source = |mut k: usize| {
            while let Some(&x) = replaced.get(&k) {
                k = x;
            }
            k
        };
        for o in 0..ops.len() {
            let mut operands: Vec<usize> = ops[o].operands.iter().map(|&k| source(k)).collect();
            // A reshape of a reshape is one reshape of the inner one's operand.
            if let (PKind::Plain(Op::Reshape), [x]) = (&ops[o].kind, &mut operands[..]) {
                while let (PKind::Plain(Op::Reshape), &[inner]) = (&ops[*x].kind, &ops[*x].operands[..]) {
                    *x = inner;
                }
            }
            ops[o].operands = operands;
        }
        let root = source(self.root);
        // Nodes the variant no longer reaches read nothing (they would count as users).
        let mut reached = vec![false; ops.len()];
        let mut stack = vec![root];
        while let Some(k) = stack.pop() {
            if !std::mem::replace(&mut reached[k], true) {
                stack.extend(ops[k].operands.iter().copied());
            }
        }
        for (op, _) in ops.iter_mut().zip(&reached).filter(|(_, &r)| !r) {
            op.operands.clear();
        }
        let param_of: BTreeMap<usize, usize> = self.params.iter().copied().enumerate().collect();
        Pattern::assemble(isa, self.instr, ops, root, &param_of, fixed).map(Some)
    }

    /// The variants of the pattern without one elementwise operator whose other operand is a
    /// splat of an attribute expression, for the value that makes the operator the identity:
    /// `x * c` and `x / c` with `c = 1`, `x - c` with `c = 0`, and integer `x + c` with
    /// `c = 0` (a float `-0 + 0` is `+0`). Each variant is exactly the instruction with the
    /// attribute at that value.
    fn identity_variants(&self, isa: &Isa) -> Result<Vec<Pattern>, String> {
        let mut out = Vec::new();
        for (o, pop) in self.ops.iter().enumerate() {
            let PKind::Plain(op) = &pop.kind else { continue };
            let [l, r] = pop.operands[..] else { continue };
            let splat = |k: usize| match &self.ops[k].kind {
                PKind::ConstExpr(e) => Some(e.clone()),
                _ => None,
            };
            let candidates: Vec<(usize, Expr, i64)> = match op {
                Op::Multiply => [(l, r), (r, l)].iter().filter_map(|&(x, c)| Some((x, splat(c)?, 1))).collect(),
                Op::Add if pop.dtype.is_int() => {
                    [(l, r), (r, l)].iter().filter_map(|&(x, c)| Some((x, splat(c)?, 0))).collect()
                }
                Op::Divide => splat(r).map(|e| (l, e, 1)).into_iter().collect(),
                Op::Subtract => splat(r).map(|e| (l, e, 0)).into_iter().collect(),
                _ => Vec::new(),
            };
            for (kept, value, identity) in candidates.into_iter().take(1) {
                let mut ops = self.ops.clone();
                for other in &mut ops {
                    for operand in &mut other.operands {
                        if *operand == o {
                            *operand = kept;
                        }
                    }
                }
                let root = if self.root == o { kept } else { self.root };
                let param_of: BTreeMap<usize, usize> = self.params.iter().copied().enumerate().collect();
                let mut fixed = self.fixed.clone();
                fixed.push((value, identity));
                out.push(Pattern::assemble(isa, self.instr, ops, root, &param_of, fixed)?);
            }
        }
        Ok(out)
    }
}

impl Patterns {
    /// The patterns of every instruction of `isa`; an instruction that cannot become one is
    /// an error naming it.
    pub fn compile(isa: &Isa) -> Result<Patterns, TableError> {
        let mut list = Vec::new();
        let mut ops = BTreeSet::new();
        let mut free = Vec::new();
        for (index, instr) in isa.instructions.iter().enumerate() {
            let pattern = Pattern::compile(isa, index)
                .map_err(|reason| TableError::Unusable { instruction: instr.name.clone(), reason })?;
            ops.extend(
                instr
                    .semantics
                    .iter()
                    .map(|o| o.op),
            );
            free.extend(pattern.free.iter().map(|u| FreeAttribute {
                instr: index,
                instruction: instr.name.clone(),
                attribute: u["c.".len()..].to_string(),
                value: FREE_VALUE,
            }));
            let unusable = |reason| TableError::Unusable { instruction: instr.name.clone(), reason };
            let variants = pattern.identity_variants(isa).map_err(unusable)?;
            for pattern in std::iter::once(pattern).chain(variants) {
                let whole = pattern.whole_slice_variant(isa).map_err(unusable)?;
                list.push(pattern);
                list.extend(whole);
            }
        }
        Ok(Patterns { list, ops, free })
    }
}

/// A match: `node` (a PII) equals class `class`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub class: Id,
    pub node: Node,
}

struct Search<'a> {
    eg: &'a SelGraph,
    isa: &'a Isa,
    pat: &'a Pattern,
    bind: Vec<Option<Id>>,
    eqs: Vec<Equation>,
    out: &'a mut Vec<Match>,
}

fn is_view(kind: &PKind) -> bool {
    matches!(kind, PKind::Plain(Op::Reshape | Op::BitcastConvert))
}

/// The users of each node of `ops`.
fn users_of(ops: &[POp]) -> Vec<Vec<usize>> {
    let mut users = vec![Vec::new(); ops.len()];
    for (o, op) in ops.iter().enumerate() {
        for &k in &op.operands {
            if !users[k].contains(&o) {
                users[k].push(o);
            }
        }
    }
    users
}

/// The chain of reshapes and bit casts from node `from` up through sole users, with the node
/// the chain ends at (the first that is no reshape or bit cast, or has several users): a
/// register's bytes seen as the value an operation takes.
fn chain_up(ops: &[POp], users: &[Vec<usize>], from: usize) -> (Vec<usize>, usize) {
    let mut chain = Vec::new();
    let mut cur = from;
    while let [u] = users[cur][..] {
        if !is_view(&ops[u].kind) {
            return (chain, u);
        }
        chain.push(u);
        cur = u;
    }
    (chain, cur)
}

/// Whether some instruction of `isa` reads a register's bytes as another element type for an
/// operation (a bit cast between an on-chip parameter and what computes with it), or writes a
/// result's bytes into a register of another type: an AMX-style tile of int8 holding the
/// uint8 operand and the int32 accumulator of one dot-product instruction. Only then do
/// patterns match through [`byte_views`].
pub fn reinterprets_on_chip(isa: &Isa) -> bool {
    let view = |op: &crate::isa::Op| matches!(op.op, OpCode::Reshape | OpCode::BitcastConvert);
    isa.instructions.iter().any(|instr| {
        let ops = &instr.semantics;
        let find = |name: &str| ops.iter().position(|o| o.name == name);
        let users = |k: usize| -> Vec<usize> {
            (0..ops.len()).filter(|&u| ops[u].operands.iter().any(|n| n == &ops[k].name)).collect()
        };
        let out_on_chip = instr.outputs.first().is_some_and(|s| !isa.buffer(&s.buffer).is_hbm());
        // An on-chip parameter's bytes cast on their way to an operation whose result stays on
        // chip (not a store writing them into HBM).
        let casts_param = out_on_chip && ops.iter().enumerate().any(|(p, op)| {
            let on_chip = op.op == OpCode::Parameter
                && op.attrs.get("index").and_then(Json::as_u64).and_then(|i| instr.inputs.get(i as usize)).is_some_and(|s| !isa.buffer(&s.buffer).is_hbm());
            if !on_chip {
                return false;
            }
            let (mut k, mut cast) = (p, false);
            loop {
                match users(k)[..] {
                    [u] if view(&ops[u]) => {
                        cast |= ops[u].op == OpCode::BitcastConvert;
                        k = u;
                    }
                    [_] => return cast,
                    _ => return false,
                }
            }
        });
        // A result cast on its way into a register.
        let casts_result = out_on_chip && {
            let mut k = ops.iter().position(|o| o.root).unwrap_or(ops.len().saturating_sub(1));
            let mut cast = false;
            while ops.get(k).is_some_and(view) {
                cast |= ops[k].op == OpCode::BitcastConvert;
                match ops[k].operands.first().and_then(|n| find(n)) {
                    Some(next) => k = next,
                    None => break,
                }
            }
            cast && ops.get(k).is_some_and(|o| o.op != OpCode::Parameter)
        };
        casts_param || casts_result
    })
}

/// How each node of a pattern is held to its class, and which reshapes and bit casts may be
/// transparent (bind their operand to their own class: the same bytes). On-chip parameters
/// are bytes, and so is every reshape or bit cast between one and what reads it, except the
/// last, whose value is what that reader computes with (a `convert` of `u8` bytes is not one
/// of `s8` bytes): it is held to its class's type. A result written into a register through
/// reshapes and bit casts is bytes down to what computes it, or down to the byte string a
/// load reads from HBM, which keeps its exact shape; of a load's reshapes and bit casts only
/// one that keeps the width is transparent (a `u8` kernel value in an `s8` tile).
fn byte_views(isa: &Isa, instr: &crate::isa::Instruction, ops: &[POp], root: usize, params: &[usize]) -> (Vec<Check>, Vec<bool>) {
    let mut checks = vec![Check::Shape; ops.len()];
    let mut transparent = vec![false; ops.len()];
    let users = users_of(ops);
    for (i, &p) in params.iter().enumerate() {
        if isa.buffer(&instr.inputs[i].buffer).is_hbm() {
            continue;
        }
        let (chain, end) = chain_up(ops, &users, p);
        if chain.is_empty() {
            continue;
        }
        checks[p] = Check::Bytes;
        let last = chain.len() - 1;
        for (k, &v) in chain.iter().enumerate() {
            if v == root && isa.buffer(&instr.outputs[0].buffer).is_hbm() {
                // The bytes written to HBM are the kernel's, as they are.
                break;
            }
            transparent[v] = true;
            // The last view before a computation is held to its class's type; an on-chip
            // result is bytes.
            if k < last || (end == v && v == root) {
                checks[v] = Check::Bytes;
            }
        }
    }
    if !isa.buffer(&instr.outputs[0].buffer).is_hbm() {
        // Zero bytes are zero in every type: a register cleared as int8 holds an int32 zero.
        if matches!(&ops[root].kind, PKind::Const(v) if v.len() == 1 && v[0].to_bits() == 0) {
            checks[root] = Check::Bytes;
        }
        let mut k = root;
        while is_view(&ops[k].kind) {
            let Some(&next) = ops[k].operands.first() else { break };
            let same_width = matches!(ops[k].kind, PKind::Plain(Op::BitcastConvert)) && ops[k].dtype.bytes() == ops[next].dtype.bytes();
            if chain_reaches_hbm(ops, params, isa, instr, next) {
                // A load: the byte string read is held to its shape; what it becomes on the
                // way is bytes (an int32 addend read into an int8 tile).
                checks[k] = Check::Bytes;
                transparent[k] = same_width;
            } else {
                checks[k] = Check::Bytes;
                transparent[k] = true;
            }
            k = next;
        }
    }
    (checks, transparent)
}

/// Whether node `k` is an HBM parameter, or reshapes and bit casts of one.
fn chain_reaches_hbm(ops: &[POp], params: &[usize], isa: &Isa, instr: &crate::isa::Instruction, mut k: usize) -> bool {
    loop {
        match &ops[k].kind {
            PKind::Param => {
                return params.iter().position(|&p| p == k).is_some_and(|i| isa.buffer(&instr.inputs[i].buffer).is_hbm())
            }
            kind if is_view(kind) => match ops[k].operands.first() {
                Some(&next) => k = next,
                None => return false,
            },
            _ => return false,
        }
    }
}

/// A pattern shape without its constant dimensions of one.
fn without_units(shape: &[Expr]) -> Vec<Expr> {
    shape.iter().filter(|e| !matches!(e, Expr::Int(1))).cloned().collect()
}

/// Whether a pattern node computes the same row-major bytes whatever dimensions of one its
/// value and operands have: a parameter (bytes in a buffer), a constant, an elementwise
/// operation, a conversion, a copy and a reshape. An operator with dimension attributes
/// (a product, transpose, broadcast, reduction, slice or concatenation) is matched as the
/// semantics shape it.
fn ignores_unit_dims(kind: &PKind) -> bool {
    match kind {
        PKind::Param | PKind::Const(_) | PKind::ConstExpr(_) => true,
        PKind::Plain(op) => {
            op.is_elementwise() || matches!(op, Op::Convert | Op::BitcastConvert | Op::Copy | Op::Reshape)
        }
        _ => false,
    }
}

/// Whether the operands of `node` may be swapped bit for bit: integer and IEEE addition and
/// multiplication (a NaN operand gives a NaN either way), `xor`, and integer maximum and
/// minimum (a float one may return `-0` or `+0` depending on the order).
fn commutes(node: &Node) -> bool {
    match node.op {
        Op::Add | Op::Multiply | Op::Xor => true,
        Op::Maximum | Op::Minimum => !node.ty.dtype.is_float(),
        _ => false,
    }
}

impl<'a> Search<'a> {
    /// Records `e = v`; false when `e` is a constant other than `v`.
    fn equate(&mut self, e: &Expr, v: i64) -> bool {
        if e.attrs().is_empty() {
            return e.eval(&BTreeMap::new()) == Ok(v);
        }
        self.eqs.push((e.clone(), v));
        true
    }

    fn equate_all(&mut self, es: &[Expr], vs: impl ExactSizeIterator<Item = i64>) -> bool {
        es.len() == vs.len() && es.iter().zip(vs).all(|(e, v)| self.equate(e, v))
    }

    /// [`Search::equate_all`] of a pattern shape and a class shape with every dimension of
    /// one left out of both (constant ones only, on the pattern's side).
    fn equate_but_units(&mut self, es: &[Expr], vs: &[i64]) -> bool {
        let es = without_units(es);
        let vs: Vec<i64> = vs.iter().copied().filter(|&v| v != 1).collect();
        self.equate_all(&es, vs.into_iter())
    }

    fn kind_matches(&mut self, kind: &PKind, op: &Op) -> bool {
        let us = |v: &Vec<usize>| v.iter().map(|&d| d as i64).collect::<Vec<i64>>().into_iter();
        match (kind, op) {
            (PKind::Plain(p), o) => p == o,
            (PKind::ConstExpr(e), Op::Constant(lit)) => {
                lit.splat().and_then(integral).is_some_and(|v| self.equate(e, v))
            }
            (PKind::Const(values), Op::Constant(lit)) => {
                if let [v] = values.as_slice() {
                    lit.splat().is_some_and(|s| s.to_bits() == v.to_bits())
                } else {
                    lit.bits.len() == values.len() && lit.bits.iter().zip(values).all(|(b, v)| *b == v.to_bits())
                }
            }
            (PKind::Transpose(es), Op::Transpose(d))
            | (PKind::Broadcast(es), Op::Broadcast(d))
            | (PKind::ReduceAdd(es), Op::ReduceAdd(d)) => self.equate_all(es, us(d)),
            (PKind::Reduce(es, r), Op::Reduce { dims, reducer }) => r == reducer && self.equate_all(es, us(dims)),
            (PKind::Concat(e), Op::Concatenate(d)) => self.equate(e, *d as i64),
            (PKind::Slice(ranges), Op::Slice(actual)) => {
                ranges.len() == actual.len()
                    && ranges.iter().zip(actual).all(|(r, &(s, l, st))| {
                        self.equate(&r[0], s) && self.equate(&r[1], l) && self.equate(&r[2], st)
                    })
            }
            (PKind::Dot([lc, rc, lb, rb]), Op::Dot(d)) => {
                self.equate_all(lc, us(&d.lhs_contracting))
                    && self.equate_all(rc, us(&d.rhs_contracting))
                    && self.equate_all(lb, us(&d.lhs_batch))
                    && self.equate_all(rb, us(&d.rhs_batch))
            }
            _ => false,
        }
    }

    fn step(&mut self, pos: usize) {
        let eg = self.eg;
        let pat = self.pat;
        if pos == pat.order.len() {
            self.finish();
            return;
        }
        let o = pat.order[pos];
        let pop = &pat.ops[o];
        let class = self.bind[o].expect("bound by a user earlier in the order");
        let ty = &eg[class].data;
        let mark = self.eqs.len();
        let exact = ty.dtype == pop.dtype && self.equate_all(&pop.shape, ty.shape.iter().copied());
        if !exact {
            self.eqs.truncate(mark);
        }
        // The same bytes seen with dimensions of one added or dropped (`s32[1,16,16]` for a
        // register of `s32[16,16]`): an operation that does not look at its dimensions
        // computes them alike.
        let bytes = pat.checks[o] == Check::Bytes;
        let shaped = bytes
            || exact
            || (ty.dtype == pop.dtype && ignores_unit_dims(&pop.kind) && self.equate_but_units(&pop.shape, &ty.shape));
        if shaped {
            // A reshape that only adds or drops dimensions of one is the value itself, and so
            // is a reshape or bit cast of a register's bytes (`byte_views`).
            if let (PKind::Plain(Op::Reshape | Op::BitcastConvert), &[q]) = (&pop.kind, &pop.operands[..]) {
                let units_only = matches!(pop.kind, PKind::Plain(Op::Reshape))
                    && without_units(&pop.shape) == without_units(&pat.ops[q].shape);
                if units_only || pat.transparent[o] {
                    self.bind_operands(pos, &pop.operands, &[class]);
                }
            }
            if let PKind::Param = pop.kind {
                self.step(pos + 1);
            } else {
                for node in &eg[class].nodes {
                    if node.children.len() != pop.operands.len() || node.is_pii() {
                        continue;
                    }
                    let inner = self.eqs.len();
                    if self.kind_matches(&pop.kind, &node.op) {
                        let children: Vec<Id> = node.children.iter().map(|&c| eg.find(c)).collect();
                        self.bind_operands(pos, &pop.operands, &children);
                        // `x + y` is `y + x`: the semantics' order of the operands is no
                        // constraint on the kernel's.
                        if commutes(node) && children[0] != children[1] {
                            self.bind_operands(pos, &pop.operands, &[children[1], children[0]]);
                        }
                    }
                    self.eqs.truncate(inner);
                }
            }
        }
        self.eqs.truncate(mark);
    }

    /// Binds the pattern operands `operands` to `children` and goes on with the next pattern
    /// node, unless an operand is already bound to another class.
    fn bind_operands(&mut self, pos: usize, operands: &[usize], children: &[Id]) {
        let mut newly = Vec::new();
        let mut consistent = true;
        for (&p, &child) in operands.iter().zip(children) {
            match self.bind[p] {
                Some(b) if b != child => {
                    consistent = false;
                    break;
                }
                Some(_) => {}
                None => {
                    self.bind[p] = Some(child);
                    newly.push(p);
                }
            }
        }
        if consistent {
            self.step(pos + 1);
        }
        for p in newly {
            self.bind[p] = None;
        }
    }

    fn finish(&mut self) {
        let eqs: Vec<Equation> = self.pat.fixed.iter().chain(&self.eqs).cloned().collect();
        let Ok(mut env) = solve::solve_signed(&eqs, &self.pat.determined, &self.pat.signed) else { return };
        env.extend(self.pat.free.iter().map(|u| (u.clone(), FREE_VALUE)));
        if self.pat.constraints.iter().any(|c| c.holds(&env) != Some(true)) {
            return;
        }
        let instr = &self.isa.instructions[self.pat.instr];
        let class_of = |p: usize| self.bind[p].expect("every pattern node is bound");
        let values: Vec<Id> = self.pat.params.iter().map(|&p| class_of(p)).collect();
        let root = class_of(self.pat.root);
        for (slice, value) in instr.inputs.iter().zip(&values).chain(instr.outputs.iter().zip(std::iter::once(&root))) {
            let Some(bytes) = slice_bytes(self.isa, slice, &env) else { return };
            if bytes != self.eg[*value].data.bytes() {
                return;
            }
        }
        let comp = self.pat.unknowns.iter().map(|u| env[u]).collect();
        let ty: Ty = self.eg[root].data.clone();
        self.out.push(Match { class: root, node: Node::new(Op::Pii { instr: self.pat.instr, comp }, ty, values) });
    }
}

/// Bytes a slice holds once the computational attributes are known; `None` when a size is
/// not positive, exceeds its buffer, or cannot be evaluated.
pub fn slice_bytes(isa: &Isa, slice: &crate::isa::Slice, env: &BTreeMap<String, i64>) -> Option<i64> {
    let buffer = isa.buffer(&slice.buffer);
    if slice.size.len() != buffer.access_dims.len() {
        return None;
    }
    let mut count: i64 = buffer.unit_dims.iter().product();
    for (size, cap) in slice.size.iter().zip(&buffer.access_dims) {
        let v = size.eval(env).ok()?;
        if v <= 0 || cap.is_some_and(|c| v > c) {
            return None;
        }
        count = count.checked_mul(v)?;
    }
    Some(count * i64::from(buffer.dtype.bytes()))
}

/// Evaluated sizes of a slice (`None` as in [`slice_bytes`]).
pub fn slice_sizes(isa: &Isa, slice: &crate::isa::Slice, env: &BTreeMap<String, i64>) -> Option<Vec<i64>> {
    slice_bytes(isa, slice, env)?;
    slice.size.iter().map(|s| s.eval(env).ok()).collect()
}

/// Every match of every pattern, over classes in increasing id order.
pub fn find(eg: &SelGraph, isa: &Isa, patterns: &Patterns) -> Vec<Match> {
    let mut ids: Vec<Id> = eg.classes().map(|c| c.id).collect();
    ids.sort();
    find_in(eg, isa, patterns, &ids)
}

/// [`find`] for the patterns rooted at the canonical classes `ids`, in their order.
pub fn find_in(eg: &SelGraph, isa: &Isa, patterns: &Patterns, ids: &[Id]) -> Vec<Match> {
    crate::parallel::search_chunks(ids, |part| {
        let mut out = Vec::new();
        for &id in part {
            for pat in &patterns.list {
                let mut bind = vec![None; pat.ops.len()];
                bind[pat.root] = Some(id);
                let mut search = Search { eg, isa, pat, bind, eqs: Vec::new(), out: &mut out };
                search.step(0);
            }
        }
        out
    })
}

/// Adds the matched PIIs to their classes and rebuilds; returns whether anything was new.
pub fn apply(eg: &mut SelGraph, matches: &[Match]) -> bool {
    let mut changed = false;
    for m in matches {
        let before = eg.total_size();
        let id = eg.add(m.node.clone());
        changed |= eg.total_size() != before;
        changed |= eg.union(m.class, id);
    }
    eg.rebuild();
    changed
}
