//! Result types of the operators of [`crate::lang::Op`], with the rules the ISA semantics use
//! (XLA's, plus size-1 broadcasting): kernels are checked with them, and rewrites use them to
//! type the e-nodes they create. A [`TypeError`] carries the stable code the Python checker
//! (`act_backend.hlo.infer`) reports the same error under and the part of the instruction at
//! fault, so that both front ends give one verdict at one position (the shared case table
//! `tests/conformance/infer_cases.json` holds them to it).

use crate::lang::{DType, DotDims, Family, Op, OpCode, OperandClass, Ty};
use crate::vocabulary::COMPARISON_DIRECTIONS;
use std::fmt;

/// The part of an instruction a type error points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    Opcode,
    /// Operand `i` as written.
    Operand(usize),
    /// The attribute of that name.
    Attr(&'static str),
    /// The declared result type.
    Declared,
}

/// A type error: a stable kebab-case code (the Python checker's), where it lies, and what is
/// wrong. `Display` is the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeError {
    pub code: &'static str,
    pub site: Site,
    pub message: String,
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TypeError {}

fn operand_err(i: usize, message: String) -> TypeError {
    TypeError { code: "operand-type-mismatch", site: Site::Operand(i), message }
}

fn attr_err(name: &'static str, message: String) -> TypeError {
    TypeError { code: "bad-attribute", site: Site::Attr(name), message }
}

fn declared_err(message: String) -> TypeError {
    TypeError { code: "declared-type-mismatch", site: Site::Declared, message }
}

/// `n` operands, else an `operand-count` error at the first extra operand or the opcode.
pub fn arity(name: &str, operands: &[&Ty], n: usize) -> Result<(), TypeError> {
    if operands.len() == n {
        return Ok(());
    }
    let site = if operands.len() > n { Site::Operand(n) } else { Site::Opcode };
    Err(TypeError {
        code: "operand-count",
        site,
        message: format!("{name} takes {n} operand(s), found {}", operands.len()),
    })
}

/// Operand `j` has the element type of operand `i`.
fn same_dtype(operands: &[&Ty], i: usize, j: usize) -> Result<(), TypeError> {
    let (a, b) = (operands[i], operands[j]);
    if a.dtype != b.dtype {
        return Err(operand_err(j, format!("operand {j} is {b} but operand {i} is {a}: element types differ")));
    }
    Ok(())
}

/// Operand `j` has the shape of operand `i`.
fn same_shape(operands: &[&Ty], i: usize, j: usize) -> Result<(), TypeError> {
    let (a, b) = (operands[i], operands[j]);
    if a.shape != b.shape {
        return Err(operand_err(j, format!("operand {j} is {b} but operand {i} is {a}: shapes differ")));
    }
    Ok(())
}

/// The element type of operand `i` is in the operator's operand class.
fn dtype_in_class(name: &str, operands: &[&Ty], i: usize, class: OperandClass) -> Result<(), TypeError> {
    let dtype = operands[i].dtype;
    let (ok, wanted) = match class {
        OperandClass::Any => (true, ""),
        OperandClass::Float => (dtype.is_float(), "a floating-point"),
        OperandClass::Bits => (!dtype.is_float(), "an integer or pred"),
        OperandClass::Integer => (dtype.is_int(), "an integer"),
    };
    if !ok {
        return Err(operand_err(i, format!("{name} needs {wanted} operand, found {}", operands[i])));
    }
    Ok(())
}

/// The type `op` produces from `operands`. `declared` supplies what the operands do not
/// determine (the target of reshape, convert and bitcast-convert, a broadcast's result shape,
/// a dot's element type, constants and operators without a rule) and is checked against the
/// rest by [`check`].
pub fn infer(op: &Op, operands: &[&Ty], declared: &Ty) -> Result<Ty, TypeError> {
    let name = op.hlo_name();
    let inferred = match op {
        Op::Parameter(_) | Op::Input(_) | Op::Constant(_) | Op::Uninit(_) | Op::Pii { .. } => declared.clone(),
        Op::Other { name, attrs } => match OpCode::parse(name) {
            Some(code) => infer_by_family(code, attrs, operands, declared)?,
            None => declared.clone(),
        },
        Op::Reshape => {
            arity(name, operands, 1)?;
            let src = operands[0];
            if src.elements() != declared.elements() {
                return Err(declared_err(format!(
                    "reshape cannot change the element count: {src} has {} elements, {declared} has {}",
                    src.elements(),
                    declared.elements()
                )));
            }
            src.with_shape(declared.shape.clone())
        }
        Op::Convert => {
            arity(name, operands, 1)?;
            operands[0].with_dtype(declared.dtype)
        }
        Op::BitcastConvert => {
            arity(name, operands, 1)?;
            bitcast_type(operands[0], declared.dtype)?
        }
        Op::Copy => unary(OpCode::Copy, operands)?,
        Op::Exponential => unary(OpCode::Exponential, operands)?,
        Op::Transpose(perm) => {
            arity(name, operands, 1)?;
            transpose_type(operands[0], perm)?
        }
        Op::Slice(ranges) => {
            arity(name, operands, 1)?;
            slice_type(operands[0], ranges)?
        }
        Op::Concatenate(dim) => {
            if operands.is_empty() {
                return Err(TypeError {
                    code: "operand-count",
                    site: Site::Opcode,
                    message: "concatenate takes at least one operand".into(),
                });
            }
            concat_type(operands, *dim)?
        }
        // Each part lies inside the result at its start, the rest of the shape the same.
        Op::Overlay { dim, starts } => {
            let fits = starts.len() == operands.len()
                && operands.iter().zip(starts).all(|(o, &s)| {
                    o.dtype == declared.dtype
                        && o.rank() == declared.rank()
                        && *dim < o.rank()
                        && s >= 0
                        && s + o.shape[*dim] <= declared.shape[*dim]
                        && o.shape.iter().zip(&declared.shape).enumerate().all(|(d, (a, b))| d == *dim || a == b)
                });
            if !fits {
                return Err(TypeError {
                    code: "operand-type-mismatch",
                    site: Site::Opcode,
                    message: format!("an overlay's parts at {starts:?} along {dim} do not lie inside {declared}"),
                });
            }
            declared.clone()
        }
        Op::Dot(dims) => {
            arity(name, operands, 2)?;
            dot_type(operands[0], operands[1], dims, declared.dtype)?
        }
        Op::Broadcast(dims) => {
            arity(name, operands, 1)?;
            broadcast_check(operands[0], dims, &declared.shape)?;
            operands[0].with_shape(declared.shape.clone())
        }
        Op::Reduce { dims, .. } => {
            arity(name, operands, 2)?;
            let init = operands[1];
            if !init.shape.is_empty() {
                return Err(operand_err(1, format!("the init value (operand 1) must be a scalar, found {init}")));
            }
            same_dtype(operands, 0, 1)?;
            reduce_type(operands[0], dims)?
        }
        Op::ReduceAdd(dims) => {
            arity(name, operands, 1)?;
            reduce_type(operands[0], dims)?
        }
        Op::Add => binary(OpCode::Add, operands)?,
        Op::Subtract => binary(OpCode::Subtract, operands)?,
        Op::Multiply => binary(OpCode::Multiply, operands)?,
        Op::Divide => binary(OpCode::Divide, operands)?,
        Op::Maximum => binary(OpCode::Maximum, operands)?,
        Op::Minimum => binary(OpCode::Minimum, operands)?,
        Op::Xor => binary(OpCode::Xor, operands)?,
        Op::SelectLt | Op::SelectEqVar => {
            arity(name, operands, 4)?;
            same_dtype(operands, 0, 1)?;
            same_dtype(operands, 2, 3)?;
            for j in 1..4 {
                same_shape(operands, 0, j)?;
            }
            operands[2].clone()
        }
        Op::DynamicUpdateSlice => {
            if operands.len() < 2 {
                // At the last operand written, as the checker points at a short operand list.
                let site = operands.len().checked_sub(1).map_or(Site::Opcode, Site::Operand);
                return Err(TypeError {
                    code: "operand-count",
                    site,
                    message: "dynamic-update-slice takes an operand, an update and start indices".into(),
                });
            }
            let (base, update) = (operands[0], operands[1]);
            same_dtype(operands, 0, 1)?;
            if base.rank() != update.rank() {
                return Err(operand_err(1, format!("the update {update} must have the rank of the operand {base}")));
            }
            if base.shape.iter().zip(&update.shape).any(|(b, u)| u > b) {
                return Err(operand_err(1, format!("the update {update} is larger than the operand {base}")));
            }
            start_indices(operands, 2, base.rank())?;
            base.clone()
        }
    };
    Ok(inferred)
}

/// The rule of an operator the e-graph keeps by name, from its vocabulary row: elementwise
/// families by their operand class, compare, select, clamp and is-finite, and iota,
/// dynamic-slice, reverse, pad, reduce-precision, reduce-window and convolution by their attributes (`attrs` is the
/// `name=value, ...` text [`Op::Other`] keeps). Operators of other families produce their
/// declared type.
fn infer_by_family(code: OpCode, attrs: &str, operands: &[&Ty], declared: &Ty) -> Result<Ty, TypeError> {
    let info = code.info();
    let attr = |key: &str| crate::lang::attribute(attrs, key);
    let required = |key: &'static str| {
        attr(key).ok_or_else(|| TypeError {
            code: "missing-attribute",
            site: Site::Opcode,
            message: format!("{} needs the attribute {key}=", code.name()),
        })
    };
    // An integer attribute of at least `least` (reduce-precision's bit counts).
    let bits = |key: &'static str, least: i64| -> Result<(), TypeError> {
        let text = required(key)?;
        match text.parse::<i64>() {
            Ok(n) if n >= least => Ok(()),
            _ => Err(attr_err(key, format!("{key} must be an integer of at least {least}, found {text}"))),
        }
    };
    Ok(match (info.family, code) {
        (Family::Unary, OpCode::ReducePrecision) => {
            let ty = unary(code, operands)?;
            bits("exponent_bits", 1)?;
            bits("mantissa_bits", 0)?;
            ty
        }
        (Family::Unary, _) => unary(code, operands)?,
        (Family::Binary, _) => binary(code, operands)?,
        (Family::Compare, _) => {
            arity(code.name(), operands, 2)?;
            same_dtype(operands, 0, 1)?;
            same_shape(operands, 0, 1)?;
            let direction = required("direction")?;
            if !COMPARISON_DIRECTIONS.contains(&direction) {
                return Err(attr_err(
                    "direction",
                    format!("direction must be one of {}, found {direction}", COMPARISON_DIRECTIONS.join(", ")),
                ));
            }
            operands[0].with_dtype(DType::Pred)
        }
        (Family::Select, OpCode::Select) => {
            arity(code.name(), operands, 3)?;
            if operands[0].dtype != DType::Pred {
                return Err(operand_err(
                    0,
                    format!("the predicate (operand 0) must have element type pred, found {}", operands[0]),
                ));
            }
            same_dtype(operands, 1, 2)?;
            same_shape(operands, 1, 2)?;
            if !operands[0].shape.is_empty() {
                same_shape(operands, 1, 0)?;
            }
            operands[1].clone()
        }
        (Family::Clamp, _) => {
            // XLA's clamp(lo, x, hi): the bounds are scalars or of x's shape, all of x's type.
            arity(code.name(), operands, 3)?;
            for j in [0, 2] {
                same_dtype(operands, 1, j)?;
                if !operands[j].shape.is_empty() {
                    same_shape(operands, 1, j)?;
                }
            }
            operands[1].clone()
        }
        (Family::Classify, _) => {
            arity(code.name(), operands, 1)?;
            dtype_in_class(code.name(), operands, 0, info.operands)?;
            operands[0].with_dtype(DType::Pred)
        }
        (_, OpCode::Reverse) => {
            arity(code.name(), operands, 1)?;
            let text = required("dimensions")?;
            let src = operands[0];
            let dims = int_list(text).filter(|d| d.iter().all(|&x| x >= 0 && (x as usize) < src.rank()));
            match dims {
                Some(d) if distinct(&d.iter().map(|&x| x as usize).collect::<Vec<_>>()) => src.clone(),
                _ => return Err(attr_err("dimensions", format!("reverse dimensions {text} are not distinct dimensions of {src}"))),
            }
        }
        (_, OpCode::Pad) => {
            arity(code.name(), operands, 2)?;
            let (src, value) = (operands[0], operands[1]);
            if !value.shape.is_empty() {
                return Err(operand_err(1, format!("the padding value (operand 1) must be a scalar, found {value}")));
            }
            same_dtype(operands, 0, 1)?;
            let text = required("padding")?;
            let config = padding_config(text)
                .ok_or_else(|| attr_err("padding", format!("padding {text} is not low_high_interior per dimension")))?;
            pad_type(src, &config)?
        }
        (_, OpCode::ReduceWindow) => {
            arity(code.name(), operands, 2)?;
            let (src, init) = (operands[0], operands[1]);
            if !init.shape.is_empty() {
                return Err(operand_err(1, format!("the init value (operand 1) must be a scalar, found {init}")));
            }
            same_dtype(operands, 0, 1)?;
            let window = crate::reduce_window::read(attrs, src.rank())?;
            required("to_apply")?;
            crate::reduce_window::result_type(&window, src)
        }
        (_, OpCode::Convolution) => {
            arity(code.name(), operands, 2)?;
            let conv = crate::convolution::read(attrs, operands[0], operands[1])?;
            crate::convolution::result_type(&conv, operands[0], operands[1], declared.dtype)
        }
        (_, OpCode::Iota) => {
            arity(code.name(), operands, 0)?;
            let dim = required("iota_dimension")?;
            if !dim.parse::<usize>().is_ok_and(|d| d < declared.rank()) {
                return Err(attr_err(
                    "iota_dimension",
                    format!("iota_dimension must be a dimension of {declared}, found {dim}"),
                ));
            }
            declared.clone()
        }
        (_, OpCode::DynamicSlice) => {
            if operands.is_empty() {
                return Err(TypeError {
                    code: "operand-count",
                    site: Site::Opcode,
                    message: "dynamic-slice takes an operand and start indices".into(),
                });
            }
            let text = required("dynamic_slice_sizes")?;
            let bad = || attr_err("dynamic_slice_sizes", format!("dynamic_slice_sizes {text} does not fit {}", operands[0]));
            let sizes = text
                .strip_prefix('{')
                .and_then(|t| t.strip_suffix('}'))
                .ok_or_else(bad)?
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.trim().parse::<i64>().map_err(|_| bad()))
                .collect::<Result<Vec<i64>, TypeError>>()?;
            let base = operands[0];
            if sizes.len() != base.rank() || sizes.iter().zip(&base.shape).any(|(s, b)| s > b) {
                return Err(bad());
            }
            start_indices(operands, 1, base.rank())?;
            base.with_shape(sizes)
        }
        _ => declared.clone(),
    })
}

/// `{1,0}` as integers.
fn int_list(text: &str) -> Option<Vec<i64>> {
    text.strip_prefix('{')?
        .strip_suffix('}')?
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse::<i64>().ok())
        .collect()
}

/// pad's configuration as XLA prints it, `1_2_0x-1_1_1`: `(low, high, interior)` per
/// dimension, joined by `x`; the interior count may be left out (0).
pub fn padding_config(text: &str) -> Option<Vec<(i64, i64, i64)>> {
    text.split('x')
        .map(|dim| {
            let parts: Option<Vec<i64>> = dim.split('_').map(|p| p.parse::<i64>().ok()).collect();
            match parts?.as_slice() {
                [low, high] => Some((*low, *high, 0)),
                [low, high, interior] => Some((*low, *high, *interior)),
                _ => None,
            }
        })
        .collect()
}

/// XLA's pad rule: dimension k becomes `low + high + size + (size - 1) * interior`; low and
/// high may be negative (they cut), interior may not, and no dimension may end up negative.
pub fn pad_type(src: &Ty, config: &[(i64, i64, i64)]) -> Result<Ty, TypeError> {
    if config.len() != src.rank() {
        return Err(attr_err(
            "padding",
            format!("padding has {} dimensions but the operand {src} has rank {}", config.len(), src.rank()),
        ));
    }
    let mut shape = Vec::new();
    for (k, (&(low, high, interior), &size)) in config.iter().zip(&src.shape).enumerate() {
        if interior < 0 {
            return Err(attr_err("padding", format!("padding dimension {k}: the interior padding {interior} is negative")));
        }
        let extent = low + high + size + (size - 1).max(0) * interior;
        if extent < 0 {
            return Err(attr_err(
                "padding",
                format!("padding dimension {k}: {low}_{high}_{interior} leaves {extent} elements of the operand's {size}"),
            ));
        }
        shape.push(extent);
    }
    Ok(src.with_shape(shape))
}

/// An elementwise operator of one operand: the operand's type, within its operand class.
fn unary(code: OpCode, operands: &[&Ty]) -> Result<Ty, TypeError> {
    arity(code.name(), operands, 1)?;
    dtype_in_class(code.name(), operands, 0, code.info().operands)?;
    Ok(operands[0].clone())
}

/// An elementwise operator of two operands of one type, within its operand class.
fn binary(code: OpCode, operands: &[&Ty]) -> Result<Ty, TypeError> {
    arity(code.name(), operands, 2)?;
    same_dtype(operands, 0, 1)?;
    same_shape(operands, 0, 1)?;
    dtype_in_class(code.name(), operands, 0, code.info().operands)?;
    Ok(operands[0].clone())
}

/// Operands `first..` are the start indices: one integer scalar per dimension of the operand.
fn start_indices(operands: &[&Ty], first: usize, rank: usize) -> Result<(), TypeError> {
    let count = operands.len() - first;
    if count != rank {
        let site = if count > rank { Site::Operand(operands.len() - 1) } else { Site::Opcode };
        return Err(TypeError {
            code: "operand-count",
            site,
            message: format!("takes {rank} start indices (one per operand dimension), found {count}"),
        });
    }
    for (j, t) in operands.iter().enumerate().skip(first) {
        if !t.shape.is_empty() || !t.dtype.is_int() {
            return Err(operand_err(j, format!("start index {} (operand {j}) must be an integer scalar, found {t}", j - first)));
        }
    }
    Ok(())
}

/// Infers and compares with the declared type.
pub fn check(op: &Op, operands: &[&Ty], declared: &Ty) -> Result<(), TypeError> {
    let inferred = infer(op, operands, declared)?;
    if &inferred != declared {
        return Err(declared_err(format!("declared type {declared} but {} produces {inferred}", op.hlo_name())));
    }
    Ok(())
}

/// XLA's bitcast-convert rule: equal widths keep the shape; a narrower target appends a
/// dimension of the width ratio; a wider target consumes a trailing dimension of that ratio.
pub fn bitcast_type(src: &Ty, to: DType) -> Result<Ty, TypeError> {
    let (a, b) = (i64::from(src.dtype.bytes()), i64::from(to.bytes()));
    let mut shape = src.shape.clone();
    if a > b {
        shape.push(a / b);
    } else if a < b {
        if shape.last() != Some(&(b / a)) {
            return Err(operand_err(0, format!("bitcast-convert of {src} to the wider {to} needs a last dimension of {}", b / a)));
        }
        shape.pop();
    }
    Ok(Ty::new(to, shape))
}

pub fn transpose_type(src: &Ty, perm: &[usize]) -> Result<Ty, TypeError> {
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    if sorted != (0..src.rank()).collect::<Vec<_>>() {
        return Err(attr_err("dimensions", format!("dimensions {perm:?} are not a permutation of the dimensions of {src}")));
    }
    Ok(src.permuted(perm))
}

pub fn slice_type(src: &Ty, ranges: &[(i64, i64, i64)]) -> Result<Ty, TypeError> {
    if ranges.len() != src.rank() {
        return Err(attr_err("slice", format!("slice has {} ranges but the operand {src} has rank {}", ranges.len(), src.rank())));
    }
    let mut shape = Vec::new();
    for (k, (&(start, limit, stride), &size)) in ranges.iter().zip(&src.shape).enumerate() {
        if stride < 1 || start < 0 || start > limit || limit > size {
            return Err(attr_err("slice", format!("slice dimension {k}: [{start}:{limit}:{stride}] does not fit size {size}")));
        }
        shape.push((limit - start + stride - 1) / stride);
    }
    Ok(src.with_shape(shape))
}

pub fn concat_type(operands: &[&Ty], dim: usize) -> Result<Ty, TypeError> {
    let first = operands[0];
    if dim >= first.rank() {
        return Err(attr_err("dimensions", format!("concatenate dimension {dim} is not a dimension of {first}")));
    }
    let mut shape = first.shape.clone();
    shape[dim] = 0;
    for (j, t) in operands.iter().enumerate() {
        same_dtype(operands, 0, j)?;
        let same_elsewhere = t.rank() == first.rank()
            && t.shape.iter().zip(&first.shape).enumerate().all(|(k, (a, b))| k == dim || a == b);
        if !same_elsewhere {
            return Err(operand_err(j, format!("concatenate operands {first} and {t} differ outside dimension {dim}")));
        }
        shape[dim] += t.shape[dim];
    }
    Ok(first.with_shape(shape))
}

pub fn dot_type(lhs: &Ty, rhs: &Ty, d: &DotDims, dtype: DType) -> Result<Ty, TypeError> {
    if lhs.dtype.is_float() != rhs.dtype.is_float() {
        return Err(operand_err(1, format!("dot of {lhs} and {rhs}: both floating point or both integer")));
    }
    let in_range = |name: &'static str, dims: &[usize], t: &Ty| {
        if dims.iter().all(|&x| x < t.rank()) && distinct(dims) {
            Ok(())
        } else {
            Err(attr_err(name, format!("{name} {dims:?} are not distinct dimensions of {t}")))
        }
    };
    in_range("lhs_contracting_dims", &d.lhs_contracting, lhs)?;
    in_range("rhs_contracting_dims", &d.rhs_contracting, rhs)?;
    in_range("lhs_batch_dims", &d.lhs_batch, lhs)?;
    in_range("rhs_batch_dims", &d.rhs_batch, rhs)?;
    if d.lhs_contracting.len() != d.rhs_contracting.len() {
        return Err(attr_err("rhs_contracting_dims", "lhs and rhs name different numbers of contracting dimensions".into()));
    }
    if d.lhs_batch.len() != d.rhs_batch.len() {
        return Err(attr_err("rhs_batch_dims", "lhs and rhs name different numbers of batch dimensions".into()));
    }
    if d.lhs_batch.iter().any(|x| d.lhs_contracting.contains(x)) {
        return Err(attr_err("lhs_batch_dims", "an lhs dimension is both a batch and a contracting dimension".into()));
    }
    if d.rhs_batch.iter().any(|x| d.rhs_contracting.contains(x)) {
        return Err(attr_err("rhs_batch_dims", "an rhs dimension is both a batch and a contracting dimension".into()));
    }
    let kinds = [
        ("contracting", "rhs_contracting_dims", "dot-contracting-mismatch", &d.lhs_contracting, &d.rhs_contracting),
        ("batch", "rhs_batch_dims", "dot-batch-mismatch", &d.lhs_batch, &d.rhs_batch),
    ];
    for (kind, attr, code, ls, rs) in kinds {
        for (&a, &b) in ls.iter().zip(rs.iter()) {
            if lhs.shape[a] != rhs.shape[b] {
                return Err(TypeError {
                    code,
                    site: Site::Attr(attr),
                    message: format!(
                        "lhs {kind} dimension {a} has size {} but rhs {kind} dimension {b} has size {}",
                        lhs.shape[a], rhs.shape[b]
                    ),
                });
            }
        }
    }
    let mut shape: Vec<i64> = d.lhs_batch.iter().map(|&a| lhs.shape[a]).collect();
    shape.extend(DotDims::free(lhs.rank(), &d.lhs_batch, &d.lhs_contracting).iter().map(|&a| lhs.shape[a]));
    shape.extend(DotDims::free(rhs.rank(), &d.rhs_batch, &d.rhs_contracting).iter().map(|&b| rhs.shape[b]));
    Ok(Ty::new(dtype, shape))
}

/// Operand dimension `i` goes to result dimension `dims[i]`, increasing, with equal sizes or
/// size 1 (which repeats).
pub fn broadcast_check(src: &Ty, dims: &[usize], out: &[i64]) -> Result<(), TypeError> {
    if dims.len() != src.rank() {
        return Err(attr_err(
            "dimensions",
            format!("broadcast dimensions {dims:?} do not give one result dimension per dimension of {src}"),
        ));
    }
    if !dims.windows(2).all(|w| w[0] < w[1]) || dims.iter().any(|&d| d >= out.len()) {
        return Err(attr_err(
            "dimensions",
            format!("broadcast dimensions {dims:?} must be increasing result dimensions (result rank {})", out.len()),
        ));
    }
    for (i, &d) in dims.iter().enumerate() {
        if src.shape[i] != out[d] && src.shape[i] != 1 {
            return Err(attr_err(
                "dimensions",
                format!(
                    "broadcast maps dimension {i} of {src} (size {}) to result dimension {d} of size {}",
                    src.shape[i], out[d]
                ),
            ));
        }
    }
    Ok(())
}

pub fn reduce_type(src: &Ty, dims: &[usize]) -> Result<Ty, TypeError> {
    if !distinct(dims) || dims.iter().any(|&d| d >= src.rank()) {
        return Err(attr_err("dimensions", format!("reduce dimensions {dims:?} are not distinct dimensions of {src}")));
    }
    Ok(src.with_shape(src.shape.iter().enumerate().filter(|(k, _)| !dims.contains(k)).map(|(_, &s)| s).collect()))
}

fn distinct(dims: &[usize]) -> bool {
    let mut v = dims.to_vec();
    v.sort_unstable();
    v.windows(2).all(|w| w[0] != w[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dtype: DType, shape: &[i64]) -> Ty {
        Ty::new(dtype, shape.to_vec())
    }

    #[test]
    fn bitcast_follows_xla() {
        assert_eq!(bitcast_type(&t(DType::U8, &[64, 64, 2]), DType::BF16), Ok(t(DType::BF16, &[64, 64])));
        assert_eq!(bitcast_type(&t(DType::BF16, &[64, 64]), DType::U8), Ok(t(DType::U8, &[64, 64, 2])));
        assert!(bitcast_type(&t(DType::U8, &[64, 64]), DType::BF16).is_err());
        assert_eq!(bitcast_type(&t(DType::S32, &[3]), DType::F32), Ok(t(DType::F32, &[3])));
    }

    #[test]
    fn dot_result_is_batch_then_free_dims() {
        let d = DotDims { lhs_contracting: vec![2], rhs_contracting: vec![1], lhs_batch: vec![0], rhs_batch: vec![0] };
        let out = dot_type(&t(DType::F32, &[2, 3, 4]), &t(DType::F32, &[2, 4, 5]), &d, DType::F32);
        assert_eq!(out, Ok(t(DType::F32, &[2, 3, 5])));
        let bad = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![1], ..Default::default() };
        assert!(dot_type(&t(DType::F32, &[3, 4]), &t(DType::F32, &[5, 6]), &bad, DType::F32).is_err());
    }

    #[test]
    fn declared_type_is_checked() {
        let x = t(DType::BF16, &[4, 8]);
        assert!(check(&Op::Transpose(vec![1, 0]), &[&x], &t(DType::BF16, &[8, 4])).is_ok());
        let err = check(&Op::Transpose(vec![1, 0]), &[&x], &t(DType::BF16, &[4, 8])).unwrap_err();
        assert!(err.message.contains("produces bf16[8,4]"), "{err}");
        assert_eq!((err.code, err.site), ("declared-type-mismatch", Site::Declared));
        assert!(check(&Op::Broadcast(vec![0]), &[&t(DType::BF16, &[4])], &t(DType::BF16, &[4, 8])).is_ok());
        assert!(check(&Op::Broadcast(vec![1]), &[&t(DType::BF16, &[4])], &t(DType::BF16, &[4, 8])).is_err());
        assert!(check(&Op::Reshape, &[&x], &t(DType::BF16, &[32])).is_ok());
        assert!(check(&Op::Reshape, &[&x], &t(DType::BF16, &[31])).is_err());
    }

    #[test]
    fn slices_round_up_with_strides() {
        assert_eq!(slice_type(&t(DType::F32, &[10]), &[(1, 10, 3)]), Ok(t(DType::F32, &[3])));
        assert!(slice_type(&t(DType::F32, &[10]), &[(0, 11, 1)]).is_err());
    }
}
