//! Identity and constant-matrix rewrites: the route to completeness on matrix units. A value
//! may pass through an instruction that is the identity when fed a constant (`x = x.I`,
//! `x = x * 1`, `x = x + -0`), and operators the ISA lacks become products or sums with
//! constant matrices (`negate(x) = x.(-I)`, `x * c = x.(cI)`, `reverse(x) = x.J`, a broadcast
//! row or column is a product with ones, an integer row sum is a product with ones, `a - b = a +
//! negate(b)`,
//! `clamp(lo, x, hi) = minimum(maximum(x, lo), hi)`, a division by a power of two `x / 2^k = x * 2^-k`).
//!
//! Each is offered only where it is exact in the element type of the ISA's operator
//! ([`Identities`] lists, per operator, the types in which the semantics compute it without
//! widening): for floats only products whose every element is one product plus products with
//! zero, and sums with zeros, never a reordered float sum (row sums by a product with ones are
//! for integers only, whose wrapping sums do not depend on order).
//!
//! Float products with a permutation matrix `P` (I, -I, the exchange matrix J, a ones row or
//! column of one term) compute every element as `+-x_k * 1` plus products with zero; with a
//! multiple `cI` of the identity (`c` finite), as `x_k * c` plus products with zero, the one
//! product rounded once to the result type, exactly as the multiply `x * c` rounds it:
//! - finite values come back bit for bit, except that a zero may come back with the other
//!   sign (`-0 + +0 = +0`). XLA treats the sign of a zero as immaterial in the same way: its
//!   algebraic simplifier replaces `x + 0` by `x` and `x * 1` by `x`, and compares zeros equal.
//! - an infinity or NaN in a row of the left operand turns that whole row of the result into
//!   NaN (`inf * 0 = NaN`), where XLA would keep the other elements. The products assume finite
//!   operands: the kernels a matrix unit runs are finite by construction (attention scores,
//!   products of bounded values), and a kernel that relies on propagating infinities through
//!   a value that must visit the matrix unit on its way is outside what these rules promise.
//!   The elementwise identities (`x * 1`, `x + -0`) are exact for every value, infinities,
//!   NaNs and signed zeros included; where the ISA has both kinds, extraction chooses by
//!   instruction count like any other alternative.

use crate::egraph::SelGraph;
use crate::precision::{holds_narrower_values, within_half_range};
use crate::isa::Isa;
use crate::lang::{DType, DotDims, Literal, Node, Op, OpCode, Ty};
use crate::rewrites::{from_bytes_term, representable, to_bytes_term, Term};
use crate::tiling::Extents;
use egg::Id;
use std::collections::{BTreeMap, BTreeSet};

/// Constant matrices larger than this many elements are not introduced (a literal of that
/// size is listed value by value in the assembly).
pub const MAX_CONSTANT_ELEMENTS: i64 = 1 << 16;

/// The element types in which the ISA's semantics compute each operator without changing
/// type (operands and result of one type): where an identity through it is exact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identities {
    pub dot: BTreeSet<DType>,
    /// Of those, the types in which a product takes its operands as they are (not widened
    /// from a narrower type first): any value of the type passes through it.
    pub dot_direct: BTreeSet<DType>,
    pub multiply: BTreeSet<DType>,
    pub add: BTreeSet<DType>,
    pub maximum: BTreeSet<DType>,
    pub minimum: BTreeSet<DType>,
    /// The types whose every product the semantics compute is added onto another value (a
    /// unit that only multiplies and accumulates): a product is computed there as itself
    /// plus zero.
    pub accumulate_only: BTreeSet<DType>,
}

impl Identities {
    /// Reads `isa`'s semantics.
    pub fn of(isa: &Isa) -> Identities {
        let mut out = Identities::default();
        let (mut accumulating, mut bare) = (BTreeSet::new(), BTreeSet::new());
        for instr in &isa.instructions {
            for product in instr.semantics.iter().filter(|op| op.op == OpCode::Dot) {
                let added = instr.semantics.iter().any(|op| op.op == OpCode::Add && op.operands.contains(&product.name));
                if added { &mut accumulating } else { &mut bare }.insert(product.dtype);
            }
        }
        out.accumulate_only = accumulating.difference(&bare).copied().collect();
        for instr in &isa.instructions {
            let dtypes: BTreeMap<&str, DType> = instr.semantics.iter().map(|op| (op.name.as_str(), op.dtype)).collect();
            for op in &instr.semantics {
                let dtype = op.dtype;
                let same =
                    !op.operands.is_empty() && op.operands.iter().all(|o| dtypes.get(o.as_str()) == Some(&dtype));
                if !same {
                    continue;
                }
                let converted = |o: &String| {
                    instr.semantics.iter().any(|p| &p.name == o && p.op == OpCode::Convert)
                };
                if op.op == OpCode::Dot && !op.operands.iter().any(converted) {
                    out.dot_direct.insert(dtype);
                }
                let set = match op.op {
                    OpCode::Dot => &mut out.dot,
                    OpCode::Multiply => &mut out.multiply,
                    OpCode::Add => &mut out.add,
                    OpCode::Maximum => &mut out.maximum,
                    OpCode::Minimum => &mut out.minimum,
                    _ => continue,
                };
                set.insert(dtype);
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        *self == Identities::default()
    }
}

/// The additive identity that keeps every value, signed zeros included: `-0.0` for floats
/// (`+0 + -0 = +0`, `-0 + -0 = -0`), 0 for integers.
fn additive_identity(dtype: DType) -> f64 {
    if dtype.is_float() {
        -0.0
    } else {
        0.0
    }
}

/// `c = +-2^k`: a finite, non-zero value whose reciprocal is exact in binary floating point.
pub fn is_power_of_two(c: f64) -> bool {
    c.is_finite() && c != 0.0 && (c.abs().to_bits() & ((1u64 << 52) - 1)) == 0 && c.abs() >= f64::MIN_POSITIVE
}

fn splat(ty: Ty, v: f64) -> Term {
    Term::Node(Op::Constant(Literal::from_values(&[v])), ty, vec![])
}

/// `rows x cols` literal with `value(r, c)` at each position.
fn matrix(dtype: DType, rows: i64, cols: i64, value: impl Fn(i64, i64) -> f64) -> Option<Term> {
    if rows.checked_mul(cols)? > MAX_CONSTANT_ELEMENTS {
        return None;
    }
    let values: Vec<f64> = (0..rows).flat_map(|r| (0..cols).map(move |c| (r, c))).map(|(r, c)| value(r, c)).collect();
    let lit = Literal::from_values(&values);
    let ty = Ty::new(dtype, vec![rows, cols]);
    // A literal that is one value throughout is written as a splat.
    Some(match lit.splat() {
        Some(v) if values.len() > 1 => splat(ty, v),
        _ => Term::Node(Op::Constant(lit), ty, vec![]),
    })
}

/// `s * I` of size `n`.
fn scaled_identity(dtype: DType, n: i64, s: f64) -> Option<Term> {
    matrix(dtype, n, n, |r, c| if r == c { s } else { 0.0 })
}

/// The exchange matrix of size `n` (ones on the anti-diagonal).
fn exchange(dtype: DType, n: i64) -> Option<Term> {
    matrix(dtype, n, n, |r, c| if r + c == n - 1 { 1.0 } else { 0.0 })
}

/// `dot(a, b)` of matrices, contracting `a`'s columns with `b`'s rows.
fn matmul(a: Term, b: Term, ty: Ty) -> Term {
    let dims = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
    Term::Node(Op::Dot(dims), ty, vec![a, b])
}

/// `x : ty`, a kernel input wider than every product the ISA computes, times `m` (a constant
/// `w x w` matrix applied to each row of `w` elements: a multiple of the identity) computed on
/// the matrix seen as rows of the widest product's `w` columns and reshaped back: an
/// elementwise operation does not depend on the layout, and rows of `w` are what the product
/// takes (a 16 x 40 int8 scale on a 16-column array: 40 rows of 16). `None` where the matrix
/// fits or its elements are no whole number of such rows.
fn on_rows_of_the_product(eg: &SelGraph, tiles: &Extents, x: Id, ty: &Ty, m: impl Fn(i64) -> Option<Term>) -> Option<Term> {
    let w = tiles.product_columns().filter(|&w| w > 0 && ty.shape[1] > w && ty.elements() % w == 0)?;
    if !crate::tiling::read_as_is(eg, x) {
        return None;
    }
    let rows = ty.with_shape(vec![ty.elements() / w, w]);
    let product = matmul(reshape(Term::Class(x), ty, rows.clone()), m(w)?, rows.clone());
    Some(reshape(product, &rows, ty.clone()))
}

/// Whether the matrix unit takes value `x` as an operand: any value where a product takes its
/// operands as they are, a value of a narrower type where the unit widens them first (an
/// int32 matrix is no operand of an array that multiplies int8 values widened to int32).
fn unit_takes(eg: &SelGraph, ids: &Identities, x: Id) -> bool {
    ids.dot_direct.contains(&eg[x].data.dtype) || holds_narrower_values(eg, x)
}

fn reshape(x: Term, from: &Ty, to: Ty) -> Term {
    if *from == to {
        x
    } else {
        Term::Node(Op::Reshape, to, vec![x])
    }
}

/// Whether `node` is one of the pass-through identities (`x + 0`, `x * 1`): it computes
/// nothing, and the tiling of its class follows the operation the class computes instead.
/// Only exact ones: a float `x + (+0.0)` computes something (it turns `-0` into `+0`), so
/// its class is tiled by it.
pub fn is_pass_through(eg: &SelGraph, node: &Node) -> bool {
    let one = |id: Id| eg[id].nodes.iter().any(|n| matches!(&n.op, Op::Constant(lit) if lit.splat() == Some(1.0)));
    match node.op {
        Op::Add => node.children.iter().any(|&c| is_additive_identity(eg, c, node.ty.dtype)),
        Op::Multiply => node.children.iter().any(|&c| one(c)),
        _ => false,
    }
}

/// Whether class `id` holds a literal that is zero throughout (a ReLU's bound: rewriting
/// `max(x, 0)` through a ReLU would give it back; `min(x, 0) = x - relu(x)` is one).
pub fn is_zero(eg: &SelGraph, id: Id) -> bool {
    zero_within(eg, id, 3, false, &mut BTreeMap::new())
}

/// Whether class `id` holds [`additive_identity`] of `dtype` throughout: any zero of an
/// integer type, `-0.0` of a float one.
fn is_additive_identity(eg: &SelGraph, id: Id, dtype: DType) -> bool {
    zero_within(eg, id, 3, dtype.is_float(), &mut BTreeMap::new())
}

/// [`is_zero`] (or, `negative`, a zero of negative sign), looking through at most `depth`
/// conversions and moves of a zero literal not yet folded (classes may be cyclic: a
/// reshape's class can hold the reshape back). `seen` holds the depth each class was looked
/// into with: one looked into as deep before held no zero (the search stops at the first),
/// so it is not looked into again. A tiled kernel's classes hold many slices and reshapes of
/// one another, and without this each test of a sum or maximum walked every path three
/// levels deep.
fn zero_within(eg: &SelGraph, id: Id, depth: usize, negative: bool, seen: &mut BTreeMap<Id, usize>) -> bool {
    let id = eg.find(id);
    if seen.get(&id).is_some_and(|&d| d >= depth) {
        return false;
    }
    seen.insert(id, depth);
    eg[id].nodes.iter().any(|n| match &n.op {
        Op::Constant(lit) => lit.splat().is_some_and(|v| v == 0.0 && (!negative || v.is_sign_negative())),
        // An integer zero converts to `+0.0`.
        Op::Convert if negative && !eg[n.children[0]].data.dtype.is_float() => false,
        Op::Convert | Op::Broadcast(_) | Op::Reshape | Op::Slice(_) if depth > 0 => {
            zero_within(eg, n.children[0], depth - 1, negative, seen)
        }
        _ => false,
    })
}

/// Whether one of `a` and `b` is a ReLU (its class holds a maximum with zero) and the other a
/// literal of no positive value: their maximum is the ReLU, as the identities that give a
/// ReLU its maximum with the lower bounds of narrower types record; written through a ReLU
/// again it would only grow the e-graph.
fn relu_above_bound(eg: &SelGraph, a: Id, b: Id) -> bool {
    let relu = |c: Id| eg[c].nodes.iter().any(|n| n.op == Op::Maximum && n.children.iter().any(|&z| is_zero(eg, z)));
    let at_most_zero =
        |c: Id| eg[c].nodes.iter().any(|n| matches!(&n.op, Op::Constant(lit) if lit.values().all(|v| v <= 0.0)));
    (relu(a) && at_most_zero(b)) || (relu(b) && at_most_zero(a))
}

/// `x` written to HBM and read back (`from_bytes(to_bytes(x))`, see
/// [`crate::egraph::to_bytes`]): an operation that an ISA computes only on the way out, as a
/// store's ReLU, can then feed a later one through a load.
fn through_hbm(x: Term, ty: &Ty) -> Term {
    from_bytes_term(to_bytes_term(x, ty), ty)
}

/// Ways for value `x` to pass through an instruction unchanged: `x.I` (matrices), `x * 1`,
/// `x + -0`. Offered once per kernel value (the caller's choice of classes); each term's
/// result joins `x`'s class, so it is never applied to its own output again.
pub fn pass_through(eg: &SelGraph, ids: &Identities, tiles: &Extents, x: Id) -> Vec<(&'static str, Term)> {
    let ty = eg[x].data.clone();
    let mut out = Vec::new();
    if ty.rank() == 0 || ty.dtype == DType::Pred {
        return out;
    }
    if ids.dot.contains(&ty.dtype) && ty.rank() == 2 && tiles.takes_square_product(ty.shape[1]) {
        if let Some(i) = scaled_identity(ty.dtype, ty.shape[1], 1.0) {
            out.push(("identity-product", matmul(Term::Class(x), i, ty.clone())));
        }
    }
    if ids.multiply.contains(&ty.dtype) {
        out.push(("identity-multiply", Term::Node(Op::Multiply, ty.clone(), vec![Term::Class(x), splat(ty.clone(), 1.0)])));
    }
    if ids.add.contains(&ty.dtype) {
        out.push(plus_zero(&ty, x));
    }
    out
}

/// `x + 0` for a value `x` of type `ty` (the zero that keeps every value, signed zeros
/// included).
pub fn plus_zero(ty: &Ty, x: Id) -> (&'static str, Term) {
    let zero = splat(ty.clone(), additive_identity(ty.dtype));
    ("identity-add", Term::Node(Op::Add, ty.clone(), vec![Term::Class(x), zero]))
}

/// The operands of a sum that pass through the matrix unit as `x = x.I`, for units that add
/// only onto a product (`x + y = x.I + y`, a multiply-accumulate; each element of `x.I` is
/// `x * 1`): the operands of a sum in a class that no sum onto a product computes yet, none
/// of them zero (`x + 0` is itself the pass-through). The product
/// joins the operand's class like [`pass_through`]'s, so each value gets it once: tiles of
/// kernel values and values the rules compute (a widened operand becomes a product of narrow
/// operands accumulated in the wide type). Only where one product of the unit takes the
/// operand's width: a wider one would be computed in tiles of mostly zero blocks, while the
/// sum's own tiles pass through whole.
pub fn sum_operands_through_products(
    eg: &SelGraph,
    ids: &Identities,
    tiles: &Extents,
    class: Id,
    node: &Node,
) -> Vec<(&'static str, Id, Term)> {
    let ty = &node.ty;
    let mut out = Vec::new();
    if node.op != Op::Add || node.children.len() != 2 || ty.rank() != 2 || !ids.dot.contains(&ty.dtype) {
        return out;
    }
    if !tiles.takes_square_product(ty.shape[1]) || node.children.iter().any(|&c| is_zero(eg, c)) {
        return out;
    }
    let takes = |x: Id| unit_takes(eg, ids, x);
    // A sum the class already computes from a product the unit takes (a partial sum of a
    // split contraction, or one this rule served) needs no other.
    let product = |c: Id| {
        eg[c].nodes.iter().any(|n| {
            let narrow = |&k: &Id| eg[k].data.dtype != eg[c].data.dtype;
            matches!(n.op, Op::Dot(_)) && n.children.iter().all(|k| narrow(k) || takes(*k))
        })
    };
    let from_product = |n: &Node| n.op == Op::Add && n.children.iter().any(|&c| product(c));
    let served = product(class) || eg[class].nodes.iter().any(from_product);
    // A widened narrow operand still passes through where the other is the product: it is
    // what the multiply-accumulate adds, and reaches the wide accumulator as `x.I`.
    let passes = |x: Id| !product(x) && takes(x) && (!served || holds_narrower_values(eg, x));
    if let Some(i) = scaled_identity(ty.dtype, ty.shape[1], 1.0) {
        for &x in node.children.iter().filter(|&&x| passes(x)) {
            out.push(("add-through-product", eg.find(x), matmul(Term::Class(x), i.clone(), ty.clone())));
        }
    }
    out
}

fn other<'n>(node: &'n Node, name: &str) -> Option<&'n str> {
    match &node.op {
        Op::Other { name: n, attrs } if n == name => Some(attrs),
        _ => None,
    }
}

/// Operators the ISA lacks, as products or sums with constant matrices (one e-node `node` of
/// class `id`). Every term is exact in the node's element type (see the module comment).
pub fn lowerings(eg: &SelGraph, ids: &Identities, tiles: &Extents, node: &Node) -> Vec<(&'static str, Term)> {
    let ty = node.ty.clone();
    let dt = ty.dtype;
    let mut out = Vec::new();
    let child_ty = |k: usize| eg[node.children[k]].data.clone();
    // -1 is a value of signed and float types only (XLA negates unsigned values modulo 2^n).
    let signed = dt.is_float() || dt.is_signed();
    if other(node, "negate").is_some() && node.children.len() == 1 && signed {
        let x = Term::Class(node.children[0]);
        if ids.multiply.contains(&dt) {
            out.push(("negate-as-multiply", Term::Node(Op::Multiply, ty.clone(), vec![x.clone(), splat(ty.clone(), -1.0)])));
        }
        if ids.dot.contains(&dt) && ty.rank() == 2 && unit_takes(eg, ids, node.children[0]) {
            if let Some(m) = scaled_identity(dt, ty.shape[1], -1.0) {
                out.push(("negate-as-product", matmul(x, m, ty.clone())));
            }
            let rows = on_rows_of_the_product(eg, tiles, node.children[0], &ty, |w| scaled_identity(dt, w, -1.0));
            out.extend(rows.map(|t| ("negate-as-product-on-rows", t)));
        }
    }
    if let Some(attrs) = other(node, "reverse") {
        if ids.dot.contains(&dt) && ty.rank() == 2 && node.children.len() == 1 && unit_takes(eg, ids, node.children[0]) {
            let x = Term::Class(node.children[0]);
            let (rows, cols) = (ty.shape[0], ty.shape[1]);
            let term = match crate::lang::index_list(attrs, "dimensions").as_deref() {
                Some([1]) => exchange(dt, cols).map(|j| matmul(x, j, ty.clone())),
                Some([0]) => exchange(dt, rows).map(|j| matmul(j, x, ty.clone())),
                Some([0, 1]) | Some([1, 0]) => exchange(dt, rows)
                    .zip(exchange(dt, cols))
                    .map(|(jr, jc)| matmul(jr, matmul(x, jc, ty.clone()), ty.clone())),
                _ => None,
            };
            out.extend(term.map(|t| ("reverse-as-product", t)));
        }
        // The columns of a product reversed are the product with its right operand's columns
        // reversed, its rows with its left operand's rows reversed: the same sums, permuted.
        if ty.rank() == 2 && node.children.len() == 1 {
            let dims = crate::lang::index_list(attrs, "dimensions").unwrap_or_default();
            let reverse = |x: Id, d: usize| {
                let x_ty = eg[x].data.clone();
                Term::Node(Op::Other { name: "reverse".into(), attrs: format!("dimensions={{{d}}}") }, x_ty, vec![Term::Class(x)])
            };
            let std = |dd: &DotDims| dd.lhs_batch.is_empty() && dd.lhs_contracting == [1] && dd.rhs_contracting == [0];
            for n in &eg[node.children[0]].nodes {
                let Op::Dot(dd) = &n.op else { continue };
                if !std(dd) || !(dims == [0] || dims == [1]) {
                    continue;
                }
                let (a, b) = (n.children[0], n.children[1]);
                let term = if dims == [1] {
                    Term::Node(n.op.clone(), ty.clone(), vec![Term::Class(a), reverse(b, 1)])
                } else {
                    Term::Node(n.op.clone(), ty.clone(), vec![reverse(a, 0), Term::Class(b)])
                };
                out.push(("reverse-through-product", term));
            }
        }
    }
    // A pad without interior padding is the operand between blocks of the padding value,
    // one concatenation per padded dimension: the same elements.
    if let Some(attrs) = other(node, "pad") {
        let config = crate::lang::attribute(attrs, "padding").and_then(crate::infer::padding_config);
        let x_ty = child_ty(0);
        let usable = |c: &[(i64, i64, i64)]| c.len() == x_ty.rank() && c.iter().all(|&(lo, hi, interior)| lo >= 0 && hi >= 0 && interior == 0);
        if let Some(config) = config.filter(|c| node.children.len() == 2 && usable(c) && eg[node.children[1]].data.rank() == 0) {
            let mut term = Term::Class(node.children[0]);
            let mut shape = x_ty.shape.clone();
            for (d, &(lo, hi, _)) in config.iter().enumerate() {
                if lo == 0 && hi == 0 {
                    continue;
                }
                let block = |n: i64| {
                    let mut b = shape.clone();
                    b[d] = n;
                    Term::Node(Op::Broadcast(vec![]), Ty::new(dt, b), vec![Term::Class(node.children[1])])
                };
                let mut parts = Vec::new();
                if lo > 0 {
                    parts.push(block(lo));
                }
                parts.push(term);
                if hi > 0 {
                    parts.push(block(hi));
                }
                shape[d] += lo + hi;
                term = Term::Node(Op::Concatenate(d), Ty::new(dt, shape.clone()), parts);
            }
            out.push(("pad-as-concatenate", term));
        }
    }
    if let Some(attrs) = other(node, "clamp") {
        // XLA: clamp(lo, x, hi) = min(max(x, lo), hi); `lo` and `hi` may be scalars.
        // A minimum the ISA lacks may come from its maximum (`minimum-by-relu`).
        let minimum = ids.minimum.contains(&dt) || (dt.is_signed() && ids.add.contains(&dt));
        let bounds_ok = node.children.len() == 3 && ids.maximum.contains(&dt) && minimum;
        if bounds_ok && attrs.is_empty() {
            let widen = |k: usize| {
                let t = child_ty(k);
                if t == ty {
                    Some(Term::Class(node.children[k]))
                } else if t.rank() == 0 && t.dtype == dt {
                    Some(Term::Node(Op::Broadcast(vec![]), ty.clone(), vec![Term::Class(node.children[k])]))
                } else {
                    None
                }
            };
            if let (Some(lo), Some(hi)) = (widen(0), widen(2)) {
                let x = Term::Class(node.children[1]);
                let low = Term::Node(Op::Maximum, ty.clone(), vec![x, lo]);
                // The maximum may be computed only on the way out to HBM (a store's ReLU), and
                // is then read back for the minimum.
                for low in [through_hbm(low.clone(), &ty), low] {
                    out.push(("clamp-as-maximum-minimum", Term::Node(Op::Minimum, ty.clone(), vec![low, hi.clone()])));
                }
            }
        }
    }
    // A maximum with a constant `l` is at least `l`, so its maximum with a smaller bound
    // is itself: `m = max(m, lo)`. Offered for the lower bounds of narrower signed types,
    // which saturating stores clamp at: `min(max(x, 0), 127)` is then `min(max(max(x, 0),
    // -128), 127)`, an int8 store's saturation of the ReLU.
    if node.op == Op::Maximum && dt.is_signed() && ids.maximum.contains(&dt) && ids.minimum.contains(&dt) && node.children.len() == 2 {
        let splat_of = |c: Id| eg[c].nodes.iter().find_map(|n| match &n.op {
            Op::Constant(lit) => lit.splat(),
            _ => None,
        });
        if let Some(l) = node.children.iter().filter_map(|&c| splat_of(c)).reduce(f64::max) {
            let itself = Term::Node(Op::Maximum, ty.clone(), node.children.iter().map(|&c| Term::Class(c)).collect());
            for narrow in [DType::S8, DType::S16].into_iter().filter(|t| t.bytes() < dt.bytes()) {
                let lo = -(2f64.powi(8 * narrow.bytes() as i32 - 1));
                if lo < l {
                    out.push(("maximum-already-met", Term::Node(Op::Maximum, ty.clone(), vec![itself.clone(), splat(ty.clone(), lo)])));
                }
            }
        }
    }
    match &node.op {
        // IEEE subtraction is the addition of the negation, bit for bit.
        Op::Subtract if ids.add.contains(&dt) => {
            let negated = Term::Node(
                Op::Other { name: "negate".into(), attrs: String::new() },
                ty.clone(),
                vec![Term::Class(node.children[1])],
            );
            out.push(("subtract-as-add", Term::Node(Op::Add, ty.clone(), vec![Term::Class(node.children[0]), negated])));
        }
        // An integer sum with zero is the other operand, and zero minus a value its negation
        // (the ReLU forms of a minimum with zero leave these).
        Op::Add if dt.is_int() && node.children.len() == 2 => {
            for (z, x) in [(0, 1), (1, 0)] {
                if is_zero(eg, node.children[z]) {
                    out.push(("add-zero", Term::Class(node.children[x])));
                }
            }
        }
        Op::Subtract if dt.is_signed() && node.children.len() == 2 && is_zero(eg, node.children[0]) => {
            let negated = Op::Other { name: "negate".into(), attrs: String::new() };
            out.push(("zero-minus", Term::Node(negated, ty.clone(), vec![Term::Class(node.children[1])])));
        }
        // An integer maximum or minimum from a ReLU, `max(x, y) = y + max(x - y, 0)` and
        // `min(x, y) = x - max(x - y, 0)`, where `x - y` cannot overflow (both operands
        // widened from a narrower type, or small literals: the int8 maximum widened to int32).
        // The ReLU is offered where it lies and read back from HBM, for an ISA that applies it
        // only on the way out (a store's activation).
        Op::Maximum | Op::Minimum
            if dt.is_signed()
                && ids.maximum.contains(&dt)
                && ids.add.contains(&dt)
                && node.children.len() == 2
                && within_half_range(eg, node.children[0])
                && within_half_range(eg, node.children[1])
                && !(node.op == Op::Maximum && node.children.iter().any(|&c| is_zero(eg, c)))
                && !(node.op == Op::Maximum && relu_above_bound(eg, node.children[0], node.children[1])) =>
        {
            let (x, y) = (Term::Class(node.children[0]), Term::Class(node.children[1]));
            let diff = Term::Node(Op::Subtract, ty.clone(), vec![x.clone(), y.clone()]);
            let relu = Term::Node(Op::Maximum, ty.clone(), vec![diff, splat(ty.clone(), 0.0)]);
            for r in [relu.clone(), through_hbm(relu, &ty)] {
                out.push(if node.op == Op::Maximum {
                    ("maximum-by-relu", Term::Node(Op::Add, ty.clone(), vec![y.clone(), r]))
                } else {
                    ("minimum-by-relu", Term::Node(Op::Subtract, ty.clone(), vec![x.clone(), r]))
                });
            }
        }
        // A matrix scaled by a finite constant is its product with that multiple of the
        // identity: each element is the one product `x * c`, rounded once to the result type
        // as the multiply rounds it, plus products with zero (see the module's note on zeros
        // and on infinities in the left operand).
        Op::Multiply if ids.dot.contains(&dt) && ty.rank() == 2 && !ids.multiply.contains(&dt) => {
            let scale = |k: usize| {
                eg[node.children[k]].nodes.iter().find_map(|n| match &n.op {
                    Op::Constant(lit) => lit.splat().filter(|c| c.is_finite()),
                    _ => None,
                })
            };
            let scaled = [(0, 1), (1, 0)].into_iter().find_map(|(x, c)| Some((node.children[x], scale(c)?)));
            if let Some((x, c)) = scaled.filter(|&(x, _)| unit_takes(eg, ids, x)) {
                out.extend(scaled_identity(dt, ty.shape[1], c).map(|m| ("scale-as-product", matmul(Term::Class(x), m, ty.clone()))));
                let rows = on_rows_of_the_product(eg, tiles, x, &ty, |w| scaled_identity(dt, w, c));
                out.extend(rows.map(|t| ("scale-as-product-on-rows", t)));
            }
        }
        // A division by a power of two is the multiplication by its reciprocal, bit for bit:
        // both are the same exact value `x * 2^-k` rounded once to the type (infinities,
        // NaNs and signed zeros included), where the reciprocal is itself a value of the type.
        Op::Divide if dt.is_float() && (ids.multiply.contains(&dt) || ids.dot.contains(&dt)) && node.children.len() == 2 => {
            let divisor = eg[node.children[1]].nodes.iter().find_map(|n| match &n.op {
                Op::Constant(lit) => lit.splat(),
                _ => None,
            });
            if let Some(c) = divisor.filter(|&c| is_power_of_two(c) && representable(1.0 / c, dt)) {
                let x = Term::Class(node.children[0]);
                out.push(("divide-as-multiply", Term::Node(Op::Multiply, ty.clone(), vec![x, splat(ty.clone(), 1.0 / c)])));
            }
        }
        // A row or column repeated is a product with ones over a contraction of size one:
        // each element is one product with 1.
        // Not only for rows the unit takes: the product's row tiles also tile the broadcast
        // (an int32 bias row broadcast down a 64-row product is then added a tile at a time).
        Op::Broadcast(d) if ids.dot.contains(&dt) && ty.rank() == 2 => {
            let v_ty = child_ty(0);
            let v = Term::Class(node.children[0]);
            let (rows, cols) = (ty.shape[0], ty.shape[1]);
            let ones = |r: i64, c: i64| matrix(dt, r, c, |_, _| 1.0);
            match d.as_slice() {
                [0] if v_ty.shape == [rows] => {
                    let column = reshape(v, &v_ty, v_ty.with_shape(vec![rows, 1]));
                    out.extend(ones(1, cols).map(|o| ("broadcast-as-product", matmul(column, o, ty.clone()))));
                }
                [1] if v_ty.shape == [cols] => {
                    let row = reshape(v, &v_ty, v_ty.with_shape(vec![1, cols]));
                    match tiles.padded_contraction(1) {
                        None => out.extend(ones(rows, 1).map(|o| ("broadcast-as-product", matmul(o, row, ty.clone())))),
                        // Units that contract a fixed k > 1 elements: the row above k - 1 zero
                        // rows, times a matrix whose first column is ones and the rest zeros.
                        Some(k) => {
                            let zeros = Term::Node(Op::Constant(Literal::from_values(&[0.0])), Ty::new(dt, vec![k - 1, cols]), vec![]);
                            let padded = Term::Node(Op::Concatenate(0), Ty::new(dt, vec![k, cols]), vec![row, zeros]);
                            let first_column = matrix(dt, rows, k, |_, c| if c == 0 { 1.0 } else { 0.0 });
                            out.extend(first_column.map(|e| ("broadcast-as-padded-product", matmul(e, padded, ty.clone()))));
                        }
                    }
                }
                _ => {}
            }
        }
        // Integer sums along one dimension of a matrix are products with ones: wrapping
        // integer addition gives the same result in any order. Never for floats.
        Op::ReduceAdd(d) if dt.is_int() && ids.dot.contains(&dt) && child_ty(0).rank() == 2 && ty.rank() == 1 => {
            let x_ty = child_ty(0);
            let x = Term::Class(node.children[0]);
            let (rows, cols) = (x_ty.shape[0], x_ty.shape[1]);
            let ones = |r: i64, c: i64| matrix(dt, r, c, |_, _| 1.0);
            match d.as_slice() {
                [1] => out.extend(ones(cols, 1).map(|o| {
                    let wide = Ty::new(dt, vec![rows, 1]);
                    ("sum-as-product", reshape(matmul(x, o, wide.clone()), &wide, ty.clone()))
                })),
                [0] => out.extend(ones(1, rows).map(|o| {
                    let wide = Ty::new(dt, vec![1, cols]);
                    ("sum-as-product", reshape(matmul(o, x, wide.clone()), &wide, ty.clone()))
                })),
                _ => {}
            }
        }
        _ => {}
    }
    out
}

/// Class `c` as a window of a kernel input's elements in row-major order (the input as it is
/// read, through slices and reshapes that add or drop dimensions of one, `depth` deep): the
/// input's elements as a flat term, where `c`'s first element lies among them, and the
/// distance between `c`'s elements along each of its dimensions. A row of such a window whose
/// elements are adjacent is one run of HBM, which a load reads as a column. Transposes of
/// computed values are left out (they would go to HBM and back, and every product's other
/// layouts hold such transposes).
fn input_layout(eg: &SelGraph, c: Id, depth: usize, from: Reads) -> Option<(Term, i64, Vec<i64>)> {
    let ty = &eg[c].data;
    let mut strides = vec![1; ty.rank()];
    for d in (0..ty.rank().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * ty.shape[d + 1];
    }
    if crate::tiling::read_as_is(eg, c) {
        return Some((reshape(Term::Class(c), ty, ty.with_shape(vec![ty.elements()])), 0, strides));
    }
    if let Some(bytes) = from.stored.then(|| stored_bytes(eg, c)).flatten() {
        // Read from the bytes themselves: the computed value's class holds every way of
        // computing it, and each would be flattened too.
        return Some((elements_of_bytes(Term::Class(bytes), eg[bytes].data.elements(), ty.dtype), 0, strides));
    }
    if depth == 0 {
        return None;
    }
    eg[c].nodes.iter().find_map(|n| match &n.op {
        Op::Slice(r) if r.iter().all(|d| d.2 == 1) => {
            let (y, start, strides) = input_layout(eg, n.children[0], depth - 1, from)?;
            Some((y, start + r.iter().zip(&strides).map(|(d, s)| d.0 * s).sum::<i64>(), strides))
        }
        Op::Reshape => {
            let z = n.children[0];
            let (y, start, z_strides) = input_layout(eg, z, depth - 1, from)?;
            let not_one = |shape: &[i64]| shape.iter().copied().filter(|&d| d != 1).collect::<Vec<i64>>();
            if not_one(&ty.shape) != not_one(&eg[z].data.shape) {
                return None;
            }
            let mut kept = eg[z].data.shape.iter().zip(z_strides).filter(|(&d, _)| d != 1).map(|(_, s)| s);
            let strides = ty.shape.iter().map(|&d| if d == 1 { Some(0) } else { kept.next() }).collect::<Option<_>>()?;
            Some((y, start, strides))
        }
        _ => None,
    })
}

/// What a transpose by products reads the rows of a matrix from, each loaded as a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// Also from a computed value that travels through HBM (`x = from_bytes(to_bytes(x))`):
    /// stored, then read as an input is. For the kernel's own transposes only: every
    /// computed matrix has such a path, and every product's other layouts would hold the
    /// products of its transpose. Otherwise from kernel inputs (and windows of them) alone.
    pub stored: bool,
    /// Also rows whose elements lie a stride apart in HBM (a window of every `s`-th column),
    /// where loads read a window of rows of any pitch: each is one column of such a window.
    pub strided: bool,
}

impl Reads {
    /// From kernel inputs, rows a stride apart where `strided`.
    pub fn inputs(strided: bool) -> Reads {
        Reads { stored: false, strided }
    }

    /// From kernel inputs and stored values, rows a stride apart where `strided`.
    pub fn stored(strided: bool) -> Reads {
        Reads { stored: true, strided }
    }
}

/// The flat bytes class `c` is read from, where it is a bit cast of a reshape of them: the
/// way a value that travels through HBM is read back ([`crate::egraph::add_spill_paths`]).
fn stored_bytes(eg: &SelGraph, c: Id) -> Option<Id> {
    let flat_bytes = |b: Id| eg[b].data.dtype == DType::U8 && eg[b].data.rank() == 1;
    let reshaped_bytes = |r: Id| {
        eg[r].nodes.iter().find(|n| n.op == Op::Reshape && flat_bytes(n.children[0])).map(|n| eg.find(n.children[0]))
    };
    if eg[c].data.dtype == DType::U8 {
        return reshaped_bytes(c);
    }
    eg[c].nodes.iter().filter(|n| n.op == Op::BitcastConvert).find_map(|n| {
        let r = n.children[0];
        if flat_bytes(r) { Some(eg.find(r)) } else { reshaped_bytes(r) }
    })
}

/// The `dtype` elements of `n` flat bytes: `bitcast_convert(reshape(bytes) : u8[n / w, w])`.
fn elements_of_bytes(bytes: Term, n: i64, dtype: DType) -> Term {
    let width = i64::from(dtype.bytes());
    let count = n / width;
    if dtype == DType::U8 {
        return bytes;
    }
    let raw = if width == 1 { bytes } else { Term::Node(Op::Reshape, Ty::new(DType::U8, vec![count, width]), vec![bytes]) };
    Term::Node(Op::BitcastConvert, Ty::new(dtype, vec![count]), vec![raw])
}

/// Most products [`transpose_by_products`] computes a transpose with (one per column of each
/// tile of its result): a 256 x 256 transpose on a 16 x 16 array.
pub const MAX_RANK_ONE_PRODUCTS: i64 = 4096;

/// The transpose of matrix `x` on an ISA whose semantics transpose nowhere, as sums of products
/// that each contract one element: a tile of the result that one product computes, rows
/// `[lo, hi)` and columns `[a, b)`, is `sum_k x_k^T . e_(k - a)` over rows `k` of `x` in `[a,
/// b)`, where `x_k^T` is row `k`'s elements `[lo, hi)` read as a column (one run of HBM: a
/// load reads it in any shape) and `e_j` row `j` of the identity; the tiles are concatenated
/// along columns, then rows. Each product is an outer product `[hi - lo, 1] . [1, b - a]`,
/// and each element of the result is `x * 1` plus products with zero: exact in every type in
/// which the unit multiplies and adds without changing type (with the module's caveat on the
/// sign of a float zero and on infinities). Only for windows of kernel inputs whose rows are
/// runs of them, where some product contracts one element and takes `x`, within
/// [`MAX_RANK_ONE_PRODUCTS`]; `None` elsewhere.
pub fn transpose_by_products(eg: &SelGraph, ids: &Identities, tiles: &Extents, x: Id, from: Reads) -> Option<Term> {
    let whole: Vec<(i64, i64, i64)> = eg[x].data.shape.iter().map(|&n| (0, n, 1)).collect();
    window_transpose_by_products(eg, ids, tiles, x, &whole, from)
}

/// [`transpose_by_products`] of the window `ranges` (unit steps) of matrix `x`.
pub fn window_transpose_by_products(
    eg: &SelGraph,
    ids: &Identities,
    tiles: &Extents,
    x: Id,
    ranges: &[(i64, i64, i64)],
    from: Reads,
) -> Option<Term> {
    let x_ty = &eg[x].data;
    let &[(r0, r1, 1), (c0, c1, 1)] = ranges else { return None };
    if x_ty.rank() != 2 || !unit_takes(eg, ids, x) {
        return None;
    }
    let (flat, start, strides) = input_layout(eg, x, 3, from)?;
    let start = start + r0 * strides[0] + c0 * strides[1];
    let length = flat_length(eg, &flat);
    transposed_window(ids, tiles, x_ty.dtype, [r1 - r0, c1 - c0], (&flat, length), start, [strides[0], strides[1]], from.strided)
}

/// [`transpose_by_products`] of item `i` of a batch of matrices `x` (`[batch, rows, columns]`).
pub fn item_transpose_by_products(eg: &SelGraph, ids: &Identities, tiles: &Extents, x: Id, i: i64, from: Reads) -> Option<Term> {
    let x_ty = &eg[x].data;
    if x_ty.rank() != 3 || !unit_takes(eg, ids, x) {
        return None;
    }
    let (flat, start, strides) = input_layout(eg, x, 3, from)?;
    let shape = [x_ty.shape[1], x_ty.shape[2]];
    let length = flat_length(eg, &flat);
    transposed_window(ids, tiles, x_ty.dtype, shape, (&flat, length), start + i * strides[0], [strides[1], strides[2]], from.strided)
}

/// The element count of the flat term [`input_layout`] gives.
fn flat_length(eg: &SelGraph, flat: &Term) -> i64 {
    match flat {
        Term::Class(c) => eg[*c].data.elements(),
        Term::Node(_, ty, _) => ty.elements(),
    }
}

/// The transpose of the `shape` matrix whose element `(r, c)` is element `start + r s0 + c s1`
/// of the flat term `flat` of `length` elements, computed as [`transpose_by_products`] says;
/// a row whose elements lie `s1 > 1` apart only where `strided` ([`strided_column`]).
#[allow(clippy::too_many_arguments)]
fn transposed_window(
    ids: &Identities,
    tiles: &Extents,
    dt: DType,
    shape: [i64; 2],
    (flat, length): (&Term, i64),
    start: i64,
    strides: [i64; 2],
    strided: bool,
) -> Option<Term> {
    if (strides[1] != 1 && !strided) || strides[1] < 1 || !ids.dot.contains(&dt) || !ids.add.contains(&dt) || !tiles.takes_contraction(1) {
        return None;
    }

    let (rows, columns) = (shape[1], shape[0]);
    let tile_rows = tiles.product_rows().unwrap_or(rows).max(1);
    let tile_columns = tiles.product_columns().unwrap_or(columns).max(1);
    if rows <= 1 || columns <= 1 || (rows + tile_rows - 1) / tile_rows * columns > MAX_RANK_ONE_PRODUCTS {
        return None;
    }
    let ty = Ty::new(dt, vec![rows, columns]);
    let tile = |(lo, hi): (i64, i64), (a, b): (i64, i64)| -> Option<Term> {
        let identity = scaled_identity(dt, b - a, 1.0)?;
        let product = |k: i64| {
            let first = start + k * strides[0] + lo * strides[1];
            let column = if strides[1] == 1 {
                let run = Term::Node(Op::Slice(vec![(first, first + hi - lo, 1)]), Ty::new(dt, vec![hi - lo]), vec![flat.clone()]);
                Term::Node(Op::Reshape, Ty::new(dt, vec![hi - lo, 1]), vec![run])
            } else {
                strided_column(flat, dt, length, first, hi - lo, strides[1])?
            };
            let j = k - a;
            let e_j = Term::Node(Op::Slice(vec![(j, j + 1, 1), (0, b - a, 1)]), Ty::new(dt, vec![1, b - a]), vec![identity.clone()]);
            Some(matmul(column, e_j, Ty::new(dt, vec![hi - lo, b - a])))
        };
        // The product first in each sum, as multiply-accumulate semantics write it.
        let sum_ty = Ty::new(dt, vec![hi - lo, b - a]);
        (a + 1..b).try_fold(product(a)?, |sum, k| Some(Term::Node(Op::Add, sum_ty.clone(), vec![product(k)?, sum])))
    };
    let spans = |n: i64, t: i64| (0..n).step_by(t as usize).map(move |lo| (lo, (lo + t).min(n))).collect::<Vec<_>>();
    let concat = |dim: usize, shape: Vec<i64>, parts: Vec<Term>| Term::concatenate(dim, Ty::new(dt, shape), parts);
    let row_blocks = spans(rows, tile_rows)
        .into_iter()
        .map(|r| {
            let parts = spans(columns, tile_columns).into_iter().map(|c| tile(r, c)).collect::<Option<Vec<_>>>()?;
            Some(concat(1, vec![r.1 - r.0, columns], parts))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(concat(0, ty.shape.clone(), row_blocks))
}

/// Most rows [`transpose_by_columns`] writes a transpose as.
pub const MAX_COLUMNS_READ: i64 = 1024;

/// The transpose of matrix `x` (a kernel input, or a value stored to HBM) as its columns
/// read one by one from where it lies, each a row of the result: `concatenate_0(reshape(x[:,
/// c]) : [1, rows])`. For a transpose the kernel writes out: a column read as `[rows, 1]` is
/// the bytes of that row, which a store writes as they are. Exact for every type (the same
/// elements); `None` where `x` is neither, or has more than [`MAX_COLUMNS_READ`] columns.
pub fn transpose_by_columns(eg: &SelGraph, x: Id) -> Option<Term> {
    let x_ty = &eg[x].data;
    let &[rows, columns] = x_ty.shape.as_slice() else { return None };
    if columns > MAX_COLUMNS_READ || rows < 2 || columns < 2 {
        return None;
    }
    let (flat, start, strides) = input_layout(eg, x, 3, Reads::stored(true))?;
    let (length, dt) = (flat_length(eg, &flat), x_ty.dtype);
    let parts = (0..columns)
        .map(|c| {
            let column = strided_column(&flat, dt, length, start + c * strides[1], rows, strides[0])?;
            Some(Term::Node(Op::Reshape, Ty::new(dt, vec![1, rows]), vec![column]))
        })
        .collect::<Option<Vec<Term>>>()?;
    Some(Term::concatenate(0, Ty::new(dt, vec![columns, rows]), parts))
}

/// Elements `first + i * stride` (`i < n`, `stride > 1`) of the flat term `flat` of `length`
/// elements as a column `[n, 1]`: one column of the rows of `stride` elements that hold them
/// (`slice(reshape(flat[base .. base + n * stride]) : [n, stride])`, the form of a strided
/// load), the rows starting early enough to end within `flat`; `None` where they cannot.
fn strided_column(flat: &Term, dt: DType, length: i64, first: i64, n: i64, stride: i64) -> Option<Term> {
    let col = (first + n * stride - length).max(0);
    if col >= stride || col > first {
        return None;
    }
    let base = first - col;
    let span = if (base, n * stride) == (0, length) {
        flat.clone()
    } else {
        Term::Node(Op::Slice(vec![(base, base + n * stride, 1)]), Ty::new(dt, vec![n * stride]), vec![flat.clone()])
    };
    let rows = Term::Node(Op::Reshape, Ty::new(dt, vec![n, stride]), vec![span]);
    Some(Term::Node(Op::Slice(vec![(0, n, 1), (col, col + 1, 1)]), Ty::new(dt, vec![n, 1]), vec![rows]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egraph::TypeAnalysis;
    use crate::rewrites::{apply, search, RuleSet};

    fn rules(ops: &[&str]) -> RuleSet {
        let all = [DType::BF16, DType::S32].into_iter().collect::<BTreeSet<DType>>();
        let on = |name: &str| if ops.contains(&name) { all.clone() } else { BTreeSet::new() };
        let identities = Identities {
            dot: on("dot"),
            dot_direct: on("dot"),
            multiply: on("multiply"),
            add: on("add"),
            maximum: on("maximum"),
            minimum: on("minimum"),
            accumulate_only: on("accumulate only"),
        };
        RuleSet { identities, ..RuleSet::default() }
    }

    fn table(name: &str) -> Isa {
        let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        Isa::from_json(&std::fs::read_to_string(&path).expect("test table")).expect("valid table")
    }

    #[test]
    fn a_unit_that_only_multiplies_and_accumulates_is_told_from_one_with_a_bare_product() {
        // Registers' tiles only compute `C += A.B`; Gemmini and FixedArray also write a bare
        // product.
        assert_eq!(Identities::of(&table("registers_isa.json")).accumulate_only, [DType::S32].into_iter().collect());
        assert!(Identities::of(&table("gemmini_isa.json")).accumulate_only.is_empty());
        assert!(Identities::of(&table("fixedarray_isa.json")).accumulate_only.is_empty());
    }

    fn saturate(eg: &mut SelGraph, rules: &RuleSet) {
        for _ in 0..4 {
            let found = search(eg, rules);
            if !apply(eg, &found) {
                return;
            }
        }
    }

    fn opaque(name: &str, attrs: &str) -> Op {
        Op::Other { name: name.into(), attrs: attrs.into() }
    }

    fn constant(eg: &mut SelGraph, ty: Ty, values: &[f64]) -> Id {
        eg.add(Node::leaf(Op::Constant(Literal::from_values(values)), ty))
    }

    fn product(eg: &mut SelGraph, ty: Ty, a: Id, b: Id) -> Option<Id> {
        let dims = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };
        eg.lookup(Node::new(Op::Dot(dims), ty, vec![a, b]))
    }

    #[test]
    fn reverse_is_a_product_with_the_exchange_matrix() {
        let t = Ty::new(DType::BF16, vec![2, 3]);
        for (dims, rows_side) in [("dimensions={1}", false), ("dimensions={0}", true)] {
            let mut eg = SelGraph::new(TypeAnalysis);
            let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
            let r = eg.add(Node::new(opaque("reverse", dims), t.clone(), vec![x]));
            saturate(&mut eg, &rules(&["dot"]));
            let found = if rows_side {
                let j = constant(&mut eg, Ty::new(DType::BF16, vec![2, 2]), &[0.0, 1.0, 1.0, 0.0]);
                product(&mut eg, t.clone(), j, x)
            } else {
                let j = constant(&mut eg, Ty::new(DType::BF16, vec![3, 3]), &[0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
                product(&mut eg, t.clone(), x, j)
            };
            assert_eq!(found.map(|p| eg.find(p)), Some(eg.find(r)), "{dims}");
        }
    }

    #[test]
    fn a_scale_is_a_product_with_a_multiple_of_the_identity_where_nothing_multiplies() {
        let t = Ty::new(DType::BF16, vec![2, 2]);
        for (ops, expected) in [(&["dot"][..], true), (&["dot", "multiply"][..], false)] {
            let mut eg = SelGraph::new(TypeAnalysis);
            let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
            let c = constant(&mut eg, t.clone(), &[0.125]);
            // Either operand order: `c * x` as well as `x * c`.
            let scaled = eg.add(Node::new(Op::Multiply, t.clone(), vec![c, x]));
            saturate(&mut eg, &rules(ops));
            let m = constant(&mut eg, t.clone(), &[0.125, 0.0, 0.0, 0.125]);
            let found = product(&mut eg, t.clone(), x, m);
            assert_eq!(found.map(|p| eg.find(p)) == Some(eg.find(scaled)), expected, "{ops:?}");
        }
        // An infinite scale would put `inf * 0 = NaN` off the diagonal: never.
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let inf = constant(&mut eg, t.clone(), &[f64::INFINITY]);
        eg.add(Node::new(Op::Multiply, t.clone(), vec![x, inf]));
        saturate(&mut eg, &rules(&["dot"]));
        assert!(eg.classes().all(|c| c.nodes.iter().all(|n| !matches!(n.op, Op::Dot(_)))));
    }

    #[test]
    fn a_scale_wider_than_every_product_is_computed_on_rows_of_the_products_width() {
        // Products of at most 4 columns: x : [2, 8] * 0.125 is the product of x seen as 4 rows
        // of 4 with 0.125 I, seen back as [2, 8].
        let t = Ty::new(DType::BF16, vec![2, 8]);
        let rows = Ty::new(DType::BF16, vec![4, 4]);
        let tiles = Extents::from_entries([(OpCode::Dot, vec![Some(4), Some(4)])]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let c = constant(&mut eg, t.clone(), &[0.125]);
        let node = Node::new(Op::Multiply, t.clone(), vec![x, c]);
        let found = lowerings(&eg, &rules(&["dot"]).identities, &tiles, &node);
        let on_rows = |x: Term| {
            let viewed = Term::Node(Op::Reshape, rows.clone(), vec![x]);
            let product = matmul(viewed, scaled_identity(DType::BF16, 4, 0.125).unwrap(), rows.clone());
            Term::Node(Op::Reshape, t.clone(), vec![product])
        };
        assert!(found.contains(&("scale-as-product-on-rows", on_rows(Term::Class(x)))), "{found:?}");
        // Not on a computed operand (its transposes would each start rows of their own).
        let y = eg.add(Node::new(Op::Exponential, t.clone(), vec![x]));
        let node = Node::new(Op::Multiply, t.clone(), vec![y, c]);
        let found = lowerings(&eg, &rules(&["dot"]).identities, &tiles, &node);
        assert!(found.iter().all(|(rule, _)| *rule != "scale-as-product-on-rows"), "{found:?}");
    }

    #[test]
    fn a_transpose_is_a_sum_of_products_of_rows_read_as_columns_with_rows_of_the_identity() {
        // x : [2, 3] on a unit of at most 4 x 4 that contracts one element: x^T : [3, 2] is
        // x_1^T . e_1 + x_0^T . e_0, row k of x its elements [3k, 3k + 3) read as a column.
        let t = Ty::new(DType::BF16, vec![2, 3]);
        let tiles = Extents::from_entries([(OpCode::Dot, vec![Some(4), Some(4)])]).with_contractions(&[4]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let ids = rules(&["dot", "add"]).identities;
        let found = transpose_by_products(&eg, &ids, &tiles, x, Reads::inputs(false)).expect("a transpose by products");
        let flat = Term::Node(Op::Reshape, t.with_shape(vec![6]), vec![Term::Class(x)]);
        let out = Ty::new(DType::BF16, vec![3, 2]);
        let product = |k: i64| {
            let run = Term::Node(Op::Slice(vec![(3 * k, 3 * k + 3, 1)]), t.with_shape(vec![3]), vec![flat.clone()]);
            let column = Term::Node(Op::Reshape, t.with_shape(vec![3, 1]), vec![run]);
            let identity = scaled_identity(DType::BF16, 2, 1.0).unwrap();
            let e = Term::Node(Op::Slice(vec![(k, k + 1, 1), (0, 2, 1)]), t.with_shape(vec![1, 2]), vec![identity]);
            matmul(column, e, out.clone())
        };
        assert_eq!(found, Term::Node(Op::Add, out.clone(), vec![product(1), product(0)]));
        // Wider than the unit: tiles of 4 columns, each its own sum. Not where the unit
        // contracts no single element, nor for a computed matrix.
        let y = eg.add(Node::leaf(Op::Input(1), Ty::new(DType::BF16, vec![6, 2])));
        let tiled = transpose_by_products(&eg, &ids, &tiles, y, Reads::inputs(false));
        assert!(matches!(&tiled, Some(Term::Node(Op::Concatenate(1), _, parts)) if parts.len() == 2), "{tiled:?}");
        let fixed = Extents::from_entries([(OpCode::Dot, vec![Some(4), Some(4)])]).with_fixed_contractions(&[4]);
        assert_eq!(transpose_by_products(&eg, &ids, &fixed, x, Reads::inputs(false)), None);
        let computed = eg.add(Node::new(Op::Exponential, t.clone(), vec![x]));
        assert_eq!(transpose_by_products(&eg, &ids, &tiles, computed, Reads::inputs(false)), None);
    }

    #[test]
    fn a_transpose_written_out_reads_each_column_of_a_stored_value_as_a_row() {
        // y = exp(x) : s32[3, 2] stored (y = from_bytes(to_bytes(y))): row c of y^T is column
        // c of y, elements c, c + 2, c + 4 of its flat elements, one column of [3, 2].
        let t = Ty::new(DType::S32, vec![3, 2]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let y = eg.add(Node::new(Op::Exponential, t.clone(), vec![x]));
        assert_eq!(transpose_by_columns(&eg, y), None, "not stored");
        let bytes = crate::egraph::to_bytes(&mut eg, y);
        let back = crate::egraph::from_bytes(&mut eg, bytes, &t);
        eg.union(y, back);
        eg.rebuild();
        let y = eg.find(y);
        let Some(Term::Node(Op::Concatenate(0), ty, rows)) = transpose_by_columns(&eg, y) else { panic!("a concatenation of rows") };
        assert_eq!((ty.shape, rows.len()), (vec![2, 3], 2));
        let Term::Node(Op::Reshape, row, column) = &rows[1] else { panic!("a column seen as a row") };
        assert_eq!(row.shape, vec![1, 3]);
        let Term::Node(Op::Slice(window), _, grid) = &column[0] else { panic!("a column of a window") };
        assert_eq!(window, &vec![(0, 3, 1), (1, 2, 1)]);
        assert!(matches!(&grid[0], Term::Node(Op::Reshape, g, _) if g.shape == vec![3, 2]));
    }

    #[test]
    fn a_relu_is_its_own_maximum_with_the_lower_bounds_of_narrower_types() {
        let t = Ty::new(DType::S32, vec![2, 2]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let zero = constant(&mut eg, t.clone(), &[0.0]);
        let relu = eg.add(Node::new(Op::Maximum, t.clone(), vec![x, zero]));
        saturate(&mut eg, &rules(&["maximum", "minimum"]));
        for lo in [-128.0, -32768.0] {
            let bound = constant(&mut eg, t.clone(), &[lo]);
            let found = eg.lookup(Node::new(Op::Maximum, t.clone(), vec![relu, bound]));
            assert_eq!(found.map(|c| eg.find(c)), Some(eg.find(relu)), "{lo}");
        }
    }

    #[test]
    fn clamp_is_minimum_of_maximum_with_scalar_bounds_broadcast() {
        let t = Ty::new(DType::BF16, vec![2, 3]);
        let scalar = Ty::new(DType::BF16, vec![]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let lo = constant(&mut eg, scalar.clone(), &[-1.0]);
        let hi = constant(&mut eg, scalar, &[1.0]);
        let c = eg.add(Node::new(opaque("clamp", ""), t.clone(), vec![lo, x, hi]));
        saturate(&mut eg, &rules(&["maximum", "minimum"]));
        let wide = |eg: &SelGraph, s: Id| eg.lookup(Node::new(Op::Broadcast(vec![]), t.clone(), vec![s])).unwrap();
        let (wlo, whi) = (wide(&eg, lo), wide(&eg, hi));
        let low = eg.lookup(Node::new(Op::Maximum, t.clone(), vec![x, wlo])).expect("max(x, lo)");
        let both = eg.lookup(Node::new(Op::Minimum, t.clone(), vec![low, whi])).expect("min(.., hi)");
        assert_eq!(eg.find(both), eg.find(c));
        // Without a minimum there is no lowering.
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let c = eg.add(Node::new(opaque("clamp", ""), t.clone(), vec![x, x, x]));
        saturate(&mut eg, &rules(&["maximum"]));
        assert_eq!(eg[c].nodes.len(), 1);
    }

    #[test]
    fn sums_are_products_with_ones_for_integers_only() {
        for (dtype, expected) in [(DType::S32, true), (DType::BF16, false)] {
            let mut eg = SelGraph::new(TypeAnalysis);
            let x = eg.add(Node::leaf(Op::Input(0), Ty::new(dtype, vec![2, 3])));
            let s = eg.add(Node::new(Op::ReduceAdd(vec![1]), Ty::new(dtype, vec![2]), vec![x]));
            saturate(&mut eg, &rules(&["dot"]));
            let ones = constant(&mut eg, Ty::new(dtype, vec![3, 1]), &[1.0]);
            let p = product(&mut eg, Ty::new(dtype, vec![2, 1]), x, ones);
            let flat = p.and_then(|p| eg.lookup(Node::new(Op::Reshape, Ty::new(dtype, vec![2]), vec![p])));
            assert_eq!(flat.map(|f| eg.find(f) == eg.find(s)), expected.then_some(true), "{dtype}");
        }
    }

    #[test]
    fn a_broadcast_column_is_a_product_with_a_row_of_ones() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let v = eg.add(Node::leaf(Op::Input(0), Ty::new(DType::BF16, vec![2])));
        let t = Ty::new(DType::BF16, vec![2, 3]);
        let b = eg.add(Node::new(Op::Broadcast(vec![0]), t.clone(), vec![v]));
        saturate(&mut eg, &rules(&["dot"]));
        let column = eg.lookup(Node::new(Op::Reshape, Ty::new(DType::BF16, vec![2, 1]), vec![v])).expect("v as a column");
        let ones = constant(&mut eg, Ty::new(DType::BF16, vec![1, 3]), &[1.0]);
        assert_eq!(product(&mut eg, t, column, ones).map(|p| eg.find(p)), Some(eg.find(b)));
    }

    #[test]
    fn a_broadcast_row_on_a_unit_of_fixed_contraction_is_a_padded_product() {
        // The unit contracts exactly 4 elements: the row above 3 zero rows, times a matrix
        // whose first column is ones.
        let mut eg = SelGraph::new(TypeAnalysis);
        let v = eg.add(Node::leaf(Op::Input(0), Ty::new(DType::BF16, vec![3])));
        let t = Ty::new(DType::BF16, vec![2, 3]);
        let b = eg.add(Node::new(Op::Broadcast(vec![1]), t.clone(), vec![v]));
        let mut fixed = rules(&["dot"]);
        fixed.tiles = Extents::from_entries([]).with_fixed_contractions(&[4]);
        saturate(&mut eg, &fixed);
        let row = eg.lookup(Node::new(Op::Reshape, Ty::new(DType::BF16, vec![1, 3]), vec![v])).expect("v as a row");
        let zeros = constant(&mut eg, Ty::new(DType::BF16, vec![3, 3]), &[0.0]);
        let padded = eg.lookup(Node::new(Op::Concatenate(0), Ty::new(DType::BF16, vec![4, 3]), vec![row, zeros])).expect("padded row");
        let first_column = constant(&mut eg, Ty::new(DType::BF16, vec![2, 4]), &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        assert_eq!(product(&mut eg, t.clone(), first_column, padded).map(|p| eg.find(p)), Some(eg.find(b)));
        // Not the plain product with a column of ones, which no unit computes.
        let ones = constant(&mut eg, Ty::new(DType::BF16, vec![2, 1]), &[1.0]);
        assert_eq!(product(&mut eg, t, ones, row), None);
    }

    #[test]
    fn subtract_is_the_add_of_a_negation_that_multiplies_by_minus_one() {
        let t = Ty::new(DType::BF16, vec![2, 3]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let a = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let b = eg.add(Node::leaf(Op::Input(1), t.clone()));
        let d = eg.add(Node::new(Op::Subtract, t.clone(), vec![a, b]));
        saturate(&mut eg, &rules(&["add", "multiply"]));
        let minus_one = constant(&mut eg, t.clone(), &[-1.0]);
        let neg = eg.lookup(Node::new(Op::Multiply, t.clone(), vec![b, minus_one])).expect("b * -1");
        let sum = eg.lookup(Node::new(Op::Add, t, vec![a, neg])).expect("a + -b");
        assert_eq!(eg.find(sum), eg.find(d));
    }

    #[test]
    fn a_division_by_a_power_of_two_is_the_multiplication_by_its_reciprocal() {
        let t = Ty::new(DType::BF16, vec![2, 3]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let a = eg.add(Node::leaf(Op::Input(0), t.clone()));
        let quotient = |eg: &mut SelGraph, c: f64| {
            let k = constant(eg, t.clone(), &[c]);
            eg.add(Node::new(Op::Divide, t.clone(), vec![a, k]))
        };
        let by = [(-4.0, Some(-0.25)), (0.125, Some(8.0)), (3.0, None), (0.0, None), (2f64.powi(-130), None)]
            .map(|(c, reciprocal)| (quotient(&mut eg, c), reciprocal));
        // An integer division truncates: never a multiplication.
        let ti = t.with_dtype(DType::S32);
        let ai = eg.add(Node::leaf(Op::Input(1), ti.clone()));
        let two = constant(&mut eg, ti.clone(), &[2.0]);
        let int_quotient = eg.add(Node::new(Op::Divide, ti.clone(), vec![ai, two]));
        saturate(&mut eg, &rules(&["multiply"]));
        for (q, reciprocal) in by {
            let multiplied = eg[q].nodes.iter().any(|n| n.op == Op::Multiply);
            assert_eq!(multiplied, reciprocal.is_some());
            if let Some(r) = reciprocal {
                let r = constant(&mut eg, t.clone(), &[r]);
                assert_eq!(eg.lookup(Node::new(Op::Multiply, t.clone(), vec![a, r])).map(|m| eg.find(m)), Some(eg.find(q)));
            }
        }
        assert!(!eg[int_quotient].nodes.iter().any(|n| n.op == Op::Multiply));
    }

    #[test]
    fn only_an_exact_sum_with_zero_passes_through() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let mut sum_with = |dtype: DType, zero: f64, widened: bool| {
            let t = Ty::new(dtype, vec![4, 16]);
            let x = eg.add(Node::leaf(Op::Input(0), t.clone()));
            let z = if widened {
                let narrow = constant(&mut eg, t.with_dtype(DType::S8), &[zero]);
                eg.add(Node::new(Op::Convert, t.clone(), vec![narrow]))
            } else {
                constant(&mut eg, t.clone(), &[zero])
            };
            let node = Node::new(Op::Add, t, vec![x, z]);
            is_pass_through(&eg, &node)
        };
        assert!(sum_with(DType::F32, -0.0, false), "x + -0 is x, signed zeros included");
        assert!(!sum_with(DType::F32, 0.0, false), "-0 + +0 is +0: the sum computes something");
        assert!(!sum_with(DType::F32, 0.0, true), "an integer zero converts to +0");
        assert!(sum_with(DType::S32, 0.0, false) && sum_with(DType::S32, 0.0, true));
    }

    #[test]
    fn constant_matrices() {
        let Some(Term::Node(Op::Constant(lit), ty, _)) = exchange(DType::BF16, 3) else { panic!() };
        assert_eq!(ty.shape, vec![3, 3]);
        let v: Vec<f64> = lit.values().collect();
        assert_eq!(v, vec![0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
        let Some(Term::Node(Op::Constant(ones), _, _)) = matrix(DType::S8, 1, 4, |_, _| 1.0) else { panic!() };
        assert_eq!(ones.bits, vec![1f64.to_bits()]);
        assert!(scaled_identity(DType::BF16, 1 << 9, 1.0).is_none());
        assert_eq!(additive_identity(DType::BF16).to_bits(), (-0.0f64).to_bits());
        assert_eq!(additive_identity(DType::S32).to_bits(), 0);
    }
}
