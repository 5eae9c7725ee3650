//! Kernels too large for one search, split into identical blocks of the rows of their output:
//! one block is compiled, and its program runs once per block with its HBM addresses moved to
//! that block's rows.
//!
//! The rows `[i R, (i + 1) R)` of a row-major output are one contiguous byte range (of each
//! result, where there are several), and so are the rows of an input split alike; every other
//! input is read whole. A part of a later dimension of an input (columns of its rows) is
//! sliced out of the whole input in the block's kernel, and a part of the last dimension of
//! the result is written in place into the whole result's bytes ([`written_in_place`]), so
//! that the block's program reads and writes its part where it lies. Where blocks of the
//! most rows that fit are fewer tiles in all than any number of blocks dividing the rows,
//! the last block ends at the last row and starts early: it computes some rows of the block
//! before again from the same inputs, and writes the same values over them. Where one row is
//! still too large (an item of a batch, a product of few rows), parts of rows are split again
//! along the next dimension. [`plan`] splits a kernel only where each block computes exactly
//! its rows of the output from those inputs:
//! elementwise work, broadcasts, transposes, reductions of other dimensions, products along a
//! batch or free dimension, reshapes whose leading dimensions split alike, slices and
//! concatenations along other dimensions. What a block reads whole is a kernel input or a
//! literal (moved about at most), never a computation every block would repeat.
//!
//! The program of one block reads and writes HBM only within its inputs, its output and the
//! scratch bytes after them (spills, literals, regions a strided store starts from).
//! [`instantiate`] moves each access by the offset of its region for block `i`; blocks run one
//! after another, so they share the scratch. An access it cannot move (one that spans two
//! regions, an address no attribute sets alone, a write that changes bytes past its value's
//! end or another block's part of a result written in place) leaves the kernel to be
//! compiled whole; a strided access moved to a later part of columns may read, or write back
//! as it read, the bytes past its value's end ([`moved_addresses`]).

use crate::emit::PlacedProgram;
use crate::isa::Isa;
use crate::kernel::{Kernel, KernelNode};
use crate::lang::{DType, DotDims, Literal, Op, Ty};
use crate::layout::{HbmLayout, Placed, Signature};
use std::collections::BTreeMap;

/// The tiles (`tiling::Extents::tile_count`) above which a kernel is compiled in blocks, and
/// at most which each block has: a 256^3 int8 product on Gemmini (4,096 tiles) compiles whole
/// in about 4 s, and its e-graph grows with the tiles (512^3 whole: 32,768 tiles, 35 s, 3.4 GB).
pub const MAX_BLOCK_TILES: usize = 4096;

/// A kernel split into blocks: its output's rows, and where even one row of it is more than a
/// search holds (an item of a batch), each row's rows in turn.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The splits, outermost first: each splits the kernel the one before it leaves along a
    /// later dimension of its output, the first along the leading one.
    pub levels: Vec<Level>,
    /// The kernel one block computes: every split dimension as long as its part, except an
    /// input or a result whose part is not one range of its bytes (columns of rows), which
    /// is read or written in place in the whole value.
    pub block: Kernel,
    /// The shape of a block's part of the (first) result.
    pub part: Vec<i64>,
    /// The tiles of one block, as the planner counted them.
    pub tiles: usize,
}

/// One split of a kernel into equal parts of one dimension of its output.
#[derive(Debug, Clone)]
pub struct Level {
    /// How many parts.
    pub parts: i64,
    /// The length of a part along the split dimension.
    pub rows: i64,
    /// How far the last part starts before the end of the others: where the parts do not
    /// divide the dimension, the last one ends at its end and computes again some of the
    /// rows of the one before, the same values.
    pub back: i64,
    /// Per kernel parameter: the bytes between one part's region of it and the next, 0 where
    /// each part reads all of it.
    pub input_stride: Vec<i64>,
    /// Per result, the bytes between one part's region of it and the next.
    pub output_stride: Vec<i64>,
}

impl Plan {
    /// How many blocks: the product of every level's parts.
    pub fn blocks(&self) -> i64 {
        self.levels.iter().map(|l| l.parts).product()
    }

    /// Per kernel parameter: whether each block reads its own part of it, rather than all of it.
    pub fn split_inputs(&self) -> Vec<bool> {
        let inputs = self.block.params.len();
        (0..inputs).map(|p| self.levels.iter().any(|l| l.input_stride[p] != 0)).collect()
    }
}

/// The split of `kernel` into the fewest blocks of at most `max_tiles` tiles each, as `tiles`
/// counts them, or where no split is that small, the fewest blocks of the fewest tiles; `None`
/// where the kernel has no more tiles than that, or no split. Blocks are parts of the leading
/// dimension of its results (the last one possibly starting early); where blocks of one row
/// are still too large, each is split along the next dimension alike.
///
/// A block of the last dimension whose result rows (the elements of the dimensions before
/// it) are more than 1 is written in place into the rows of the whole result; that only
/// where those rows are at most `rows_written` (what one write of the ISA's takes), and the
/// kernel has one result.
pub fn plan(kernel: &Kernel, tiles: impl Fn(&Kernel) -> usize, max_tiles: usize, rows_written: i64) -> Option<Plan> {
    // Every operation counts one tile at least: a 256^3 product's 4,096 products and its two
    // inputs are 4,098 tiles, within a limit of 4,096.
    let max_tiles = max_tiles + kernel.nodes.len();
    if tiles(kernel) <= max_tiles {
        return None;
    }
    let limits = Limits { tiles: &tiles, max_tiles, rows_written };
    plan_along(kernel, 0, &limits).map(|(_, plan)| plan)
}

/// What a plan counts and keeps within.
struct Limits<'a, F: Fn(&Kernel) -> usize> {
    tiles: &'a F,
    max_tiles: usize,
    rows_written: i64,
}

/// [`plan`] of blocks of output dimension `dim`, and the tiles of one block.
fn plan_along<F: Fn(&Kernel) -> usize>(kernel: &Kernel, dim: usize, limits: &Limits<F>) -> Option<(usize, Plan)> {
    let (tiles, max_tiles) = (limits.tiles, limits.max_tiles);
    let shape = &kernel.nodes[*kernel.results.first()?].ty.shape;
    let rows = *shape.get(dim)?;
    let in_place = !leading_ones(shape, dim);
    // A part of columns is written in place as a strided store writes a tile: into rows of
    // a matrix, those of every dimension before the last.
    if in_place && (kernel.results.len() > 1 || dim + 1 != shape.len() || shape[..dim].iter().product::<i64>() > limits.rows_written) {
        return None;
    }
    let split = split_dims(kernel, dim)?;
    // A plan of parts of `part` rows, the last one ending at the end.
    let of = |part: i64| -> Option<(usize, Plan)> {
        let block = block_kernel(kernel, &split, part, rows)?;
        let parts = (rows + part - 1) / part;
        let level = level(kernel, &split, parts, part, parts * part - rows)?;
        let (count, part) = (tiles(&block), block.outputs[0].shape.clone());
        let block = if in_place { written_in_place(block, &kernel.outputs[0]) } else { block };
        Some((count, Plan { levels: vec![level], block, part, tiles: count }))
    };
    // The fewest parts dividing the rows that each hold at most `max_tiles`.
    let even = (2..=rows).filter(|b| rows % b == 0).find_map(|b| of(rows / b).filter(|(count, _)| *count <= max_tiles));
    // Parts of the most rows that fit, the last one overlapping the one before (197 rows: 13
    // parts of 16, the last from row 181, where parts dividing 197 would be 197 of one row).
    // Every split dimension is the output's, so any number of rows is a block, a part of
    // every split value starts at a whole row, and tiles grow with the rows.
    let uniform = split.iter().zip(&kernel.nodes).all(|(need, node)| need.is_none_or(|d| node.ty.shape[d] == rows));
    let fits = |part: i64| of(part).is_some_and(|(count, _)| count <= max_tiles);
    let uneven = (uniform && fits(1)).then(|| {
        let (mut fit, mut over) = (1, rows);
        while over - fit > 1 {
            let mid = fit + (over - fit) / 2;
            if fits(mid) { fit = mid } else { over = mid }
        }
        fit
    });
    // The fewest tiles in all, then the fewest blocks: an uneven split computes the rows its
    // last block starts early again (a 16x1024 by 1024x4096 product with a ReLU: 8 blocks of
    // 512 columns, not 5 of 1,008, the last from column 3,088).
    let total = |(count, p): &(usize, Plan)| (*count as i64 * p.blocks(), p.blocks());
    match (even, uneven.and_then(of)) {
        (Some(e), Some(u)) => return Some(if total(&u) < total(&e) { u } else { e }),
        (Some(e), None) => return Some(e),
        (None, Some(u)) => return Some(u),
        _ => {}
    }
    // No part fits: parts of rows are split along the next dimension, where blocks of that
    // fit: one row at a time (an item of a batch), or as many rows as one write takes, each
    // part of the next dimension written in place into them (a 16x1024 by 1024x4096 product:
    // 4 blocks of 16x1024, where rows one at a time would be 64 blocks of 1x1024, each
    // product a row). Else the fewest parts of the fewest tiles (smaller blocks that do not
    // fit either are only more of them: tiles an unsplit value counts in every block stay).
    let columns = |outer: Plan| {
        let (count, inner) = plan_along(&outer.block, dim + 1, limits).filter(|(count, _)| *count <= max_tiles)?;
        // All the rows as one part split nothing.
        let levels = outer.levels.into_iter().filter(|l| l.parts > 1).chain(inner.levels).collect();
        Some((count, Plan { levels, ..inner }))
    };
    // One row at a time first: of as many blocks, those whose parts are ranges of bytes.
    let row_parts = (1..rows.min(limits.rows_written).max(1) + 1).filter(|r| rows % r == 0 && !in_place);
    let nested = row_parts.filter_map(|r| columns(of(r)?.1)).min_by_key(|(_, p)| p.blocks());
    let fewest_tiles = (2..=rows).filter(|b| rows % b == 0).filter_map(|b| of(rows / b)).min_by_key(|(count, p)| (*count, p.blocks()));
    // Blocks that fit, unless blocks of rows that nearly do are fewer tiles in all: on an ISA
    // without strided transfers, a 512^3 product runs 32 blocks of 16 rows (1,026 tiles each,
    // 589,824 instructions), not 1,024 blocks of one row's 256 columns (8,914,944).
    match (nested, fewest_tiles) {
        (Some(n), Some(f)) if f.0 <= 2 * max_tiles && total(&f) < total(&n) => Some(f),
        (Some(n), _) => Some(n),
        (None, f) => f,
    }
}

/// The tag of the HBM a block writes its part of a result into: contents that do not
/// matter, a region of its own (tags the rewrites give such regions are e-class ids).
pub const RESULT_REGION: usize = usize::MAX;

/// `block`, whose one result is a part of the last dimension of `whole` (from its first
/// element on), written in place into the whole result's bytes: seen as a matrix of rows
/// (every dimension before the last) of bytes, a `dynamic_update_slice` of its bytes into HBM
/// whose contents do not matter, as a strided store writes a tile. The program of a block
/// writes no other byte of the result, and moves to the next part as a row block moves to
/// its rows.
fn written_in_place(mut block: Kernel, whole: &Ty) -> Kernel {
    let result = block.results[0];
    let part = block.nodes[result].ty.clone();
    let template = block.nodes[result].clone();
    let raw_bytes = crate::egraph::raw_bytes;
    let as_rows = |ty: &Ty| {
        let (&last, before) = ty.shape.split_last().expect("a result split along its last dimension");
        raw_bytes(&ty.with_shape(vec![before.iter().product(), last]))
    };
    let bytes = Ty::new(DType::U8, vec![whole.bytes()]);
    let mut push = |op: Op, ty: Ty, operands: Vec<usize>| {
        block.nodes.push(KernelNode { op, ty, operands, ..template.clone() });
        block.nodes.len() - 1
    };
    let region = push(Op::Uninit(RESULT_REGION), bytes.clone(), vec![]);
    let grid_ty = as_rows(whole);
    let grid = push(Op::Reshape, grid_ty.clone(), vec![region]);
    let value_ty = as_rows(&part);
    let raw = raw_bytes(&part);
    let cast = if part.dtype == DType::U8 { result } else { push(Op::BitcastConvert, raw.clone(), vec![result]) };
    let value = if raw == value_ty { cast } else { push(Op::Reshape, value_ty, vec![cast]) };
    let origin = push(Op::Constant(Literal::from_values(&[0.0])), Ty::new(DType::S32, vec![]), vec![]);
    let written = push(Op::DynamicUpdateSlice, grid_ty.clone(), [grid, value].into_iter().chain(vec![origin; grid_ty.rank()]).collect());
    let root = push(Op::Reshape, bytes, vec![written]);
    block.root = root;
    block.outputs = vec![whole.clone()];
    block
}

/// A level of `parts` parts of `rows` rows, the last `back` rows early, its strides from the
/// types of the kernel it splits and of its block; `None` where a size does not fit an `i64`.
fn level(kernel: &Kernel, split: &[Need], parts: i64, rows: i64, back: i64) -> Option<Level> {
    let whole = kernel.nodes[*kernel.results.first()?].ty.shape.get(split[*kernel.results.first()?]?).copied()?;
    // The bytes from one part's first element to the next part's.
    let step = |k: usize| -> Option<i64> {
        let Some(d) = split[k] else { return Some(0) };
        let ty = &kernel.nodes[k].ty;
        let after: i64 = ty.shape[d + 1..].iter().try_fold(i64::from(ty.dtype.bytes()), |a, &n| a.checked_mul(n))?;
        (ty.shape[d] * rows / whole).checked_mul(after)
    };
    let input_stride = kernel.param_nodes.iter().map(|&p| step(p)).collect::<Option<_>>()?;
    let output_stride = kernel.results.iter().map(|&r| step(r)).collect::<Option<_>>()?;
    Some(Level { parts, rows, back, input_stride, output_stride })
}

/// What a block needs of a node: the dimension it takes `1 / blocks` of, or all of it.
type Need = Option<usize>;

/// Per node, the dimension a block computes a part of (`None`: all of it, or unused), where
/// each block computes exactly its part of output dimension `dim` (every one before it of
/// length 1, so that a part is a range of the output's bytes) from the same fraction of that
/// dimension of each node; `None` where the kernel has no such split.
fn split_dims(kernel: &Kernel, dim: usize) -> Option<Vec<Need>> {
    let n = kernel.nodes.len();
    let mut need: Vec<Option<Need>> = vec![None; n];
    // Each result alike; several results' bytes laid end to end (`results.rs`) are laid out
    // again for the block.
    for &r in &kernel.results {
        need[r] = Some(Some(dim));
    }
    // Operands come before their users: walking back, each node's need is known when reached.
    for k in (0..n).rev() {
        let Some(dim) = need[k] else { continue };
        let node = &kernel.nodes[k];
        let operand_needs = match dim {
            Some(d) => {
                node.ty.shape.get(d)?;
                split_operands(kernel, k, d)?
            }
            None => whole_operands(kernel, k)?,
        };
        for (&o, want) in node.operands.iter().zip(operand_needs) {
            match need[o] {
                Some(had) if had != want => return None,
                _ => need[o] = Some(want),
            }
        }
    }
    Some(need.into_iter().map(Option::flatten).collect())
}

/// What node `k`'s operands must give for a block of its dimension `d`.
fn split_operands(kernel: &Kernel, k: usize, d: usize) -> Option<Vec<Need>> {
    let node = &kernel.nodes[k];
    let ty_of = |o: usize| &kernel.nodes[o].ty;
    let same_or_scalar = |o: &usize| match ty_of(*o) {
        t if t.shape == node.ty.shape => Some(Some(d)),
        t if t.rank() == 0 => Some(None),
        _ => None,
    };
    Some(match &node.op {
        // A block of an input's leading rows is one contiguous byte range; of a later
        // dimension, a slice of the whole input ([`block_kernel`]).
        Op::Parameter(_) => Vec::new(),
        // A literal every element of which is one value is the same value in a block.
        Op::Constant(literal) => {
            literal.splat()?;
            Vec::new()
        }
        Op::Convert | Op::Copy => node.operands.iter().map(same_or_scalar).collect::<Option<_>>()?,
        op if op.is_elementwise() => node.operands.iter().map(same_or_scalar).collect::<Option<_>>()?,
        // A bit cast between types of other widths adds or drops a last dimension.
        Op::BitcastConvert => {
            let x = ty_of(node.operands[0]);
            (x.shape == node.ty.shape || (d < x.rank().min(node.ty.rank()) && x.shape[..=d] == node.ty.shape[..=d])).then_some(())?;
            vec![Some(d)]
        }
        // Rows of a row-major value are a range of its elements: blocks of the first dimension
        // longer than 1 of a reshape and of its operand are the same elements.
        Op::Reshape => {
            let x = ty_of(node.operands[0]);
            leading_ones(&node.ty.shape, d).then_some(())?;
            vec![Some(x.shape.iter().position(|&s| s != 1)?)]
        }
        Op::Transpose(perm) => vec![Some(perm[d])],
        Op::Broadcast(dims) => {
            let x = ty_of(node.operands[0]);
            let from = dims.iter().position(|&r| r == d).filter(|&j| x.shape[j] == node.ty.shape[d]);
            vec![from]
        }
        Op::Dot(dd) => dot_operands(dd, ty_of(node.operands[0]).rank(), ty_of(node.operands[1]).rank(), d)?,
        Op::ReduceAdd(dims) | Op::Reduce { dims, .. } => {
            let x = ty_of(node.operands[0]);
            let kept: Vec<usize> = (0..x.rank()).filter(|j| !dims.contains(j)).collect();
            let mut needs = vec![Some(kept[d])];
            needs.extend(node.operands[1..].iter().map(|_| None));
            needs
        }
        Op::Slice(ranges) => {
            let x = ty_of(node.operands[0]);
            (ranges[d] == (0, x.shape[d], 1)).then_some(())?;
            vec![Some(d)]
        }
        Op::Concatenate(along) if *along != d => node.operands.iter().map(|_| Some(d)).collect(),
        _ => return None,
    })
}

/// Whether every dimension of `shape` before `d` has length 1: then a part of dimension `d`
/// is a range of the value's row-major elements.
fn leading_ones(shape: &[i64], d: usize) -> bool {
    shape.iter().take(d).all(|&s| s == 1)
}

/// The operands' needs of a product whose result is split along `d`: both operands along a
/// batch dimension, or the one operand whose free dimension it is.
fn dot_operands(dd: &DotDims, lhs_rank: usize, rhs_rank: usize, d: usize) -> Option<Vec<Need>> {
    let lhs_free = DotDims::free(lhs_rank, &dd.lhs_batch, &dd.lhs_contracting);
    let rhs_free = DotDims::free(rhs_rank, &dd.rhs_batch, &dd.rhs_contracting);
    let batch = dd.lhs_batch.len();
    Some(if d < batch {
        vec![Some(dd.lhs_batch[d]), Some(dd.rhs_batch[d])]
    } else if d < batch + lhs_free.len() {
        vec![Some(lhs_free[d - batch]), None]
    } else {
        vec![None, Some(*rhs_free.get(d - batch - lhs_free.len())?)]
    })
}

/// What node `k`'s operands must give for all of its value, which every block reads: only a
/// kernel input or a literal, moved about, so that no block repeats a computation.
fn whole_operands(kernel: &Kernel, k: usize) -> Option<Vec<Need>> {
    let node = &kernel.nodes[k];
    match node.op {
        Op::Parameter(_) | Op::Constant(_) => Some(Vec::new()),
        Op::Reshape | Op::Transpose(_) | Op::Broadcast(_) | Op::BitcastConvert | Op::Copy | Op::Convert | Op::Slice(_) => {
            Some(node.operands.iter().map(|_| None).collect())
        }
        _ => None,
    }
}

/// The kernel of a block of `part` of the `rows` the output's split dimension has: `kernel`
/// with each dimension `split` names as much shorter; `None` where one is not a whole number
/// of elements.
fn block_kernel(kernel: &Kernel, split: &[Need], part: i64, rows: i64) -> Option<Kernel> {
    let mut block = kernel.clone();
    for (node, &dim) in block.nodes.iter_mut().zip(split) {
        let Some(d) = dim else { continue };
        let length = node.ty.shape[d] * part;
        if length % rows != 0 {
            return None;
        }
        node.ty.shape[d] = length / rows;
        match &mut node.op {
            // A slice whole along the split dimension stays whole.
            Op::Slice(ranges) => ranges[d].1 = node.ty.shape[d],
            // A splat written out element by element: as many of its one value as a block has.
            Op::Constant(literal) if literal.bits.len() > 1 => literal.bits.truncate(node.ty.elements() as usize),
            _ => {}
        }
    }
    if let Some(&last) = block.results.iter().max().filter(|_| block.results.len() > 1) {
        results_bytes_again(&mut block, last + 1);
    }
    let strided: Vec<usize> = kernel.param_nodes.iter().copied().filter(|&p| split[p].is_some_and(|d| !leading_ones(&kernel.nodes[p].ty.shape, d))).collect();
    let mut block = read_from_whole(block, kernel, &strided);
    block.params = block.param_nodes.iter().map(|&p| block.nodes[p].ty.clone()).collect();
    block.outputs = block.results.iter().map(|&r| block.nodes[r].ty.clone()).collect();
    Some(block)
}

/// `block` with each parameter node of `strided` (a part of a dimension after one longer
/// than 1: rows of columns, not one range of bytes) read whole as `kernel` has it and sliced
/// to the block's part, its first one; the program of a block then reads that part where it
/// lies in the whole input, and moves to the next part as a row block moves to its rows.
fn read_from_whole(block: Kernel, kernel: &Kernel, strided: &[usize]) -> Kernel {
    if strided.is_empty() {
        return block;
    }
    let mut nodes = Vec::with_capacity(block.nodes.len() + strided.len());
    // Per old node, its new index, and the node its users now read (the slice of a strided
    // parameter).
    let (mut at, mut value) = (Vec::with_capacity(block.nodes.len()), Vec::with_capacity(block.nodes.len()));
    for (k, mut node) in block.nodes.into_iter().enumerate() {
        node.operands = node.operands.iter().map(|&o| value[o]).collect();
        at.push(nodes.len());
        if strided.contains(&k) {
            let part = std::mem::replace(&mut node.ty, kernel.nodes[k].ty.clone());
            let ranges = part.shape.iter().map(|&n| (0, n, 1)).collect();
            let slice = crate::kernel::KernelNode { op: Op::Slice(ranges), ty: part, operands: vec![nodes.len()], ..node.clone() };
            nodes.push(node);
            value.push(nodes.len());
            nodes.push(slice);
        } else {
            value.push(nodes.len());
            nodes.push(node);
        }
    }
    Kernel {
        nodes,
        param_nodes: block.param_nodes.iter().map(|&p| at[p]).collect(),
        results: block.results.iter().map(|&r| value[r]).collect(),
        root: value[block.root],
        ..block
    }
}

/// The types of the nodes from `first` on that lay several results' bytes end to end (bit
/// casts to bytes, their flattening, and the concatenation), from the results' block types.
fn results_bytes_again(block: &mut Kernel, first: usize) {
    for k in first..block.nodes.len() {
        let node = &block.nodes[k];
        if node.ty.dtype != DType::U8 {
            continue;
        }
        let operand = |i: usize| &block.nodes[node.operands[i]].ty;
        let shape = match node.op {
            Op::BitcastConvert => {
                let x = operand(0);
                let width = i64::from(x.dtype.bytes());
                x.shape.iter().copied().chain((width > 1).then_some(width)).collect()
            }
            Op::Reshape if node.ty.rank() == 1 => vec![operand(0).bytes()],
            Op::Concatenate(0) if node.ty.rank() == 1 => vec![(0..node.operands.len()).map(|i| operand(i).elements()).sum()],
            _ => continue,
        };
        block.nodes[k].ty.shape = shape;
    }
}

/// A region of HBM a block's program uses, and where it lies for block `i`.
pub(crate) struct Region {
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// Bytes between block `i`'s region and the block program's: `moved + offsets[i]`.
    pub(crate) moved: i64,
    pub(crate) offsets: Vec<i64>,
    /// Where the value the region is a part of ends in the whole kernel's HBM: an access of a
    /// part of columns moved to a later part may read on past it ([`moved_addresses`]).
    pub(crate) whole_end: i64,
    /// For a result a block writes in place, the bytes of its part: runs of `.0` bytes every
    /// `.1` bytes from the region's start. A write that changes bytes must lie within one run.
    pub(crate) runs: Option<(i64, i64)>,
}

/// A program's steps: instruction, computational and addressing attributes.
pub(crate) type Steps = Vec<(usize, Vec<i64>, Vec<i64>)>;

/// The steps of `runs` runs of `program`, run `i` with every HBM access moved into its part
/// of `regions` ([`moved_addresses`]), and the end of the HBM they touch; `None` where an
/// access cannot be moved.
pub(crate) fn moved_runs(isa: &Isa, program: &PlacedProgram, regions: &[Region], runs: usize) -> Option<(Steps, i64)> {
    let in_place: Vec<bool> = isa.instructions.iter().map(crate::isa::Instruction::updates_in_place).collect();
    let mut steps = Vec::with_capacity(program.steps.len() * runs);
    let mut hbm_end = 0;
    for i in 0..runs {
        for (instr, comp, addr) in &program.steps {
            let (moved, end) = moved_addresses(isa, *instr, comp, addr, regions, i, in_place[*instr])?;
            steps.push((*instr, comp.clone(), moved));
            hbm_end = hbm_end.max(end);
        }
    }
    Some((steps, hbm_end))
}

/// Per block, in the order the blocks run (the outermost level's parts slowest), the bytes
/// its region of one value lies after block 0's, where `stride` gives each level's step
/// between parts (a whole number of bytes a row where a last part starts early).
fn block_offsets(levels: &[Level], stride: impl Fn(&Level) -> i64) -> Vec<i64> {
    levels.iter().fold(vec![0], |offsets, level| {
        let step = stride(level);
        let start = move |j: i64| if j == level.parts - 1 { (j * level.rows - level.back) * step / level.rows } else { j * step };
        offsets.iter().flat_map(|&o| (0..level.parts).map(move |j| o + start(j))).collect()
    })
}

/// The assembly of `plan.blocks()` runs of `program` (the program of `plan.block`, placed in
/// `block_layout`), each moved to its block's part of the inputs it splits and of the output,
/// for the whole kernel's `sig` and `layout`; `None` where an access cannot be moved.
pub fn instantiate(isa: &Isa, plan: &Plan, program: &PlacedProgram, block_layout: &HbmLayout, sig: &Signature, layout: &HbmLayout) -> Option<String> {
    instantiated(isa, plan, program, block_layout, sig, layout)?.assembly(isa, sig, layout).ok()
}

/// The program [`instantiate`] writes: every block's run, moved.
pub fn instantiated(isa: &Isa, plan: &Plan, program: &PlacedProgram, block_layout: &HbmLayout, sig: &Signature, layout: &HbmLayout) -> Option<PlacedProgram> {
    let blocks = plan.blocks() as usize;
    // The scratch (the HBM after the block's output) lies after the whole output.
    let scratch_moved = layout.output.end() - block_layout.output.end();
    let regions = regions(plan, block_layout, layout, &layout.outputs(sig).ok()?, layout.output.end());
    let (steps, end) = moved_runs(isa, program, &regions, blocks)?;
    let hbm_end = end.max(program.hbm_end + scratch_moved);
    let constants = program.constants.iter().map(|(addr, ty, bits)| (addr + scratch_moved, ty.clone(), bits.clone())).collect();
    Some(PlacedProgram { steps, constants, hbm_end })
}

/// The regions of HBM a block's program, placed in `block_layout`, reads and writes, and where
/// each lies for every block; its scratch at `scratch` in the whole kernel's `layout`.
fn regions(plan: &Plan, block_layout: &HbmLayout, layout: &HbmLayout, whole_outputs: &[Placed], scratch: i64) -> Vec<Region> {
    let mut regions: Vec<Region> = Vec::new();
    for (p, (block, whole)) in block_layout.inputs.iter().zip(&layout.inputs).enumerate() {
        let offsets = block_offsets(&plan.levels, |l| l.input_stride[p]);
        regions.push(Region { start: block.addr, end: block.end(), moved: whole.addr - block.addr, offsets, whole_end: whole.end(), runs: None });
    }
    // Each result's part, end to end in the block's output as the results are in the kernel's.
    let mut at = block_layout.output.addr;
    for (r, (ty, whole)) in plan.block.outputs.iter().zip(whole_outputs).enumerate() {
        let offsets = block_offsets(&plan.levels, |l| l.output_stride[r]);
        // A part of columns: the dimension where the part and the block's whole value differ.
        let runs = plan.part.iter().zip(&ty.shape).position(|(p, n)| p != n).filter(|_| r == 0).map(|d| {
            let after = ty.shape[d + 1..].iter().product::<i64>() * i64::from(ty.dtype.bytes());
            (plan.part[d] * after, ty.shape[d] * after)
        });
        regions.push(Region { start: at, end: at + ty.bytes(), moved: whole.addr - at, offsets, whole_end: whole.end(), runs });
        at += ty.bytes();
    }
    let out = block_layout.output;
    // Blocks run one after another: they share the scratch.
    let offsets = vec![0; plan.blocks() as usize];
    regions.push(Region { start: out.end(), end: i64::MAX, moved: scratch - out.end(), offsets, whole_end: i64::MAX, runs: None });
    // Sizes of empty inputs make empty regions; an access never lies in one.
    regions.retain(|r| r.start < r.end);
    regions
}

/// The addressing attributes of one step of block `i`, and the end of the HBM it then
/// touches: each HBM access moved by the offset of the region it lies in, through the one
/// attribute its start depends on; `None` where an access spans two regions, its start
/// depends on no attribute or several, that attribute also places a value on chip, two
/// accesses move one attribute differently, or a constraint of the instruction no longer
/// holds. `updates_in_place`: the instruction's
/// [`crate::isa::Instruction::updates_in_place`].
///
/// A block of columns reads and writes its part where it lies in the whole value, and a
/// strided access spans whole rows of it from the row it starts in: moved to a later part,
/// the last rows' span runs on past the value's end. That is kept only where those bytes are
/// read, or written back as they were read ([`crate::isa::Instruction::updates_in_place`]):
/// what the block computes depends on its part alone, and leaves every other byte as it was.
fn moved_addresses(isa: &Isa, instr: usize, comp: &[i64], addr: &[i64], regions: &[Region], i: usize, updates_in_place: bool) -> Option<(Vec<i64>, i64)> {
    let def = &isa.instructions[instr];
    let mut env = def.comp_env(comp);
    env.extend(def.addr_attrs.iter().zip(addr).map(|(n, v)| (format!("a.{n}"), *v)));
    let mut moved: BTreeMap<usize, i64> = BTreeMap::new();
    let mut touched = 0;
    let writes = def.outputs.iter().map(|s| (s, !updates_in_place));
    for (slice, changes) in def.inputs.iter().map(|s| (s, false)).chain(writes).filter(|(s, _)| isa.buffer(&s.buffer).is_hbm()) {
        let ([start], [size]) = (&slice.start[..], &slice.size[..]) else { return None };
        let (at, bytes) = (start.eval(&env).ok()?, size.eval(&env).ok()?);
        let region = regions.iter().find(|r| r.start <= at && at < r.end)?;
        if at + bytes > region.end {
            return None;
        }
        let delta = region.moved + region.offsets[i];
        if changes && at + bytes + delta > region.whole_end {
            return None;
        }
        // A block written in place changes no byte of another block's part.
        if let (true, Some((run, every))) = (changes, region.runs) {
            if (at - region.start) % every + bytes > run {
                return None;
            }
        }
        touched = touched.max(at + bytes + delta);
        // The start must be affine in one addressing attribute alone, which moves it.
        let names: Vec<String> = start.attrs().into_iter().filter(|n| n.starts_with("a.")).collect();
        let [name] = &names[..] else { return None };
        let k = def.addr_attrs.iter().position(|n| format!("a.{n}") == *name)?;
        // An attribute that also places a value on chip cannot move.
        let on_chip = def.inputs.iter().chain(&def.outputs).filter(|s| !isa.buffer(&s.buffer).is_hbm());
        if on_chip.flat_map(|s| s.start.iter().chain(&s.size)).any(|e| e.attrs().contains(name)) {
            return None;
        }
        let mut others = env.clone();
        others.remove(name);
        let form = start.affine(&others).ok()?;
        let per_unit = *form.terms.get(name)?;
        if per_unit == 0 || delta % per_unit != 0 {
            return None;
        }
        let value = addr[k] + delta / per_unit;
        if *moved.entry(k).or_insert(value) != value {
            return None;
        }
    }
    let moved: Vec<i64> = addr.iter().enumerate().map(|(k, &v)| moved.get(&k).copied().unwrap_or(v)).collect();
    // The instruction's conditions on its attributes (an alignment, a range) must still hold.
    env.extend(def.addr_attrs.iter().zip(&moved).map(|(n, v)| (format!("a.{n}"), *v)));
    def.constraints.iter().all(|c| c.holds(&env) == Some(true)).then_some((moved, touched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::parse_kernel;

    fn kernel(body: &str) -> Kernel {
        parse_kernel(&format!("HloModule m\n\nENTRY e {{\n{body}\n}}\n"), "k.hlo").expect("a valid kernel")
    }

    /// Tiles counted as the output's rows: a plan then keeps at most `max` rows a block.
    fn by_rows(k: &Kernel) -> usize {
        k.nodes[k.root].ty.shape[0] as usize
    }

    fn shapes(k: &Kernel) -> Vec<Vec<i64>> {
        k.params.iter().map(|t| t.shape.clone()).collect()
    }

    #[test]
    fn elementwise_work_splits_every_operand_into_its_rows() {
        let k = kernel(
            "  x = f32[64,16] parameter(0)\n  y = f32[64,16] parameter(1)\n  s = f32[] constant(2)\n\
             \x20 b = f32[64,16] broadcast(s), dimensions={}\n  m = f32[64,16] multiply(x, b)\n\
             \x20 ROOT a = f32[64,16] add(m, y)",
        );
        let plan = plan(&k, by_rows, 16, 1).expect("a split");
        assert_eq!(plan.blocks(), 4);
        assert_eq!(plan.split_inputs(), [true, true]);
        assert_eq!(shapes(&plan.block), [vec![16, 16], vec![16, 16]]);
        assert_eq!(plan.block.outputs[0].shape, [16, 16]);
    }

    #[test]
    fn a_product_splits_its_left_operand_and_reads_the_right_one_whole() {
        let k = kernel(
            "  a = s8[64,32] parameter(0)\n  b = s8[32,48] parameter(1)\n\
             \x20 ROOT d = s32[64,48] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        );
        let plan = plan(&k, by_rows, 32, 1).expect("a split");
        assert_eq!((plan.blocks(), plan.split_inputs()), (2, vec![true, false]));
        assert_eq!(shapes(&plan.block), [vec![32, 32], vec![32, 48]]);
    }

    #[test]
    fn a_row_broadcast_is_read_whole_and_a_reduction_of_columns_keeps_the_rows() {
        let text = "HloModule m\n\nsum {\n  p = f32[] parameter(0)\n  q = f32[] parameter(1)\n  ROOT o = f32[] add(p, q)\n}\n\n\
                    ENTRY e {\n  x = f32[64,32] parameter(0)\n  v = f32[32] parameter(1)\n\
                    \x20 b = f32[64,32] broadcast(v), dimensions={1}\n  s = f32[64,32] add(x, b)\n\
                    \x20 z = f32[] constant(0)\n  ROOT r = f32[64] reduce(s, z), dimensions={1}, to_apply=sum\n}\n";
        let k = parse_kernel(text, "k.hlo").expect("a valid kernel");
        // At most 16 rows a block, with one more per each of its 6 operations.
        let plan = plan(&k, by_rows, 16 - 6, 1).expect("a split");
        assert_eq!((plan.blocks(), plan.split_inputs()), (4, vec![true, false]));
        assert_eq!(shapes(&plan.block), [vec![16, 32], vec![32]]);
    }

    #[test]
    fn where_one_row_is_too_large_each_row_is_split_along_the_next_dimension() {
        let k = kernel(
            "  a = s8[2,64,32] parameter(0)\n  b = s8[2,32,48] parameter(1)\n\
             \x20 ROOT d = s32[2,64,48] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, \
             rhs_batch_dims={0}, rhs_contracting_dims={1}",
        );
        let elements = |k: &Kernel| k.nodes[k.root].ty.elements() as usize;
        // An item's 3,072 result elements are too many; 16 of its rows are 768.
        let plan = plan(&k, elements, 16 * 48, 1).expect("a split");
        assert_eq!(plan.levels.iter().map(|l| l.parts).collect::<Vec<_>>(), [2, 4]);
        assert_eq!((plan.blocks(), plan.split_inputs()), (8, vec![true, true]));
        assert_eq!(shapes(&plan.block), [vec![1, 16, 32], vec![1, 32, 48]]);
        // Items of A, B and the result lie 2,048, 1,536 and 12,288 bytes apart; blocks of an
        // item's rows 512 bytes of A and 3,072 of the result, each reading all of B's item.
        assert_eq!((plan.levels[0].input_stride.clone(), plan.levels[0].output_stride[0]), (vec![2048, 1536], 12288));
        assert_eq!((plan.levels[1].input_stride.clone(), plan.levels[1].output_stride[0]), (vec![512, 0], 3072));
        let offsets = block_offsets(&plan.levels, |l| l.output_stride[0]);
        assert_eq!(offsets, [0, 3072, 6144, 9216, 12288, 15360, 18432, 21504]);
    }

    #[test]
    fn rows_are_not_split_further_where_smaller_blocks_would_not_fit_either() {
        let k = kernel("  x = f32[4,8,8] parameter(0)\n  ROOT n = f32[4,8,8] add(x, x)");
        // Tiles every block counts whatever its size (a value each reads whole, or unused):
        // no block fits, and blocks of one row are the fewest of the fewest tiles.
        let plan = plan(&k, |k: &Kernel| k.outputs[0].elements() as usize + 1000, 8, 1).expect("a split");
        assert_eq!((plan.levels.len(), plan.blocks()), (1, 4));
    }

    #[test]
    fn rows_no_part_divides_end_with_a_part_that_starts_early() {
        let k = kernel("  x = f32[37,16] parameter(0)\n  ROOT n = f32[37,16] add(x, x)");
        // At most 10 rows a block, each block also counting 5 tiles (what every block reads
        // whole): 4 blocks of 10, the last from row 27, 60 tiles in all (parts dividing 37
        // would be 37 of one row, 222).
        let plan = plan(&k, |k: &Kernel| by_rows(k) + 5, 10 + 5 - 2, 1).expect("a split");
        let level = &plan.levels[0];
        assert_eq!((plan.blocks(), level.rows, level.back), (4, 10, 3));
        assert_eq!(shapes(&plan.block), [vec![10, 16]]);
        // Rows of 64 bytes: blocks at rows 0, 10, 20 and 27.
        assert_eq!(block_offsets(&plan.levels, |l| l.output_stride[0]), [0, 640, 1280, 1728]);
    }

    #[test]
    fn several_results_split_alike_and_their_bytes_are_laid_out_again_for_the_block() {
        let k = kernel(
            "  x = f32[64,16] parameter(0)\n  a = f32[64,16] add(x, x)\n  m = f32[64,16] maximum(a, x)\n\
             \x20 ROOT t = (f32[64,16], f32[64,16]) tuple(a, m)",
        );
        // At most 16 rows a block, with one more per operation.
        let plan = plan(&k, |k: &Kernel| k.outputs[0].shape[0] as usize, 16 - k.nodes.len(), 1).expect("a split");
        assert_eq!(plan.block.outputs.iter().map(|t| t.shape.clone()).collect::<Vec<_>>(), [vec![16, 16], vec![16, 16]]);
        // Both results' bytes, 1,024 each, end to end.
        assert_eq!(plan.block.nodes[plan.block.root].ty.shape, [2048]);
        assert_eq!(plan.levels[0].output_stride, [1024, 1024]);
    }

    #[test]
    fn a_reshape_splits_its_operand_at_its_first_dimension_longer_than_one() {
        // A row of 128 read as 8 rows of 16: a block of its rows is a range of the row.
        let k = kernel("  x = f32[1,128] parameter(0)\n  r = f32[8,16] reshape(x)\n  ROOT n = f32[8,16] add(r, r)");
        let plan = plan(&k, by_rows, 1, 1).expect("a split");
        assert_eq!((plan.blocks(), shapes(&plan.block)), (2, vec![vec![1, 64]]));
    }

    #[test]
    fn a_kernel_within_the_limit_is_compiled_whole() {
        let k = kernel("  x = f32[64,16] parameter(0)\n  ROOT n = f32[64,16] add(x, x)");
        assert!(plan(&k, by_rows, 64, 1).is_none());
    }

    #[test]
    fn a_block_of_columns_of_an_input_reads_them_where_they_lie_in_the_whole_input() {
        // The result's rows are B's columns: each block slices its 16 columns out of all of B.
        let k = kernel(
            "  a = s8[32,32] parameter(0)\n  b = s8[32,64] parameter(1)\n\
             \x20 d = s32[32,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n\
             \x20 ROOT t = s32[64,32] transpose(d), dimensions={1,0}",
        );
        let plan = plan(&k, by_rows, 16 - k.nodes.len(), 1).expect("a split");
        assert_eq!((plan.blocks(), plan.split_inputs()), (4, vec![false, true]));
        assert_eq!(shapes(&plan.block), [vec![32, 32], vec![32, 64]]);
        let b = plan.block.param_nodes[1];
        let slice = &plan.block.nodes[b + 1];
        assert_eq!((&slice.op, &slice.operands, &slice.ty.shape), (&Op::Slice(vec![(0, 32, 1), (0, 16, 1)]), &vec![b], &vec![32, 16]));
        // The next block's columns start 16 bytes on; its 16 result rows, 2,048 bytes.
        assert_eq!((plan.levels[0].input_stride.clone(), plan.levels[0].output_stride.clone()), (vec![0, 16], vec![2048]));
    }

    #[test]
    fn a_block_of_columns_of_several_rows_is_written_in_place_into_the_whole_result() {
        let k = kernel(
            "  a = s8[16,32] parameter(0)\n  b = s8[32,64] parameter(1)\n\
             \x20 ROOT d = s32[16,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        );
        // Tiles counted as the result's columns: no part of its rows fits 16 of them.
        let columns = |k: &Kernel| k.outputs[0].shape[1] as usize;
        let plan = plan(&k, columns, 16 - k.nodes.len(), 16).expect("a split");
        assert_eq!((plan.blocks(), plan.part.clone(), plan.split_inputs()), (4, vec![16, 16], vec![false, true]));
        // The block writes its 16x16 into the bytes of the whole 16x64 result, 64 bytes on
        // from the block before.
        assert_eq!(plan.block.outputs, [Ty::new(DType::S32, vec![16, 64])]);
        assert_eq!(plan.levels[0].output_stride, [64]);
        let root = &plan.block.nodes[plan.block.root];
        let written = &plan.block.nodes[root.operands[0]];
        assert_eq!((root.ty.shape.clone(), &written.op), (vec![4096], &Op::DynamicUpdateSlice));
        assert_eq!(plan.block.nodes[written.operands[1]].ty.shape, [16, 16, 4]);
        // Where one write takes a single row, rows go one at a time: 64 blocks of 1x16.
        let by_row = super::plan(&k, columns, 16 - k.nodes.len(), 1).expect("a split");
        assert_eq!((by_row.blocks(), by_row.part), (64, vec![1, 16]));
    }

    #[test]
    fn blocks_of_rows_that_nearly_fit_are_kept_over_many_more_blocks_of_one_row() {
        let k = kernel(
            "  a = s8[64,32] parameter(0)\n  b = s8[32,64] parameter(1)\n\
             \x20 ROOT d = s32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        );
        // Tiles of 16x16 of the result: a block of 16 rows is 4, one more than fit; blocks of
        // one row and 32 columns fit, 128 of them, 256 tiles in all where 4 blocks of 16
        // rows are 16.
        let tiles = |k: &Kernel| k.outputs[0].shape.iter().map(|&n| (n + 15) / 16).product::<i64>() as usize;
        let plan = plan(&k, tiles, 3 - k.nodes.len(), 1).expect("a split");
        assert_eq!((plan.blocks(), plan.part), (4, vec![16, 64]));
    }

    #[test]
    fn rows_no_part_divides_split_evenly_where_that_is_fewer_tiles_in_all() {
        let k = kernel("  x = f32[64,16] parameter(0)\n  ROOT n = f32[64,16] add(x, x)");
        // At most 30 rows a block: 4 blocks of 16 rows are 64 tiles, 3 of 30 (the last from
        // row 34, computing 26 rows again) 90.
        let plan = plan(&k, by_rows, 30 - 2, 1).expect("a split");
        assert_eq!((plan.blocks(), plan.levels[0].back), (4, 0));
    }

    #[test]
    fn no_split_where_a_block_would_compute_a_whole_value_again() {
        // Every block would compute the whole product again.
        let shared = kernel(
            "  a = s32[16,16] parameter(0)\n  x = s32[64,16] parameter(1)\n\
             \x20 d = s32[16,16] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n\
             \x20 ROOT p = s32[64,16] dot(x, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        );
        assert!(plan(&shared, by_rows, 16, 1).is_none());
    }
}
