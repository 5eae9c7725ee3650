//! A kernel's transposes written as transposes of matrices: what instructions compute (a
//! transposing load or move, or products with the identity) and what tiling splits. A
//! transpose of any rank is a few steps, each the transpose of the last two dimensions of a
//! batch of matrices (or of one matrix), between reshapes, which move nothing.
//!
//! Dimensions of one element are dropped and each run of dimensions a transpose keeps
//! adjacent is merged into one first (`[1,16,8,8]` by `{0,2,3,1}` is one `[16,64]` matrix
//! transposed). Then, while the leading dimensions are in place, they are a batch; the first
//! one out of place is brought forward by turning the dimensions before it behind the rest,
//! `[batch, a, c] -> [batch, c, a]`, which puts at least one more dimension in place. A
//! transpose that keeps its last dimension last moves whole rows, which loads and stores do
//! as they are: it is left as written, as is one that already is such a step. A batch of
//! matrices computed and written out as the kernel's result is transposed a matrix at a time.

use crate::kernel::{Kernel, KernelNode};
use crate::lang::{Op, Ty};

/// A transpose with its dimensions of one element dropped and each run of dimensions it
/// keeps adjacent merged: the merged operand's extents, and the permutation of them
/// (`[1,16,8,8]` by `{0,2,3,1}` is `[16,64]` by `{1,0}`).
pub fn merged(shape: &[i64], perm: &[usize]) -> (Vec<i64>, Vec<usize>) {
    let kept: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
    let rank_of = |d: usize| kept.iter().position(|&k| k == d);
    // Runs, in the output's order, of consecutive kept operand dimensions.
    let mut runs: Vec<Vec<usize>> = Vec::new();
    for d in perm.iter().filter_map(|&d| rank_of(d)) {
        match runs.last_mut() {
            Some(run) if d > 0 && run.last() == Some(&(d - 1)) => run.push(d),
            _ => runs.push(vec![d]),
        }
    }
    let mut by_operand: Vec<usize> = (0..runs.len()).collect();
    by_operand.sort_by_key(|&r| runs[r][0]);
    let extents = by_operand.iter().map(|&r| runs[r].iter().map(|&d| shape[kept[d]]).product()).collect();
    let order = (0..runs.len()).map(|r| by_operand.iter().position(|&o| o == r).expect("every run")).collect();
    (extents, order)
}

/// The steps of a transpose of `extents` by `perm` (as [`merged`] gives them): per step, the
/// `[batch, a, c]` it turns into `[batch, c, a]` (`batch` 1 for a matrix).
pub fn steps(extents: &[i64], perm: &[usize]) -> Vec<[i64; 3]> {
    let m = extents.len();
    let mut order: Vec<usize> = (0..m).collect();
    let mut out = Vec::new();
    let mut b = 0;
    loop {
        while b < m && order[b] == perm[b] {
            b += 1;
        }
        if b == m {
            return out;
        }
        let k = order.iter().position(|&d| d == perm[b]).expect("a permutation");
        let size = |dims: &[usize]| dims.iter().map(|&d| extents[d]).product::<i64>();
        out.push([size(&order[..b]), size(&order[b..k]), size(&order[k..])]);
        order = [&order[..b], &order[k..], &order[b..k]].concat();
    }
}

/// What a written operation reads: the transpose's operand or an earlier operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Operand,
    Step(usize),
}

/// One operation written for a transpose.
type Step = (Op, Ty, Vec<Source>);

/// Most matrices a transpose of a kernel input is written as ([`windows`]).
pub const MAX_WINDOWS: i64 = 64;

/// The operations written for `transpose(x, perm) : ty` (`x` a kernel input where `input`),
/// the last of type `ty`; `None` where the transpose stays as written.
fn lowered(x: &Ty, perm: &[usize], ty: &Ty, input: bool, written_out: bool) -> Option<Vec<Step>> {
    let (extents, order) = merged(&x.shape, perm);
    let mut ops: Vec<Step> = Vec::new();
    let last = |ops: &Vec<Step>| if ops.is_empty() { Source::Operand } else { Source::Step(ops.len() - 1) };
    if let ([[batch @ 2..=MAX_WINDOWS, a, c]], false, true) = (&steps(&extents, &order)[..], input, written_out) {
        // A batch of matrices computed and written out: each item transposed as a matrix of
        // its own, whose bytes are written where they lie (a column of its stored value
        // each), rather than all read back as a batch.
        windows(x, &[*batch, *a, *c], &[0, 2, 1], &mut ops);
    } else if !in_place(x, perm, &extents, &order, input, &mut ops) {
        return None;
    }
    if ops.last().map_or(&x.shape, |o| &o.1.shape) != &ty.shape {
        ops.push((Op::Reshape, ty.clone(), vec![last(&ops)]));
    }
    // A transpose that moves nothing stays as written (the search reads it as its operand).
    (!ops.is_empty()).then_some(ops)
}

/// Pushes to `ops` the operations of any transpose but a computed batch written out (see
/// [`lowered`]), up to the reshape to the result's type; `false` where the transpose stays as
/// written.
fn in_place(x: &Ty, perm: &[usize], extents: &[i64], order: &[usize], input: bool, ops: &mut Vec<Step>) -> bool {
    let m = extents.len();
    let last = |ops: &Vec<Step>| if ops.is_empty() { Source::Operand } else { Source::Step(ops.len() - 1) };
    let is_step = (x.rank() == 2 && perm == [1, 0]) || (x.rank() == 3 && perm == [0, 2, 1] && m == 3);
    let identity = order.iter().enumerate().all(|(i, &d)| i == d);
    if is_step || (m > 0 && order[m - 1] == m - 1 && !identity) {
        return false;
    }
    let items: i64 = order[..m.saturating_sub(2)].iter().map(|&d| extents[d]).product();
    if identity {
        // Only dimensions of one element move: a reshape, or nothing.
    } else if input && m >= 3 && items <= MAX_WINDOWS {
        windows(x, extents, order, ops);
    } else {
        let mut shape = x.shape.clone();
        for [batch, a, c] in steps(extents, order) {
            let (from, to, p) =
                if batch == 1 { (vec![a, c], vec![c, a], vec![1, 0]) } else { (vec![batch, a, c], vec![batch, c, a], vec![0, 2, 1]) };
            if shape != from {
                ops.push((Op::Reshape, x.with_shape(from), vec![last(ops)]));
            }
            ops.push((Op::Transpose(p), x.with_shape(to.clone()), vec![last(ops)]));
            shape = to;
        }
    }
    true
}

/// A transpose (merged: `extents` by `order`, of rank 3 or more) as one matrix per index of
/// its leading dimensions, each a window of the operand (its last two dimensions' elements, a
/// stride apart where a kernel input lies) transposed in the other order, the matrices
/// stacked. One transpose each, read where the operand lies: steps would store each one's
/// result and read it back.
fn windows(x: &Ty, extents: &[i64], order: &[usize], ops: &mut Vec<Step>) {
    let m = extents.len();
    let merged_ty = x.with_shape(extents.to_vec());
    let flat = if x.shape == extents {
        Source::Operand
    } else {
        ops.push((Op::Reshape, merged_ty, vec![Source::Operand]));
        Source::Step(0)
    };
    let (r, c) = (order[m - 2], order[m - 1]);
    let leading = &order[..m - 2];
    let count: i64 = leading.iter().map(|&d| extents[d]).product();
    let mut parts = Vec::new();
    for n in 0..count {
        // The index of each leading dimension for matrix `n` (the last one varying fastest).
        let mut index = vec![0; m];
        let mut rest = n;
        for &d in leading.iter().rev() {
            index[d] = rest % extents[d];
            rest /= extents[d];
        }
        let ranges: Vec<(i64, i64, i64)> =
            (0..m).map(|d| if d == r || d == c { (0, extents[d], 1) } else { (index[d], index[d] + 1, 1) }).collect();
        let window: Vec<i64> = ranges.iter().map(|w| w.1 - w.0).collect();
        ops.push((Op::Slice(ranges), x.with_shape(window), vec![flat]));
        let as_input = if r < c { vec![extents[r], extents[c]] } else { vec![extents[c], extents[r]] };
        ops.push((Op::Reshape, x.with_shape(as_input), vec![Source::Step(ops.len() - 1)]));
        if r > c {
            ops.push((Op::Transpose(vec![1, 0]), x.with_shape(vec![extents[r], extents[c]]), vec![Source::Step(ops.len() - 1)]));
        }
        ops.push((Op::Reshape, x.with_shape(vec![1, extents[r], extents[c]]), vec![Source::Step(ops.len() - 1)]));
        parts.push(Source::Step(ops.len() - 1));
    }
    ops.push((Op::Concatenate(0), x.with_shape(vec![count, extents[r], extents[c]]), parts));
}

/// Writes every transpose of `kernel` that [`lowered`] writes as its steps: nodes named after
/// it, at its position, the last one its value.
pub fn lower_kernel(kernel: &mut Kernel) {
    let plans: Vec<Option<Vec<Step>>> = kernel
        .nodes
        .iter()
        .enumerate()
        .map(|(k, n)| match &n.op {
            Op::Transpose(p) => {
                let x = &kernel.nodes[n.operands[0]];
                lowered(&x.ty, p, &n.ty, matches!(x.op, Op::Parameter(_)), kernel.written_out(k))
            }
            _ => None,
        })
        .collect();
    if plans.iter().all(Option::is_none) {
        return;
    }
    let mut nodes: Vec<KernelNode> = Vec::with_capacity(kernel.nodes.len());
    let mut new_index = vec![usize::MAX; kernel.nodes.len()];
    for (k, (node, plan)) in kernel.nodes.iter().zip(plans).enumerate() {
        let operands: Vec<usize> = node.operands.iter().map(|&o| new_index[o]).collect();
        match plan {
            None => nodes.push(KernelNode { operands, ..node.clone() }),
            Some(ops) => {
                let first = nodes.len();
                for (j, (op, ty, sources)) in ops.into_iter().enumerate() {
                    let operands = sources
                        .iter()
                        .map(|s| match *s {
                            Source::Operand => operands[0],
                            Source::Step(i) => first + i,
                        })
                        .collect();
                    nodes.push(KernelNode { name: format!("{}.{j}", node.name), op, ty, operands, ..node.clone() });
                }
            }
        }
        new_index[k] = nodes.len() - 1;
    }
    kernel.renumber(nodes, &new_index);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::parse_kernel;

    #[test]
    fn dimensions_of_one_element_drop_and_adjacent_runs_merge() {
        assert_eq!(merged(&[1, 16, 8, 8], &[0, 2, 3, 1]), (vec![16, 64], vec![1, 0]));
        assert_eq!(merged(&[16, 16, 3, 3], &[2, 3, 1, 0]), (vec![16, 16, 9], vec![2, 1, 0]));
        assert_eq!(merged(&[2, 1, 5], &[1, 0, 2]), (vec![10], vec![0]));
        assert_eq!(merged(&[4, 6, 8], &[0, 2, 1]), (vec![4, 6, 8], vec![0, 2, 1]));
    }

    #[test]
    fn each_step_puts_a_dimension_in_place() {
        // A matrix is one step; [O, I, S] to [S, I, O] turns [O, I] behind S, then O behind I.
        assert_eq!(steps(&[16, 64], &[1, 0]), vec![[1, 16, 64]]);
        assert_eq!(steps(&[16, 16, 9], &[2, 1, 0]), vec![[1, 256, 9], [9, 16, 16]]);
        assert_eq!(steps(&[2, 3, 4, 5], &[0, 3, 1, 2]), vec![[2, 12, 5]]);
        assert_eq!(steps(&[2, 3, 4, 5], &[3, 2, 1, 0]), vec![[1, 24, 5], [5, 6, 4], [20, 2, 3]]);
        assert!(steps(&[2, 3], &[0, 1]).is_empty());
    }

    #[test]
    fn a_transpose_that_moves_nothing_stays_as_written() {
        let text = "HloModule t\nENTRY e {\n  a = s8[4,6,8] parameter(0)\n  x = s8[4,6,8] negate(a)\n  \
                    y = s8[4,6,8] negate(a)\n  t = s8[4,6,8] transpose(x), dimensions={0,1,2}\n  \
                    ROOT s = s8[4,6,8] add(t, y)\n}\n";
        let k = parse_kernel(text, "t.hlo").expect("parses");
        let add = &k.nodes[k.root];
        assert_eq!(k.nodes[add.operands[0]].op, Op::Transpose(vec![0, 1, 2]));
        assert_eq!(k.nodes[k.nodes[add.operands[0]].operands[0]].name, "x");
    }

    /// The transposes of `kernel` after lowering: their operand shapes and permutations.
    fn transposes(text: &str) -> Vec<(Vec<i64>, Vec<usize>)> {
        let k = parse_kernel(text, "t.hlo").expect("parses");
        k.nodes
            .iter()
            .filter_map(|n| match &n.op {
                Op::Transpose(p) => Some((k.nodes[n.operands[0]].ty.shape.clone(), p.clone())),
                _ => None,
            })
            .collect()
    }

    /// A kernel transposing its input, or (`computed`) the input negated.
    fn kernel(shape: &str, out: &str, dims: &str, computed: bool) -> String {
        let x = if computed {
            format!("  a = s8[{shape}] parameter(0)\n  x = s8[{shape}] negate(a)\n")
        } else {
            format!("  x = s8[{shape}] parameter(0)\n")
        };
        format!("HloModule t\nENTRY e {{\n{x}  ROOT t = s8[{out}] transpose(x), dimensions={{{dims}}}\n}}\n")
    }

    #[test]
    fn a_channels_first_image_is_one_matrix_transposed() {
        for computed in [false, true] {
            assert_eq!(transposes(&kernel("1,16,8,8", "1,8,8,16", "0,2,3,1", computed)), vec![(vec![16, 64], vec![1, 0])]);
        }
    }

    #[test]
    fn a_computed_value_is_transposed_in_steps_and_an_input_window_by_window() {
        assert_eq!(
            transposes(&kernel("16,16,3,3", "3,3,16,16", "2,3,1,0", true)),
            vec![(vec![256, 9], vec![1, 0]), (vec![9, 16, 16], vec![0, 2, 1])]
        );
        // Of an input, each window position's [O, I] matrix (elements 9 apart) transposed.
        let k = parse_kernel(&kernel("16,16,3,3", "3,3,16,16", "2,3,1,0", false), "t.hlo").expect("parses");
        let slices: Vec<&Vec<(i64, i64, i64)>> =
            k.nodes.iter().filter_map(|n| if let Op::Slice(r) = &n.op { Some(r) } else { None }).collect();
        assert_eq!(slices.len(), 9);
        assert_eq!(slices[4], &vec![(0, 16, 1), (0, 16, 1), (4, 5, 1)]);
        assert_eq!(transposes(&kernel("16,16,3,3", "3,3,16,16", "2,3,1,0", false)), vec![(vec![16, 16], vec![1, 0]); 9]);
        assert!(matches!(k.nodes[k.root].op, Op::Reshape));
        assert_eq!(k.nodes[k.nodes[k.root].operands[0]].op, Op::Concatenate(0));
    }

    #[test]
    fn steps_and_transposes_that_keep_their_rows_stay_as_written() {
        assert_eq!(transposes(&kernel("16,64", "64,16", "1,0", false)), vec![(vec![16, 64], vec![1, 0])]);
        assert_eq!(transposes(&kernel("4,6,8", "4,8,6", "0,2,1", false)), vec![(vec![4, 6, 8], vec![0, 2, 1])]);
        // A batch of one is a matrix.
        assert_eq!(transposes(&kernel("1,6,8", "1,8,6", "0,2,1", true)), vec![(vec![6, 8], vec![1, 0])]);
        assert_eq!(transposes(&kernel("8,4,16", "4,8,16", "1,0,2", false)), vec![(vec![8, 4, 16], vec![1, 0, 2])]);
    }

    #[test]
    fn a_computed_batch_written_out_is_transposed_a_matrix_at_a_time() {
        // The kernel's result: two [16, 12] matrices, each transposed on its own; read by
        // something else, the batch stays one transpose.
        assert_eq!(transposes(&kernel("2,12,16", "2,16,12", "0,2,1", true)), vec![(vec![12, 16], vec![1, 0]); 2]);
        let read = kernel("2,12,16", "2,16,12", "0,2,1", true).replace("ROOT t", "t").replace("\n}", "\n  ROOT n = s8[2,16,12] negate(t)\n}");
        assert_eq!(transposes(&read), vec![(vec![2, 12, 16], vec![0, 2, 1])]);
    }

    #[test]
    fn a_transpose_of_dimensions_of_one_element_is_a_reshape() {
        let k = parse_kernel(&kernel("2,1,8", "1,2,8", "1,0,2", false), "t.hlo").expect("parses");
        assert_eq!(k.nodes[k.root].op, Op::Reshape);
        assert_eq!(k.nodes[k.root].ty.shape, vec![1, 2, 8]);
    }
}
