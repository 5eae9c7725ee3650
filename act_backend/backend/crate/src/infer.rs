//! Result types of the operators of [`crate::lang::Op`], with the rules the ISA semantics use
//! (XLA's, plus size-1 broadcasting): kernels are checked with them, and rewrites use them to
//! type the e-nodes they create.

use crate::lang::{DType, DotDims, Op, Ty};

/// The type `op` produces from `operands`. `declared` supplies what the operands do not
/// determine (the target of reshape, convert and bitcast-convert, a broadcast's result shape,
/// a dot's element type, constants and opaque operators) and is checked against the rest.
pub fn infer(op: &Op, operands: &[&Ty], declared: &Ty) -> Result<Ty, String> {
    let arity = |n: usize| -> Result<(), String> {
        if operands.len() == n {
            Ok(())
        } else {
            Err(format!("{} takes {n} operand(s), found {}", op.hlo_name(), operands.len()))
        }
    };
    let inferred = match op {
        Op::Parameter(_) | Op::Input(_) | Op::Constant(_) | Op::Other { .. } | Op::Pii { .. } => declared.clone(),
        Op::Reshape => {
            arity(1)?;
            let src = operands[0];
            if src.dtype != declared.dtype {
                return Err(format!("reshape cannot change the element type ({src} to {declared})"));
            }
            if src.elements() != declared.elements() {
                return Err(format!(
                    "reshape cannot change the element count: {src} has {} elements, {declared} has {}",
                    src.elements(),
                    declared.elements()
                ));
            }
            declared.clone()
        }
        Op::Convert => {
            arity(1)?;
            operands[0].with_dtype(declared.dtype)
        }
        Op::BitcastConvert => {
            arity(1)?;
            bitcast_type(operands[0], declared.dtype)?
        }
        Op::Copy | Op::Exponential => {
            arity(1)?;
            if matches!(op, Op::Exponential) && !operands[0].dtype.is_float() {
                return Err(format!("exponential needs a floating-point operand, found {}", operands[0]));
            }
            operands[0].clone()
        }
        Op::Transpose(perm) => {
            arity(1)?;
            transpose_type(operands[0], perm)?
        }
        Op::Slice(ranges) => {
            arity(1)?;
            slice_type(operands[0], ranges)?
        }
        Op::Concatenate(dim) => {
            if operands.is_empty() {
                return Err("concatenate takes at least one operand".into());
            }
            concat_type(operands, *dim)?
        }
        Op::Dot(dims) => {
            arity(2)?;
            dot_type(operands[0], operands[1], dims, declared.dtype)?
        }
        Op::Broadcast(dims) => {
            arity(1)?;
            broadcast_check(operands[0], dims, &declared.shape)?;
            operands[0].with_shape(declared.shape.clone())
        }
        Op::Reduce { dims, .. } => {
            arity(2)?;
            let init = operands[1];
            if !init.shape.is_empty() || init.dtype != operands[0].dtype {
                return Err(format!("the init value of a reduce must be a {} scalar, found {init}", operands[0].dtype));
            }
            reduce_type(operands[0], dims)?
        }
        Op::ReduceAdd(dims) => {
            arity(1)?;
            reduce_type(operands[0], dims)?
        }
        Op::Add | Op::Subtract | Op::Multiply | Op::Divide | Op::Maximum | Op::Minimum | Op::Xor => {
            arity(2)?;
            if operands[0] != operands[1] {
                return Err(format!(
                    "{} needs operands of one type, found {} and {}",
                    op.hlo_name(),
                    operands[0],
                    operands[1]
                ));
            }
            if matches!(op, Op::Xor) && operands[0].dtype.is_float() {
                return Err(format!("xor needs integer or pred operands, found {}", operands[0]));
            }
            operands[0].clone()
        }
        Op::SelectLt | Op::SelectEqVar => {
            arity(4)?;
            let (a, b, t, f) = (operands[0], operands[1], operands[2], operands[3]);
            if a != b {
                return Err(format!("the compared operands differ: {a} and {b}"));
            }
            if t != f {
                return Err(format!("the selected operands differ: {t} and {f}"));
            }
            if a.shape != t.shape {
                return Err(format!("the compared operands {a} and the selected ones {t} differ in shape"));
            }
            t.clone()
        }
        Op::DynamicUpdateSlice => {
            if operands.len() < 2 {
                return Err("dynamic-update-slice takes an operand, an update and indices".into());
            }
            let (base, update) = (operands[0], operands[1]);
            if base.dtype != update.dtype || base.rank() != update.rank() {
                return Err(format!("the update {update} does not fit the operand {base}"));
            }
            if base.shape.iter().zip(&update.shape).any(|(b, u)| u > b) {
                return Err(format!("the update {update} is larger than the operand {base}"));
            }
            if operands.len() != 2 + base.rank() {
                return Err(format!(
                    "dynamic-update-slice needs {} start indices, found {}",
                    base.rank(),
                    operands.len() - 2
                ));
            }
            if let Some(bad) = operands[2..].iter().find(|t| !t.shape.is_empty() || !t.dtype.is_int()) {
                return Err(format!("start indices must be integer scalars, found {bad}"));
            }
            base.clone()
        }
    };
    Ok(inferred)
}

/// Infers and compares with the declared type.
pub fn check(op: &Op, operands: &[&Ty], declared: &Ty) -> Result<(), String> {
    let inferred = infer(op, operands, declared)?;
    if &inferred != declared {
        return Err(format!("declared type {declared} but {} produces {inferred}", op.hlo_name()));
    }
    Ok(())
}

/// XLA's bitcast-convert rule: equal widths keep the shape; a narrower target appends a
/// dimension of the width ratio; a wider target consumes a trailing dimension of that ratio.
pub fn bitcast_type(src: &Ty, to: DType) -> Result<Ty, String> {
    let (a, b) = (i64::from(src.dtype.bytes()), i64::from(to.bytes()));
    let mut shape = src.shape.clone();
    if a > b {
        shape.push(a / b);
    } else if a < b {
        if shape.last() != Some(&(b / a)) {
            return Err(format!("bitcast-convert of {src} to the wider {to} needs a last dimension of {}", b / a));
        }
        shape.pop();
    }
    Ok(Ty::new(to, shape))
}

pub fn transpose_type(src: &Ty, perm: &[usize]) -> Result<Ty, String> {
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    if sorted != (0..src.rank()).collect::<Vec<_>>() {
        return Err(format!("dimensions {perm:?} are not a permutation of the dimensions of {src}"));
    }
    Ok(src.with_shape(perm.iter().map(|&p| src.shape[p]).collect()))
}

pub fn slice_type(src: &Ty, ranges: &[(i64, i64, i64)]) -> Result<Ty, String> {
    if ranges.len() != src.rank() {
        return Err(format!("slice has {} ranges but the operand {src} has rank {}", ranges.len(), src.rank()));
    }
    let mut shape = Vec::new();
    for (k, (&(start, limit, stride), &size)) in ranges.iter().zip(&src.shape).enumerate() {
        if stride < 1 || start < 0 || start > limit || limit > size {
            return Err(format!("slice dimension {k}: [{start}:{limit}:{stride}] does not fit size {size}"));
        }
        shape.push((limit - start + stride - 1) / stride);
    }
    Ok(src.with_shape(shape))
}

pub fn concat_type(operands: &[&Ty], dim: usize) -> Result<Ty, String> {
    let first = operands[0];
    if dim >= first.rank() {
        return Err(format!("concatenate dimension {dim} is not a dimension of {first}"));
    }
    let mut shape = first.shape.clone();
    shape[dim] = 0;
    for t in operands {
        let same_elsewhere = t.rank() == first.rank()
            && t.shape.iter().zip(&first.shape).enumerate().all(|(k, (a, b))| k == dim || a == b);
        if t.dtype != first.dtype || !same_elsewhere {
            return Err(format!("concatenate operands {first} and {t} differ outside dimension {dim}"));
        }
        shape[dim] += t.shape[dim];
    }
    Ok(first.with_shape(shape))
}

pub fn dot_type(lhs: &Ty, rhs: &Ty, d: &DotDims, dtype: DType) -> Result<Ty, String> {
    if lhs.dtype.is_float() != rhs.dtype.is_float() {
        return Err(format!("dot of {lhs} and {rhs}: both floating point or both integer"));
    }
    let in_range = |dims: &[usize], t: &Ty| dims.iter().all(|&x| x < t.rank()) && distinct(dims);
    if !in_range(&d.lhs_contracting, lhs)
        || !in_range(&d.lhs_batch, lhs)
        || !in_range(&d.rhs_contracting, rhs)
        || !in_range(&d.rhs_batch, rhs)
        || d.lhs_contracting.len() != d.rhs_contracting.len()
        || d.lhs_batch.len() != d.rhs_batch.len()
        || d.lhs_batch.iter().any(|x| d.lhs_contracting.contains(x))
        || d.rhs_batch.iter().any(|x| d.rhs_contracting.contains(x))
    {
        return Err(format!("dot dimension numbers {d:?} do not fit {lhs} and {rhs}"));
    }
    let pairs = d.lhs_contracting.iter().zip(&d.rhs_contracting).chain(d.lhs_batch.iter().zip(&d.rhs_batch));
    for (&a, &b) in pairs {
        if lhs.shape[a] != rhs.shape[b] {
            return Err(format!("dot pairs lhs dimension {a} of {lhs} with rhs dimension {b} of {rhs}: sizes differ"));
        }
    }
    let mut shape: Vec<i64> = d.lhs_batch.iter().map(|&a| lhs.shape[a]).collect();
    shape.extend(DotDims::free(lhs.rank(), &d.lhs_batch, &d.lhs_contracting).iter().map(|&a| lhs.shape[a]));
    shape.extend(DotDims::free(rhs.rank(), &d.rhs_batch, &d.rhs_contracting).iter().map(|&b| rhs.shape[b]));
    Ok(Ty::new(dtype, shape))
}

/// Operand dimension `i` goes to result dimension `dims[i]`, increasing, with equal sizes or
/// size 1 (which repeats).
pub fn broadcast_check(src: &Ty, dims: &[usize], out: &[i64]) -> Result<(), String> {
    if dims.len() != src.rank() {
        return Err(format!("broadcast dimensions {dims:?} do not give one result dimension per dimension of {src}"));
    }
    if !dims.windows(2).all(|w| w[0] < w[1]) || dims.iter().any(|&d| d >= out.len()) {
        return Err(format!(
            "broadcast dimensions {dims:?} must be increasing result dimensions (result rank {})",
            out.len()
        ));
    }
    for (i, &d) in dims.iter().enumerate() {
        if src.shape[i] != out[d] && src.shape[i] != 1 {
            return Err(format!(
                "broadcast maps dimension {i} of {src} (size {}) to result dimension {d} of size {}",
                src.shape[i], out[d]
            ));
        }
    }
    Ok(())
}

pub fn reduce_type(src: &Ty, dims: &[usize]) -> Result<Ty, String> {
    if !distinct(dims) || dims.iter().any(|&d| d >= src.rank()) {
        return Err(format!("reduce dimensions {dims:?} are not distinct dimensions of {src}"));
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
        assert!(err.contains("produces bf16[8,4]"), "{err}");
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
