//! Tiling: an operation larger than every instruction that computes its operator is the
//! concatenation of the same operation on tiles of its leading dimension, or of a later one.
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
//! the tiles compute the same bits as the whole. The same holds along a later dimension of an
//! elementwise operation, a convert or copy, a broadcast and a reduction that keeps the
//! dimension ([`split_columns`]), and of a product's columns ([`split_product`]).
//!
//! A contraction or a reduction is split only where the order of the accumulation does not
//! matter: integer sums and products wrap, and the maximum or minimum of integers is the same
//! in any order ([`split_product`], [`split_reduction`]). A float sum is never split (that would change its
//! rounding): a float reduction longer than every instruction's is refused, naming its
//! dimension ([`Extents::unsplit_reduction`]). Tiles of values read from HBM are byte ranges
//! or strided views (`rewrites.rs`), a slice of a concatenation that falls inside one part is
//! that part, and a slice moves through the operations it splits, so a tiled operation reads
//! the tiles of a tiled operand directly.

use crate::egraph::SelGraph;
use crate::isa::{CmpOp, Expr, Instruction, Isa};
use crate::lang::{DType, DotDims, Literal, Node, Op, OpCode, Reducer, Ty};
use crate::rewrites::Term;
use egg::Id;
use std::collections::{BTreeMap, BTreeSet};

/// The extents an ISA's semantics give each operator: per operator, one entry per
/// semantics operation, the largest extent of each of its dimensions (`None`: unbounded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extents {
    by_op: BTreeMap<OpCode, Vec<Vec<Option<i64>>>>,
    /// The same entries per operator and element type: an operation of a type some semantics
    /// compute its operator in is tiled by those alone (an f32 add by the vector unit's 16
    /// lanes, not by the 16x16 int32 accumulation of a matrix unit beside it).
    by_op_type: BTreeMap<(OpCode, DType), Vec<Vec<Option<i64>>>>,
    /// The largest contraction of each product the semantics compute.
    contraction: Vec<Option<i64>>,
    /// The contractions of products that contract a constant number of elements, and the
    /// bounds of those whose contraction is an attribute (`None`: unbounded).
    fixed_contractions: BTreeSet<i64>,
    flexible_contractions: Vec<Option<i64>>,
    /// (operator, rank, dimension) of semantics whose extent along that dimension is not a
    /// constant (an attribute, or unbounded): they may take a smaller extent than the largest.
    flexible: BTreeSet<(OpCode, usize, usize)>,
    /// [`Extents::flexible`] per element type.
    flexible_type: BTreeSet<(OpCode, DType, usize, usize)>,
    /// Per operator, the entries of [`Extents::by_op`] whose leading extent is a constant in
    /// some semantics (a unit of a fixed number of rows).
    fixed_leading: BTreeMap<OpCode, Vec<Vec<Option<i64>>>>,
    /// Per reducer, one entry per semantics reduction: the largest extent of each dimension
    /// of its operand (how long a reduction it computes).
    reductions: BTreeMap<Reducer, Vec<Vec<Option<i64>>>>,
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

/// The reducer of a kernel reduction, and the dimensions it reduces.
fn reduction(op: &Op) -> Option<(Reducer, &[usize])> {
    match op {
        Op::ReduceAdd(dims) => Some((Reducer::Add, dims)),
        Op::Reduce { dims, reducer } => Some((*reducer, dims)),
        _ => None,
    }
}

/// The operation that combines the reductions of two tiles.
fn combine(reducer: Reducer) -> Op {
    match reducer {
        Reducer::Add => Op::Add,
        Reducer::Max => Op::Maximum,
        Reducer::Min => Op::Minimum,
        Reducer::Mul => Op::Multiply,
    }
}

/// The value a reduction's later tiles start from in place of its init value, which is
/// applied once (`None`: the init value itself, for reducers it is idempotent under).
fn restart(reducer: Reducer) -> Option<f64> {
    match reducer {
        Reducer::Add => Some(0.0),
        Reducer::Mul => Some(1.0),
        Reducer::Max | Reducer::Min => None,
    }
}

/// Operators split along a later dimension by [`split_columns`]: each result element depends
/// on operand elements of the same index along that dimension only (for a transpose, along
/// the operand dimension it moves there).
fn splits_columns(op: &Op) -> bool {
    op.is_elementwise()
        || matches!(op, Op::Convert | Op::Copy | Op::Broadcast(_) | Op::Reduce { .. } | Op::ReduceAdd(_) | Op::Transpose(_))
}

/// The largest extent of dimension `dim` among `entries` of rank `rank`, when every one is
/// bounded (`None` also when there is none).
fn widest_of(entries: &[Vec<Option<i64>>], rank: usize, dim: usize) -> Option<i64> {
    entries.iter().filter(|d| d.len() == rank).map(|d| d[dim]).try_fold(None, |acc: Option<i64>, x| {
        let x = x?;
        Some(Some(acc.map_or(x, |a| a.max(x))))
    })?
}

impl Extents {
    /// What `isa`'s semantics take, per operator.
    pub fn of(isa: &Isa) -> Extents {
        let mut by_op: BTreeMap<OpCode, Vec<Vec<Option<i64>>>> = BTreeMap::new();
        let mut contraction = Vec::new();
        let mut fixed_contractions = BTreeSet::new();
        let mut flexible_contractions = Vec::new();
        let mut flexible = BTreeSet::new();
        let mut flexible_type = BTreeSet::new();
        let mut by_op_type: BTreeMap<(OpCode, DType), Vec<Vec<Option<i64>>>> = BTreeMap::new();
        let mut fixed_leading: BTreeMap<OpCode, Vec<Vec<Option<i64>>>> = BTreeMap::new();
        let mut reductions: BTreeMap<Reducer, Vec<Vec<Option<i64>>>> = BTreeMap::new();
        for instr in &isa.instructions {
            let find = |name: &String| instr.semantics.iter().find(|o| &o.name == name);
            for op in &instr.semantics {
                let reducer = match op.op {
                    OpCode::ReduceAdd => Some(Reducer::Add),
                    OpCode::Reduce => op.attrs.get("computation").and_then(|c| Reducer::from_table_name(c.as_str()?)),
                    _ => None,
                };
                if let (Some(reducer), Some(x)) = (reducer, op.operands.first().and_then(find)) {
                    let dims: Vec<Option<i64>> = x.shape.iter().map(|e| largest(isa, instr, e)).collect();
                    let entry = reductions.entry(reducer).or_default();
                    if !entry.contains(&dims) {
                        entry.push(dims);
                    }
                }
                if op.op == OpCode::Dot {
                    let lhs = op.operands.first().and_then(|name| instr.semantics.iter().find(|o| &o.name == name));
                    let dim = op.attrs.get("lhs_contracting_dims").and_then(|d| d.as_array()?.first()?.as_u64());
                    if let (Some(lhs), Some(dim)) = (lhs, dim) {
                        let extent = lhs.shape.get(dim as usize);
                        let k = extent.and_then(|e| largest(isa, instr, e));
                        if !contraction.contains(&k) {
                            contraction.push(k);
                        }
                        match extent.map(|e| e.eval(&BTreeMap::new())) {
                            Some(Ok(fixed)) => {
                                fixed_contractions.insert(fixed);
                            }
                            _ => flexible_contractions.push(k),
                        }
                    }
                }
                if op.shape.is_empty() {
                    continue;
                }
                let dims: Vec<Option<i64>> = op.shape.iter().map(|e| largest(isa, instr, e)).collect();
                for (d, extent) in op.shape.iter().enumerate() {
                    if extent.eval(&BTreeMap::new()).is_err() {
                        flexible.insert((op.op, op.shape.len(), d));
                        flexible_type.insert((op.op, op.dtype, op.shape.len(), d));
                    }
                }
                if op.shape[0].eval(&BTreeMap::new()).is_ok() {
                    let fixed = fixed_leading.entry(op.op).or_default();
                    if !fixed.contains(&dims) {
                        fixed.push(dims.clone());
                    }
                }
                let typed = by_op_type.entry((op.op, op.dtype)).or_default();
                if !typed.contains(&dims) {
                    typed.push(dims.clone());
                }
                let entry = by_op.entry(op.op).or_default();
                if !entry.contains(&dims) {
                    entry.push(dims);
                }
            }
        }
        Extents {
            by_op,
            by_op_type,
            contraction,
            fixed_contractions,
            flexible_contractions,
            flexible,
            flexible_type,
            fixed_leading,
            reductions,
        }
    }

    /// Extents from explicit entries (for tests).
    pub fn from_entries(entries: impl IntoIterator<Item = (OpCode, Vec<Option<i64>>)>) -> Extents {
        let mut by_op: BTreeMap<OpCode, Vec<Vec<Option<i64>>>> = BTreeMap::new();
        for (op, dims) in entries {
            by_op.entry(op).or_default().push(dims);
        }
        Extents {
            by_op,
            by_op_type: BTreeMap::new(),
            contraction: Vec::new(),
            fixed_contractions: BTreeSet::new(),
            flexible_contractions: Vec::new(),
            flexible: BTreeSet::new(),
            flexible_type: BTreeSet::new(),
            fixed_leading: BTreeMap::new(),
            reductions: BTreeMap::new(),
        }
    }

    /// The same extents, with units of a fixed number of rows `dims[0]` computing `op` (for
    /// tests).
    pub fn with_fixed_unit(mut self, op: OpCode, dims: Vec<Option<i64>>) -> Extents {
        self.by_op.entry(op).or_default().push(dims.clone());
        self.fixed_leading.entry(op).or_default().push(dims);
        self
    }

    /// The same extents, with semantics computing `op` in `dtype` as large as `dims` (for
    /// tests).
    pub fn with_typed(mut self, op: OpCode, dtype: DType, dims: Vec<Option<i64>>) -> Extents {
        self.by_op.entry(op).or_default().push(dims.clone());
        self.by_op_type.entry((op, dtype)).or_default().push(dims);
        self
    }

    /// The same extents, with semantics of `op` and rank `rank` whose extent along `dim` is an
    /// attribute (for tests).
    pub fn with_flexible(mut self, op: OpCode, rank: usize, dim: usize) -> Extents {
        self.flexible.insert((op, rank, dim));
        self
    }

    /// The same extents, with reductions by `reducer` of operands as large as `dims` (for
    /// tests).
    pub fn with_reduction(mut self, reducer: Reducer, dims: Vec<Option<i64>>) -> Extents {
        self.reductions.entry(reducer).or_default().push(dims);
        self
    }

    /// The same extents, with products whose contractions are attributes of at most `ks` (for
    /// tests).
    pub fn with_contractions(mut self, ks: &[i64]) -> Extents {
        self.contraction = ks.iter().map(|&k| Some(k)).collect();
        self.flexible_contractions = self.contraction.clone();
        self
    }

    /// The same extents, with products that contract exactly `ks` elements (for tests).
    pub fn with_fixed_contractions(mut self, ks: &[i64]) -> Extents {
        self.contraction = ks.iter().map(|&k| Some(k)).collect();
        self.fixed_contractions = ks.iter().copied().collect();
        self
    }

    /// The entries of operator `op` for operations of element type `dtype`: those of semantics
    /// computing it in that type where some do, else those of every type (a kernel type no
    /// semantics names may still be computed through a conversion).
    fn entries(&self, op: OpCode, dtype: DType) -> Option<&Vec<Vec<Option<i64>>>> {
        self.by_op_type.get(&(op, dtype)).or_else(|| self.by_op.get(&op))
    }

    /// Whether semantics of `op` computing rank `rank` in `dtype` (as [`Extents::entries`]
    /// chooses them) have an extent along `dim` that is not a constant.
    fn is_flexible(&self, op: OpCode, dtype: DType, rank: usize, dim: usize) -> bool {
        if self.by_op_type.contains_key(&(op, dtype)) {
            self.flexible_type.contains(&(op, dtype, rank, dim))
        } else {
            self.flexible.contains(&(op, rank, dim))
        }
    }

    /// The contraction to pad a product contracting `k` elements to, where no product the
    /// semantics compute contracts `k` (each contracts a constant number of elements, none
    /// `k`): the smallest constant contraction above `k`. Zero columns against zero rows add
    /// exact zeros, so the padded product computes the same values in every type.
    pub fn padded_contraction(&self, k: i64) -> Option<i64> {
        let flexible = self.flexible_contractions.iter().any(|b| b.is_none_or(|b| b >= k));
        if flexible || self.fixed_contractions.contains(&k) {
            return None;
        }
        self.fixed_contractions.range(k + 1..).next().copied()
    }

    /// Whether some semantics of operator `op` of the rank and element type of `ty` computes
    /// a leading extent of `n`: one whose leading extent is that constant, or not a constant.
    pub fn takes_leading(&self, op: OpCode, ty: &Ty, n: i64) -> bool {
        self.takes_extent(op, ty, 0, n)
    }

    /// Whether some semantics of operator `op` of the rank and element type of `ty` computes
    /// an extent of `n` along dimension `dim`: one whose extent there is that constant, or not
    /// a constant.
    pub fn takes_extent(&self, op: OpCode, ty: &Ty, dim: usize, n: i64) -> bool {
        let rank = ty.rank();
        self.is_flexible(op, ty.dtype, rank, dim)
            || self.entries(op, ty.dtype).is_some_and(|e| e.iter().any(|d| d.len() == rank && d[dim] == Some(n)))
    }

    /// The leading extent to pad an operation of operator `op` and type `ty` to: among the
    /// semantics of `op` of that rank that take every other dimension of `ty`, when each has a
    /// constant leading extent above `ty`'s (so no tiling computes it), the smallest.
    pub fn padded_leading(&self, op: OpCode, ty: &Ty) -> Option<i64> {
        let (&n, rest) = ty.shape.split_first()?;
        if self.takes_leading(op, ty, n) {
            return None;
        }
        let fits = |d: &[Option<i64>]| d[1..].iter().zip(rest).all(|(e, &m)| e.is_none_or(|e| m <= e));
        let fitting: Vec<Option<i64>> =
            self.entries(op, ty.dtype)?.iter().filter(|d| d.len() == ty.rank() && fits(d)).map(|d| d[0]).collect();
        let above: Option<Vec<i64>> = fitting.iter().map(|t| t.filter(|&t| t > n)).collect();
        above?.into_iter().min()
    }

    /// [`Extents::padded_leading`] among the units of a fixed number of rows alone, where an
    /// instruction of `op` whose rows are an attribute takes `ty`'s rows but may not take its
    /// operands (an add of accumulator rows to rows read from HBM, beside a fixed-size array
    /// that adds a product): the smallest fixed leading extent above `ty`'s among the
    /// semantics of that rank that take every other dimension.
    pub fn padded_leading_fixed(&self, op: OpCode, ty: &Ty) -> Option<i64> {
        let (&n, rest) = ty.shape.split_first()?;
        let fits = |d: &[Option<i64>]| d[1..].iter().zip(rest).all(|(e, &m)| e.is_none_or(|e| m <= e));
        self.fixed_leading
            .get(&op)?
            .iter()
            .filter(|d| d.len() == ty.rank() && fits(d))
            .filter_map(|d| d[0].filter(|&t| t > n))
            .min()
    }

    pub fn is_empty(&self) -> bool {
        self.by_op.is_empty()
    }

    /// Whether a product of an `[_, n]` matrix by an `[n, n]` one (an identity matrix of its
    /// width) is one instruction per row tile: some product takes `n` columns and some a
    /// contraction of `n`. A wider identity product would be computed in tiles, most of them
    /// products with zero blocks; the value's tiles pass through the unit instead. Extents
    /// read from no semantics (tests of other rules) take every width.
    pub fn takes_square_product(&self, n: i64) -> bool {
        if self.is_empty() {
            return true;
        }
        let columns = self.by_op.get(&OpCode::Dot).is_some_and(|e| e.iter().any(|d| d.len() == 2 && d[1].is_none_or(|c| n <= c)));
        columns && self.contraction.iter().any(|k| k.is_none_or(|k| n <= k))
    }

    /// The most columns a matrix product of the semantics computes, when every one is bounded.
    pub fn product_columns(&self) -> Option<i64> {
        widest_of(self.by_op.get(&OpCode::Dot)?, 2, 1)
    }

    /// The most rows a matrix product of the semantics computes, when every one is bounded.
    pub fn product_rows(&self) -> Option<i64> {
        widest_of(self.by_op.get(&OpCode::Dot)?, 2, 0)
    }

    /// Whether some product the semantics compute contracts `k` elements: a constant
    /// contraction of `k`, or one bounded by at least `k`. Extents read from no semantics
    /// (tests of other rules) take every contraction.
    pub fn takes_contraction(&self, k: i64) -> bool {
        self.is_empty()
            || self.fixed_contractions.contains(&k)
            || self.flexible_contractions.iter().any(|b| b.is_none_or(|b| b >= k))
    }

    /// The tile size of the leading dimension of an operation of operator `op` and type
    /// `ty`, when it must be split: 1 for a rank no semantics of `op` has (a batch; computing
/// operators only), else the
    /// largest leading extent any semantics of `op` of that rank gives, when `ty`'s is larger.
    pub fn leading_tile(&self, op: OpCode, ty: &Ty) -> Option<i64> {
        let entries = self.entries(op, ty.dtype)?;
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

    /// The most rows (leading extent) one semantics of `op` of `ty`'s rank and type computes:
    /// `i64::MAX` where one leaves it unbounded, `None` where none has that rank.
    pub fn leading_extent(&self, op: OpCode, ty: &Ty) -> Option<i64> {
        let entries = self.entries(op, ty.dtype)?;
        entries.iter().filter(|d| d.len() == ty.rank()).filter_map(|d| d.first().map(|e| e.unwrap_or(i64::MAX))).max()
    }

    /// The dimension of an operation `op : ty` that [`split_columns`] splits, and its tile:
    /// the first from `first` on that is larger than every semantics of its operator of that
    /// rank gives it (all of them bounded).
    fn column_tile(&self, op: &Op, ty: &Ty, first: usize) -> Option<(usize, i64)> {
        if !splits_columns(op) {
            return None;
        }
        let entries = self.entries(opcode(op)?, ty.dtype)?;
        (first..ty.rank()).find_map(|d| {
            let widest = widest_of(entries, ty.rank(), d).filter(|&w| w > 0)?;
            (ty.shape[d] > widest).then_some((d, widest))
        })
    }

    /// The reduced dimension of `x_ty` that a reduction by `reducer` over `dims` must split,
    /// and the longest reduction along it that the ISA's semantics compute: the first of
    /// `dims` longer than every semantics reduction by `reducer` of that rank (all bounded).
    fn reduction_tile(&self, reducer: Reducer, x_ty: &Ty, dims: &[usize]) -> Option<(usize, i64)> {
        let entries = self.reductions.get(&reducer)?;
        dims.iter().find_map(|&d| {
            let longest = widest_of(entries, x_ty.rank(), d).filter(|&w| w > 0)?;
            (x_ty.shape[d] > longest).then_some((d, longest))
        })
    }

    /// The longest contraction of every product the semantics compute; `None` where one of
    /// them is unbounded. `Some(0)` where none computes a product.
    fn longest_contraction(&self) -> Option<i64> {
        self.contraction.iter().try_fold(0i64, |acc, x| x.map(|x| acc.max(x)))
    }

    /// A float product (`ty` its result) whose contraction, `k` elements, is longer than every
    /// product the semantics compute contracts: the longest. A float contraction is not split
    /// across tiles (that would change the order of its accumulation), so no tiling helps.
    pub fn unsplit_contraction(&self, ty: &Ty, k: i64) -> Option<i64> {
        if ty.dtype.is_int() || self.contraction.is_empty() {
            return None;
        }
        let longest = self.longest_contraction()?;
        (k > longest).then_some(longest)
    }

    /// An integer product (`ty` its result) contracting `k` elements, more than every product
    /// the semantics compute, where no semantics adds or subtracts values of its type or sums
    /// them by a reduction: the longest contraction. The products of its parts could not be
    /// summed (a product that reads values of that type, which could sum them against ones,
    /// is the caller's to rule out).
    pub fn unsummed_contraction(&self, ty: &Ty, k: i64) -> Option<i64> {
        if !ty.dtype.is_int() || self.contraction.is_empty() {
            return None;
        }
        let longest = self.longest_contraction()?;
        let sums = [OpCode::Add, OpCode::Subtract].iter().any(|&op| self.by_op_type.contains_key(&(op, ty.dtype)))
            || self.reductions.contains_key(&Reducer::Add);
        (k > longest && !sums).then_some(longest)
    }

    /// Why a reduction `op` of `x_ty` into `ty` cannot be computed: a reduced dimension longer
    /// than every reduction the ISA computes, with that length, where the reduction is not
    /// split across tiles (a float one, whose sum would be reordered).
    pub fn unsplit_reduction(&self, op: &Op, x_ty: &Ty, ty: &Ty) -> Option<(usize, i64)> {
        let (reducer, dims) = reduction(op)?;
        let too_long = self.reduction_tile(reducer, x_ty, dims)?;
        (!splits_reduction(x_ty, ty)).then_some(too_long)
    }

    /// How many tiles the split rules make of `kernel`'s operations, at least one each: the
    /// scale of the search the kernel needs.
    pub fn tile_count(&self, kernel: &crate::kernel::Kernel) -> usize {
        let ceil = |n: i64, t: Option<i64>| t.filter(|&t| t > 0 && n > t).map_or(1, |t| (n + t - 1) / t);
        // Values something other than a product reads (a product reads a transposed operand
        // as it lies).
        let mut read_as_values = vec![false; kernel.nodes.len()];
        kernel.results.iter().chain([&kernel.root]).for_each(|&r| read_as_values[r] = true);
        for node in kernel.nodes.iter().filter(|n| !matches!(n.op, Op::Dot(_))) {
            node.operands.iter().for_each(|&o| read_as_values[o] = true);
        }
        kernel
            .nodes
            .iter()
            .enumerate()
            .map(|(k, node)| {
                let Some(code) = opcode(&node.op) else { return 1 };
                let lead = node.ty.shape.first().map_or(1, |&m| ceil(m, self.leading_tile(code, &node.ty)));
                if let (Op::Transpose(_), rank @ 2..) = (&node.op, node.ty.rank()) {
                    if self.entries(code, node.ty.dtype).is_none() && self.product_rows().is_some() && read_as_values[k] {
                        // Where nothing transposes, products that each contract one element
                        // compute it (`identities::transpose_by_products`): one per column
                        // of each tile of rows of each matrix.
                        let items: i64 = node.ty.shape[..rank - 2].iter().product();
                        let rows = ceil(node.ty.shape[rank - 2], self.product_rows());
                        return (items * rows * node.ty.shape[rank - 1]).max(1) as usize;
                    }
                }
                if let (Op::Dot(dd), rank @ 3..) = (&node.op, node.ty.rank()) {
                    // A batch of products: each item's tiles, as a product of its own rank.
                    let items: i64 = node.ty.shape[..rank - 2].iter().product();
                    let item = Ty::new(node.ty.dtype, node.ty.shape[rank - 2..].to_vec());
                    let k: i64 = dd.lhs_contracting.iter().map(|&d| kernel.nodes[node.operands[0]].ty.shape[d]).product();
                    let split_k = node.ty.dtype.is_int().then(|| self.longest_contraction()).flatten();
                    let rows = ceil(item.shape[0], self.leading_tile(code, &item));
                    let columns = ceil(item.shape[1], widest(self, OpCode::Dot, &item, 1));
                    return (items * rows * columns * ceil(k, split_k)).max(1) as usize;
                }
                let more = match (&node.op, node.ty.rank()) {
                    (Op::Dot(dd), 2) => {
                        // An outer product contracts nothing.
                        let k = dd.lhs_contracting.first().and_then(|&d| kernel.nodes[node.operands[0]].ty.shape.get(d)).copied();
                        let split_k = node.ty.dtype.is_int().then(|| self.longest_contraction()).flatten();
                        ceil(node.ty.shape[1], widest(self, OpCode::Dot, &node.ty, 1)) * k.map_or(1, |k| ceil(k, split_k))
                    }
                    (op, rank) if splits_columns(op) => {
                        let entries = self.entries(code, node.ty.dtype).map_or(&[][..], Vec::as_slice);
                        let columns: i64 = (1..rank).map(|d| ceil(node.ty.shape[d], widest_of(entries, rank, d))).product();
                        let reduced = match (reduction(op), node.operands.first()) {
                            (Some((reducer, dims)), Some(&x)) if splits_reduction(&kernel.nodes[x].ty, &node.ty) => {
                                let x_ty = &kernel.nodes[x].ty;
                                let entries = self.reductions.get(&reducer).map_or(&[][..], Vec::as_slice);
                                dims.iter().map(|&d| ceil(x_ty.shape[d], widest_of(entries, x_ty.rank(), d))).product()
                            }
                            _ => 1,
                        };
                        columns * reduced
                    }
                    _ => 1,
                };
                // Elementwise work seen as rows of the widest an instruction takes
                // (`elementwise_as_rows`, `vector_as_rows`) has as many tiles as it has
                // instructions' worth of elements, whatever its shape.
                let as_rows = if node.op.is_elementwise() || node.op == Op::Convert {
                    let most = self.entries(code, node.ty.dtype).and_then(|entries| {
                        entries.iter().filter_map(|d| d.iter().try_fold(1i64, |n, e| Some(n * (*e)?))).max()
                    });
                    ceil(node.ty.elements(), most)
                } else {
                    1
                };
                (lead * more).max(as_rows).max(1) as usize
            })
            .sum()
    }

    /// Why no instruction can compute an operation `op : ty` in one piece: the first
    /// dimension tiling does not split (the leading one is split; so are a matrix product's
    /// columns, and every dimension of the operators [`split_columns`] splits) that is larger
    /// than every semantics of its operator of that rank takes.
    pub fn too_large(&self, op: &Op, ty: &Ty) -> Option<(usize, i64)> {
        if splits_columns(op) {
            return None;
        }
        // A matrix product's columns are split too (`split_product`).
        let first_untiled = if opcode(op) == Some(OpCode::Dot) && ty.rank() == 2 { 2 } else { 1 };
        self.wider_from(op, ty, first_untiled)
    }

    /// The first dimension after the leading one along which an operation `op : ty` is wider
    /// than every semantics of its operator of that rank takes, tiled or not, with that
    /// largest extent.
    pub fn wider_than_every(&self, op: &Op, ty: &Ty) -> Option<(usize, i64)> {
        self.wider_from(op, ty, 1)
    }

    fn wider_from(&self, op: &Op, ty: &Ty, first: usize) -> Option<(usize, i64)> {
        let entries: Vec<&Vec<Option<i64>>> =
            self.entries(opcode(op)?, ty.dtype)?.iter().filter(|d| d.len() == ty.rank()).collect();
        if entries.is_empty() {
            return None;
        }
        (first..ty.rank()).find_map(|d| {
            let widest = entries.iter().map(|dims| dims[d]).try_fold(0i64, |acc, x| x.map(|x| acc.max(x)))?;
            (ty.shape[d] > widest).then_some((d, widest))
        })
    }
}

/// Whether a reduction of `x_ty` into `ty` may be split across tiles: integer sums and
/// products wrap and integer maxima and minima are exact, so their order does not matter; a
/// float sum's does (and a float maximum's may, for the sign of a zero or a NaN's payload).
fn splits_reduction(x_ty: &Ty, ty: &Ty) -> bool {
    x_ty.dtype.is_int() && ty.dtype.is_int()
}

/// `x` sliced to `[lo, hi)` along dimension `dim`.
fn slice_along(x: Id, x_ty: &Ty, dim: usize, lo: i64, hi: i64) -> Term {
    slice_of(Term::Class(x), x_ty, dim, lo, hi)
}

/// The term `x : x_ty` sliced to `[lo, hi)` along dimension `dim`.
fn slice_of(x: Term, x_ty: &Ty, dim: usize, lo: i64, hi: i64) -> Term {
    if (lo, hi) == (0, x_ty.shape[dim]) {
        return x;
    }
    let ranges = x_ty.shape.iter().enumerate().map(|(d, &n)| if d == dim { (lo, hi, 1) } else { (0, n, 1) }).collect();
    let mut shape = x_ty.shape.clone();
    shape[dim] = hi - lo;
    Term::Node(Op::Slice(ranges), x_ty.with_shape(shape), vec![x])
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
pub fn split_leading(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Split> {
    let code = opcode(&node.op)?;
    let tile = extents.leading_tile(code, &node.ty)?;
    split_leading_by(eg, extents, node, code, tile)
}

/// [`split_leading`] into tiles of the largest size divided by `divisor`, where instructions
/// take that many rows: tiles that fit where several of the largest do not (a maximum of two
/// accumulator tiles, a product onto an addend, in a buffer that holds two of them and no
/// more).
pub fn split_leading_divided(eg: &SelGraph, extents: &Extents, node: &Node, divisor: i64) -> Option<Split> {
    let code = opcode(&node.op)?;
    let tile = extents.leading_tile(code, &node.ty)?;
    let part = tile / divisor;
    let takes = tile % divisor == 0 && part >= 1 && extents.takes_leading(code, &node.ty, part);
    takes.then(|| split_leading_by(eg, extents, node, code, part)).flatten()
}

fn split_leading_by(eg: &SelGraph, extents: &Extents, node: &Node, code: OpCode, tile: i64) -> Option<Split> {
    let sources = leading_sources(eg, node)?;
    let takes = |rows: i64| extents.takes_leading(code, &node.ty, rows);
    Some(tiles_along(&node.ty, 0, tile, takes, |lo, hi| on_tile(eg, node, &sources, 0, lo, hi)))
}

/// Whether every operand of `node` that feeds its rows has all `rows` of them along its own
/// dimension 0 (a clamp's scalar bound feeds none), `sources` as [`leading_sources`] gives them.
fn operands_keep_rows(eg: &SelGraph, node: &Node, sources: &[Option<usize>], rows: i64) -> bool {
    node.children.iter().zip(sources).all(|(&c, src)| src.is_none() || (*src == Some(0) && eg[c].data.shape.first() == Some(&rows)))
}

/// `c` followed by zero rows up to `t` rows: `concatenate_0(c, zeros)`.
fn zero_padded_rows(eg: &SelGraph, c: Id, t: i64) -> Term {
    let c_ty = &eg[c].data;
    let mut zeros = c_ty.shape.clone();
    zeros[0] = t - zeros[0];
    let zeros = Term::Node(Op::Constant(Literal::from_values(&[0.0])), c_ty.with_shape(zeros), vec![]);
    let mut padded = c_ty.shape.clone();
    padded[0] = t;
    Term::Node(Op::Concatenate(0), c_ty.with_shape(padded), vec![Term::Class(c), zeros])
}

/// An elementwise operation (or convert, broadcast, reduction over later dimensions) that no
/// rule splits by its own extents, split along rows where an operand computed in row tiles is
/// split: `f(concatenate_0(t0, t1), y) = concatenate_0(f(t0, y[rows of t0]), f(t1, y[rows of
/// t1]))`. Where several instructions compute an operator, the one taking the most rows may not
/// take the operands at hand: GemminiRows' `mvin_acc_low_add` adds 1,024 accumulator rows to
/// int8 rows read from HBM, while a bias on a product of 32 rows runs on the 16-row `mac32`
/// that computes each of the product's tiles. Only along a concatenation of computed tiles of
/// more than one row (products, arithmetic: not rows read one at a time), the first such in the
/// class. Exact for every type: rows are independent.
pub fn split_like_operand(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Term> {
    let code = opcode(&node.op)?;
    if extents.leading_tile(code, &node.ty).is_some() {
        return None;
    }
    let lead = *node.ty.shape.first()?;
    let sources = leading_sources(eg, node)?;
    if !operands_keep_rows(eg, node, &sources, lead) {
        return None;
    }
    let computing = |n: &Node| {
        (n.op.is_elementwise() || matches!(n.op, Op::Dot(_) | Op::Convert | Op::Reduce { .. } | Op::ReduceAdd(_)))
            && !crate::identities::is_pass_through(eg, n)
    };
    let bounds = node.children.iter().zip(&sources).find_map(|(&c, src)| {
        if *src != Some(0) || !eg[c].nodes.iter().any(computing) {
            return None;
        }
        eg[c].nodes.iter().find_map(|n| {
            let rows: Vec<i64> = n.children.iter().map(|&p| eg[p].data.shape.first().copied().unwrap_or(0)).collect();
            let tiled = matches!(n.op, Op::Concatenate(0)) && rows.len() > 1 && rows.iter().all(|&r| r > 1);
            tiled.then_some(rows)
        })
    })?;
    let mut parts = Vec::with_capacity(bounds.len());
    let mut lo = 0;
    for rows in bounds {
        parts.push(on_tile(eg, node, &sources, 0, lo, lo + rows));
        lo += rows;
    }
    (lo == lead).then(|| Term::Node(Op::Concatenate(0), node.ty.clone(), parts))
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
        .map(|(&c, src)| if src.is_some() { zero_padded_rows(eg, c, t) } else { Term::Class(c) })
        .collect();
    let mut whole = node.ty.shape.clone();
    whole[0] = t;
    let padded_ty = node.ty.with_shape(whole);
    Some(slice_of(Term::Node(node.op.clone(), padded_ty.clone(), operands), &padded_ty, 0, 0, rows))
}

/// [`pad_rows`] where an instruction whose rows are an attribute takes the operation's rows,
/// so that `pad_rows` leaves it, but a unit of a fixed larger row count computes it with an
/// operand that is a product: `slice(op(dot(concatenate_0(a, zeros), b), y padded...), rows
/// [0, r))`, the product computed on the padded rows of its left operand (one term per form
/// of the product whose left operand's rows are its rows). The first `r` rows of the padded
/// product are the product, whatever the padded rows compute, and they are dropped: exact for
/// every type. On GemminiRows, `x.w + b` of 8 rows (its add of the most rows takes int8 rows
/// from HBM only) runs on the 16-row accumulating array.
pub fn pad_rows_through_products(eg: &SelGraph, extents: &Extents, node: &Node) -> Vec<Term> {
    let (Some(code), Some(&rows)) = (opcode(&node.op), node.ty.shape.first()) else { return Vec::new() };
    let Some(sources) = leading_sources(eg, node) else { return Vec::new() };
    if !operands_keep_rows(eg, node, &sources, rows) || extents.padded_leading(code, &node.ty).is_some() {
        return Vec::new();
    }
    let Some(t) = extents.padded_leading_fixed(code, &node.ty) else { return Vec::new() };
    let padded = |ty: &Ty| {
        let mut shape = ty.shape.clone();
        shape[0] = t;
        ty.with_shape(shape)
    };
    let pad = |c: Id| zero_padded_rows(eg, c, t);
    // The forms of a product of computed or input values (the identity products `x = dot(x, I)`
    // in nearly every class have a constant operand): each whose left operand feeds its rows
    // along dimension 0 and whose right operand is used whole.
    let constant = |c: Id| crate::rewrites::constant_valued(eg, c, 3);
    // A left operand that is rows of a taller value (a row of a matrix stored a row at a time)
    // is multiplied with the rest of it, not padded: padding every row slice multiplied a
    // 32-row product a row at a time.
    let rows_of_taller =
        |a: Id| eg[a].nodes.iter().any(|n| matches!(n.op, Op::Slice(_)) && eg[n.children[0]].data.shape.first() > Some(&rows));
    let products = |c: Id| -> Vec<Term> {
        eg[c]
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Dot(_)) && !n.children.iter().any(|&k| constant(k)))
            .filter(|n| leading_sources(eg, n).is_some_and(|s| s == [Some(0), None]))
            .filter(|n| eg[n.children[0]].data.shape.first() == Some(&rows) && !rows_of_taller(n.children[0]))
            .map(|n| Term::Node(n.op.clone(), padded(&n.ty), vec![pad(n.children[0]), Term::Class(n.children[1])]))
            .collect()
    };
    let Some(k) = node.children.iter().zip(&sources).position(|(&c, src)| src.is_some() && !products(c).is_empty()) else {
        return Vec::new();
    };
    let padded_ty = padded(&node.ty);
    products(node.children[k])
        .into_iter()
        .map(|product| {
            let operands = node
                .children
                .iter()
                .zip(&sources)
                .enumerate()
                .map(|(j, (&c, src))| match src {
                    _ if j == k => product.clone(),
                    Some(_) => pad(c),
                    None => Term::Class(c),
                })
                .collect();
            slice_of(Term::Node(node.op.clone(), padded_ty.clone(), operands), &padded_ty, 0, 0, rows)
        })
        .collect()
}

/// The largest extent semantics of operator `op` of the rank and element type of `ty` give
/// dimension `dim`, when every one is bounded.
fn widest(extents: &Extents, op: OpCode, ty: &Ty, dim: usize) -> Option<i64> {
    widest_of(extents.entries(op, ty.dtype)?, ty.rank(), dim)
}

/// Tiles `[0, t), [t, 2t), ...` of `0..n` (the last one shorter where `t` does not divide).
fn tiles(n: i64, t: i64) -> Vec<(i64, i64)> {
    (0..n).step_by(t as usize).map(|lo| (lo, (lo + t).min(n))).collect()
}

/// An operation split into tiles along one dimension: the concatenation of the tiles, and,
/// where the last tile overlaps the one before, the full tiles overlaid at their starts
/// ([`Op::Overlay`]), which is how instructions that only write whole tiles write it.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    pub concat: Term,
    pub overlay: Option<Term>,
}

/// The tiles `[0, t), [t, 2t), ...` of dimension `dim` of a value of type `ty`, each
/// `compute(lo, hi)`. A last tile shorter than `t` that no instruction computes (`takes` of
/// its extent is false: units of a fixed size) is the last elements of the full tile
/// `[n - t, n)`, which overlaps the one before: the elements along `dim` are independent, so
/// the overlap is the same bits computed twice, and one copy is dropped in the
/// concatenation; the overlay keeps the full tile at `n - t`.
fn tiles_along(ty: &Ty, dim: usize, t: i64, takes: impl Fn(i64) -> bool, compute: impl Fn(i64, i64) -> Term) -> Split {
    let n = ty.shape[dim];
    let mut full = ty.shape.clone();
    full[dim] = t;
    let spans = tiles(n, t);
    let overlaps = spans.last().is_some_and(|&(lo, hi)| hi - lo != t && !takes(hi - lo));
    let parts = spans
        .iter()
        .map(|&(lo, hi)| {
            if hi - lo == t || !overlaps {
                compute(lo, hi)
            } else {
                slice_of(compute(n - t, n), &ty.with_shape(full.clone()), dim, t - (hi - lo), t)
            }
        })
        .collect();
    let overlay = overlaps.then(|| {
        let starts: Vec<i64> = spans.iter().map(|&(lo, _)| lo.min(n - t)).collect();
        let parts = starts.iter().map(|&lo| compute(lo, lo + t)).collect();
        Term::Node(Op::Overlay { dim, starts }, ty.clone(), parts)
    });
    Split { concat: Term::Node(Op::Concatenate(dim), ty.clone(), parts), overlay }
}

/// Splits of a matrix product `[m, k] . [k, n]` (no batch) wider than every product the ISA
/// computes: along its result columns, `concatenate_1(dot(a, b[:, tile]) ...)`, exact for
/// every type (a last tile narrower than every unit takes is the last columns of a full tile
/// overlapping the one before); and along its contraction, for integers only (their sums wrap and do not
/// depend on the order), `add(dot(a[:, tile_j], b[tile_j, :]), ... add(dot(a[:, tile_1],
/// b[tile_1, :]), dot(a[:, tile_0], b[tile_0, :])))`, the partial product first in each add
/// as multiply-accumulate semantics write it. A last tile shorter than every contraction the
/// units take (a unit of a fixed 16) is the window of the last `t` elements of one operand
/// against the other's last rows after `t - r` zero rows: the window's first `t - r` elements
/// meet zeros, so it adds the last `r` products alone, and every window stays inside its
/// matrix. A float contraction is never split: it would change the rounding.
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
    if let Some(t) = widest(extents, OpCode::Dot, &node.ty, 1).filter(|&t| t > 0 && n > t) {
        let columns = |lo: i64, hi: i64| {
            let cols = slice_along(b, b_ty, rf, lo, hi);
            Term::Node(node.op.clone(), node.ty.with_shape(vec![node.ty.shape[0], hi - lo]), vec![Term::Class(a), cols])
        };
        let takes = |w: i64| extents.takes_extent(OpCode::Dot, &node.ty, 1, w);
        let split = tiles_along(&node.ty, 1, t, takes, columns);
        out.push(("split-columns", split.concat));
        out.extend(split.overlay.map(|o| ("overlay-columns", o)));
    }
    let k = a_ty.shape[lc];
    let integers = [&node.ty, a_ty, b_ty].iter().all(|t| t.dtype.is_int());
    let largest = extents.contraction.iter().try_fold(0i64, |acc, x| x.map(|x| acc.max(x)));
    if let (true, Some(t)) = (integers, largest.filter(|&t| t > 0 && k > t)) {
        let (last_lo, last_hi) = *tiles(k, t).last().expect("k > t > 0 makes tiles");
        // The last tile's contraction is one the units take, or (`None`) it is contracted as
        // the window `[k - t, k)` of one operand against the other's rows padded with zeros
        // before it (the one variant for either operand).
        let zeros_before = |x: Id, x_ty: &Ty, d: usize| {
            let r = last_hi - last_lo;
            let mut zeros = x_ty.shape.clone();
            zeros[d] = t - r;
            let zeros = Term::Node(Op::Constant(Literal::from_values(&[0.0])), x_ty.with_shape(zeros), vec![]);
            let mut padded = x_ty.shape.clone();
            padded[d] = t;
            Term::Node(Op::Concatenate(d), x_ty.with_shape(padded), vec![zeros, window_to_place(eg, x, x_ty, d, last_lo, last_hi)])
        };
        let last_parts: Vec<Option<Term>> = if last_hi - last_lo == t || extents.takes_contraction(last_hi - last_lo) {
            vec![None]
        } else {
            let product = |x: Term, y: Term| Some(Term::Node(node.op.clone(), node.ty.clone(), vec![x, y]));
            vec![
                product(slice_along(a, a_ty, lc, k - t, k), zeros_before(b, b_ty, rc)),
                product(zeros_before(a, a_ty, lc), slice_along(b, b_ty, rc, k - t, k)),
            ]
        };
        for last in last_parts {
            let mut sum: Option<Term> = None;
            for (lo, hi) in tiles(k, t) {
                let part = match &last {
                    Some(part) if lo == last_lo => part.clone(),
                    _ => Term::Node(
                        node.op.clone(),
                        node.ty.clone(),
                        vec![slice_along(a, a_ty, lc, lo, hi), slice_along(b, b_ty, rc, lo, hi)],
                    ),
                };
                sum = Some(match sum {
                    None => part,
                    Some(acc) => Term::Node(Op::Add, node.ty.clone(), vec![part, acc]),
                });
            }
            out.extend(sum.map(|s| ("split-contraction", s)));
        }
    }
    out
}

/// `x[lo, hi)` along `d` as a part placed beside others in one buffer (after zero rows): where
/// `x` is a window of a kernel input, the one window of the input it is. Rows of a loaded
/// window are a view of the window where it lies, but a part must be written in its place,
/// which the window of the input is (row by row where the ISA reads contiguous runs only).
fn window_to_place(eg: &SelGraph, x: Id, x_ty: &Ty, d: usize, lo: i64, hi: i64) -> Term {
    let window = eg[x].nodes.iter().find_map(|n| match &n.op {
        Op::Slice(ranges) if read_as_is(eg, n.children[0]) && ranges.iter().all(|r| r.2 == 1) => Some((n.children[0], ranges)),
        _ => None,
    });
    let Some((y, ranges)) = window else { return slice_along(x, x_ty, d, lo, hi) };
    let mut outer: Vec<(i64, i64, i64)> = x_ty.shape.iter().map(|&n| (0, n, 1)).collect();
    outer[d] = (lo, hi, 1);
    let mut shape = x_ty.shape.clone();
    shape[d] = hi - lo;
    Term::Node(Op::Slice(compose_ranges(ranges, &outer)), x_ty.with_shape(shape), vec![Term::Class(y)])
}

/// The ranges of `slice(slice(y, inner), outer)` as one slice of `y`, each `(start, limit,
/// stride)`; every range of `outer` non-empty. A limit ends just past the last element taken
/// (the canonical limit).
pub fn compose_ranges(inner: &[(i64, i64, i64)], outer: &[(i64, i64, i64)]) -> Vec<(i64, i64, i64)> {
    inner
        .iter()
        .zip(outer)
        .map(|(&(lo, _, step), &(l, h, s))| {
            let last = l + (h - l - 1) / s * s;
            (lo + l * step, lo + last * step + 1, step * s)
        })
        .collect()
}

/// For each operand of `node`, the dimension that feeds the result's dimension `dim` (`None`:
/// the operand is used whole by every tile); `None` when the result's dimension `dim` does
/// not split into independent tiles, or for operators neither [`split_columns`] splits nor a
/// product (whose free dimensions split).
fn column_sources(eg: &SelGraph, node: &Node, dim: usize) -> Option<Vec<Option<usize>>> {
    let n = node.children.len();
    Some(match &node.op {
        op if op.is_elementwise() || matches!(op, Op::Convert | Op::Copy) => vec![Some(dim); n],
        Op::Broadcast(d) => vec![d.iter().position(|&r| r == dim)],
        Op::Reduce { dims, .. } | Op::ReduceAdd(dims) => {
            let rank = eg[node.children[0]].data.rank();
            let kept: Vec<usize> = (0..rank).filter(|k| !dims.contains(k)).collect();
            let mut v = vec![None; n];
            v[0] = Some(*kept.get(dim)?);
            v
        }
        // Result dimensions are the batch, then the lhs free, then the rhs free ones; a free
        // dimension comes from one operand, which the other multiplies whole.
        Op::Dot(dd) => {
            let nb = dd.lhs_batch.len();
            if dim < nb {
                return Some(vec![Some(dd.lhs_batch[dim]), Some(dd.rhs_batch[dim])]);
            }
            let lhs_free = DotDims::free(eg[node.children[0]].data.rank(), &dd.lhs_batch, &dd.lhs_contracting);
            let rhs_free = DotDims::free(eg[node.children[1]].data.rank(), &dd.rhs_batch, &dd.rhs_contracting);
            match lhs_free.get(dim - nb) {
                Some(&d) => vec![Some(d), None],
                None => vec![None, Some(*rhs_free.get(dim - nb - lhs_free.len())?)],
            }
        }
        _ => return None,
    })
}

/// `node` on the tile `[lo, hi)` of its result dimension `dim`, its operands sliced as
/// `sources` says.
fn on_tile(eg: &SelGraph, node: &Node, sources: &[Option<usize>], dim: usize, lo: i64, hi: i64) -> Term {
    let operands = node
        .children
        .iter()
        .zip(sources)
        .map(|(&c, src)| match src {
            Some(d) => slice_along(c, &eg[c].data, *d, lo, hi),
            None => Term::Class(c),
        })
        .collect();
    let mut shape = node.ty.shape.clone();
    shape[dim] = hi - lo;
    Term::Node(node.op.clone(), node.ty.with_shape(shape), operands)
}

/// `node = concatenate_d(node on tile 0 of dimension d, node on tile 1, ...)` for an
/// elementwise operation, a convert or copy, a broadcast, a transpose, or a reduction, whose
/// dimension `d` (after the leading one, which [`split_leading`] splits; the leading one too
/// for a reduction over it) is wider than every instruction of its operator takes: tiles of
/// the widest extent, the last one shorter where the sizes do not divide (or, where no
/// instruction takes so few, the last ones of a full tile overlapping the one before). Exact
/// for every type: each result element depends on the operand elements of the same index
/// along `d` only.
pub fn split_columns(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Split> {
    if !splits_columns(&node.op) || node.ty.rank() == 0 {
        return None;
    }
    let first = if leading_sources(eg, node).is_some() { 1 } else { 0 };
    let (dim, tile) = extents.column_tile(&node.op, &node.ty, first)?;
    let sources = match &node.op {
        // Only a transpose of a kernel input as it is read: one of a computed value is the
        // value computed transposed (the rules move transposes through products and
        // elementwise operations), and every computed matrix's class holds a transpose of its
        // transpose, which splitting too grew the e-graph of a 512-row softmax by half.
        Op::Transpose(p) if read_as_is(eg, node.children[0]) => vec![Some(*p.get(dim)?)],
        Op::Transpose(_) => return None,
        _ => column_sources(eg, node, dim)?,
    };
    let takes = |w: i64| opcode(&node.op).is_none_or(|code| extents.takes_extent(code, &node.ty, dim, w));
    Some(tiles_along(&node.ty, dim, tile, takes, |lo, hi| on_tile(eg, node, &sources, dim, lo, hi)))
}

/// Most items [`sum_of_items`] adds one by one.
pub const MAX_SUMMED_ITEMS: i64 = 64;

/// An integer sum over the leading (batch) dimension of a batch of matrices or larger, from
/// zero, as the sum of its items one by one: `reduce_add_0(x) = x[n-1] + (... + (x[1] +
/// x[0]))`, each item the first slice along dimension 0 seen without it. Wrapping sums do not
/// depend on the order; never for floats. The items of a batched product are then products
/// accumulated onto each other (`jnp.sum(a @ b, axis=0)` on a multiply-accumulate unit).
pub fn sum_of_items(eg: &SelGraph, node: &Node) -> Option<Term> {
    let (reducer, dims) = reduction(&node.op)?;
    let x = node.children[0];
    let x_ty = &eg[x].data;
    let n = *x_ty.shape.first()?;
    if reducer != Reducer::Add || dims != [0] || x_ty.rank() < 3 || !splits_reduction(x_ty, &node.ty) || !(2..=MAX_SUMMED_ITEMS).contains(&n) {
        return None;
    }
    // From zero: the `reduce_add` form, or an init that is zero.
    if let Some(&init) = node.children.get(1) {
        if !crate::identities::is_zero(eg, init) {
            return None;
        }
    }
    let item = |i: i64| Term::Node(Op::Reshape, node.ty.clone(), vec![slice_along(x, x_ty, 0, i, i + 1)]);
    Some((1..n).fold(item(0), |sum, i| Term::Node(Op::Add, node.ty.clone(), vec![item(i), sum])))
}

/// A reduction whose reduced dimension is longer than every reduction the ISA computes, as
/// the combination of the reductions of its tiles along that dimension: `combine(reduce(x
/// tile j), ... combine(reduce(x tile 1), reduce(x tile 0)))`, the tile's reduction first as
/// accumulating semantics write it (`add(reduce(x), acc)`), like [`split_product`]'s partial
/// products. Integers only, whose sums and products wrap and whose maxima and minima are
/// exact, so that the order does not matter. A reduction with an init value applies it once:
/// the later tiles of a sum start from zero (`reduce_add`), of a product from one; a
/// maximum's or minimum's repeat it, which changes nothing.
pub fn split_reduction(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Term> {
    let (reducer, dims) = reduction(&node.op)?;
    let x = node.children[0];
    let x_ty = &eg[x].data;
    if !splits_reduction(x_ty, &node.ty) {
        return None;
    }
    let (dim, tile) = extents.reduction_tile(reducer, x_ty, dims)?;
    let mut acc: Option<Term> = None;
    for (j, (lo, hi)) in tiles(x_ty.shape[dim], tile).into_iter().enumerate() {
        let x_tile = slice_along(x, x_ty, dim, lo, hi);
        let reduce = |operands| Term::Node(node.op.clone(), node.ty.clone(), operands);
        let part = match (node.children.get(1), restart(reducer)) {
            // A sum from zero is the `reduce_add` kernels and semantics are normalised to.
            (Some(_), Some(_)) if j > 0 && reducer == Reducer::Add => {
                Term::Node(Op::ReduceAdd(dims.to_vec()), node.ty.clone(), vec![x_tile])
            }
            (Some(&init), Some(v)) if j > 0 => {
                reduce(vec![x_tile, Term::Node(Op::Constant(Literal::from_values(&[v])), eg[init].data.clone(), vec![])])
            }
            (Some(&init), _) => reduce(vec![x_tile, Term::Class(init)]),
            (None, _) => reduce(vec![x_tile]),
        };
        acc = Some(match acc {
            None => part,
            Some(acc) => Term::Node(combine(reducer), node.ty.clone(), vec![part, acc]),
        });
    }
    acc
}

/// `slice(op(x...), [lo, hi) along dimension d)`, the other dimensions whole, is
/// `op(slice(x...))` for an operation [`split_columns`] splits along `d`, a product along a
/// free dimension (`(A.B)[:, cols]` is `A.(B[:, cols])`), and, with `through_transposes`, a
/// transpose (whose operand is sliced along the dimension that becomes `d`: columns of a value
/// computed transposed are rows of what was computed, which an ISA that transposes on the way
/// out stores): the slice moves towards the operands (and on to strided views of the bytes
/// they are read from). Exact for every type: each result element is computed from the same
/// operand elements either way.
pub fn slice_through_columns(
    eg: &SelGraph,
    ranges: &[(i64, i64, i64)],
    ty: &Ty,
    inner: &Node,
    through_transposes: bool,
) -> Option<Term> {
    let mut cut = ranges.iter().zip(&inner.ty.shape).enumerate().filter(|(_, (r, &n))| **r != (0, n, 1));
    let (dim, (&(lo, hi, stride), _)) = cut.next()?;
    if cut.next().is_some() || stride != 1 {
        return None;
    }
    let sources = match &inner.op {
        Op::Transpose(p) if through_transposes => vec![Some(*p.get(dim)?)],
        _ => column_sources(eg, inner, dim)?,
    };
    // A slice of leading rows moves through [`slice_through`].
    if dim == 0 && leading_sources(eg, inner).is_some() {
        return None;
    }
    let Term::Node(op, _, operands) = on_tile(eg, inner, &sources, dim, lo, hi) else { return None };
    Some(Term::Node(op, ty.clone(), operands))
}

/// A window of `x : x_ty` cut along several dimensions, `ranges`, as a slice along the first
/// of them followed by a slice of the rest (`x[r, c]` is `x[r][:, c]`), so that each slice
/// moves through the operations it splits in turn; `None` for a slice of one dimension.
pub fn window_one_dimension_at_a_time(x: Id, x_ty: &Ty, ranges: &[(i64, i64, i64)], ty: &Ty) -> Option<Term> {
    let cut: Vec<usize> = (0..ranges.len()).filter(|&d| ranges[d] != (0, x_ty.shape[d], 1)).collect();
    let (&first, rest) = cut.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let (lo, hi, stride) = ranges[first];
    let mut along_first: Vec<(i64, i64, i64)> = x_ty.shape.iter().map(|&n| (0, n, 1)).collect();
    along_first[first] = (lo, hi, stride);
    let first_ty = crate::infer::slice_type(x_ty, &along_first).ok()?;
    let mut remaining = ranges.to_vec();
    remaining[first] = (0, first_ty.shape[first], 1);
    let inner = Term::Node(Op::Slice(along_first), first_ty, vec![Term::Class(x)]);
    Some(Term::Node(Op::Slice(remaining), ty.clone(), vec![inner]))
}

/// `slice(op(x...), rows [lo, hi))` is `op(slice(x, rows [lo, hi))...)` for an operation whose
/// result rows depend on the matching operand rows only (and for a reshape that keeps the
/// leading dimension): the slice moves towards the operands, so the tile of a tiled result
/// is computed from the tiles of its operands.
///
/// Every `stride`-th row moves the same way (`(A.B)[::2] = A[::2].B`): rows are independent.
pub fn slice_through(eg: &SelGraph, ranges: &[(i64, i64, i64)], ty: &Ty, inner: &Node) -> Option<Term> {
    let (&(lo, hi, stride), rest) = ranges.split_first()?;
    let whole_rest = rest.iter().zip(&inner.ty.shape[1..]).all(|(r, &n)| *r == (0, n, 1));
    if !whole_rest || (lo, hi, stride) == (0, inner.ty.shape[0], 1) {
        return None;
    }
    let rows = |c: Id, d: usize| {
        let c_ty = &eg[c].data;
        let mut r: Vec<(i64, i64, i64)> = c_ty.shape.iter().map(|&n| (0, n, 1)).collect();
        r[d] = (lo, hi, stride);
        let sliced = crate::infer::slice_type(c_ty, &r).ok()?;
        Some(Term::Node(Op::Slice(r), sliced, vec![Term::Class(c)]))
    };
    if inner.op == Op::Reshape {
        let x = inner.children[0];
        if eg[x].data.shape.first() != inner.ty.shape.first() {
            return None;
        }
        return Some(Term::Node(Op::Reshape, ty.clone(), vec![rows(x, 0)?]));
    }
    let sources = leading_sources(eg, inner)?;
    if stride == 1 {
        return Some(on_tile(eg, inner, &sources, 0, lo, hi));
    }
    let operands = inner
        .children
        .iter()
        .zip(&sources)
        .map(|(&c, src)| match src {
            Some(d) => rows(c, *d),
            None => Some(Term::Class(c)),
        })
        .collect::<Option<Vec<Term>>>()?;
    Some(Term::Node(inner.op.clone(), ty.clone(), operands))
}

/// `slice(reshape(y) : x, ranges)` as `reshape(slice(y, ranges on y))` where the reshape
/// splits or merges dimensions of a value of rank two or more and the window is a box of `y`
/// too: in each group of dimensions the reshape maps onto each other (equal products, taken
/// in order), a dimension kept is cut as it is; one of `y` split into several is cut only
/// along the first of them, the rest whole (`[16, 128]` seen as `[16, 32, 4]`, columns
/// `16..32` of the middle one are columns `64..128`); several merged into one of `x` are cut
/// at multiples of the later ones' product, along the first. Exact for every type (the same
/// elements). A kernel's tile of an operand it reads through a reshape (an interleaved
/// matrix unpacked by a reshape and a transpose) is then a window of the operand, which a
/// strided load reads. `None` where some group is cut otherwise, and for a reshape of a
/// vector (its windows are byte runs, [`strided_views`]). The rules apply it to inputs only
/// moved about ([`moved_input`]).
pub fn slice_through_reshape(y: Id, y_ty: &Ty, x_shape: &[i64], ranges: &[(i64, i64, i64)], ty: &Ty) -> Option<Term> {
    let y_shape = &y_ty.shape;
    if y_shape.len() < 2 || y_shape.as_slice() == x_shape || ranges.len() != x_shape.len() {
        return None;
    }
    let whole = |r: (i64, i64, i64), n: i64| r == (0, n, 1);
    let mut y_ranges: Vec<(i64, i64, i64)> = Vec::with_capacity(y_shape.len());
    let (mut i, mut j) = (0, 0);
    while i < y_shape.len() && j < x_shape.len() {
        let (i0, j0) = (i, j);
        let (mut py, mut px) = (y_shape[i], x_shape[j]);
        i += 1;
        j += 1;
        while py != px {
            if py < px {
                py *= *y_shape.get(i)?;
                i += 1;
            } else {
                px *= *x_shape.get(j)?;
                j += 1;
            }
        }
        let (ys, xs, rs) = (&y_shape[i0..i], &x_shape[j0..j], &ranges[j0..j]);
        match (ys.len(), xs.len()) {
            (1, 1) => y_ranges.push(rs[0]),
            (1, _) => y_ranges.push(run_of_box(xs, rs)?),
            (_, 1) => y_ranges.extend(box_of_run(ys, rs[0])?),
            _ if rs.iter().zip(xs).all(|(&r, &n)| whole(r, n)) => y_ranges.extend(ys.iter().map(|&n| (0, n, 1))),
            _ => return None,
        }
    }
    // Trailing dimensions of one on either side.
    if y_shape[i..].iter().chain(&x_shape[j..]).any(|&n| n != 1) {
        return None;
    }
    y_ranges.extend(y_shape[i..].iter().map(|_| (0, 1, 1)));
    let sliced = crate::infer::slice_type(y_ty, &y_ranges).ok()?;
    Some(Term::Node(Op::Reshape, ty.clone(), vec![Term::Node(Op::Slice(y_ranges), sliced, vec![Term::Class(y)])]))
}

/// The run of one dimension that the box `ranges` of its split into `dims` (row-major) is:
/// single indices, then one range, then whole dimensions. `None` for any other box.
fn run_of_box(dims: &[i64], ranges: &[(i64, i64, i64)]) -> Option<(i64, i64, i64)> {
    let cut = ranges.iter().position(|r| r.1 - r.0 != 1).unwrap_or(dims.len() - 1);
    let inner: i64 = dims[cut + 1..].iter().product();
    let whole_after = ranges[cut + 1..].iter().zip(&dims[cut + 1..]).all(|(r, &n)| *r == (0, n, 1));
    let (lo, hi, stride) = ranges[cut];
    if !whole_after || stride != 1 {
        return None;
    }
    let base: i64 = ranges[..cut].iter().zip(&dims[..cut]).rev().fold((0, inner * dims[cut]), |(acc, scale), (r, &n)| (acc + r.0 * scale, scale * n)).0;
    Some((base + lo * inner, base + hi * inner, 1))
}

/// The box of `dims` (merged row-major into one dimension) that the run `range` of the merged
/// dimension is: single indices, then one range, then whole dimensions, the cut as far out as
/// the run allows. `None` where the run is no such box (or strided).
fn box_of_run(dims: &[i64], (lo, hi, stride): (i64, i64, i64)) -> Option<Vec<(i64, i64, i64)>> {
    if stride != 1 || hi <= lo {
        return None;
    }
    (0..dims.len()).find_map(|f| {
        let inner: i64 = dims[f + 1..].iter().product();
        let (a, b) = (lo / inner, hi / inner);
        if lo % inner != 0 || hi % inner != 0 || a / dims[f] != (b - 1) / dims[f] {
            return None;
        }
        // The single indices of the dimensions before the cut: `a / dims[f]` in mixed radix.
        let mut outer = a / dims[f];
        let mut before: Vec<(i64, i64, i64)> = dims[..f]
            .iter()
            .rev()
            .map(|&n| {
                let k = outer % n;
                outer /= n;
                (k, k + 1, 1)
            })
            .collect();
        before.reverse();
        before.push((a % dims[f], (b - 1) % dims[f] + 1, 1));
        before.extend(dims[f + 1..].iter().map(|&n| (0, n, 1)));
        Some(before)
    })
}

/// A window `[r0, r1) x [c0, c1)` (further dimensions whole) of a row-major matrix read from
/// the flat bytes `y` (`x = reshape(y) : [m, n, ...]`) is a strided view of those bytes, in
/// the two ways strided loads are written: the whole rows it lies in, reshaped and sliced at
/// its columns (`slice-of-row-run`), and, where it stays inside `y`, the span from its first
/// element of its row count times the row pitch, reshaped and sliced at column 0 (TAIDL's
/// strided load, `slice-of-strided-span`). With `row_by_row` (the bytes every run an
/// instruction reads from HBM is a multiple of), also its rows end to end
/// ([`window_row_by_row`]). With `as_byte_rows` (registers of bytes that hold any type), also
/// each of those of the matrix seen as rows of elements, its dimensions after the first
/// merged (an int32 window `[16, 16, 4]` of bytes as `[16, 64]`), reshaped back.
pub fn strided_views(
    y: Id,
    y_ty: &Ty,
    x_shape: &[i64],
    ranges: &[(i64, i64, i64)],
    ty: &Ty,
    row_by_row: Option<i64>,
    as_byte_rows: bool,
) -> Vec<(&'static str, Term)> {
    let mut out = Vec::new();
    if x_shape.len() < 2 || ranges.iter().any(|r| r.2 != 1) {
        return out;
    }
    let whole_after = ranges.iter().zip(x_shape).skip(2).all(|(r, &d)| *r == (0, d, 1));
    if !whole_after {
        return out;
    }
    if as_byte_rows && x_shape.len() > 2 {
        let inner: i64 = x_shape[2..].iter().product();
        let rows = [x_shape[0], x_shape[1] * inner];
        let window = [ranges[0], (ranges[1].0 * inner, ranges[1].1 * inner, 1)];
        let flat_ty = ty.with_shape(vec![ty.shape[0], ty.shape[1] * inner]);
        for (rule, term) in strided_views(y, y_ty, &rows, &window, &flat_ty, row_by_row, false) {
            out.push((rule, Term::Node(Op::Reshape, ty.clone(), vec![term])));
        }
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
    if let Some(unit) = row_by_row {
        out.extend(window_row_by_row(y, y_ty, x_shape, ranges, ty, unit).map(|term| ("window-row-by-row", term)));
    }
    out
}

/// Most copies a broadcast vector is written out as ([`broadcast_as_copies`]): each is a node
/// of the e-graph, and of every tile's. Rows read or written one by one
/// ([`window_row_by_row`], [`flatten_row_by_row`]) have no such bound: on an ISA whose
/// array takes any number of rows (the public Gemmini spec), a product's operand windows
/// are as tall as the matrix, and capping them refused every product over 64 rows as though
/// no instruction computed it (the e-graph's node limits bound the search instead).
const MAX_COPIES: i64 = 64;

/// A window `[r0, r1) x [c0, c1)` of a row-major matrix read from the flat bytes `y`, narrower
/// than the matrix, as its rows end to end: `concatenate_0(reshape(y[run_r]) ...)`, each row
/// `run_r` one contiguous run of bytes. An ISA whose loads read only contiguous runs reads
/// such a tile one row at a time. Exact for every type (the same bytes). None where a row is
/// no multiple of `unit` bytes, since no load reads such a run: a one-column window of a
/// bf16 matrix on QKV, whose loads read whole rows of 64, would otherwise become a
/// concatenation of 2-byte runs, and the windows of those, of thousands of parts.
fn window_row_by_row(y: Id, y_ty: &Ty, x_shape: &[i64], ranges: &[(i64, i64, i64)], ty: &Ty, unit: i64) -> Option<Term> {
    let ((r0, r1, _), (c0, c1, _)) = (ranges[0], ranges[1]);
    if (c0, c1) == (0, x_shape[1]) {
        return None;
    }
    let pitch: i64 = x_shape[1..].iter().product();
    let inner: i64 = x_shape[2..].iter().product();
    let len = (c1 - c0) * inner;
    if (len * i64::from(y_ty.dtype.bytes())) % unit != 0 {
        return None;
    }
    let mut one = ty.shape.clone();
    one[0] = 1;
    let row_ty = ty.with_shape(one);
    let rows: Vec<Term> = (r0..r1)
        .map(|r| {
            let start = r * pitch + c0 * inner;
            let run = Term::Node(Op::Slice(vec![(start, start + len, 1)]), y_ty.with_shape(vec![len]), vec![Term::Class(y)]);
            Term::Node(Op::Reshape, row_ty.clone(), vec![run])
        })
        .collect();
    Some(Term::concatenate(0, ty.clone(), rows))
}

/// An elementwise operation (or convert) on row-major values of rank two or more whose rows
/// no instruction of its operator takes (wider than every one, or of a width none computes,
/// such as 8 on a 16-lane unit), all its operands of its shape: the same operation on the
/// values seen as rows of the widest width `w` an instruction takes (`reshape` to
/// `[elements / w, w]`; where `w` does not divide the elements, more than `w` of them, as one
/// vector, which [`vector_as_rows`] overlays), reshaped back (not on a transposed operand
/// unless [`row_major_as_read`]). Exact for every type: an elementwise operation does not depend on
/// the layout. Where no instruction reads a window of HBM, whole contiguous blocks are then
/// read and written instead of every row of every window apart (a 48x48 negate on a
/// 16-column unit: one scaled load and one store).
pub fn elementwise_as_rows(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Term> {
    if !(node.op.is_elementwise() || node.op == Op::Convert) || node.ty.rank() < 2 {
        return None;
    }
    let code = opcode(&node.op)?;
    let elements = node.ty.elements();
    let n = *node.ty.shape.last()?;
    let w = widest(extents, code, &node.ty.with_shape(vec![1, n]), 1).filter(|&w| w > 0 && elements >= w)?;
    // Elements no multiple of the width are one vector, which [`vector_as_rows`] overlays.
    let rows = if elements % w == 0 { vec![elements / w, w] } else { vec![elements] };
    // Rows some instruction takes are computed as they are.
    let taken = n <= w && extents.takes_extent(code, &node.ty.with_shape(vec![1, n]), 1, n);
    if rows == node.ty.shape || taken {
        return None;
    }
    if node.children.iter().any(|&c| eg[c].data.shape != node.ty.shape) {
        return None;
    }
    // Not on a transposed operand, unless it is also laid out row-major as it is read: the
    // rows of a transpose are its matrix's columns, and each view of them as rows is a new
    // shape whose transposes start another (QKV attention over 96 query rows grew to the
    // iteration limit).
    let transposed = |c: Id| eg[c].nodes.iter().any(|n| matches!(n.op, Op::Transpose(_)));
    if node.children.iter().any(|&c| transposed(c) && !row_major_as_read(eg, c, &rows, 3)) {
        return None;
    }
    Some(on_rows(eg, node, rows))
}

/// An elementwise operation (or convert) on vectors where every instruction of its operator
/// (in its element type) computes matrices: the same operation on the vectors seen as rows
/// of the widest width `w` those take (`reshape` to `[n / w, w]`), reshaped back; then tiled
/// like any matrix. Exact for every type: an elementwise operation does not depend on the
/// layout. A vector longer than `w` but no multiple of it is its first `q * w` elements
/// overlaid with its last `w` ([`Op::Overlay`]), each computed as rows: the `w - r` elements
/// both compute are the same bits twice. A shorter one is left alone.
pub fn vector_as_rows(eg: &SelGraph, extents: &Extents, node: &Node) -> Option<Term> {
    if !(node.op.is_elementwise() || node.op == Op::Convert) || node.ty.rank() != 1 {
        return None;
    }
    let entries = extents.entries(opcode(&node.op)?, node.ty.dtype)?;
    if entries.iter().any(|d| d.len() == 1) {
        return None;
    }
    let n = node.ty.shape[0];
    let w = widest_of(entries, 2, 1).filter(|&w| w > 0 && n >= w)?;
    if n % w == 0 {
        return Some(on_rows(eg, node, vec![n / w, w]));
    }
    let sources = vec![Some(0); node.children.len()];
    let (head, tail) = (n - n % w, n - w);
    let parts = vec![on_tile(eg, node, &sources, 0, 0, head), on_tile(eg, node, &sources, 0, tail, n)];
    Some(Term::Node(Op::Overlay { dim: 0, starts: vec![0, tail] }, node.ty.clone(), parts))
}

/// The elementwise operation (or convert) `node` on its operands seen as `rows` (a row-major
/// reshape of each), reshaped back to its own shape.
fn on_rows(eg: &SelGraph, node: &Node, rows: Vec<i64>) -> Term {
    let operands =
        node.children.iter().map(|&c| Term::Node(Op::Reshape, eg[c].data.with_shape(rows.clone()), vec![Term::Class(c)])).collect();
    let inner = Term::Node(node.op.clone(), node.ty.with_shape(rows), operands);
    Term::Node(Op::Reshape, node.ty.clone(), vec![inner])
}

/// Whether class `c` is a kernel input as it is read: its bytes seen through at most three
/// reshapes or bit casts (its class may hold computations too: the identity rewrites make an
/// input a product with `I`). Not a literal: the identity rewrites make many, and a
/// transpose of a literal folds into another literal.
pub fn read_as_is(eg: &SelGraph, c: Id) -> bool {
    fn within(eg: &SelGraph, c: Id, depth: usize) -> bool {
        eg[c].nodes.iter().any(|n| match n.op {
            Op::Input(_) => true,
            Op::Reshape | Op::BitcastConvert => depth > 0 && within(eg, n.children[0], depth - 1),
            _ => false,
        })
    }
    within(eg, c, 3)
}

/// Whether class `c` is a kernel input only moved about: its bytes through at most six
/// reshapes, bit casts, transposes, slices and conversions (a tile of an interleaved matrix
/// unpacked, widened), no arithmetic. Each class is looked at once (classes hold many such
/// nodes: following every path is exponential in the depth).
pub fn moved_input(eg: &SelGraph, c: Id) -> bool {
    let mut seen = std::collections::HashSet::from([eg.find(c)]);
    let mut level = vec![eg.find(c)];
    for depth in 0..=6 {
        let mut next = Vec::new();
        for &k in &level {
            for n in &eg[k].nodes {
                match n.op {
                    Op::Input(_) => return true,
                    Op::Reshape | Op::BitcastConvert | Op::Transpose(_) | Op::Slice(_) | Op::Convert if depth < 6 => {
                        let child = eg.find(n.children[0]);
                        if seen.insert(child) {
                            next.push(child);
                        }
                    }
                    _ => {}
                }
            }
        }
        level = next;
    }
    false
}

/// Whether class `c` is a value laid out row-major as it is read, looking `depth` reshapes or
/// bitcasts deep: a kernel input's bytes, a literal, a scalar splat, or a reshape of a value
/// of shape `rows`.
fn row_major_as_read(eg: &SelGraph, c: Id, rows: &[i64], depth: usize) -> bool {
    eg[c].nodes.iter().any(|n| match n.op {
        Op::Input(_) | Op::Constant(_) => true,
        Op::Broadcast(_) => eg[n.children[0]].data.rank() == 0,
        Op::Reshape if eg[n.children[0]].data.shape == rows => true,
        Op::Reshape | Op::BitcastConvert => depth > 0 && row_major_as_read(eg, n.children[0], rows, depth - 1),
        _ => false,
    })
}

/// The flat bytes of `concatenate_1(parts) : grid` as rows written one by one: row `r` of the
/// grid is row `r` of each part in turn, so the bytes are `concatenate_0` of every part's
/// rows' bytes, row by row. An ISA whose stores write only contiguous runs writes a result
/// wider than one store that way. Exact for every type (the same bytes). None where a
/// part's row is no multiple of `unit` bytes, since no store writes such a run.
pub fn flatten_row_by_row(eg: &SelGraph, flat: &Ty, grid: &Ty, parts: &[Id], unit: i64) -> Option<Term> {
    let rows = *grid.shape.first()?;
    if grid.rank() < 2 {
        return None;
    }
    let bytes = i64::from(flat.dtype.bytes());
    if parts.iter().any(|&part| (eg[part].data.elements() / rows * bytes) % unit != 0) {
        return None;
    }
    let mut pieces = Vec::new();
    for r in 0..rows {
        for &part in parts {
            let part_ty = &eg[part].data;
            let row = slice_of(Term::Class(part), part_ty, 0, r, r + 1);
            let len = part_ty.elements() / rows;
            pieces.push(Term::Node(Op::Reshape, flat.with_shape(vec![len]), vec![row]));
        }
    }
    Some(Term::Node(Op::Concatenate(0), flat.clone(), pieces))
}

/// A vector repeated along dimension `along` of a matrix is `concatenate_along` of its copies
/// (at most [`MAX_COPIES`]): a column repeated across columns,
/// `broadcast(x : [m] or [m, 1]) : [m, n]` (`along` 1), which an ISA that cannot repeat a
/// value across columns on chip writes into its columns with strided stores; a row repeated
/// down rows, `broadcast(x : [n] or [1, n]) : [m, n]` (`along` 0), each copy written into its
/// row, on chip or in HBM (a row bias added to a product by a multiply-accumulate). Exact for
/// every type. A constant is left to be written whole as a literal: copying it would only
/// grow the graph.
pub fn broadcast_as_copies(eg: &SelGraph, node: &Node, along: usize) -> Option<Term> {
    let Op::Broadcast(d) = &node.op else { return None };
    let x = node.children[0];
    let x_ty = &eg[x].data;
    if node.ty.rank() != 2 || along > 1 {
        return None;
    }
    let kept = 1 - along;
    let (length, copies) = (node.ty.shape[kept], node.ty.shape[along]);
    let vector = match (x_ty.shape.as_slice(), d.as_slice()) {
        (&[k], [dim]) => k == length && *dim == kept,
        (shape, [0, 1]) => shape.len() == 2 && shape[kept] == length && shape[along] == 1,
        _ => false,
    };
    let constant = eg[x].nodes.iter().any(|n| matches!(n.op, Op::Constant(_)));
    if !vector || constant || copies <= 1 || copies > MAX_COPIES {
        return None;
    }
    let mut one = node.ty.shape.clone();
    one[along] = 1;
    let one_ty = node.ty.with_shape(one);
    let copy = if *x_ty == one_ty { Term::Class(x) } else { Term::Node(Op::Reshape, one_ty, vec![Term::Class(x)]) };
    Some(Term::Node(Op::Concatenate(along), node.ty.clone(), vec![copy; copies as usize]))
}

/// Most parts [`flatten_overlay`] makes of rows of overlaid parts.
const MAX_OVERLAID_ROWS: i64 = 1024;

/// `reshape(overlay_d(parts) : grid) : flat` as one overlay of flat parts: where only
/// dimensions of one come before `d`, each part flattened, at its start times the elements
/// after `d`; else each row (the index of the dimensions before `d`) of each part, flattened,
/// at the row's start plus the part's (a result whose columns overlap, written a row at a
/// time). Exact: the same elements at the same places, the overlapping ones still the same
/// values twice. `None` past [`MAX_OVERLAID_ROWS`] parts.
pub fn flatten_overlay(eg: &SelGraph, flat: &Ty, grid: &Ty, d: usize, starts: &[i64], parts: &[Id]) -> Option<Term> {
    let rows: i64 = grid.shape[..d].iter().product();
    let after: i64 = grid.shape[d + 1..].iter().product();
    let row_len = grid.shape[d] * after;
    if rows * parts.len() as i64 > MAX_OVERLAID_ROWS {
        return None;
    }
    let flattened = |t: Term, ty: &Ty| if ty.rank() == 1 { t } else { Term::Node(Op::Reshape, ty.with_shape(vec![ty.elements()]), vec![t]) };
    let (mut out, mut at) = (Vec::new(), Vec::new());
    for r in 0..rows {
        for (&p, &start) in parts.iter().zip(starts) {
            let p_ty = &eg[p].data;
            let row = if rows == 1 {
                Term::Class(p)
            } else {
                // Row `r` in row-major order over the dimensions before `d`.
                let mut ranges: Vec<(i64, i64, i64)> = p_ty.shape.iter().map(|&n| (0, n, 1)).collect();
                let mut rest = r;
                for k in (0..d).rev() {
                    let i = rest % p_ty.shape[k];
                    rest /= p_ty.shape[k];
                    ranges[k] = (i, i + 1, 1);
                }
                let sliced = crate::infer::slice_type(p_ty, &ranges).ok()?;
                Term::Node(Op::Slice(ranges), sliced, vec![Term::Class(p)])
            };
            let row_ty = p_ty.with_shape(p_ty.shape.iter().enumerate().map(|(k, &n)| if k < d && rows > 1 { 1 } else { n }).collect());
            out.push(flattened(row, &row_ty));
            at.push(r * row_len + start * after);
        }
    }
    Some(Term::Node(Op::Overlay { dim: 0, starts: at }, flat.clone(), out))
}

/// The flat bytes of `concatenate_d(parts) : grid` (`d >= 1`) as strided stores write them:
/// starting from HBM whose contents do not matter (tagged `tag`), each part is written over
/// its place with `dynamic_update_slice` into the rows it lies in, read and written back
/// whole, which is how TAIDL writes a strided store. The parts cover the grid, so the result
/// is the concatenation's bytes whatever the region held. With `as_byte_rows` (registers of
/// bytes that hold any type), also with the dimensions from `d` on merged into one: an int32
/// matrix's bytes `[m, n, 4]` written as rows of `4n` bytes by a store of byte tiles.
pub fn write_columns(eg: &SelGraph, tag: usize, flat: &Ty, grid: &Ty, d: usize, parts: &[Id], as_byte_rows: bool) -> Vec<Term> {
    let mut out = vec![write_parts(tag, flat, grid, d, parts.iter().map(|&p| (Term::Class(p), eg[p].data.shape[d])))];
    if as_byte_rows && grid.rank() > d + 1 {
        let merged = |ty: &Ty| {
            let mut shape = ty.shape[..d].to_vec();
            shape.push(ty.shape[d..].iter().product());
            ty.with_shape(shape)
        };
        let inner: i64 = grid.shape[d + 1..].iter().product();
        let rows = parts.iter().map(|&p| {
            let p_ty = &eg[p].data;
            (Term::Node(Op::Reshape, merged(p_ty), vec![Term::Class(p)]), p_ty.shape[d] * inner)
        });
        out.push(write_parts(tag, flat, &merged(grid), d, rows));
    }
    out
}

/// `parts` (each with its extent along `d`) written side by side along `d` of `grid` by
/// `dynamic_update_slice`, from HBM whose contents do not matter ([`write_columns`]).
fn write_parts(tag: usize, flat: &Ty, grid: &Ty, d: usize, parts: impl Iterator<Item = (Term, i64)>) -> Term {
    let index = |v: i64| Term::Node(Op::Constant(Literal::from_values(&[v as f64])), Ty::new(DType::S32, vec![]), vec![]);
    let mut bytes = Term::Node(Op::Uninit(tag), flat.clone(), vec![]);
    let mut at = 0;
    for (part, extent) in parts {
        let mut operands = vec![Term::Node(Op::Reshape, grid.clone(), vec![bytes]), part];
        operands.extend((0..grid.rank()).map(|k| index(if k == d { at } else { 0 })));
        let written = Term::Node(Op::DynamicUpdateSlice, grid.clone(), operands);
        bytes = Term::Node(Op::Reshape, flat.clone(), vec![written]);
        at += extent;
    }
    bytes
}

/// `dynamic_update_slice(g, concatenate_d(parts), starts)` of bytes at constant starts into HBM
/// whose contents do not matter (a block's part of a result written in place, see
/// `partition.rs`): each part written over its place in turn, as [`write_columns`] writes
/// them, one term per concatenation the update's class holds. The parts are disjoint, so the
/// order does not matter. Exact for every type.
pub fn update_by_parts(eg: &SelGraph, node: &Node) -> Vec<Term> {
    let grid = &node.ty;
    let [base, update, starts @ ..] = &node.children[..] else { return Vec::new() };
    let over_nothing = eg[*base].nodes.iter().any(|n| {
        n.op == Op::Reshape && eg[n.children[0]].nodes.iter().any(|m| m.op == Op::Uninit(crate::partition::RESULT_REGION))
    });
    let starts: Option<Vec<i64>> = starts.iter().map(|&s| eg[s].nodes.iter().find_map(|n| match &n.op {
        Op::Constant(lit) if n.ty.rank() == 0 => lit.splat().map(|v| v as i64),
        _ => None,
    })).collect();
    let (Some(starts), true, DType::U8) = (starts, over_nothing, grid.dtype) else { return Vec::new() };
    let flat = grid.with_shape(vec![grid.elements()]);
    let index = |v: i64| Term::Node(Op::Constant(Literal::from_values(&[v as f64])), Ty::new(DType::S32, vec![]), vec![]);
    let concats = eg[*update].nodes.iter().filter_map(|n| match n.op {
        Op::Concatenate(d) if n.children.len() > 1 => Some((d, &n.children)),
        _ => None,
    });
    concats
        .map(|(d, parts)| {
            let mut bytes = Term::Node(Op::Reshape, flat.clone(), vec![Term::Class(*base)]);
            let mut at = starts.clone();
            for &part in parts {
                let mut operands = vec![Term::Node(Op::Reshape, grid.clone(), vec![bytes]), Term::Class(part)];
                operands.extend(at.iter().map(|&v| index(v)));
                bytes = Term::Node(Op::Reshape, flat.clone(), vec![Term::Node(Op::DynamicUpdateSlice, grid.clone(), operands)]);
                at[d] += eg[part].data.shape[d];
            }
            Term::Node(Op::Reshape, grid.clone(), vec![bytes])
        })
        .collect()
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
    fn a_box_of_a_split_dimension_is_a_run_of_it_when_it_cuts_one_dimension_then_keeps_the_rest() {
        // `[128]` seen as `[32, 4]`: items 16..32 are elements 64..128.
        assert_eq!(run_of_box(&[32, 4], &[(16, 32, 1), (0, 4, 1)]), Some((64, 128, 1)));
        // Single indices before the cut move the run: row 1 of `[4, 4, 8]`, its items 2..4.
        assert_eq!(run_of_box(&[4, 4, 8], &[(1, 2, 1), (2, 4, 1), (0, 8, 1)]), Some((48, 64, 1)));
        // A cut after a partial dimension is strided, not a run; so is a stride.
        assert_eq!(run_of_box(&[4, 4], &[(1, 3, 1), (1, 2, 1)]), None);
        assert_eq!(run_of_box(&[32, 4], &[(0, 32, 2), (0, 4, 1)]), None);
    }

    #[test]
    fn a_run_of_merged_dimensions_is_a_box_of_them_when_it_cuts_as_far_out_as_it_can() {
        // `[16, 4]` seen as `[64]`: elements 16..32 are rows 4..8.
        assert_eq!(box_of_run(&[16, 4], (16, 32, 1)), Some(vec![(4, 8, 1), (0, 4, 1)]));
        // Elements 5..7 lie in row 1.
        assert_eq!(box_of_run(&[16, 4], (5, 7, 1)), Some(vec![(1, 2, 1), (1, 3, 1)]));
        // Elements 2..6 cross a row: no box.
        assert_eq!(box_of_run(&[16, 4], (2, 6, 1)), None);
    }

    #[test]
    fn a_window_of_a_reshape_that_splits_dimensions_is_a_window_of_its_operand() {
        let mut eg = SelGraph::new(crate::egraph::TypeAnalysis);
        let p = eg.add(Node::new(Op::Input(0), Ty::new(DType::S8, vec![16, 128]), vec![]));
        let p_ty = eg[p].data.clone();
        // Columns 16..32 of the middle dimension of `[16, 128]` seen as `[16, 32, 4]` are its
        // columns 64..128.
        let window = [(0, 16, 1), (16, 32, 1), (0, 4, 1)];
        let ty = Ty::new(DType::S8, vec![16, 16, 4]);
        let Some(Term::Node(Op::Reshape, _, inner)) = slice_through_reshape(p, &p_ty, &[16, 32, 4], &window, &ty) else {
            panic!("a reshape of a window")
        };
        assert!(matches!(&inner[0], Term::Node(Op::Slice(r), t, _) if *r == [(0, 16, 1), (64, 128, 1)] && t.shape == [16, 64]));
        // A window that cuts the interleaved dimension is none of the operand.
        assert!(slice_through_reshape(p, &p_ty, &[16, 32, 4], &[(0, 16, 1), (0, 32, 1), (0, 2, 1)], &ty).is_none());
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
            (OpCode::Dot, vec![Some(4), Some(64), Some(64)]),
            (OpCode::Dot, vec![Some(8), Some(32), Some(32)]),
            (OpCode::Transpose, vec![Some(64), Some(64)]),
            (OpCode::Exponential, vec![Some(64), Some(64)]),
        ]);
        // A batched product's columns are not split.
        let dd = DotDims { lhs_contracting: vec![2], rhs_contracting: vec![1], lhs_batch: vec![0], rhs_batch: vec![0] };
        assert_eq!(ex.too_large(&Op::Dot(dd.clone()), &ty(&[4, 64, 128])), Some((2, 64)));
        assert_eq!(ex.too_large(&Op::Dot(dd), &ty(&[16, 64, 64])), None);
        // Elementwise operations and transposes are split along every dimension: never too
        // large.
        assert_eq!(ex.too_large(&Op::Exponential, &ty(&[64, 128])), None);
        assert_eq!(ex.too_large(&Op::Transpose(vec![1, 0]), &ty(&[64, 128])), None);
    }

    #[test]
    fn elementwise_work_counts_a_tile_per_instructions_worth_of_elements() {
        // 48x64x64 floats on 16-lane registers: 12,288 registers' worth, not 48 batch items.
        let ex = Extents::default().with_typed(OpCode::Multiply, DType::F32, vec![Some(1), Some(16)]);
        let text = "HloModule m\n\nENTRY e {\n  a = f32[48,64,64] parameter(0)\n  b = f32[48,64,64] parameter(1)\n  \
                    ROOT m = f32[48,64,64] multiply(a, b)\n}\n";
        let kernel = crate::kernel::parse_kernel(text, "k.hlo").expect("kernel");
        assert_eq!(ex.tile_count(&kernel), 2 + 48 * 64 * 64 / 16);
    }

    #[test]
    fn an_operation_is_tiled_by_the_instructions_of_its_own_element_type() {
        // A vector unit adding 16 float lanes beside a matrix unit adding 16x16 int32 blocks.
        let ex = Extents::default()
            .with_typed(OpCode::Add, DType::F32, vec![Some(1), Some(16)])
            .with_typed(OpCode::Add, DType::S32, vec![Some(16), Some(16)]);
        let f32s = |shape: &[i64]| Ty::new(DType::F32, shape.to_vec());
        assert_eq!(ex.leading_tile(OpCode::Add, &f32s(&[2, 16])), Some(1));
        assert_eq!(ex.leading_tile(OpCode::Add, &Ty::new(DType::S32, vec![2, 16])), None);
        assert_eq!(ex.leading_tile(OpCode::Add, &Ty::new(DType::S32, vec![32, 16])), Some(16));
        assert!(ex.takes_leading(OpCode::Add, &f32s(&[2, 16]), 1));
        assert!(!ex.takes_leading(OpCode::Add, &f32s(&[2, 16]), 2));
        // A type no semantics computes the operator in is tiled by them all.
        assert_eq!(ex.leading_tile(OpCode::Add, &ty(&[2, 16])), None);
        assert_eq!(ex.leading_tile(OpCode::Add, &ty(&[32, 16])), Some(16));
    }

    use crate::egraph::TypeAnalysis;

    fn int(shape: &[i64]) -> Ty {
        Ty::new(DType::S32, shape.to_vec())
    }

    fn input(eg: &mut SelGraph, i: usize, ty: Ty) -> Id {
        eg.add(Node::leaf(Op::Input(i), ty))
    }

    /// `x[:, lo..hi]` (rank 2) as the rules write it.
    fn cols(x: Id, x_ty: &Ty, lo: i64, hi: i64) -> Term {
        slice_along(x, x_ty, 1, lo, hi)
    }

    #[test]
    fn a_vector_where_every_instruction_takes_rows_is_computed_as_rows_of_the_widest() {
        let ex = Extents::default().with_typed(OpCode::Add, DType::F32, vec![Some(1), Some(16)]);
        let f32s = |shape: &[i64]| Ty::new(DType::F32, shape.to_vec());
        let mut eg = SelGraph::new(TypeAnalysis);
        let (a, b) = (input(&mut eg, 0, f32s(&[64])), input(&mut eg, 1, f32s(&[64])));
        let rows = |c: Id| Term::Node(Op::Reshape, f32s(&[4, 16]), vec![Term::Class(c)]);
        let sum = Term::Node(Op::Add, f32s(&[4, 16]), vec![rows(a), rows(b)]);
        let expected = Term::Node(Op::Reshape, f32s(&[64]), vec![sum]);
        assert_eq!(vector_as_rows(&eg, &ex, &Node::new(Op::Add, f32s(&[64]), vec![a, b])), Some(expected));
        // No multiple of the rows' width: the first 32 elements overlaid with the last 16.
        let (c, d) = (input(&mut eg, 2, f32s(&[40])), input(&mut eg, 3, f32s(&[40])));
        let part = |lo: i64, hi: i64| {
            let window = |x: Id| slice_of(Term::Class(x), &f32s(&[40]), 0, lo, hi);
            Term::Node(Op::Add, f32s(&[hi - lo]), vec![window(c), window(d)])
        };
        let overlay = Term::Node(Op::Overlay { dim: 0, starts: vec![0, 24] }, f32s(&[40]), vec![part(0, 32), part(24, 40)]);
        assert_eq!(vector_as_rows(&eg, &ex, &Node::new(Op::Add, f32s(&[40]), vec![c, d])), Some(overlay));
        // Shorter than one row: nothing computes it.
        let (e, f) = (input(&mut eg, 4, f32s(&[8])), input(&mut eg, 5, f32s(&[8])));
        assert_eq!(vector_as_rows(&eg, &ex, &Node::new(Op::Add, f32s(&[8]), vec![e, f])), None);
        // Where an instruction computes vectors, they are tiled as they are.
        let vectors = ex.with_typed(OpCode::Add, DType::F32, vec![Some(16)]);
        assert_eq!(vector_as_rows(&eg, &vectors, &Node::new(Op::Add, f32s(&[64]), vec![a, b])), None);
    }

    #[test]
    fn an_elementwise_operation_wider_than_every_instruction_is_split_into_column_tiles() {
        let ex = Extents::from_entries([(OpCode::Maximum, vec![Some(1024), Some(16)])]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let (a, b) = (input(&mut eg, 0, int(&[16, 40])), input(&mut eg, 1, int(&[16, 40])));
        let node = Node::new(Op::Maximum, int(&[16, 40]), vec![a, b]);
        // 40 columns: 16 + 16 + 8, each the maximum of the operands' columns.
        let tile = |lo, hi| {
            let t = int(&[16, 40]);
            Term::Node(Op::Maximum, int(&[16, hi - lo]), vec![cols(a, &t, lo, hi), cols(b, &t, lo, hi)])
        };
        let flexible = ex.clone().with_flexible(OpCode::Maximum, 2, 1);
        let expected = Term::Node(Op::Concatenate(1), int(&[16, 40]), vec![tile(0, 16), tile(16, 32), tile(32, 40)]);
        let split = split_columns(&eg, &flexible, &node).expect("split");
        assert_eq!((split.concat, split.overlay), (expected, None));
        // Where every instruction takes exactly 16 columns, the last 8 are those of the last
        // 16, a tile overlapping the one before; overlaid, that tile is whole at column 24.
        let last = slice_of(tile(24, 40), &int(&[16, 16]), 1, 8, 16);
        let expected = Term::Node(Op::Concatenate(1), int(&[16, 40]), vec![tile(0, 16), tile(16, 32), last]);
        let overlay = Term::Node(Op::Overlay { dim: 1, starts: vec![0, 16, 24] }, int(&[16, 40]), vec![tile(0, 16), tile(16, 32), tile(24, 40)]);
        let split = split_columns(&eg, &ex, &node).expect("split");
        assert_eq!((split.concat, split.overlay), (expected, Some(overlay)));
        // Columns that fit, an operator no semantics computes: nothing to split.
        assert!(split_columns(&eg, &ex, &Node::new(Op::Maximum, int(&[16, 16]), vec![a, a])).is_none());
        assert!(split_columns(&eg, &ex, &Node::new(Op::Add, int(&[16, 40]), vec![a, b])).is_none());
    }

    #[test]
    fn a_transpose_wider_than_every_instruction_is_the_transposes_of_row_tiles_of_its_operand() {
        // A unit that transposes at most 64 rows into 64 columns: the columns [64j, 64j + 64)
        // of `transpose(x : [128, 64])` are the transpose of rows [64j, 64j + 64) of `x`.
        let ex = Extents::from_entries([(OpCode::Transpose, vec![Some(64), Some(64)])]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x_ty = ty(&[128, 64]);
        let x = input(&mut eg, 0, x_ty.clone());
        let node = Node::new(Op::Transpose(vec![1, 0]), ty(&[64, 128]), vec![x]);
        let tile = |lo| Term::Node(Op::Transpose(vec![1, 0]), ty(&[64, 64]), vec![slice_along(x, &x_ty, 0, lo, lo + 64)]);
        let expected = Term::Node(Op::Concatenate(1), ty(&[64, 128]), vec![tile(0), tile(64)]);
        assert_eq!(split_columns(&eg, &ex, &node).map(|s| s.concat), Some(expected));
        assert_eq!(ex.too_large(&node.op, &node.ty), None);
    }

    #[test]
    fn a_broadcast_keeps_its_operand_whole_along_a_dimension_it_repeats_it() {
        let ex = Extents::from_entries([(OpCode::Broadcast, vec![Some(64), Some(16)])]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let column = input(&mut eg, 0, int(&[16]));
        let row = input(&mut eg, 1, int(&[32]));
        // A column repeated across 32 columns: each tile repeats the whole column.
        let across = Node::new(Op::Broadcast(vec![0]), int(&[16, 32]), vec![column]);
        let part = Term::Node(Op::Broadcast(vec![0]), int(&[16, 16]), vec![Term::Class(column)]);
        assert_eq!(split_columns(&eg, &ex, &across).map(|s| s.concat),
            Some(Term::Node(Op::Concatenate(1), int(&[16, 32]), vec![part.clone(), part]))
        );
        // A row repeated down 16 rows: each tile repeats the row's matching elements.
        let down = Node::new(Op::Broadcast(vec![1]), int(&[16, 32]), vec![row]);
        let part = |lo, hi| {
            let slice = slice_along(row, &int(&[32]), 0, lo, hi);
            Term::Node(Op::Broadcast(vec![1]), int(&[16, hi - lo]), vec![slice])
        };
        assert_eq!(split_columns(&eg, &ex, &down).map(|s| s.concat),
            Some(Term::Node(Op::Concatenate(1), int(&[16, 32]), vec![part(0, 16), part(16, 32)]))
        );
    }

    #[test]
    fn a_reduction_over_other_dimensions_splits_the_dimension_it_keeps() {
        // A sum over rows of [8, 64] keeps the 64 columns as its only dimension.
        let ex = Extents::from_entries([(OpCode::ReduceAdd, vec![Some(16)])]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x_ty = int(&[8, 64]);
        let x = input(&mut eg, 0, x_ty.clone());
        let node = Node::new(Op::ReduceAdd(vec![0]), int(&[64]), vec![x]);
        let Some(Term::Node(Op::Concatenate(0), _, parts)) = split_columns(&eg, &ex, &node).map(|s| s.concat) else { panic!("not split") };
        let expected: Vec<Term> = (0..4)
            .map(|j| Term::Node(Op::ReduceAdd(vec![0]), int(&[16]), vec![cols(x, &x_ty, 16 * j, 16 * j + 16)]))
            .collect();
        assert_eq!(parts, expected);
    }

    #[test]
    fn an_integer_reduction_longer_than_every_instruction_combines_the_reductions_of_its_tiles() {
        let ex = Extents::default()
            .with_reduction(Reducer::Add, vec![Some(64), Some(16)])
            .with_reduction(Reducer::Max, vec![Some(64), Some(16)]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x_ty = int(&[8, 40]);
        let x = input(&mut eg, 0, x_ty.clone());
        let tile = |op: Op, lo, hi, init: Option<Term>| {
            let mut operands = vec![cols(x, &x_ty, lo, hi)];
            operands.extend(init);
            Term::Node(op, int(&[8]), operands)
        };
        // add(sum of tile 2, add(sum of tile 1, sum of tile 0)): the tile's sum first.
        let sum = Op::ReduceAdd(vec![1]);
        let node = Node::new(sum.clone(), int(&[8]), vec![x]);
        let inner = Term::Node(Op::Add, int(&[8]), vec![tile(sum.clone(), 16, 32, None), tile(sum.clone(), 0, 16, None)]);
        let expected = Term::Node(Op::Add, int(&[8]), vec![tile(sum, 32, 40, None), inner]);
        assert_eq!(split_reduction(&eg, &ex, &node), Some(expected));
        // A maximum's init value is idempotent: every tile starts from it.
        let init = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[-2147483648.0])), int(&[])));
        let max = Op::Reduce { dims: vec![1], reducer: Reducer::Max };
        let node = Node::new(max.clone(), int(&[8]), vec![x, init]);
        let Some(Term::Node(Op::Maximum, _, parts)) = split_reduction(&eg, &ex, &node) else { panic!("not split") };
        assert_eq!(parts[0], tile(max, 32, 40, Some(Term::Class(init))));
        // Floats are never split: the order of a sum is its rounding.
        let f = input(&mut eg, 1, ty(&[8, 40]));
        let float_sum = Node::new(Op::ReduceAdd(vec![1]), ty(&[8]), vec![f]);
        assert_eq!(split_reduction(&eg, &ex, &float_sum), None);
        // ...and named as the reason: only the float sum is too long and not split.
        assert_eq!(ex.unsplit_reduction(&float_sum.op, &ty(&[8, 40]), &ty(&[8])), Some((1, 16)));
        assert_eq!(ex.unsplit_reduction(&Op::ReduceAdd(vec![1]), &x_ty, &int(&[8])), None);
    }

    #[test]
    fn a_sum_with_an_init_value_adds_it_once() {
        let ex = Extents::default().with_reduction(Reducer::Add, vec![Some(16), Some(16)]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let x_ty = int(&[4, 32]);
        let x = input(&mut eg, 0, x_ty.clone());
        let init = eg.add(Node::leaf(Op::Constant(Literal::from_values(&[5.0])), int(&[])));
        let sum = Op::Reduce { dims: vec![1], reducer: Reducer::Add };
        let node = Node::new(sum.clone(), int(&[4]), vec![x, init]);
        // The second tile's sum starts from zero: a `reduce_add`.
        let first = Term::Node(sum, int(&[4]), vec![cols(x, &x_ty, 0, 16), Term::Class(init)]);
        let second = Term::Node(Op::ReduceAdd(vec![1]), int(&[4]), vec![cols(x, &x_ty, 16, 32)]);
        assert_eq!(split_reduction(&eg, &ex, &node), Some(Term::Node(Op::Add, int(&[4]), vec![second, first])));
    }

    #[test]
    fn a_column_slice_moves_through_the_operations_split_by_columns() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x_ty = int(&[16, 64]);
        let x = input(&mut eg, 0, x_ty.clone());
        let exp = Node::new(Op::Convert, x_ty.with_dtype(DType::S8), vec![x]);
        let ranges = [(0, 16, 1), (16, 32, 1)];
        let sliced = Ty::new(DType::S8, vec![16, 16]);
        let expected = Term::Node(Op::Convert, sliced.clone(), vec![cols(x, &x_ty, 16, 32)]);
        assert_eq!(slice_through_columns(&eg, &ranges, &sliced, &exp, false), Some(expected));
        // Rows are [`slice_through`]'s; a window of both, or a strided slice, is left alone.
        assert_eq!(slice_through_columns(&eg, &[(0, 8, 1), (0, 64, 1)], &sliced, &exp, false), None);
        assert_eq!(slice_through_columns(&eg, &[(0, 8, 1), (16, 32, 1)], &sliced, &exp, false), None);
        assert_eq!(slice_through_columns(&eg, &[(0, 16, 1), (0, 64, 4)], &sliced, &exp, false), None);
    }

    #[test]
    fn columns_of_a_product_are_the_product_with_those_columns_of_its_rhs() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let (a_ty, b_ty) = (Ty::new(DType::S8, vec![16, 32]), Ty::new(DType::S8, vec![32, 32]));
        let a = input(&mut eg, 0, a_ty);
        let b = input(&mut eg, 1, b_ty.clone());
        let dd = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], lhs_batch: vec![], rhs_batch: vec![] };
        let dot = Node::new(Op::Dot(dd.clone()), int(&[16, 32]), vec![a, b]);
        let sliced = int(&[16, 20]);
        let b_cols = Term::Node(Op::Slice(vec![(0, 32, 1), (0, 20, 1)]), Ty::new(DType::S8, vec![32, 20]), vec![Term::Class(b)]);
        let expected = Term::Node(Op::Dot(dd), sliced.clone(), vec![Term::Class(a), b_cols]);
        assert_eq!(slice_through_columns(&eg, &[(0, 16, 1), (0, 20, 1)], &sliced, &dot, false), Some(expected));
    }

    #[test]
    fn a_last_contraction_tile_no_unit_takes_is_a_full_window_against_zero_rows() {
        // A unit that contracts exactly 16: 20 = 16 + 4, the last 4 contracted as A's last 16
        // columns against 12 zero rows and B's last 4 (or the converse), never a window
        // outside A or B.
        let ex = Extents::from_entries([(OpCode::Dot, vec![Some(16), Some(16)])]).with_fixed_contractions(&[16]);
        let mut eg = SelGraph::new(TypeAnalysis);
        let (a_ty, b_ty) = (Ty::new(DType::S8, vec![16, 20]), Ty::new(DType::S8, vec![20, 16]));
        let a = input(&mut eg, 0, a_ty.clone());
        let b = input(&mut eg, 1, b_ty.clone());
        let dd = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], lhs_batch: vec![], rhs_batch: vec![] };
        let dot = |x: Term, y: Term| Term::Node(Op::Dot(dd.clone()), int(&[16, 16]), vec![x, y]);
        let zeros = |shape: &[i64]| Term::Node(Op::Constant(Literal::from_values(&[0.0])), Ty::new(DType::S8, shape.to_vec()), vec![]);
        let first = dot(slice_along(a, &a_ty, 1, 0, 16), slice_along(b, &b_ty, 0, 0, 16));
        let b_padded = Term::Node(
            Op::Concatenate(0),
            Ty::new(DType::S8, vec![16, 16]),
            vec![zeros(&[12, 16]), slice_along(b, &b_ty, 0, 16, 20)],
        );
        let a_padded = Term::Node(
            Op::Concatenate(1),
            Ty::new(DType::S8, vec![16, 16]),
            vec![zeros(&[16, 12]), slice_along(a, &a_ty, 1, 16, 20)],
        );
        let sum = |last: Term| Term::Node(Op::Add, int(&[16, 16]), vec![last, first.clone()]);
        let expected = vec![
            ("split-contraction", sum(dot(slice_along(a, &a_ty, 1, 4, 20), b_padded))),
            ("split-contraction", sum(dot(a_padded, slice_along(b, &b_ty, 0, 4, 20)))),
        ];
        let node = Node::new(Op::Dot(dd.clone()), int(&[16, 16]), vec![a, b]);
        assert_eq!(split_product(&eg, &ex, &node), expected);
        // Where the units take a contraction of 4, the last tile is that.
        let flexible = Extents::from_entries([(OpCode::Dot, vec![Some(16), Some(16)])]).with_contractions(&[16]);
        let last = dot(slice_along(a, &a_ty, 1, 16, 20), slice_along(b, &b_ty, 0, 16, 20));
        assert_eq!(split_product(&eg, &flexible, &node), vec![("split-contraction", sum(last))]);
    }

    #[test]
    fn columns_of_a_transpose_are_rows_of_its_operand_where_the_isa_transposes() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x_ty = ty(&[64, 64]);
        let x = input(&mut eg, 0, x_ty.clone());
        let t = Node::new(Op::Transpose(vec![1, 0]), x_ty.clone(), vec![x]);
        let ranges = [(0, 64, 1), (0, 20, 1)];
        let sliced = ty(&[64, 20]);
        let rows = Term::Node(Op::Slice(vec![(0, 20, 1), (0, 64, 1)]), ty(&[20, 64]), vec![Term::Class(x)]);
        let expected = Term::Node(Op::Transpose(vec![1, 0]), sliced.clone(), vec![rows]);
        assert_eq!(slice_through_columns(&eg, &ranges, &sliced, &t, true), Some(expected));
        assert_eq!(slice_through_columns(&eg, &ranges, &sliced, &t, false), None);
    }

    #[test]
    fn every_other_row_of_a_product_is_the_product_of_every_other_row_of_its_lhs() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let (a_ty, b_ty) = (Ty::new(DType::S8, vec![16, 32]), Ty::new(DType::S8, vec![32, 16]));
        let a = input(&mut eg, 0, a_ty);
        let b = input(&mut eg, 1, b_ty);
        let dd = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], lhs_batch: vec![], rhs_batch: vec![] };
        let dot = Node::new(Op::Dot(dd.clone()), int(&[16, 16]), vec![a, b]);
        let even = [(0, 16, 2), (0, 16, 1)];
        let a_rows = Term::Node(Op::Slice(vec![(0, 16, 2), (0, 32, 1)]), Ty::new(DType::S8, vec![8, 32]), vec![Term::Class(a)]);
        let expected = Term::Node(Op::Dot(dd), int(&[8, 16]), vec![a_rows, Term::Class(b)]);
        assert_eq!(slice_through(&eg, &even, &int(&[8, 16]), &dot), Some(expected));
    }

    #[test]
    fn a_window_is_a_slice_of_its_rows_then_of_its_columns() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x_ty = int(&[16, 32]);
        let x = input(&mut eg, 0, x_ty.clone());
        let rows = Term::Node(Op::Slice(vec![(3, 13, 1), (0, 32, 1)]), int(&[10, 32]), vec![Term::Class(x)]);
        let expected = Term::Node(Op::Slice(vec![(0, 10, 1), (5, 29, 1)]), int(&[10, 24]), vec![rows]);
        let window = [(3, 13, 1), (5, 29, 1)];
        assert_eq!(window_one_dimension_at_a_time(x, &x_ty, &window, &int(&[10, 24])), Some(expected));
        // A slice of one dimension is one already.
        assert_eq!(window_one_dimension_at_a_time(x, &x_ty, &[(0, 16, 1), (5, 29, 1)], &int(&[16, 24])), None);
    }

    #[test]
    fn reductions_are_read_from_the_operands_of_the_semantics() {
        // QKV's softmax sums `n` rows of 64 columns in bf16: never split, so too long is named.
        let qkv = Extents::of(&table("qkv_isa.json"));
        assert_eq!(qkv.reductions[&Reducer::Add], vec![vec![Some(64), Some(64)]]);
        let sum = Op::ReduceAdd(vec![1]);
        assert_eq!(qkv.unsplit_reduction(&sum, &ty(&[64, 128]), &ty(&[64])), Some((1, 64)));
        assert_eq!(qkv.unsplit_reduction(&sum, &ty(&[64, 64]), &ty(&[64])), None);
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
    fn beside_an_instruction_of_any_rows_a_fixed_size_unit_is_still_padded_to() {
        // GemminiRows' shape: an add of up to 1,024 rows, whose rows are an attribute, and a
        // 16-row accumulating array.
        let ex = Extents::from_entries([(OpCode::Add, vec![Some(1024), Some(16)])])
            .with_fixed_unit(OpCode::Add, vec![Some(16), Some(16)]);
        assert_eq!(ex.padded_leading_fixed(OpCode::Add, &ty(&[8, 16])), Some(16));
        // As many rows as the unit, or more (tiled), or wider than it: nothing to pad to.
        assert_eq!(ex.padded_leading_fixed(OpCode::Add, &ty(&[16, 16])), None);
        assert_eq!(ex.padded_leading_fixed(OpCode::Add, &ty(&[24, 16])), None);
        assert_eq!(ex.padded_leading_fixed(OpCode::Add, &ty(&[8, 32])), None);
    }

    #[test]
    fn a_unit_whose_rows_are_an_attribute_takes_fewer_rows_without_padding() {
        let ex = Extents::of(&table("gemmini_isa.json"));
        let product = Ty::new(DType::S32, vec![5, 16]);
        assert!(ex.takes_leading(OpCode::Dot, &product, 5));
        assert_eq!(ex.padded_leading(OpCode::Dot, &product), None);
        let qkv = Extents::of(&table("qkv_isa.json"));
        assert!(!qkv.takes_leading(OpCode::Dot, &ty(&[32, 64]), 32));
        assert_eq!(qkv.padded_leading(OpCode::Dot, &ty(&[32, 64])), Some(64));
    }

    #[test]
    fn a_contraction_no_unit_takes_is_padded_to_the_smallest_fixed_one_above_it() {
        // QKV's gemm contracts exactly 64 elements: a product over one term is padded to 64.
        let qkv = Extents::of(&table("qkv_isa.json"));
        assert_eq!(qkv.padded_contraction(1), Some(64));
        assert_eq!(qkv.padded_contraction(64), None);
        assert_eq!(qkv.padded_contraction(65), None);
        // Gemmini's contraction is an attribute: every length up to its bound is taken.
        assert_eq!(Extents::of(&table("gemmini_isa.json")).padded_contraction(1), None);
        let two = Extents::from_entries([]).with_fixed_contractions(&[16, 64]);
        assert_eq!((two.padded_contraction(1), two.padded_contraction(20), two.padded_contraction(16)), (Some(16), Some(64), None));
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
