//! Mixed-precision rewrites: an operator whose result is wider than its operands is the same
//! operator on operands converted to the wide type, where that is exact.
//!
//! - `dot(a, b) : W` with operands of a type `N` that widens exactly to `W` (JAX's int8
//!   product `s32 dot(s8, s8)`, `f32 dot(bf16, bf16)`) is `dot(convert(a, W), convert(b, W))`:
//!   both multiply the exact values and accumulate in `W`. The converse holds too, so a
//!   product the kernel writes on widened operands meets a unit that takes the narrow ones.
//! - An integer `dot` in `N`, where the units compute products in a wider `W` only, is the
//!   product in `W` of the widened operands, converted back (wrapping, as below).
//! - An integer `add`, `subtract` or `multiply` in `N` is the wide operator on widened
//!   operands converted back (two's complement arithmetic wraps the same way in every
//!   width); `maximum` and `minimum` are for floats too (their result is one of the
//!   operands, which both conversions carry exactly). And conversely.
//!
//! An operand counts as widened when it is a `convert` from the narrow type, a reshape of
//! one, or a constant all of whose values the narrow type holds (the ones matrix of an int32
//! row sum of int8 values is an int8 literal).
//!
//! Convert round trips (`convert(convert(x, W), N) = x`) are the `convert-exact-round-trip`
//! rule of [`crate::rewrites`]. Each rule is on only for the types the ISA's semantics use
//! (see [`Widenings::of`]), so that an ISA without mixed precision grows no extra nodes.

use crate::egraph::SelGraph;
use crate::isa::Isa;
use crate::lang::{DType, Literal, Node, Op, OpCode, Ty};
use crate::rewrites::{integer_range, representable, Rewrite, Term};
use egg::Id;
use std::collections::{BTreeMap, BTreeSet};

/// The widenings useful to an ISA, read from its semantics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Widenings {
    /// Element types `W` in which some semantics compute a `dot`.
    pub dots: BTreeSet<DType>,
    /// `(operator, element type)` of the elementwise binary operators the semantics compute.
    pub elementwise: BTreeSet<(OpCode, DType)>,
}

/// The elementwise operators the rules widen, and whether floats may be widened too.
fn widenable(op: &Op) -> Option<(OpCode, bool)> {
    Some(match op {
        Op::Add => (OpCode::Add, false),
        Op::Subtract => (OpCode::Subtract, false),
        Op::Multiply => (OpCode::Multiply, false),
        Op::Maximum => (OpCode::Maximum, true),
        Op::Minimum => (OpCode::Minimum, true),
        _ => return None,
    })
}

impl Widenings {
    /// The dot and elementwise types of `isa`'s semantics.
    pub fn of(isa: &Isa) -> Widenings {
        let mut out = Widenings::default();
        for op in isa.instructions.iter().flat_map(|i| &i.semantics) {
            match op.op {
                OpCode::Dot => {
                    out.dots.insert(op.dtype);
                }
                code @ (OpCode::Add
                | OpCode::Subtract
                | OpCode::Multiply
                | OpCode::Maximum
                | OpCode::Minimum) => {
                    out.elementwise.insert((code, op.dtype));
                }
                _ => {}
            }
        }
        // A signed minimum comes from a maximum and sums (`minimum-by-relu` of the identity
        // rules), so it is widened where they are computed.
        let derived: Vec<(OpCode, DType)> = out
            .elementwise
            .iter()
            .filter(|&&(c, t)| c == OpCode::Maximum && t.is_signed() && out.elementwise.contains(&(OpCode::Add, t)))
            .map(|&(_, t)| (OpCode::Minimum, t))
            .collect();
        out.elementwise.extend(derived);
        out
    }

    fn is_empty(&self) -> bool {
        self.dots.is_empty() && self.elementwise.is_empty()
    }
}

/// Whether computing in `wide` instead of `narrow` and converting back is exact for an
/// operator that takes floats only when `floats` says so.
fn exact(narrow: DType, wide: DType, floats: bool) -> bool {
    narrow != wide
        && narrow.widens_exactly_to(wide)
        && (floats || (narrow.is_int() && wide.is_int()))
}

fn convert(x: Term, from: &Ty, to: DType) -> Term {
    if from.dtype == to {
        x
    } else {
        Term::Node(Op::Convert, from.with_dtype(to), vec![x])
    }
}

/// The narrow values under a widening convert in class `id`: `(z, its type)` for each
/// `convert(z)` node there whose operand widens exactly to the class's type, and, for a
/// `reshape(convert(z))` there, the reshape of `z` (converting commutes with reshaping:
/// `bias.astype(jnp.int32)[:, None]` is such a reshape).
fn widened_from(eg: &SelGraph, id: Id) -> Vec<(Term, Ty)> {
    let wide = eg[id].data.dtype;
    let narrow = |t: &Ty| t.dtype != wide && t.dtype.widens_exactly_to(wide);
    let mut out = Vec::new();
    for node in &eg[id].nodes {
        match node.op {
            Op::Convert => {
                let z = eg.find(node.children[0]);
                if narrow(&eg[z].data) {
                    out.push((Term::Class(z), eg[z].data.clone()));
                }
            }
            Op::Reshape => {
                for inner in eg[node.children[0]].nodes.iter().filter(|n| n.op == Op::Convert) {
                    let z = eg.find(inner.children[0]);
                    let z_ty = &eg[z].data;
                    if narrow(z_ty) {
                        let shaped = node.ty.with_dtype(z_ty.dtype);
                        out.push((Term::Node(Op::Reshape, shaped.clone(), vec![Term::Class(z)]), shaped));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether every value of class `id`, of a signed integer type `W`, lies strictly within
/// a quarter of `W`'s range (`|v| < 2^(bits - 2)`), so that the difference of two such values
/// is a value of `W` ([`magnitude_bound`]: a value widened from a narrower integer type, a
/// small literal, or an int8 product's int32 result of a contraction short enough).
pub fn within_half_range(eg: &SelGraph, id: Id) -> bool {
    let dtype = eg[id].data.dtype;
    dtype.is_signed() && magnitude_bound(eg, id).is_some_and(|b| b < 2f64.powi(8 * dtype.bytes() as i32 - 2))
}

/// How deep [`magnitude_bound`] looks below a class: a clamp of a product (minimum, maximum,
/// the product, the conversion of its operands) and the slices and reshapes of its tiles.
const BOUND_DEPTH: usize = 6;

/// A bound on `|v|` for every value `v` of integer class `id`: the least that one of its nodes
/// proves, or its type's range. A node proves one from its operands' bounds where its exact
/// result cannot wrap: a literal's largest magnitude; a conversion's operand's (a widening
/// one, or one whose operand already fits); moves, slices, concatenations, maxima and minima
/// the largest of their operands'; a sum or difference their sum; a product of two values
/// theirs; a matrix product its contraction's length times the product of its operands'
/// bounds (an int8 product's int32 result of a contraction of 48: at most 48 * 2^14).
pub fn magnitude_bound(eg: &SelGraph, id: Id) -> Option<f64> {
    bound_within(eg, id, BOUND_DEPTH, &mut BTreeMap::new())
}

fn bound_within(eg: &SelGraph, id: Id, depth: usize, memo: &mut BTreeMap<Id, Option<f64>>) -> Option<f64> {
    let id = eg.find(id);
    if let Some(&known) = memo.get(&id) {
        return known;
    }
    let (lo, hi) = integer_range(eg[id].data.dtype).filter(|_| eg[id].data.dtype.is_int())?;
    let range = lo.abs().max(hi.abs());
    // A class met again below itself (a reshape of its reshape) proves nothing more.
    memo.insert(id, Some(range));
    let mut best = range;
    for node in &eg[id].nodes {
        let mut operand = |k: usize| -> Option<f64> {
            let c = *node.children.get(k)?;
            if depth == 0 || !eg[c].data.dtype.is_int() {
                return None;
            }
            bound_within(eg, c, depth - 1, memo)
        };
        let proved = match &node.op {
            Op::Constant(lit) => Some(lit.values().fold(0.0, |m: f64, v| m.max(v.abs()))),
            Op::Convert | Op::Reshape | Op::Copy | Op::Transpose(_) | Op::Slice(_) | Op::Broadcast(_) => operand(0),
            Op::Concatenate(_) | Op::Maximum | Op::Minimum => {
                (0..node.children.len()).map(&mut operand).try_fold(0.0, |m: f64, b| Some(m.max(b?)))
            }
            Op::Add | Op::Subtract if node.children.len() == 2 => Some(operand(0)? + operand(1)?),
            Op::Multiply if node.children.len() == 2 => Some(operand(0)? * operand(1)?),
            Op::Dot(dd) if node.children.len() == 2 => {
                let lhs = &eg[node.children[0]].data;
                let length: i64 = dd.lhs_contracting.iter().map(|&d| lhs.shape[d]).product();
                Some(length as f64 * operand(0)? * operand(1)?)
            }
            _ => None,
        };
        // A bound beyond the type's range means the exact result may wrap: it proves nothing.
        if let Some(b) = proved.filter(|&b| -b >= lo && b <= hi) {
            best = best.min(b);
        }
    }
    memo.insert(id, Some(best));
    Some(best)
}

/// Whether every value of integer class `id` is a value of a narrower integer type: a
/// widening convert from one (or a reshape of one), or a literal one holds.
pub fn holds_narrower_values(eg: &SelGraph, id: Id) -> bool {
    let dtype = eg[id].data.dtype;
    let narrower: Vec<DType> = [DType::S8, DType::U8, DType::S16, DType::U16, DType::S32, DType::U32]
        .into_iter()
        .filter(|t| dtype.is_int() && t.bytes() < dtype.bytes())
        .collect();
    widened_from(eg, id).iter().any(|(_, t)| narrower.contains(&t.dtype))
        || eg[id].nodes.iter().any(|n| match &n.op {
            Op::Constant(lit) => narrower.iter().any(|&t| lit.values().all(|v| representable(v, t))),
            _ => false,
        })
}

/// The mixed-precision rewrites found starting from the canonical classes `ids`, in their order.
pub fn search_classes(eg: &SelGraph, rules: &Widenings, ids: &[Id]) -> Vec<Rewrite> {
    let mut out = Vec::new();
    if rules.is_empty() {
        return out;
    }
    for &id in ids {
        for node in &eg[id].nodes {
            propose(eg, rules, id, node, &mut out);
        }
    }
    out
}

fn propose(eg: &SelGraph, rules: &Widenings, id: Id, node: &Node, out: &mut Vec<Rewrite>) {
    if node.op == Op::Convert {
        narrow_elementwise(eg, rules, id, node, out);
        narrow_saturated(eg, rules, id, node, out);
        return;
    }
    let ty = &node.ty;
    let mut push = |rule: &'static str, term: Term| {
        if term != Term::Class(id) {
            out.push(Rewrite { rule, class: id, term });
        }
    };
    match &node.op {
        Op::Dot(dims) if node.children.len() == 2 => {
            let (a, b) = (eg.find(node.children[0]), eg.find(node.children[1]));
            let (ta, tb) = (&eg[a].data, &eg[b].data);
            // dot(a, b) : W = dot(convert(a, W), convert(b, W)) for narrow a, b.
            if ta.dtype == tb.dtype && rules.dots.contains(&ty.dtype) && exact(ta.dtype, ty.dtype, true) {
                let widened = vec![convert(Term::Class(a), ta, ty.dtype), convert(Term::Class(b), tb, ty.dtype)];
                push("dot-widen-operands", Term::Node(Op::Dot(dims.clone()), ty.clone(), widened));
            }
            // An integer dot(a, b) : N = convert(dot(convert(a, W), convert(b, W)) : W, N), for
            // units that multiply and accumulate in W only (a weight-stationary array whose
            // int32 results an activation unit narrows): two's complement products and sums
            // wrap alike in every width, so the wide result's low bits are the narrow one's.
            if ta.dtype == ty.dtype && tb.dtype == ty.dtype && !rules.dots.contains(&ty.dtype) {
                for &wide in rules.dots.iter().filter(|&&w| exact(ty.dtype, w, false)) {
                    let wide_ty = ty.with_dtype(wide);
                    let widened = vec![convert(Term::Class(a), ta, wide), convert(Term::Class(b), tb, wide)];
                    let product = Term::Node(Op::Dot(dims.clone()), wide_ty.clone(), widened);
                    push("dot-wide-then-narrowed", convert(product, &wide_ty, ty.dtype));
                }
            }
            // dot(convert(z1, W), convert(z2, W)) : W = dot(z1, z2) : W, for units that take
            // the narrow operands and accumulate wide; a constant operand counts as converted
            // when the narrow type holds its values (a ones matrix of an integer row sum).
            if ta.dtype == ty.dtype && tb.dtype == ty.dtype && rules.dots.contains(&ty.dtype) {
                let mut narrow_types: Vec<DType> =
                    widened_from(eg, a).into_iter().chain(widened_from(eg, b)).map(|(_, t)| t.dtype).collect();
                narrow_types.sort();
                narrow_types.dedup();
                for narrow in narrow_types {
                    for z1 in narrowed_all(eg, a, narrow) {
                        for z2 in narrowed_all(eg, b, narrow) {
                            let operands = vec![z1.clone(), z2];
                            push("dot-narrow-operands", Term::Node(Op::Dot(dims.clone()), ty.clone(), operands));
                        }
                    }
                }
            }
        }
        op => {
            let Some((code, floats)) = widenable(op) else { return };
            if node.children.len() != 2 {
                return;
            }
            let (x, y) = (eg.find(node.children[0]), eg.find(node.children[1]));
            // op(x, y) : N = convert(op(convert(x, W), convert(y, W)) : W, N).
            for &(c, wide) in &rules.elementwise {
                if c == code && exact(ty.dtype, wide, floats) {
                    let wide_ty = ty.with_dtype(wide);
                    let operands = vec![
                        convert(Term::Class(x), &eg[x].data, wide),
                        convert(Term::Class(y), &eg[y].data, wide),
                    ];
                    let computed = Term::Node(op.clone(), wide_ty.clone(), operands);
                    push("elementwise-widen", convert(computed, &wide_ty, ty.dtype));
                }
            }
        }
    }
}

/// Class `id`'s value in the narrow type `narrow`, when it is exactly one: the operand of a
/// widening `convert` there, or a constant all of whose values `narrow` holds.
fn narrowed(eg: &SelGraph, id: Id, narrow: DType) -> Option<Term> {
    narrowed_all(eg, id, narrow).into_iter().next()
}

/// Every way [`narrowed`] finds.
fn narrowed_all(eg: &SelGraph, id: Id, narrow: DType) -> Vec<Term> {
    let id = eg.find(id);
    let mut out: Vec<Term> =
        widened_from(eg, id).into_iter().filter(|(_, t)| t.dtype == narrow).map(|(z, _)| z).collect();
    // One literal is enough: the others in the class are the same value written otherwise.
    out.extend(eg[id].nodes.iter().find_map(|n| match &n.op {
        Op::Constant(lit) if lit.values().all(|v| representable(v, narrow)) => {
            Some(Term::Node(Op::Constant(lit.clone()), n.ty.with_dtype(narrow), vec![]))
        }
        _ => None,
    }));
    out
}

/// `convert(op(convert(x, W), convert(y, W)) : W, N) = op(x, y) : N` for x, y of type `N`
/// (a constant operand counts when its values are values of `N`).
fn narrow_elementwise(eg: &SelGraph, rules: &Widenings, id: Id, node: &Node, out: &mut Vec<Rewrite>) {
    let narrow = node.ty.dtype;
    let inner = eg.find(node.children[0]);
    let wide = eg[inner].data.dtype;
    for op_node in &eg[inner].nodes {
        let Some((code, floats)) = widenable(&op_node.op) else { continue };
        if op_node.children.len() != 2 || !exact(narrow, wide, floats) || !rules.elementwise.contains(&(code, narrow)) {
            continue;
        }
        if let (Some(x), Some(y)) = (narrowed(eg, op_node.children[0], narrow), narrowed(eg, op_node.children[1], narrow)) {
            let term = Term::Node(op_node.op.clone(), node.ty.clone(), vec![x, y]);
            if term != Term::Class(id) {
                out.push(Rewrite { rule: "elementwise-narrow", class: id, term });
            }
        }
    }
}

/// Whether every value of class `id` is a value of the integer type `narrow`: a convert
/// from a type that widens exactly to it, a literal it holds, or a maximum or minimum of such
/// values, or such a value moved around (reshaped, broadcast, transposed, sliced).
fn holds_values_of(eg: &SelGraph, id: Id, narrow: DType, depth: usize) -> bool {
    eg[id].nodes.iter().any(|n| match &n.op {
        Op::Convert => eg[n.children[0]].data.dtype.widens_exactly_to(narrow),
        Op::Constant(lit) => lit.values().all(|v| representable(v, narrow)),
        Op::Maximum | Op::Minimum if depth > 0 => {
            n.children.iter().all(|&c| holds_values_of(eg, c, narrow, depth - 1))
        }
        Op::Reshape | Op::Broadcast(_) | Op::Transpose(_) | Op::Slice(_) if depth > 0 => {
            holds_values_of(eg, n.children[0], narrow, depth - 1)
        }
        _ => false,
    })
}

/// `convert(x, N) = convert(min(max(x, lo), hi), N)` for an integer maximum or minimum `x`
/// of values `N` holds (`lo`, `hi` its least and greatest): the clamp changes nothing, so a store that
/// narrows with saturation narrows it exactly (the int8 maximum computed in int32).
fn narrow_saturated(eg: &SelGraph, rules: &Widenings, id: Id, node: &Node, out: &mut Vec<Rewrite>) {
    let narrow = node.ty.dtype;
    let x = eg.find(node.children[0]);
    let wide_ty = eg[x].data.clone();
    let wide = wide_ty.dtype;
    let clamps = rules.elementwise.contains(&(OpCode::Maximum, wide)) && rules.elementwise.contains(&(OpCode::Minimum, wide));
    if !clamps || !narrow.is_int() || !wide.is_int() || narrow == wide || !narrow.widens_exactly_to(wide) {
        return;
    }
    // The bounds of a 64-bit type are not exact in an f64 literal.
    let Some((lo, hi)) = integer_range(narrow).filter(|_| narrow.bytes() <= 4) else { return };
    // Only a maximum or minimum of such values: a plain widened value narrows back by the
    // round trip, and offering the clamp for it too would grow every tile of a product.
    let clamped = eg[x].nodes.iter().any(|n| {
        matches!(n.op, Op::Maximum | Op::Minimum) && n.children.iter().all(|&c| holds_values_of(eg, c, narrow, 3))
    });
    if !clamped {
        return;
    }
    let splat = |v: f64| Term::Node(Op::Constant(Literal::from_values(&[v])), wide_ty.clone(), vec![]);
    let low = Term::Node(Op::Maximum, wide_ty.clone(), vec![Term::Class(x), splat(lo)]);
    let within = Term::Node(Op::Minimum, wide_ty.clone(), vec![low, splat(hi)]);
    out.push(Rewrite { rule: "narrow-saturated", class: id, term: Term::Node(Op::Convert, node.ty.clone(), vec![within]) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egraph::TypeAnalysis;
    use crate::lang::{DotDims, Literal};

    fn ty(dtype: DType) -> Ty {
        Ty::new(dtype, vec![4, 4])
    }

    fn saturate(eg: &mut SelGraph, rules: &Widenings) {
        for _ in 0..6 {
            let mut ids: Vec<egg::Id> = eg.classes().map(|c| c.id).collect();
            ids.sort();
            let found = search_classes(eg, rules, &ids);
            if !crate::rewrites::apply(eg, &found) {
                return;
            }
        }
        panic!("did not saturate");
    }

    fn rules(dots: &[DType], elementwise: &[(OpCode, DType)]) -> Widenings {
        Widenings { dots: dots.iter().copied().collect(), elementwise: elementwise.iter().copied().collect() }
    }

    const STD: fn() -> DotDims = || DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], ..Default::default() };

    #[test]
    fn magnitudes_are_bounded_by_what_each_operation_of_bounded_operands_can_reach() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let int8 = |eg: &mut SelGraph, i: usize, shape: Vec<i64>| eg.add(Node::leaf(Op::Input(i), Ty::new(DType::S8, shape)));
        let widen = |eg: &mut SelGraph, x: egg::Id| {
            let shape = eg[x].data.shape.clone();
            eg.add(Node::new(Op::Convert, Ty::new(DType::S32, shape), vec![x]))
        };
        let product = |eg: &mut SelGraph, k: i64| {
            let (a, b) = (int8(eg, 0, vec![16, k]), int8(eg, 1, vec![k, 16]));
            let (a, b) = (widen(eg, a), widen(eg, b));
            eg.add(Node::new(Op::Dot(STD()), Ty::new(DType::S32, vec![16, 16]), vec![a, b]))
        };
        // An int8 product's int32 result: at most 48 * 128 * 128 over a contraction of 48,
        // within a quarter of int32's range; one of 2^17 could reach 2^31 and proves nothing.
        let p48 = product(&mut eg, 48);
        assert_eq!(magnitude_bound(&eg, p48), Some(48.0 * 16384.0));
        assert!(within_half_range(&eg, p48));
        let p_long = product(&mut eg, 1 << 17);
        assert_eq!(magnitude_bound(&eg, p_long), Some(2147483648.0), "the type's own range");
        assert!(!within_half_range(&eg, p_long));
        // A clamp's maximum of it with a literal: the larger of the two bounds.
        let low = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[-128.0])), Ty::new(DType::S32, vec![16, 16])));
        let max = eg.add(Node::new(Op::Maximum, Ty::new(DType::S32, vec![16, 16]), vec![p48, low]));
        assert!(within_half_range(&eg, max));
        // An int32 input is any int32 value.
        let x = eg.add(Node::leaf(Op::Input(2), Ty::new(DType::S32, vec![16, 16])));
        assert!(!within_half_range(&eg, x));
        // A uint8 difference may wrap: its bound stays its type's range.
        let u = eg.add(Node::leaf(Op::Input(3), Ty::new(DType::U8, vec![4])));
        let v = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[1.0])), Ty::new(DType::U8, vec![4])));
        let diff = eg.add(Node::new(Op::Subtract, Ty::new(DType::U8, vec![4]), vec![v, u]));
        assert_eq!(magnitude_bound(&eg, diff), Some(255.0));
    }

    #[test]
    fn a_wide_product_of_narrow_operands_is_the_product_of_widened_operands() {
        for (narrow, wide) in [(DType::S8, DType::S32), (DType::BF16, DType::F32)] {
            let mut eg = SelGraph::new(TypeAnalysis);
            let a = eg.add(Node::leaf(Op::Input(0), ty(narrow)));
            let b = eg.add(Node::leaf(Op::Input(1), ty(narrow)));
            let d = eg.add(Node::new(Op::Dot(STD()), ty(wide), vec![a, b]));
            saturate(&mut eg, &rules(&[wide], &[]));
            let wa = eg.lookup(Node::new(Op::Convert, ty(wide), vec![a])).expect("a widened");
            let wb = eg.lookup(Node::new(Op::Convert, ty(wide), vec![b])).expect("b widened");
            let widened = eg.lookup(Node::new(Op::Dot(STD()), ty(wide), vec![wa, wb])).expect("built");
            assert_eq!(eg.find(widened), eg.find(d));
        }
    }

    #[test]
    fn a_product_of_widened_operands_is_the_mixed_product() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let a = eg.add(Node::leaf(Op::Input(0), ty(DType::S8)));
        let wa = eg.add(Node::new(Op::Convert, ty(DType::S32), vec![a]));
        let d = eg.add(Node::new(Op::Dot(STD()), ty(DType::S32), vec![wa, wa]));
        saturate(&mut eg, &rules(&[DType::S32], &[]));
        let mixed = eg.lookup(Node::new(Op::Dot(STD()), ty(DType::S32), vec![a, a])).expect("built");
        assert_eq!(eg.find(mixed), eg.find(d));
    }

    #[test]
    fn a_wide_constant_the_narrow_type_holds_counts_as_widened() {
        // dot(convert(a), ones : s32) = dot(a, ones : s8) : s32, and not for a constant that
        // s8 does not hold.
        for (value, narrowed) in [(1.0, true), (300.0, false)] {
            let mut eg = SelGraph::new(TypeAnalysis);
            let a = eg.add(Node::leaf(Op::Input(0), ty(DType::S8)));
            let wa = eg.add(Node::new(Op::Convert, ty(DType::S32), vec![a]));
            let ones = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[value])), ty(DType::S32)));
            let d = eg.add(Node::new(Op::Dot(STD()), ty(DType::S32), vec![wa, ones]));
            saturate(&mut eg, &rules(&[DType::S32], &[]));
            let narrow = eg.lookup(Node::leaf(Op::Constant(Literal::from_values(&[value])), ty(DType::S8)));
            let mixed = narrow.and_then(|n| eg.lookup(Node::new(Op::Dot(STD()), ty(DType::S32), vec![a, n])));
            assert_eq!(mixed.map(|m| eg.find(m) == eg.find(d)), narrowed.then_some(true), "{value}");
        }
    }

    #[test]
    fn a_reshape_of_a_widened_value_is_the_widened_reshape() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let v = eg.add(Node::leaf(Op::Input(0), Ty::new(DType::S8, vec![4])));
        let wv = eg.add(Node::new(Op::Convert, Ty::new(DType::S32, vec![4]), vec![v]));
        let column = eg.add(Node::new(Op::Reshape, Ty::new(DType::S32, vec![4, 1]), vec![wv]));
        let b = eg.add(Node::leaf(Op::Input(1), Ty::new(DType::S8, vec![1, 4])));
        let wb = eg.add(Node::new(Op::Convert, Ty::new(DType::S32, vec![1, 4]), vec![b]));
        let d = eg.add(Node::new(Op::Dot(STD()), ty(DType::S32), vec![column, wb]));
        saturate(&mut eg, &rules(&[DType::S32], &[]));
        let narrow_column = eg.lookup(Node::new(Op::Reshape, Ty::new(DType::S8, vec![4, 1]), vec![v])).expect("built");
        let mixed = eg.lookup(Node::new(Op::Dot(STD()), ty(DType::S32), vec![narrow_column, b])).expect("built");
        assert_eq!(eg.find(mixed), eg.find(d));
    }

    #[test]
    fn products_are_widened_only_exactly_and_only_to_types_the_isa_uses() {
        for (narrow, wide, isa) in [
            (DType::S32, DType::F32, DType::F32), // f32 does not hold every s32
            (DType::F32, DType::BF16, DType::BF16), // a narrowing
            (DType::S8, DType::S32, DType::S16),  // the ISA multiplies in s16 only
        ] {
            let mut eg = SelGraph::new(TypeAnalysis);
            let a = eg.add(Node::leaf(Op::Input(0), ty(narrow)));
            eg.add(Node::new(Op::Dot(STD()), ty(wide), vec![a, a]));
            saturate(&mut eg, &rules(&[isa], &[]));
            assert!(eg.lookup(Node::new(Op::Convert, ty(wide), vec![a])).is_none(), "{narrow:?} -> {wide:?}");
        }
    }

    #[test]
    fn integer_arithmetic_widens_and_narrows_and_float_addition_does_not() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(DType::S8)));
        let y = eg.add(Node::leaf(Op::Input(1), ty(DType::S8)));
        let sum = eg.add(Node::new(Op::Add, ty(DType::S8), vec![x, y]));
        saturate(&mut eg, &rules(&[], &[(OpCode::Add, DType::S32)]));
        let (wx, wy) = (
            eg.lookup(Node::new(Op::Convert, ty(DType::S32), vec![x])).expect("x widened"),
            eg.lookup(Node::new(Op::Convert, ty(DType::S32), vec![y])).expect("y widened"),
        );
        let wide = eg.lookup(Node::new(Op::Add, ty(DType::S32), vec![wx, wy])).expect("wide sum");
        let back = eg.lookup(Node::new(Op::Convert, ty(DType::S8), vec![wide])).expect("narrowed");
        assert_eq!(eg.find(back), eg.find(sum));

        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(DType::BF16)));
        eg.add(Node::new(Op::Add, ty(DType::BF16), vec![x, x]));
        saturate(&mut eg, &rules(&[], &[(OpCode::Add, DType::F32)]));
        assert!(eg.lookup(Node::new(Op::Convert, ty(DType::F32), vec![x])).is_none());
    }

    #[test]
    fn a_narrowed_wide_maximum_with_a_constant_is_the_narrow_maximum() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty(DType::BF16)));
        let wx = eg.add(Node::new(Op::Convert, ty(DType::F32), vec![x]));
        let zero = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[0.0])), ty(DType::F32)));
        let m = eg.add(Node::new(Op::Maximum, ty(DType::F32), vec![wx, zero]));
        let back = eg.add(Node::new(Op::Convert, ty(DType::BF16), vec![m]));
        saturate(&mut eg, &rules(&[], &[(OpCode::Maximum, DType::BF16)]));
        let narrow_zero = eg.lookup(Node::leaf(Op::Constant(Literal::from_values(&[0.0])), ty(DType::BF16))).expect("built");
        let narrow = eg.lookup(Node::new(Op::Maximum, ty(DType::BF16), vec![x, narrow_zero])).expect("built");
        assert_eq!(eg.find(narrow), eg.find(back));
    }
}
