//! Constant folding of a kernel before selection: an operation whose operands are all
//! constants becomes one [`Op::Constant`] holding its value, so that selection only ever
//! blames an operation that depends on the kernel's inputs (`x * broadcast(constant(2))` on an
//! ISA without a multiply names the multiply, and `negate(constant)` is no obstacle).
//!
//! Values are computed as XLA computes them or not at all: in f64, then rounded to the result's
//! element type. A float operation on f16, bf16 or f32 is rounded to f32 first (XLA's CPU
//! computes narrow floats in f32) and then to the element type; f64 holds the exact result of
//! an f32 add, subtract, multiply or divide closely enough (53 >= 2 * 24 + 2 bits) that this
//! double rounding is the correctly rounded f32 result. A result that XLA may compute
//! differently is left unfolded: a subnormal float operand or result (XLA's CPU flushes some
//! to zero), an integer out of its type's range (it wraps) or beyond 2^53 (literals are f64),
//! an integer division by zero, a float-to-integer conversion out of range or of NaN, a
//! maximum or minimum of -0 and +0. Folded literals keep the crate's representation: f64 bit
//! patterns, one value for a splat.

use crate::infer::padding_config;
use crate::kernel::Kernel;
use crate::lang::{DType, Literal, Op, Reducer, Ty};

/// Folds produce at most this many elements (a bigger folded constant is left as written).
const MAX_ELEMENTS: i64 = 1 << 16;

/// A folded value: row-major elements of `ty`.
struct Folded {
    values: Vec<f64>,
}

/// Folds every operation of `kernel` whose operands are all constants into a constant, then
/// drops the constants nothing uses any more, and reads `reduce(x, 0) to_apply=add` whose zero
/// was folded as `reduce_add(x)`.
pub fn fold_constants(kernel: &mut Kernel) {
    let live_before = live(kernel);
    let mut folded_any = false;
    for k in 0..kernel.nodes.len() {
        let node = &kernel.nodes[k];
        if node.operands.is_empty() && !is_iota(&node.op) {
            continue;
        }
        let mut args = Vec::new();
        for &o in &node.operands {
            match &kernel.nodes[o].op {
                Op::Constant(lit) => args.push((expand(lit, &kernel.nodes[o].ty), &kernel.nodes[o].ty)),
                _ => break,
            }
        }
        if args.len() != node.operands.len() || node.ty.elements() > MAX_ELEMENTS {
            continue;
        }
        let Some(values) = evaluate(&node.op, &args, &node.ty) else { continue };
        let node = &mut kernel.nodes[k];
        node.op = Op::Constant(literal(&values.values));
        node.operands.clear();
        folded_any = true;
    }
    if !folded_any {
        return;
    }
    let zero_inits: Vec<usize> = (0..kernel.nodes.len())
        .filter(|&k| {
            let node = &kernel.nodes[k];
            matches!(node.op, Op::Reduce { reducer: Reducer::Add, .. })
                && matches!(&kernel.nodes[node.operands[1]].op, Op::Constant(l) if l.splat().map(f64::to_bits) == Some(0))
        })
        .collect();
    for k in zero_inits {
        let node = &mut kernel.nodes[k];
        if let Op::Reduce { dims, .. } = &node.op {
            node.op = Op::ReduceAdd(dims.clone());
            node.operands.truncate(1);
        }
    }
    let live_after = live(kernel);
    let keep: Vec<bool> = (0..kernel.nodes.len()).map(|k| live_after[k] || !live_before[k]).collect();
    remove_nodes(kernel, &keep);
}

fn is_iota(op: &Op) -> bool {
    matches!(op, Op::Other { name, .. } if name == "iota")
}

/// The nodes the root depends on, and the parameters.
pub fn live(kernel: &Kernel) -> Vec<bool> {
    let mut live = vec![false; kernel.nodes.len()];
    let mut stack = vec![kernel.root];
    while let Some(k) = stack.pop() {
        if !std::mem::replace(&mut live[k], true) {
            stack.extend(kernel.nodes[k].operands.iter().copied());
        }
    }
    for &p in &kernel.param_nodes {
        live[p] = true;
    }
    live
}

/// Drops the nodes `keep` does not keep (none the root depends on), renumbering the rest.
pub fn remove_nodes(kernel: &mut Kernel, keep: &[bool]) {
    let mut index = vec![usize::MAX; kernel.nodes.len()];
    let mut next = 0;
    for (k, &kept) in keep.iter().enumerate() {
        if kept {
            index[k] = next;
            next += 1;
        }
    }
    let nodes = std::mem::take(&mut kernel.nodes);
    kernel.nodes = nodes
        .into_iter()
        .enumerate()
        .filter(|(k, _)| keep[*k])
        .map(|(_, mut node)| {
            node.operands = node.operands.iter().map(|&o| index[o]).collect();
            node
        })
        .collect();
    kernel.root = index[kernel.root];
    kernel.param_nodes = kernel.param_nodes.iter().map(|&p| index[p]).collect();
    // Results are live: the root is made of them.
    kernel.results = kernel.results.iter().map(|&r| index[r]).collect();
}

/// Every element of a literal of type `ty` (a splat repeated).
fn expand(lit: &Literal, ty: &Ty) -> Vec<f64> {
    let n = ty.elements().max(0) as usize;
    match lit.splat() {
        Some(v) => vec![v; n],
        None => lit.values().collect(),
    }
}

/// The crate's literal of folded values: one value when they are all one.
fn literal(values: &[f64]) -> Literal {
    let first = values.first().map(|v| v.to_bits());
    if values.len() > 1 && values.iter().all(|v| Some(v.to_bits()) == first) {
        Literal::from_values(&values[..1])
    } else {
        Literal::from_values(values)
    }
}

/// Row-major strides of a shape.
fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The multi-index of every element of `shape`, in row-major order.
fn indices(shape: &[i64]) -> impl Iterator<Item = Vec<i64>> + '_ {
    let n: i64 = shape.iter().product();
    let st = strides(shape);
    (0..n.max(0)).map(move |flat| st.iter().zip(shape).map(|(s, d)| (flat / s) % d.max(&1)).collect())
}

fn offset(index: &[i64], shape: &[i64]) -> usize {
    strides(shape).iter().zip(index).map(|(s, i)| s * i).sum::<i64>() as usize
}

/// Gathers the result of a layout operation: `source(index)` is the operand element at a
/// result index, or `None` for padding.
fn gather(out: &Ty, src: &[f64], src_ty: &Ty, fill: f64, source: impl Fn(&[i64]) -> Option<Vec<i64>>) -> Folded {
    Folded { values: indices(&out.shape).map(|i| source(&i).map_or(fill, |j| src[offset(&j, &src_ty.shape)])).collect() }
}

/// The value of `op` on constant operands, or `None` where it is not folded.
fn evaluate(op: &Op, args: &[(Vec<f64>, &Ty)], out: &Ty) -> Option<Folded> {
    let layout = |f: &dyn Fn(&[i64]) -> Option<Vec<i64>>| gather(out, &args[0].0, args[0].1, 0.0, f);
    let folded = match op {
        Op::Copy => Folded { values: args[0].0.clone() },
        Op::Reshape => Folded { values: args[0].0.clone() },
        Op::Broadcast(dims) => layout(&|i| {
            Some(dims.iter().enumerate().map(|(k, &d)| if args[0].1.shape[k] == 1 { 0 } else { i[d] }).collect())
        }),
        Op::Transpose(perm) => layout(&|i| {
            let mut j = vec![0; perm.len()];
            for (r, &p) in perm.iter().enumerate() {
                j[p] = i[r];
            }
            Some(j)
        }),
        Op::Slice(ranges) => layout(&|i| Some(i.iter().zip(ranges).map(|(x, (s, _, st))| s + x * st).collect())),
        Op::Convert => Folded { values: convert(&args[0].0, args[0].1.dtype, out.dtype)? },
        Op::Add | Op::Subtract | Op::Multiply | Op::Divide | Op::Maximum | Op::Minimum => {
            let (a, b) = (&args[0].0, &args[1].0);
            let values = a.iter().zip(b).map(|(&x, &y)| arithmetic(op, x, y, out.dtype)).collect::<Option<Vec<f64>>>()?;
            Folded { values }
        }
        Op::Other { name, attrs } => other(name, attrs, args, out)?,
        _ => return None,
    };
    Some(folded)
}

/// The folded value of an operator kept by name: negate, abs, iota, reverse, pad, compare,
/// select.
fn other(name: &str, attrs: &str, args: &[(Vec<f64>, &Ty)], out: &Ty) -> Option<Folded> {
    let attr = |key: &str| crate::lang::attribute(attrs, key);
    let dims = |key: &str| -> Option<Vec<i64>> {
        attr(key)?.strip_prefix('{')?.strip_suffix('}')?.split(',').filter(|s| !s.is_empty()).map(|s| s.parse().ok()).collect()
    };
    Some(match name {
        "negate" | "abs" => {
            let f = if name == "negate" { |x: f64| -x } else { f64::abs };
            Folded { values: args[0].0.iter().map(|&x| exact(f(x), out.dtype)).collect::<Option<Vec<f64>>>()? }
        }
        "iota" => {
            let d: usize = attr("iota_dimension")?.parse().ok()?;
            Folded { values: indices(&out.shape).map(|i| exact(i[d] as f64, out.dtype)).collect::<Option<Vec<f64>>>()? }
        }
        "reverse" => {
            let rev = dims("dimensions")?;
            gather(out, &args[0].0, args[0].1, 0.0, |i| {
                Some(i.iter().enumerate().map(|(k, &x)| if rev.contains(&(k as i64)) { out.shape[k] - 1 - x } else { x }).collect())
            })
        }
        "pad" => {
            let config = padding_config(attr("padding")?)?;
            let src = &args[0].1.shape;
            gather(out, &args[0].0, args[0].1, args[1].0[0], |i| {
                i.iter()
                    .zip(&config)
                    .zip(src)
                    .map(|((&x, &(low, _, interior)), &size)| {
                        let t = x - low;
                        let step = interior + 1;
                        (t >= 0 && t % step == 0 && t / step < size).then_some(t / step)
                    })
                    .collect()
            })
        }
        "compare" => {
            let direction = attr("direction")?;
            // A comparison type other than the default one orders -0 and NaN differently.
            if attr("type").is_some_and(|t| !matches!(t, "FLOAT" | "SIGNED" | "UNSIGNED")) {
                return None;
            }
            let test = |x: f64, y: f64| match direction {
                "EQ" => x == y,
                "NE" => x != y,
                "LT" => x < y,
                "LE" => x <= y,
                "GT" => x > y,
                "GE" => x >= y,
                _ => false,
            };
            let dtype = args[0].1.dtype;
            let pairs = args[0].0.iter().zip(&args[1].0);
            if pairs.clone().any(|(&x, &y)| subnormal(x, dtype) || subnormal(y, dtype)) {
                return None;
            }
            Folded { values: pairs.map(|(&x, &y)| f64::from(u8::from(test(x, y)))).collect() }
        }
        "select" => {
            let (p, t, f) = (&args[0].0, &args[1].0, &args[2].0);
            let scalar = args[0].1.shape.is_empty();
            Folded {
                values: (0..t.len()).map(|k| if p[if scalar { 0 } else { k }] != 0.0 { t[k] } else { f[k] }).collect(),
            }
        }
        _ => return None,
    })
}

/// `x` as a value of `dtype`, if it is one exactly (an integer in range, a float that needs no
/// rounding and is not subnormal).
fn exact(x: f64, dtype: DType) -> Option<f64> {
    let r = round_to(x, dtype)?;
    let same = if dtype.is_float() { r.to_bits() == x.to_bits() || (r.is_nan() && x.is_nan()) } else { r == x };
    same.then_some(r)
}

/// Whether `x` is a subnormal value of the float type `dtype`: XLA's CPU may read it as zero
/// (denormals-are-zero), so nothing computed from one is folded.
fn subnormal(x: f64, dtype: DType) -> bool {
    if !dtype.is_float() || x == 0.0 || !x.is_finite() {
        return false;
    }
    let emax = (1i32 << (dtype.info().exponent_bits - 1)) - 1;
    x.abs() < 2f64.powi(1 - emax)
}

/// A binary arithmetic operator on two values of `dtype`, as XLA computes it.
fn arithmetic(op: &Op, x: f64, y: f64, dtype: DType) -> Option<f64> {
    if dtype == DType::Pred || subnormal(x, dtype) || subnormal(y, dtype) {
        return None;
    }
    if dtype.is_int() {
        let r = match op {
            Op::Add => x + y,
            Op::Subtract => x - y,
            Op::Multiply => x * y,
            Op::Maximum => x.max(y),
            Op::Minimum => x.min(y),
            // C division: truncates; by zero (all ones) and MIN / -1 are left to XLA, and so
            // are operands beyond 2^31, whose f64 quotient could round onto an integer.
            Op::Divide if y != 0.0 && x.abs() < 2147483648.0 && y.abs() < 2147483648.0 => (x / y).trunc(),
            _ => return None,
        };
        // Exact in f64 below 2^53; out of the type's range it would wrap.
        return (r.abs() < 9007199254740992.0).then_some(r).and_then(|r| round_to(r, dtype));
    }
    let r = match op {
        Op::Add => x + y,
        Op::Subtract => x - y,
        Op::Multiply => x * y,
        Op::Divide => x / y,
        // XLA's maximum and minimum propagate NaN.
        Op::Maximum | Op::Minimum if x.is_nan() || y.is_nan() => f64::NAN,
        // maximum(-0, +0) is not specified by the values alone: leave it to XLA.
        Op::Maximum | Op::Minimum if x == y && x.to_bits() != y.to_bits() => return None,
        Op::Maximum => x.max(y),
        Op::Minimum => x.min(y),
        _ => return None,
    };
    round_to(narrow_through_f32(r, dtype)?, dtype)
}

/// An f64 result of an operation on f16, bf16 or f32 values rounded to f32, as XLA's CPU
/// computes those types; f64 results are already final.
fn narrow_through_f32(r: f64, dtype: DType) -> Option<f64> {
    if dtype == DType::F64 {
        return Some(r);
    }
    round_to(r, DType::F32)
}

/// XLA's convert of a value of `from` to `to`, where it is exact to compute here.
fn convert(values: &[f64], from: DType, to: DType) -> Option<Vec<f64>> {
    values
        .iter()
        .map(|&x| {
            if subnormal(x, from) {
                return None;
            }
            if to == DType::Pred {
                return Some(f64::from(u8::from(x != 0.0)));
            }
            if from.is_float() && to.is_int() {
                // Truncation toward zero; out of range and NaN saturate, left to XLA.
                return if x.is_nan() { None } else { round_to(x.trunc(), to) };
            }
            round_to(x, to)
        })
        .collect()
}

/// `x` rounded to `dtype` (floats: to nearest even, overflow to infinity), or `None` where
/// XLA's result is not that: an integer out of range, a subnormal float.
fn round_to(x: f64, dtype: DType) -> Option<f64> {
    if dtype == DType::Pred {
        return (x == 0.0 || x == 1.0).then_some(x);
    }
    if dtype.is_int() {
        let bits = dtype.info().bits as i32;
        let (lo, hi) = if dtype.is_signed() {
            (-(2f64.powi(bits - 1)), 2f64.powi(bits - 1) - 1.0)
        } else {
            (0.0, 2f64.powi(bits) - 1.0)
        };
        // `+ 0.0`: an integer zero is +0 (`-3 * 0` is -0 in f64).
        return (x.fract() == 0.0 && x >= lo && x <= hi && x.abs() < 9007199254740992.0).then_some(x + 0.0);
    }
    if !x.is_finite() || x == 0.0 {
        return Some(x);
    }
    let info = dtype.info();
    let (precision, exponent_bits) = (info.significand_bits as i32, info.exponent_bits as i32);
    let emax = (1 << (exponent_bits - 1)) - 1;
    let emin = 1 - emax;
    let e = x.abs().log2().floor() as i32;
    // Guard the estimate of the exponent against log2's rounding at powers of two.
    let e = if 2f64.powi(e) > x.abs() { e - 1 } else if 2f64.powi(e + 1) <= x.abs() { e + 1 } else { e };
    if e < emin {
        return None; // subnormal: XLA's CPU may flush it to zero
    }
    let quantum = 2f64.powi(e - (precision - 1));
    let scaled = x / quantum;
    let rounded = scaled.round();
    let rounded = if (scaled - scaled.trunc()).abs() == 0.5 && rounded % 2.0 != 0.0 { rounded - scaled.signum() } else { rounded };
    let r = rounded * quantum;
    if r.abs() >= 2f64.powi(emax + 1) {
        return Some(f64::INFINITY.copysign(x));
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_follows_the_element_type() {
        assert_eq!(round_to(1.0 + 2f64.powi(-9), DType::BF16), Some(1.0)); // a tie goes to even
        assert_eq!(round_to(1.0 + 3.0 * 2f64.powi(-9), DType::BF16), Some(1.0 + 2f64.powi(-7)));
        assert_eq!(round_to(0.1, DType::F32), Some(f64::from(0.1f32)));
        assert_eq!(round_to(1e39, DType::F32), Some(f64::INFINITY));
        assert_eq!(round_to(65520.0, DType::F16), Some(f64::INFINITY));
        assert_eq!(round_to(65504.0, DType::F16), Some(65504.0));
        assert_eq!(round_to(1e-40, DType::F32), None);
        assert_eq!(round_to(128.0, DType::S8), None);
        assert_eq!(round_to(-128.0, DType::S8), Some(-128.0));
        assert_eq!(round_to(-1.0, DType::U8), None);
    }

    #[test]
    fn float_arithmetic_rounds_as_xla_does() {
        let third = arithmetic(&Op::Divide, 1.0, 3.0, DType::F32).unwrap();
        assert_eq!(third, f64::from(1.0f32 / 3.0f32));
        // bf16 is computed in f32 and rounded once more.
        let sum = arithmetic(&Op::Add, 1.0, 2f64.powi(-8), DType::BF16).unwrap();
        assert_eq!(sum, 1.0);
        assert!(arithmetic(&Op::Maximum, f64::NAN, 1.0, DType::F32).unwrap().is_nan());
        assert_eq!(arithmetic(&Op::Maximum, -0.0, 0.0, DType::F32), None);
        assert_eq!(arithmetic(&Op::Divide, 7.0, -2.0, DType::S32), Some(-3.0));
        assert_eq!(arithmetic(&Op::Divide, 7.0, 0.0, DType::S32), None);
        assert_eq!(arithmetic(&Op::Add, 100.0, 100.0, DType::S8), None);
        // A subnormal operand may be read as zero by XLA's CPU: not folded.
        assert_eq!(arithmetic(&Op::Multiply, 1e-40, 1e30, DType::F32), None);
        assert_eq!(arithmetic(&Op::Multiply, 1e-40, 1e30, DType::F64).map(|v| v > 0.0), Some(true));
    }

    #[test]
    fn conversions_fold_only_where_exact() {
        assert_eq!(convert(&[2.5, -2.5], DType::F32, DType::S32), Some(vec![2.0, -2.0]));
        assert_eq!(convert(&[f64::NAN], DType::F32, DType::S32), None);
        assert_eq!(convert(&[3e9], DType::F32, DType::S32), None);
        assert_eq!(convert(&[0.0, 2.0], DType::F32, DType::Pred), Some(vec![0.0, 1.0]));
        assert_eq!(convert(&[257.0], DType::S32, DType::BF16), Some(vec![256.0]));
    }
}
