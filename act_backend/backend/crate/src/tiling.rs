//! Tiling: an operation larger than every instruction that computes its operator is the
//! concatenation of the same operation on tiles of its leading dimension.
//!
//! What an ISA takes is read from its semantics, never from names: for each operator, the
//! extents its semantics give each dimension, either a constant (`bf16[64,64] dot`) or the
//! upper bound of a computational attribute (`@c.DIM_I` under `@c.DIM_I <= 16`, or `@c.n`
//! where `n` rows must fit a buffer of 64). A kernel operation whose leading dimension exceeds
//! the largest such extent is split into tiles of that extent (a shorter last tile where the
//! sizes do not divide: it compiles where an instruction takes a smaller attribute value); one
//! of higher rank than any semantics of its operator is split into tiles of one along its
//! leading (batch) dimension, which the squeeze rules then drop.
//!
//! The split is exact for every element type: along the leading dimension of an elementwise
//! operation, a broadcast, a reduction over other dimensions, a transpose, or a product's
//! batch or lhs free dimension, each result row depends on the matching operand rows only, so
//! the tiles compute the same bits as the whole. A contraction is never split here (that
//! would reorder a sum). Tiles of values read from HBM are byte ranges (`rewrites.rs`), and a
//! slice of a concatenation that falls inside one part is that part, so a tiled operation
//! reads the tiles of a tiled operand directly.

use crate::egraph::SelGraph;
use crate::isa::{CmpOp, Expr, Instruction, Isa};
use crate::lang::{DType, DotDims, Literal, Node, Op, OpCode, Ty};
use crate::rewrites::Term;
use egg::Id;
use std::collections::{BTreeMap, BTreeSet};

/// The extents an ISA's semantics give each operator: per operator, one entry per
/// semantics operation, the largest extent of each of its dimensions (`None`: unbounded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extents {
    by_op: BTreeMap<OpCode, Vec<Vec<Option<i64>>>>,
    /// The largest contraction of each product the semantics compute.
    contraction: Vec<Option<i64>>,
    /// (operator, rank) of semantics whose leading extent is not a constant (an attribute, or
    /// unbounded): they may take a smaller leading extent than the largest.
    flexible_leading: BTreeSet<(OpCode, usize)>,
}

/// The upper bound of `c.<attr>` that `instr`'s constraints state (`attr <= N`, `attr < N`,
/// `N >= attr`, `N > attr`, `attr == N`), and that its on-chip slices impose where a size is
/// the attribute alone.
fn attribute_bound(isa: &Isa, instr: &Instruction, attr: &str) -> Option<i64> {
    let is_attr = |e: &Expr| matches!(e, Expr::Attr(a) if a == attr);
    let constant = |e: &Expr| e.eval(&BTreeMap::new()).ok();
    let mut bounds = Vec::new();
    for c in &instr.constraints {
        let bound = match c.op {
            CmpOp::Le if is_attr(&c.lhs) => constant(&c.rhs),
            CmpOp::Lt if is_attr(&c.lhs) => constant(&c.rhs).map(|n| n - 1),
            CmpOp::Ge if is_attr(&c.rhs) => constant(&c.lhs),
            CmpOp::Gt if is_attr(&c.rhs) => constant(&c.lhs).map(|n| n - 1),
            CmpOp::Eq if is_attr(&c.lhs) => constant(&c.rhs),
            CmpOp::Eq if is_attr(&c.rhs) => constant(&c.lhs),
            _ => None,
        };
        bounds.extend(bound);
    }
    for slice in instr.inputs.iter().chain(&instr.outputs) {
        let buffer = isa.buffer(&slice.buffer);
        for (size, dim) in slice.size.iter().zip(&buffer.access_dims) {
            if let (true, Some(dim)) = (is_attr(size), dim) {
                bounds.push(*dim);
            }
        }
    }
    bounds.into_iter().min()
}

/// The largest value `e` takes in `instr`: a constant, or a bounded attribute.
fn largest(isa: &Isa, instr: &Instruction, e: &Expr) -> Option<i64> {
    match e {
        Expr::Attr(a) => attribute_bound(isa, instr, a),
        _ => e.eval(&BTreeMap::new()).ok(),
    }
}

/// The operator a kernel operation is an instance of, as semantics spell it.
pub fn opcode(op: &Op) -> Option<OpCode> {
    Some(match op {
        Op::Convert => OpCode::Convert,
        Op::Copy => OpCode::Copy,
        Op::Transpose(_) => OpCode::Transpose,
        Op::Dot(_) => OpCode::Dot,
        Op::Broadcast(_) => OpCode::Broadcast,
        Op::Reduce { .. } => OpCode::Reduce,
        Op::ReduceAdd(_) => OpCode::ReduceAdd,
        Op::Exponential => OpCode::Exponential,
        Op::Add => OpCode::Add,
        Op::Subtract => OpCode::Subtract,
        Op::Multiply => OpCode::Multiply,
        Op::Divide => OpCode::Divide,
        Op::Maximum => OpCode::Maximum,
        Op::Minimum => OpCode::Minimum,
        Op::Xor => OpCode::Xor,
        Op::SelectLt => OpCode::SelectLt,
        Op::SelectEqVar => OpCode::SelectEqVar,
        _ => return None,
    })
}

impl Extents {
    /// What `isa`'s semantics take, per operator.
    pub fn of(isa: &Isa) -> Extents {
        let mut by_op: BTreeMap<OpCode, Vec<Vec<Option<i64>>>> = BTreeMap::new();
        let mut contraction = Vec::new();
        let mut flexible_leading = BTreeSet::new();
        for instr in &isa.instructions {
            for op in &instr.semantics {
                if op.op == OpCode::Dot {
                    let lhs = op.operands.first().and_then(|name| instr.semantics.iter().find(|o| &o.name == name));
                    let dim = op.attrs.get("lhs_contracting_dims").and_then(|d| d.as_array()?.first()?.as_u64());
                    if let (Some(lhs), Some(dim)) = (lhs, dim) {
                        let k = lhs.shape.get(dim as usize).and_then(|e| largest(isa, instr, e));
                        if !contraction.contains(&k) {
                            contraction.push(k);
                        }
                    }
                }
                if op.shape.is_empty() {
                    continue;
                }
                if op.shape[0].eval(&BTreeMap::new()).is_err() {
                    flexible_leading.insert((op.op, op.shape.len()));
                }
                let dims = op.shape.iter().map(|e| largest(isa, instr, e)).collect();
                let entry = by_op.entry(op.op).or_default();
                if !entry.contains(&dims) {
                    entry.push(dims);
                }
            }
        }
        Extents { by_op, contraction, flexible_leading }
    }

    /// Extents from explicit entries (for tests).
    pub fn from_entries(entries: impl IntoIterator<Item = (OpCode, Vec<Option<i64>>)>) -> Extents {
        let mut by_op: BTreeMap<OpCode, Vec<Vec<Option<i64>>>> = BTreeMap::new();
        for (op, dims) in entries {
            by_op.entry(op).or_default().push(dims);
        }
        Extents { by_op, contraction: Vec::new(), flexible_leading: BTreeSet::new() }
    }

    /// The same extents, with products whose largest contractions are `ks` (for tests).
    pub fn with_contractions(mut self, ks: &[i64]) -> Extents {
        self.contraction = ks.iter().map(|&k| Some(k)).collect();
        self
    }

    /// Whether some semantics of operator `op` and rank `rank` computes a leading extent of
    /// `n`: one whose leading extent is that constant, or not a constant.
    pub fn takes_leading(&self, op: OpCode, rank: usize, n: i64) -> bool {
        self.flexible_leading.contains(&(op, rank))
            || self.by_op.get(&op).is_some_and(|e| e.iter().any(|d| d.len() == rank && d[0] == Some(n)))
    }

    /// The leading extent to pad an operation of operator `op` and type `ty` to: among the
    /// semantics of `op` of that rank that take every other dimension of `ty`, when each has a
    /// constant leading extent above `ty`'s (so no tiling computes it), the smallest.
    pub fn padded_leading(&self, op: OpCode, ty: &Ty) -> Option<i64> {
        let (&n, rest) = ty.shape.split_first()?;
        if self.takes_leading(op, ty.rank(), n) {
            return None;
        }
        let fits = |d: &[Option<i64>]| d[1..].iter().zip(rest).all(|(e, &m)| e.is_none_or(|e| m <= e));
        let fitting: Vec<Option<i64>> =
            self.by_op.get(&op)?.iter().filter(|d| d.len() == ty.rank() && fits(d)).map(|d| d[0]).collect();
        let above: Option<Vec<i64>> = fitting.iter().map(|t| t.filter(|&t| t > n)).collect();
        above?.into_iter().min()
    }

    pub fn is_empty(&self) -> bool {
        self.by_op.is_empty()
    }

    /// The tile size of the leading dimension of an operation of operator `op` and type
    /// `ty`, when it must be split: 1 for a rank no semantics of `op` has (a batch; computing
/// operators only), else the
    /// largest leading extent any semantics of `op` of that rank gives, when `ty`'s is larger.
    pub fn leading_tile(&self, op: OpCode, ty: &Ty) -> Option<i64> {
        let entries = self.by_op.get(&op)?;
        let rank = ty.rank();
        let lead = *ty.shape.first()?;
        if lead <= 1 {
            return None;
        }
        if entries.iter().all(|dims| dims.len() < rank) {
            // Only computations: layout operators of high rank are the byte plumbing of
            // loads and stores (`u8[rows, cols, 2]`), which tiles of one would shred.
            let layout = matches!(op, OpCode::Transpose | OpCode::Copy | OpCode::Convert | OpCode::Broadcast);
            return (!layout).then_some(1);
        }
        let same_rank: Vec<&Vec<Option<i64>>> = entries.iter().filter(|d| d.len() == rank).collect();
        if same_rank.iter().any(|d| d[0].is_none()) {
            return None;
        }
        let largest = same_rank.iter().filter_map(|d| d[0]).max()?;
        (lead > largest && largest > 0).then_some(largest)
    }

    /// How many tiles the split rules make of `kernel`'s operations, at least one each: the
    /// scale of the search the kernel needs.
    pub fn tile_count(&self, kernel: &crate::kernel::Kernel) -> usize {
        let ceil = |n: i64, t: Option<i64>| t.filter(|&t| t > 0 && n > t).map_or(1, |t| (n + t - 1) / t);
        kernel
            .nodes
            .iter()
            .map(|node| {
                let Some(code) = opcode(&node.op) else { return 1 };
                let lead = node.ty.shape.first().map_or(1, |&m| ceil(m, self.leading_tile(code, &node.ty)));
                let more = match (&node.op, node.ty.rank()) {
                    (Op::Dot(dd), 2) => {
                        let k = kernel.nodes[node.operands[0]].ty.shape.get(dd.lhs_contracting[0]).copied();
                        let largest = self.contraction.iter().try_fold(0i64, |acc, x| x.map(|x| acc.max(x)));
                        let split_k = node.ty.dtype.is_int().then_some(largest).flatten();
                        ceil(node.ty.shape[1], widest(self, OpCode::Dot, 2, 1)) * k.map_or(1, |k| ceil(k, split_k))
                    }
                    _ => 1,
                };
                (lead * more).max(1) as usize
            })
            .sum()
    }

    /// Why no instruction can compute an operation of operator `op` and type `ty` in one
    /// piece: the first dimension tiling does not split (the leading one is split, and a
    /// matrix product's columns) that is larger than every semantics of `op` of that rank
    /// takes.
    pub fn too_large(&self, op: OpCode, ty: &Ty) -> Option<(usize, i64)> {
        let entries: Vec<&Vec<Option<i64>>> =
            self.by_op.get(&op)?.iter().filter(|d| d.len() == ty.rank()).collect();
        if entries.is_empty() {
            return None;
        }
        // A matrix product's columns are split too (`split_product`).
        let first_untiled = if op == OpCode::Dot && ty.rank() == 2 { 2 } else { 1 };
        (first_untiled..ty.rank()).find_map(|d| {
            let widest = entries.iter().map(|dims| dims[d]).try_fold(0i64, |acc, x| x.map(|x| acc.max(x)))?;
            (ty.shape[d] > widest).then_some((d, widest))
        })
    }
}

/// `x` sliced to `[lo, hi)` along dimension `dim`.
fn slice_along(x: Id, x_ty: &Ty, dim: usize, lo: i64, hi: i64) -> Term {
    let ranges = x_ty.shape.iter().enumerate().map(|(d, &n)| if d == dim { (lo, hi, 1) } else { (0, n, 1) }).collect();
    let mut shape = x_ty.shape.clone();
    shape[dim] = hi - lo;
    Term::Node(Op::Slice(ranges), x_ty.with_shape(shape), vec![Term::Class(x)])
}

/// For each operand of `node`, the dimension that feeds the result's leading dimension
/// (`None`: the operand is used whole by every tile); `None` when the result's leading
/// dimension does not split into independent rows.
fn leading_sources(eg: &SelGraph, node: &Node) -> Option<Vec<Option<usize>>> {
    let n = node.children.len();
    Some(match &node.op {
        op if op.is_elementwise() || matches!(op, Op::Convert | Op::Copy) => vec![Some(0); n],
        Op::Broadcast(d) => vec![d.iter().position(|&r| r == 0)],
        Op::Reduce { dims, .. } | Op::ReduceAdd(dims) if !dims.contains(&0) => {
            let mut v = vec![None; n];
            v[0] = Some(0);
            v
        }
        Op::Transpose(p) => vec![Some(p[0])],
        Op::Dot(dd) => {
            if let (Some(&l), Some(&r)) = (dd.lhs_batch.first(), dd.rhs_batch.first()) {
                vec![Some(l), Some(r)]
            } else {
                let rank = eg[node.children[0]].data.rank();
                let free = DotDims::free(rank, &dd.lhs_batch, &dd.lhs_contracting);
                vec![Some(*free.first()?), None]
            }
        }
        _ => return None,
    })
}

/// `node = concatenate_0(node on rows [0, t), node on rows [t, 2t), ...)` when its leading
/// dimension is larger than every instruction of its operator takes. A last tile shorter than
/// every instruction takes (a unit of a fixed size) is the last rows of a full tile that
/// overlaps the one before: `slice(node on rows [n - t, n), rows [t - r, t))`.
pub fn split_leading(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Term> {
    let code = opcode(&node.op)?;
    let tile = extents.leading_tile(code, &node.ty)?;
    let sources = leading_sources(eg, node)?;
    let lead = node.ty.shape[0];
    let rows = |lo: i64, hi: i64| {
        let operands = node
            .children
            .iter()
            .zip(&sources)
            .map(|(&c, src)| match src {
                Some(dim) => slice_along(c, &eg[c].data, *dim, lo, hi),
                None => Term::Class(c),
            })
            .collect();
        let mut shape = node.ty.shape.clone();
        shape[0] = hi - lo;
        Term::Node(node.op.clone(), node.ty.with_shape(shape), operands)
    };
    let parts = tiles(lead, tile)
        .into_iter()
        .map(|(lo, hi)| {
            if hi - lo == tile || extents.takes_leading(code, node.ty.rank(), hi - lo) {
                rows(lo, hi)
            } else {
                // No instruction computes so few rows: the last full tile, overlapping the one
                // before, computes them (rows are independent, so the same bits), and its
                // last rows are kept.
                let window = rows(lead - tile, lead);
                let keep = (0..node.ty.rank())
                    .map(|d| if d == 0 { (tile - (hi - lo), tile, 1) } else { (0, node.ty.shape[d], 1) })
                    .collect();
                let mut kept = node.ty.shape.clone();
                kept[0] = hi - lo;
                Term::Node(Op::Slice(keep), node.ty.with_shape(kept), vec![window])
            }
        })
        .collect();
    Some(Term::Node(Op::Concatenate(0), node.ty.clone(), parts))
}

/// An operation on fewer rows than every instruction of its operator takes, where a unit of a
/// fixed larger row count `t` exists: the first rows of the operation on its operands padded
/// with zero rows to `t`, `slice(node(concatenate_0(x, zeros)...), rows [0, r))`. Exact for
/// every type: rows are independent, and what the padded rows compute is dropped. Only where
/// every operand that feeds the rows does so along its own dimension 0, so that the padded
/// operand is its rows followed by zeros in a buffer.
pub fn pad_rows(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Term> {
    let code = opcode(&node.op)?;
    let rows = *node.ty.shape.first()?;
    let sources = leading_sources(eg, node)?;
    if sources.iter().any(|s| matches!(s, Some(d) if *d != 0)) || !sources.iter().any(Option::is_some) {
        return None;
    }
    let t = extents.padded_leading(code, &node.ty)?;
    let operands = node
        .children
        .iter()
        .zip(&sources)
        .map(|(&c, src)| {
            let c_ty = &eg[c].data;
            if src.is_none() {
                return Term::Class(c);
            }
            let mut pad = c_ty.shape.clone();
            pad[0] = t - rows;
            let zeros = Term::Node(Op::Constant(Literal::from_values(&[0.0])), c_ty.with_shape(pad), vec![]);
            let mut padded = c_ty.shape.clone();
            padded[0] = t;
            Term::Node(Op::Concatenate(0), c_ty.with_shape(padded), vec![Term::Class(c), zeros])
        })
        .collect();
    let mut whole = node.ty.shape.clone();
    whole[0] = t;
    let padded = Term::Node(node.op.clone(), node.ty.with_shape(whole), operands);
    let keep = node.ty.shape.iter().enumerate().map(|(d, &n)| if d == 0 { (0, rows, 1) } else { (0, n, 1) }).collect();
    Some(Term::Node(Op::Slice(keep), node.ty.clone(), vec![padded]))
}

/// The largest extent semantics of operator `op` and rank `rank` give dimension `dim`, when
/// every one is bounded.
fn widest(extents: &Extents, op: OpCode, rank: usize, dim: usize) -> Option<i64> {
    let entries = extents.by_op.get(&op)?;
    entries.iter().filter(|d| d.len() == rank).map(|d| d[dim]).try_fold(None, |acc: Option<i64>, x| {
        let x = x?;
        Some(Some(acc.map_or(x, |a| a.max(x))))
    })?
}

/// Tiles `[0, t), [t, 2t), ...` of `0..n` (the last one shorter where `t` does not divide).
fn tiles(n: i64, t: i64) -> Vec<(i64, i64)> {
    (0..n).step_by(t as usize).map(|lo| (lo, (lo + t).min(n))).collect()
}

/// Splits of a matrix product `[m, k] . [k, n]` (no batch) wider than every product the ISA
/// computes: along its result columns, `concatenate_1(dot(a, b[:, tile]) ...)`, exact for
/// every type; and along its contraction, for integers only (their sums wrap and do not
/// depend on the order), `add(dot(a[:, tile_j], b[tile_j, :]), ... add(dot(a[:, tile_1],
/// b[tile_1, :]), dot(a[:, tile_0], b[tile_0, :])))`, the partial product first in each add
/// as multiply-accumulate semantics write it. A float contraction is never split: it would
/// change the rounding.
pub fn split_product(eg: &SelGraph, extents: &Extents, node: &Node) -> Vec<(&'static str, Term)> {
    let mut out = Vec::new();
    let Op::Dot(dd) = &node.op else { return out };
    let (a, b) = (node.children[0], node.children[1]);
    let (a_ty, b_ty) = (&eg[a].data, &eg[b].data);
    if a_ty.rank() != 2 || b_ty.rank() != 2 || !dd.lhs_batch.is_empty() || dd.lhs_contracting.len() != 1 {
        return out;
    }
    let (lc, rc) = (dd.lhs_contracting[0], dd.rhs_contracting[0]);
    let rf = 1 - rc;
    let n = node.ty.shape[1];
    if let Some(t) = widest(extents, OpCode::Dot, 2, 1).filter(|&t| t > 0 && n > t) {
        let parts = tiles(n, t)
            .into_iter()
            .map(|(lo, hi)| {
                let cols = slice_along(b, b_ty, rf, lo, hi);
                Term::Node(node.op.clone(), node.ty.with_shape(vec![node.ty.shape[0], hi - lo]), vec![Term::Class(a), cols])
            })
            .collect();
        out.push(("split-columns", Term::Node(Op::Concatenate(1), node.ty.clone(), parts)));
    }
    let k = a_ty.shape[lc];
    let integers = [&node.ty, a_ty, b_ty].iter().all(|t| t.dtype.is_int());
    let largest = extents.contraction.iter().try_fold(0i64, |acc, x| x.map(|x| acc.max(x)));
    if let (true, Some(t)) = (integers, largest.filter(|&t| t > 0 && k > t)) {
        let mut sum: Option<Term> = None;
        for (lo, hi) in tiles(k, t) {
            let part = Term::Node(
                node.op.clone(),
                node.ty.clone(),
                vec![slice_along(a, a_ty, lc, lo, hi), slice_along(b, b_ty, rc, lo, hi)],
            );
            sum = Some(match sum {
                None => part,
                Some(acc) => Term::Node(Op::Add, node.ty.clone(), vec![part, acc]),
            });
        }
        out.extend(sum.map(|s| ("split-contraction", s)));
    }
    out
}

/// `slice(op(x...), rows [lo, hi))` is `op(slice(x, rows [lo, hi))...)` for an operation whose
/// result rows depend on the matching operand rows only (and for a reshape that keeps the
/// leading dimension): the slice moves towards the operands, so the tile of a tiled result
/// is computed from the tiles of its operands.
pub fn slice_through(eg: &SelGraph, ranges: &[(i64, i64, i64)], ty: &Ty, inner: &Node) -> Option<Term> {
    let (&(lo, hi, stride), rest) = ranges.split_first()?;
    let whole_rest = rest.iter().zip(&inner.ty.shape[1..]).all(|(r, &n)| *r == (0, n, 1));
    if stride != 1 || !whole_rest || (lo, hi) == (0, inner.ty.shape[0]) {
        return None;
    }
    if inner.op == Op::Reshape {
        let x = inner.children[0];
        let x_ty = &eg[x].data;
        if x_ty.shape.first() != inner.ty.shape.first() {
            return None;
        }
        return Some(Term::Node(Op::Reshape, ty.clone(), vec![slice_along(x, x_ty, 0, lo, hi)]));
    }
    let sources = leading_sources(eg, inner)?;
    let operands = inner
        .children
        .iter()
        .zip(&sources)
        .map(|(&c, src)| match src {
            Some(dim) => slice_along(c, &eg[c].data, *dim, lo, hi),
            None => Term::Class(c),
        })
        .collect();
    Some(Term::Node(inner.op.clone(), ty.clone(), operands))
}

/// A window `[r0, r1) x [c0, c1)` (further dimensions whole) of a row-major matrix read from
/// the flat bytes `y` (`x = reshape(y) : [m, n, ...]`) is a strided view of those bytes, in
/// the two ways strided loads are written: the whole rows it lies in, reshaped and sliced at
/// its columns (`slice-of-row-run`), and, where it stays inside `y`, the span from its first
/// element of its row count times the row pitch, reshaped and sliced at column 0 (TAIDL's
/// strided load, `slice-of-strided-span`).
pub fn strided_views(
    y: Id,
    y_ty: &Ty,
    x_shape: &[i64],
    ranges: &[(i64, i64, i64)],
    ty: &Ty,
) -> Vec<(&'static str, Term)> {
    let mut out = Vec::new();
    if x_shape.len() < 2 || ranges.iter().any(|r| r.2 != 1) {
        return out;
    }
    let whole_after = ranges.iter().zip(x_shape).skip(2).all(|(r, &d)| *r == (0, d, 1));
    if !whole_after {
        return out;
    }
    let ((r0, r1, _), (c0, c1, _)) = (ranges[0], ranges[1]);
    let rows = r1 - r0;
    let pitch: i64 = x_shape[1..].iter().product();
    let inner: i64 = x_shape[2..].iter().product();
    let flat = |len: i64| y_ty.with_shape(vec![len]);
    let run_of = |start: i64| {
        if (start, rows * pitch) == (0, y_ty.shape[0]) {
            Term::Class(y)
        } else {
            Term::Node(Op::Slice(vec![(start, start + rows * pitch, 1)]), flat(rows * pitch), vec![Term::Class(y)])
        }
    };
    let mut grid_shape = x_shape.to_vec();
    grid_shape[0] = rows;
    let grid = |run: Term| Term::Node(Op::Reshape, y_ty.with_shape(grid_shape.clone()), vec![run]);
    let window = |cols: (i64, i64)| {
        let mut w = vec![(0, rows, 1), (cols.0, cols.1, 1)];
        w.extend(x_shape[2..].iter().map(|&d| (0, d, 1)));
        w
    };
    out.push(("slice-of-row-run", Term::Node(Op::Slice(window((c0, c1))), ty.clone(), vec![grid(run_of(r0 * pitch))])));
    let start = r0 * pitch + c0 * inner;
    if c0 > 0 && start + rows * pitch <= y_ty.shape[0] {
        let term = Term::Node(Op::Slice(window((0, c1 - c0))), ty.clone(), vec![grid(run_of(start))]);
        out.push(("slice-of-strided-span", term));
    }
    out
}

/// Most columns [`broadcast_as_copies`] writes out one by one.
const MAX_COPIES: i64 = 64;

/// A column repeated across the columns of a matrix, `broadcast(x : [m] or [m, 1]) : [m, n]`
/// with `x` along dimension 0, is `concatenate_1` of `n` copies of the column (`n` at most
/// [`MAX_COPIES`]): an ISA that cannot repeat a value across columns on chip writes the copies
/// into their columns with strided stores. Exact for every type.
pub fn broadcast_as_copies(eg: &SelGraph, node: &Node) -> Option<Term> {
    let Op::Broadcast(d) = &node.op else { return None };
    let x = node.children[0];
    let x_ty = &eg[x].data;
    let (m, n) = match node.ty.shape.as_slice() {
        &[m, n] => (m, n),
        _ => return None,
    };
    let column = match (x_ty.shape.as_slice(), d.as_slice()) {
        (&[xm], [0]) if xm == m => true,
        (&[xm, 1], [0, 1]) if xm == m => true,
        _ => false,
    };
    if !column || n <= 1 || n > MAX_COPIES {
        return None;
    }
    let col_ty = node.ty.with_shape(vec![m, 1]);
    let copy = if *x_ty == col_ty { Term::Class(x) } else { Term::Node(Op::Reshape, col_ty, vec![Term::Class(x)]) };
    Some(Term::Node(Op::Concatenate(1), node.ty.clone(), vec![copy; n as usize]))
}

/// The flat bytes of `concatenate_d(parts) : grid` (`d >= 1`) as strided stores write them:
/// starting from HBM whose contents do not matter (tagged `tag`), each part is written over
/// its place with `dynamic_update_slice` into the rows it lies in, read and written back
/// whole, which is how TAIDL writes a strided store. The parts cover the grid, so the result
/// is the concatenation's bytes whatever the region held.
pub fn write_columns(eg: &SelGraph, tag: usize, flat: &Ty, grid: &Ty, d: usize, parts: &[Id]) -> Term {
    let index = |v: i64| Term::Node(Op::Constant(Literal::from_values(&[v as f64])), Ty::new(DType::S32, vec![]), vec![]);
    let mut bytes = Term::Node(Op::Uninit(tag), flat.clone(), vec![]);
    let mut at = 0;
    for &part in parts {
        let mut operands = vec![Term::Node(Op::Reshape, grid.clone(), vec![bytes]), Term::Class(part)];
        operands.extend((0..grid.rank()).map(|k| index(if k == d { at } else { 0 })));
        let written = Term::Node(Op::DynamicUpdateSlice, grid.clone(), operands);
        bytes = Term::Node(Op::Reshape, flat.clone(), vec![written]);
        at += eg[part].data.shape[d];
    }
    bytes
}

/// A slice that falls inside one part of a concatenation along `dim` is a slice of that part
/// (the part itself when the slice is exactly it).
pub fn slice_of_concat(eg: &SelGraph, ranges: &[(i64, i64, i64)], ty: &Ty, dim: usize, parts: &[Id]) -> Option<Term> {
    let (lo, hi, stride) = *ranges.get(dim)?;
    if stride != 1 {
        return None;
    }
    let mut start = 0;
    for &part in parts {
        let p_ty = &eg[part].data;
        let end = start + p_ty.shape[dim];
        if lo >= start && hi <= end {
            let shifted: Vec<(i64, i64, i64)> = ranges
                .iter()
                .enumerate()
                .map(|(d, &(l, h, s))| if d == dim { (l - start, h - start, s) } else { (l, h, s) })
                .collect();
            let whole = shifted.iter().zip(&p_ty.shape).all(|(&(l, h, s), &n)| (l, h, s) == (0, n, 1));
            return Some(if whole {
                Term::Class(part)
            } else {
                Term::Node(Op::Slice(shifted), ty.clone(), vec![Term::Class(part)])
            });
        }
        start = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(shape: &[i64]) -> Ty {
        Ty::new(DType::BF16, shape.to_vec())
    }

    #[test]
    fn a_leading_dimension_beyond_every_instruction_is_tiled_by_the_largest_extent() {
        let ex = Extents::from_entries([(OpCode::Exponential, vec![Some(64), Some(64)])]);
        assert_eq!(ex.leading_tile(OpCode::Exponential, &ty(&[256, 64])), Some(64));
        assert_eq!(ex.leading_tile(OpCode::Exponential, &ty(&[64, 64])), None);
        assert_eq!(ex.leading_tile(OpCode::Exponential, &ty(&[40, 64])), None);
        // A rank no semantics has is a batch: tiles of one.
        assert_eq!(ex.leading_tile(OpCode::Exponential, &ty(&[4, 64, 64])), Some(1));
        // An operator no semantics computes is not tiled.
        assert_eq!(ex.leading_tile(OpCode::Add, &ty(&[256, 64])), None);
    }

    #[test]
    fn an_unbounded_extent_is_never_split() {
        let ex = Extents::from_entries([(OpCode::Add, vec![None, Some(16)])]);
        assert_eq!(ex.leading_tile(OpCode::Add, &ty(&[4096, 16])), None);
    }

    #[test]
    fn a_dimension_too_large_for_every_instruction_is_named() {
        let ex = Extents::from_entries([
            (OpCode::Exponential, vec![Some(64), Some(64)]),
            (OpCode::Exponential, vec![Some(32), Some(32)]),
        ]);
        assert_eq!(ex.too_large(OpCode::Exponential, &ty(&[64, 128])), Some((1, 64)));
        assert_eq!(ex.too_large(OpCode::Exponential, &ty(&[128, 64])), None);
    }

    #[test]
    fn fewer_rows_than_every_fitting_fixed_unit_are_padded_to_the_smallest() {
        let ex = Extents::from_entries([
            (OpCode::Dot, vec![Some(64), Some(64)]),
            (OpCode::Dot, vec![Some(32), Some(16)]),
        ]);
        // Only the 64-row unit takes 64 columns.
        assert_eq!(ex.padded_leading(OpCode::Dot, &ty(&[16, 64])), Some(64));
        assert_eq!(ex.padded_leading(OpCode::Dot, &ty(&[48, 64])), Some(64));
        assert_eq!(ex.padded_leading(OpCode::Dot, &ty(&[16, 16])), Some(32));
        // A size a unit takes as it is, or one at least as large as a fitting unit (tiled).
        assert_eq!(ex.padded_leading(OpCode::Dot, &ty(&[32, 16])), None);
        assert_eq!(ex.padded_leading(OpCode::Dot, &ty(&[40, 16])), None);
        // Wider than every unit: nothing to pad to.
        assert_eq!(ex.padded_leading(OpCode::Dot, &ty(&[16, 128])), None);
    }

    #[test]
    fn a_unit_whose_rows_are_an_attribute_takes_fewer_rows_without_padding() {
        let ex = Extents::of(&table("gemmini_isa.json"));
        assert!(ex.takes_leading(OpCode::Dot, 2, 5));
        assert_eq!(ex.padded_leading(OpCode::Dot, &Ty::new(DType::S32, vec![5, 16])), None);
        let qkv = Extents::of(&table("qkv_isa.json"));
        assert!(!qkv.takes_leading(OpCode::Dot, 2, 32));
        assert_eq!(qkv.padded_leading(OpCode::Dot, &ty(&[32, 64])), Some(64));
    }

    fn table(name: &str) -> Isa {
        let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        Isa::from_json(&std::fs::read_to_string(&path).expect("test table")).expect("valid table")
    }

    #[test]
    fn extents_come_from_constants_constraints_and_buffers() {
        // QKV: gemm is 64x64 by constants; softmax takes `n` rows of a 64-row buffer.
        let qkv = Extents::of(&table("qkv_isa.json"));
        assert_eq!(qkv.by_op[&OpCode::Dot], vec![vec![Some(64), Some(64)]]);
        assert_eq!(qkv.by_op[&OpCode::Exponential], vec![vec![Some(64), Some(64)]]);
        // Gemmini: the array's `DIM_I <= 16`, `DIM_J <= 16` constraints bound its products.
        let gemmini = Extents::of(&table("gemmini_isa.json"));
        assert!(gemmini.by_op[&OpCode::Dot].iter().all(|d| d == &vec![Some(16), Some(16)]));
        assert_eq!(gemmini.leading_tile(OpCode::Dot, &Ty::new(DType::S32, vec![64, 16])), Some(16));
    }
}
