//! XLA's `reduce-window` in a kernel (pooling, cumulative sums): its window read, its type by
//! XLA's shape rule, and the reduction written as the operators instruction semantics contain,
//! so that selection sees strided windows of the operand and elementwise maxima or sums.
//!
//! Each output element folds the operand elements its window covers with the reducer,
//! starting from the init value, the window's positions in row-major order, positions that
//! fall in the padding or between the elements of a dilated operand left out: the order of
//! XLA's reference evaluation, each element folded into the running value in the order the
//! region writes them (which decides the zero a maximum of `+0` and `-0` keeps). Maxima and
//! minima are exact in it; a float sum is rounded in that order, which XLA's CPU run itself
//! reassociates at some shapes (JAX leaves the order of a reduction to XLA). Written so:
//! - the operand is seen as a matrix of pixels by features: the features are the trailing
//!   dimensions the window leaves whole (size and stride one, no padding or dilation; a
//!   pooling's channels), the pixels every dimension before them. Whole dimensions before
//!   one the window reads, but the first (a channels-first image's channels, not its batch),
//!   are first transposed last, and the result transposed back; where the operand is itself the transpose the other
//!   way (a channels-first convolution computed channels-last), its operand is read;
//! - the output is cut into pieces that each lie in one run of it, as a convolution's is
//!   (`convolution.rs`): an index of every windowed dimension but the last of more than one
//!   output, and a segment of that one cut where the window positions falling on the operand
//!   change at the padded borders;
//! - a piece folds, position by position, the rows of the matrix that position reads for the
//!   piece's outputs: every `stride`-th pixel from the first output's, a strided row window;
//! - the init value is left out where folding it in changes no value bit for bit (the lowest
//!   value under a maximum, the highest under a minimum, one under a product, `-0.0` or an
//!   integer zero under a sum); a float sum from `+0.0` adds it, as XLA does (`+0 + -0` is
//!   `+0`). Pieces no position of which falls on the operand are the init value.

use crate::convolution::{self, Step, Value, WindowDim, Writer};
use crate::infer::{Site, TypeError};
use crate::kernel::{Kernel, KernelNode};
use crate::lang::{DType, Op, Reducer, Ty};

/// How a reduce-window's region folds: the elementwise operator and which of its operands is
/// the running value (XLA applies the region to the running value and the next element;
/// `maximum(p1, p0)` takes them the other way round, which decides which zero a maximum of
/// `+0` and `-0` keeps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fold {
    pub reducer: Reducer,
    pub running_first: bool,
}

impl Fold {
    /// The attribute text a kernel's [`Op::Other`] keeps for it.
    pub fn attribute(self) -> String {
        let order = if self.running_first { "running_first" } else { "element_first" };
        format!("reducer={}, reducer_order={order}", self.reducer.table_name())
    }

    /// The fold an [`Op::Other`]'s attribute text names, or `None` where its region is no
    /// recognised reducer.
    pub fn of_attributes(attrs: &str) -> Option<Fold> {
        let reducer = match crate::lang::attribute(attrs, "reducer")? {
            "add" => Reducer::Add,
            "max" => Reducer::Max,
            "min" => Reducer::Min,
            "mul" => Reducer::Mul,
            _ => return None,
        };
        let running_first = crate::lang::attribute(attrs, "reducer_order")? == "running_first";
        Some(Fold { reducer, running_first })
    }

    fn op(self) -> Op {
        match self.reducer {
            Reducer::Add => Op::Add,
            Reducer::Max => Op::Maximum,
            Reducer::Min => Op::Minimum,
            Reducer::Mul => Op::Multiply,
        }
    }

    /// Whether folding `init` into any value gives that value bit for bit (integers of more
    /// than 32 bits are not told apart exactly as `f64`: never).
    fn leaves_unchanged(self, init: f64, dtype: DType) -> bool {
        if dtype.is_int() && dtype.bytes() > 4 {
            return false;
        }
        match self.reducer {
            Reducer::Max => init == lowest(dtype),
            Reducer::Min => init == -lowest(dtype) || (!dtype.is_float() && init == highest_int(dtype)),
            Reducer::Mul => init == 1.0,
            Reducer::Add => init == 0.0 && (!dtype.is_float() || init.is_sign_negative()),
        }
    }
}

/// The lowest value of `dtype`: minus infinity, or the least integer.
fn lowest(dtype: DType) -> f64 {
    if dtype.is_float() {
        f64::NEG_INFINITY
    } else if dtype.is_signed() {
        -(2f64.powi(8 * dtype.bytes() as i32 - 1))
    } else {
        0.0
    }
}

fn highest_int(dtype: DType) -> f64 {
    if dtype.is_signed() {
        2f64.powi(8 * dtype.bytes() as i32 - 1) - 1.0
    } else {
        2f64.powi(8 * dtype.bytes() as i32) - 1.0
    }
}

/// Reads a reduce-window's `window` (`attrs`, the `name=value, ...` text an [`Op::Other`]
/// keeps) over an operand of rank `rank`: one entry per dimension, no reversal.
pub fn read(attrs: &str, rank: usize) -> Result<Vec<WindowDim>, TypeError> {
    let text = crate::lang::attribute(attrs, "window").ok_or_else(|| TypeError {
        code: "missing-attribute",
        site: Site::Opcode,
        message: "reduce-window needs the attribute window={size=...}".into(),
    })?;
    let dims = convolution::window_dims(text, rank, "dimension")?;
    if dims.iter().any(|d| d.reversal) {
        return Err(TypeError {
            code: "bad-attribute",
            site: Site::Attr("window"),
            message: format!("window {text}: a reduce-window's window is not reversed (rhs_reversal)"),
        });
    }
    Ok(dims)
}

/// XLA's type of a reduce-window of `operand` (whose init is a scalar of its element type):
/// each dimension's size the window's output over it.
pub fn result_type(window: &[WindowDim], operand: &Ty) -> Ty {
    operand.with_shape(window.iter().zip(&operand.shape).map(|(w, &n)| w.output(n)).collect())
}

/// A window position that leaves its dimension as it is.
const ONE: WindowDim = WindowDim { size: 1, stride: 1, low: 0, high: 0, lhs_dilate: 1, rhs_dilate: 1, reversal: false };

/// Whether the window leaves a dimension as it is.
fn whole(w: &WindowDim) -> bool {
    w.size == 1 && w.stride == 1 && w.low == 0 && w.high == 0 && w.lhs_dilate == 1
}

/// The reduce-window of `x` (`Value::Input(0)`) from the scalar `Value::Input(1)` as steps
/// (the last one's value is the result, of type `ty`), or `None` where it is not written so
/// (an empty dimension). `init_unchanging`: folding the init value in changes nothing
/// ([`Fold`]), so that the first element of a window starts the fold.
pub fn lower(window: &[WindowDim], fold: Fold, x: &Ty, ty: &Ty, init_unchanging: bool) -> Option<Vec<Step>> {
    if x.shape.contains(&0) || ty.shape.contains(&0) || window.len() != x.rank() {
        return None;
    }
    let mut w = Writer::default();
    // Where the window reads the last dimension, those it leaves whole but the first (a
    // batch) are moved last, after the ones it reads (a channels-first image's channels):
    // the operand is transposed so, reduced, and its result transposed back.
    let lead = usize::from(window.first().is_some_and(whole));
    let mut order: Vec<usize> = (0..lead).collect();
    if window.last().is_some_and(whole) {
        order.extend(lead..x.rank());
    } else {
        order.extend((lead..x.rank()).filter(|&d| !whole(&window[d])));
        order.extend((lead..x.rank()).filter(|&d| whole(&window[d])));
    }
    let (x, ty) = (&x.permuted(&order), &ty.permuted(&order));
    let window: Vec<WindowDim> = order.iter().map(|&d| window[d]).collect();
    let window = window.as_slice();
    let operand = w.transpose(Value::Input(0), &x.permuted(&crate::lang::inverse_permutation(&order)), &order);
    // Dimensions 0..t are the pixels', t.. the features'.
    let t = x.rank() - window.iter().rev().take_while(|w| whole(w)).count();
    let features: i64 = x.shape[t..].iter().product();
    let inputs = &x.shape[..t];
    let outputs = &ty.shape[..t];
    let pixels = Ty::new(x.dtype, vec![inputs.iter().product(), features]);
    let matrix = w.reshape(operand, x, pixels.shape.clone());
    let along = (0..t).rev().find(|&d| outputs[d] > 1).or(t.checked_sub(1));
    // Outputs `first..end` along `along` whose window positions on the operand agree; one at
    // a time along a dilated operand, whose outputs read the elements of some positions only.
    let segments: Vec<(i64, i64)> = match along {
        None => vec![(0, 1)],
        Some(a) => {
            let wd = &window[a];
            let cut = wd.segments(wd.dilated(inputs[a]), outputs[a]);
            if wd.lhs_dilate > 1 {
                cut.iter().flat_map(|&(first, end, _)| (first..end).map(|o| (o, o + 1))).collect()
            } else {
                cut.iter().map(|&(first, end, _)| (first, end)).collect()
            }
        }
    };
    // The pixels apart of an output's and the next one's along `along`.
    let stride = along.map_or(1, |a| window[a].stride * inputs[a + 1..].iter().product::<i64>());
    let positions: i64 = window[..t].iter().map(|wd| wd.size).product();
    let mut inits: Vec<(i64, Value)> = Vec::new();
    let mut pieces: Vec<(Value, Ty)> = Vec::new();
    // Every index of the windowed dimensions before `along` (those after it have one output).
    let rows: i64 = along.map_or(1, |a| outputs[..a].iter().product());
    for row in 0..rows {
        let mut at = vec![0; t];
        let mut rest = row;
        for d in (0..along.unwrap_or(0)).rev() {
            at[d] = rest % outputs[d];
            rest /= outputs[d];
        }
        // A piece whose every `stride`-th pixel, read as the first of each group of `stride`,
        // would take a group past the operand's last pixel: its last output on its own (a
        // strided load reads whole groups).
        let mut cut = Vec::with_capacity(segments.len());
        for &(first, end) in &segments {
            let mut last_at = at.clone();
            if let Some(a) = along {
                last_at[a] = first;
            }
            let past = (0..positions).any(|p| {
                pixel_of(window, inputs, &last_at, p)
                    .is_some_and(|px| convolution::strided_rows_run_past(px, end - first, stride, pixels.shape[0]))
            });
            if past {
                cut.extend([(first, end - 1), (end - 1, end)]);
            } else {
                cut.push((first, end));
            }
        }
        for &(first, end) in &cut {
            if let Some(a) = along {
                at[a] = first;
            }
            let count = end - first;
            let piece_ty = Ty::new(x.dtype, vec![count, features]);
            let mut running: Option<Value> = None;
            for p in 0..positions {
                let Some(pixel) = pixel_of(window, inputs, &at, p) else { continue };
                let step = if count == 1 { 1 } else { stride };
                let ranges = vec![(pixel, pixel + (count - 1) * step + 1, step), (0, features, 1)];
                let (element, _) = w.slice(matrix, &pixels, ranges);
                running = Some(match running {
                    None if init_unchanging => element,
                    None => {
                        let init = init_of(&mut w, &mut inits, &piece_ty);
                        combine(&mut w, fold, &piece_ty, init, element)
                    }
                    Some(r) => combine(&mut w, fold, &piece_ty, r, element),
                });
            }
            let value = match running {
                Some(v) => v,
                None => init_of(&mut w, &mut inits, &piece_ty),
            };
            let flat = vec![piece_ty.elements()];
            pieces.push((w.reshape(value, &piece_ty, flat.clone()), piece_ty.with_shape(flat)));
        }
    }
    let (all, all_ty) = w.concatenate(pieces, 0);
    let result = w.reshape(all, &all_ty, ty.shape.clone());
    w.transpose(result, ty, &crate::lang::inverse_permutation(&order));
    Some(w.steps)
}

/// The operand pixel window position `p` (row-major over the window) reads for the output at
/// `at`, or `None` where it falls in the padding or between a dilated operand's elements.
fn pixel_of(window: &[WindowDim], inputs: &[i64], at: &[i64], p: i64) -> Option<i64> {
    let mut pos = vec![0; inputs.len()];
    let mut rest = p;
    for d in (0..inputs.len()).rev() {
        pos[d] = rest % window[d].size;
        rest /= window[d].size;
    }
    let mut pixel = 0;
    for d in 0..inputs.len() {
        pixel = pixel * inputs[d] + window[d].element_of(at[d], pos[d], inputs[d])?;
    }
    Some(pixel)
}

/// The running value and the next element folded, in the region's order.
fn combine(w: &mut Writer, fold: Fold, ty: &Ty, running: Value, element: Value) -> Value {
    let operands = if fold.running_first { vec![running, element] } else { vec![element, running] };
    w.push(fold.op(), ty.clone(), operands)
}

/// The init value broadcast over a piece of `ty`, written once per piece length.
fn init_of(w: &mut Writer, inits: &mut Vec<(i64, Value)>, ty: &Ty) -> Value {
    if let Some(&(_, v)) = inits.iter().find(|(n, _)| *n == ty.shape[0]) {
        return v;
    }
    let v = w.push(Op::Broadcast(Vec::new()), ty.clone(), vec![Value::Input(1)]);
    inits.push((ty.shape[0], v));
    v
}

/// Writes every reduce-window of the kernel whose region is a recognised reducer, and every
/// float maximum or minimum `reduce` over dimensions before the last (a pooling written as a
/// reshape and a reduction), as the operators of [`lower`], in its place.
pub fn lower_kernel(kernel: &mut Kernel) {
    let is_window = |n: &KernelNode| match &n.op {
        Op::Other { name, .. } => name == "reduce-window",
        Op::Reduce { reducer, .. } => matches!(reducer, Reducer::Max | Reducer::Min) && n.ty.dtype.is_float(),
        _ => false,
    };
    if !kernel.nodes.iter().any(is_window) {
        return;
    }
    let mut nodes: Vec<KernelNode> = Vec::with_capacity(kernel.nodes.len());
    let mut new_index: Vec<usize> = vec![usize::MAX; kernel.nodes.len()];
    // Transposes of operands looked through (by the new indices).
    let mut looked_through = Vec::new();
    for (k, node) in kernel.nodes.iter().enumerate() {
        let operands: Vec<usize> = node.operands.iter().map(|&o| new_index[o]).collect();
        let steps = match &node.op {
            Op::Other { name, attrs } if name == "reduce-window" && operands.len() == 2 => {
                let x = &nodes[operands[0]].ty;
                let init = splat(&nodes[operands[1]]);
                Fold::of_attributes(attrs).zip(read(attrs, x.rank()).ok()).and_then(|(fold, window)| {
                    let unchanging = init.is_some_and(|v| fold.leaves_unchanged(v, x.dtype));
                    lower(&window, fold, x, &node.ty, unchanging)
                })
            }
            // A float maximum or minimum over dimensions before the last: the fold of a
            // window as large as the reduced dimensions (their order is XLA's reference one;
            // no rule computes other float reductions by other operations).
            Op::Reduce { dims, reducer: reducer @ (Reducer::Max | Reducer::Min) } if operands.len() == 2 => {
                let x = &nodes[operands[0]].ty;
                let last = x.rank().saturating_sub(1);
                let init = splat(&nodes[operands[1]]);
                (x.dtype.is_float() && x.rank() >= 2 && !dims.contains(&last))
                    .then(|| {
                        let window: Vec<WindowDim> = (0..x.rank())
                            .map(|d| WindowDim { size: if dims.contains(&d) { x.shape[d] } else { 1 }, ..ONE })
                            .collect();
                        let fold = Fold { reducer: *reducer, running_first: true };
                        let unchanging = init.is_some_and(|v| fold.leaves_unchanged(v, x.dtype));
                        let mut steps = lower(&window, fold, x, &result_type(&window, x), unchanging)?;
                        let value = Value::Step(steps.len() - 1);
                        steps.push(Step { op: Op::Reshape, ty: node.ty.clone(), operands: vec![value] });
                        Some(steps)
                    })
                    .flatten()
            }
            _ => None,
        };
        let Some(steps) = steps else {
            nodes.push(KernelNode { operands, ..node.clone() });
            new_index[k] = nodes.len() - 1;
            continue;
        };
        // A transpose that undoes the one its operand is (a channels-first convolution's
        // result, transposed back from channels-last) is that one's operand.
        let undone = |step: &Step, args: &[usize], nodes: &[KernelNode]| match (&step.op, args) {
            (Op::Transpose(order), [arg]) => match &nodes[*arg].op {
                Op::Transpose(before) if order.iter().enumerate().all(|(j, &d)| before[d] == j) => {
                    looked_through.push(*arg);
                    Some(nodes[*arg].operands[0])
                }
                _ => None,
            },
            _ => None,
        };
        new_index[k] = convolution::splice(&mut nodes, node, steps, &operands, &new_index, undone);
        debug_assert_eq!(nodes[new_index[k]].ty, node.ty);
    }
    kernel.renumber(nodes, &new_index);
    // Transposes nothing else reads are gone with the windowed reductions.
    kernel.drop_unread(looked_through);
}

/// The one value of a splat constant node (a reduction's init value), if it is one.
fn splat(node: &KernelNode) -> Option<f64> {
    match &node.op {
        Op::Constant(lit) => lit.splat(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(text: &str, rank: usize) -> Vec<WindowDim> {
        read(&format!("window={text}"), rank).expect("a window")
    }

    const MAX: Fold = Fold { reducer: Reducer::Max, running_first: true };

    #[test]
    fn the_result_type_is_xlas() {
        let x = Ty::new(DType::F32, vec![1, 8, 8, 16]);
        let w = window("{size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}", 4);
        assert_eq!(result_type(&w, &x).shape, vec![1, 4, 4, 16]);
        let cumsum = window("{size=1x8 pad=0_0x7_0}", 2);
        assert_eq!(result_type(&cumsum, &Ty::new(DType::BF16, vec![4, 8])).shape, vec![4, 8]);
    }

    #[test]
    fn a_window_is_one_entry_per_dimension_and_not_reversed() {
        let wrong = read("window={size=2x2}", 4).expect_err("two entries for four dimensions");
        assert_eq!((wrong.code, wrong.site), ("bad-attribute", Site::Attr("window")));
        let reversed = read("window={size=2 rhs_reversal=1}", 1).expect_err("reversed");
        assert!(reversed.message.contains("rhs_reversal"), "{}", reversed.message);
        assert_eq!(read("to_apply=max", 1).expect_err("no window").code, "missing-attribute");
    }

    #[test]
    fn only_an_init_that_changes_nothing_is_left_out() {
        let add = Fold { reducer: Reducer::Add, running_first: true };
        assert!(MAX.leaves_unchanged(f64::NEG_INFINITY, DType::F32));
        assert!(MAX.leaves_unchanged(-128.0, DType::S8));
        assert!(!MAX.leaves_unchanged(0.0, DType::F32));
        assert!(add.leaves_unchanged(-0.0, DType::F32));
        assert!(!add.leaves_unchanged(0.0, DType::F32), "+0 + -0 is +0");
        assert!(add.leaves_unchanged(0.0, DType::S32));
        let min = Fold { reducer: Reducer::Min, ..MAX };
        assert!(min.leaves_unchanged(127.0, DType::S8) && min.leaves_unchanged(f64::INFINITY, DType::BF16));
        assert!(min.leaves_unchanged(255.0, DType::U8) && !min.leaves_unchanged(127.0, DType::U8));
    }

    #[test]
    fn the_region_order_survives_the_attribute_text() {
        let swapped = Fold { reducer: Reducer::Min, running_first: false };
        let attrs = format!("window={{size=2}}, {}", swapped.attribute());
        assert_eq!(Fold::of_attributes(&attrs), Some(swapped));
        assert_eq!(Fold::of_attributes("window={size=2}, to_apply=region"), None);
    }

    type Ranges = Vec<(i64, i64, i64)>;

    /// The slices a lowering reads, in order, and how many folds it writes.
    fn slices_and_folds(steps: &[Step]) -> (Vec<Ranges>, usize) {
        let slices = steps.iter().filter_map(|s| match &s.op {
            Op::Slice(r) => Some(r.clone()),
            _ => None,
        });
        let folds = steps.iter().filter(|s| s.op == Op::Maximum || s.op == Op::Add).count();
        (slices.collect(), folds)
    }

    #[test]
    fn a_pooling_folds_strided_rows_of_pixels_by_channels() {
        // 2x2 max pooling, stride 2, of an 8x8 image of 16 channels: per output row, four
        // windows of every second pixel (each of the 16 channels), three maxima. The last
        // row's last window position, read as the first pixel of each pair, would read a pair
        // past the image: that row's last output is a piece of its own.
        let x = Ty::new(DType::F32, vec![1, 8, 8, 16]);
        let w = window("{size=1x2x2x1 stride=1x2x2x1}", 4);
        let ty = result_type(&w, &x);
        let steps = lower(&w, MAX, &x, &ty, true).expect("lowered");
        let (slices, folds) = slices_and_folds(&steps);
        assert_eq!(slices.len(), 3 * 4 + 2 * 4);
        assert_eq!(folds, 3 * 3 + 2 * 3);
        assert!(slices.iter().all(|r| r[0].0 + (r[0].1 - r[0].0 + r[0].2 - 1) / r[0].2 * r[0].2 <= 64), "{slices:?}");
        assert_eq!(slices[12], vec![(48, 53, 2), (0, 16, 1)]);
        assert_eq!(slices[19], vec![(63, 64, 1), (0, 16, 1)]);
        assert_eq!(slices[0], vec![(0, 7, 2), (0, 16, 1)]);
        assert_eq!(slices[1], vec![(1, 8, 2), (0, 16, 1)]);
        assert_eq!(slices[2], vec![(8, 15, 2), (0, 16, 1)]);
        assert_eq!(slices[4], vec![(16, 23, 2), (0, 16, 1)], "the second output row");
        assert_eq!(steps.last().map(|s| &s.ty), Some(&ty));
    }

    #[test]
    fn padded_positions_are_left_out_and_the_output_is_cut_where_they_change() {
        // A 3-wide window of stride 1 padded by one on each side over 6 elements of 4
        // features: the first and last outputs read two positions, the four between three.
        let x = Ty::new(DType::S32, vec![6, 4]);
        let w = window("{size=3x1 pad=1_1x0_0}", 2);
        let ty = result_type(&w, &x);
        assert_eq!(ty.shape, vec![6, 4]);
        let steps = lower(&w, MAX, &x, &ty, true).expect("lowered");
        let (slices, folds) = slices_and_folds(&steps);
        assert_eq!(
            slices,
            vec![
                vec![(0, 1, 1), (0, 4, 1)],
                vec![(1, 2, 1), (0, 4, 1)],
                vec![(0, 4, 1), (0, 4, 1)],
                vec![(1, 5, 1), (0, 4, 1)],
                vec![(2, 6, 1), (0, 4, 1)],
                vec![(4, 5, 1), (0, 4, 1)],
                vec![(5, 6, 1), (0, 4, 1)],
            ]
        );
        assert_eq!(folds, 1 + 2 + 1);
    }

    #[test]
    fn an_init_that_changes_values_starts_the_fold_in_the_regions_order() {
        let x = Ty::new(DType::F32, vec![4, 16]);
        let w = window("{size=2x1 stride=2x1}", 2);
        let ty = result_type(&w, &x);
        let sum = Fold { reducer: Reducer::Add, running_first: false };
        let steps = lower(&w, sum, &x, &ty, false).expect("lowered");
        let broadcast = steps.iter().position(|s| matches!(s.op, Op::Broadcast(_))).expect("the init broadcast");
        let first_add = steps.iter().find(|s| s.op == Op::Add).expect("an add");
        // The element first, the running value (the init) second, as the region writes them.
        assert_eq!(first_add.operands[1], Value::Step(broadcast));
        assert_eq!(steps[broadcast].operands, vec![Value::Input(1)]);
    }

    #[test]
    fn a_channels_first_pooling_reduces_the_image_transposed_channels_last() {
        let x = Ty::new(DType::F32, vec![2, 16, 8, 8]);
        let w = window("{size=1x1x2x2 stride=1x1x2x2}", 4);
        let ty = result_type(&w, &x);
        let steps = lower(&w, MAX, &x, &ty, true).expect("lowered");
        assert_eq!(steps[0].op, Op::Transpose(vec![0, 2, 3, 1]));
        assert_eq!(steps[0].ty.shape, vec![2, 8, 8, 16]);
        let last = steps.last().expect("steps");
        assert_eq!((&last.op, &last.ty), (&Op::Transpose(vec![0, 3, 1, 2]), &ty));
        // Pixels by 16 channels: every second pixel.
        let (slices, _) = slices_and_folds(&steps);
        assert_eq!(slices[0], vec![(0, 7, 2), (0, 16, 1)]);
    }

    #[test]
    fn a_float_maximum_over_leading_dimensions_is_a_fold_and_others_are_kept() {
        let kernel = |ty: &str, dims: &str, out: &str| {
            let text = format!(
                "HloModule m\n\nmax {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
                 ROOT c = {ty}[] maximum(a, b)\n}}\n\nENTRY e {{\n  x = {ty}[4,2,16] parameter(0)\n  \
                 low = {ty}[] constant(-128)\n  ROOT r = {ty}{out} reduce(x, low), dimensions={{{dims}}}, to_apply=max\n}}\n"
            );
            crate::kernel::parse_kernel(&text, "k.hlo").expect("a valid kernel")
        };
        let reduces = |k: &Kernel| k.nodes.iter().any(|n| matches!(n.op, Op::Reduce { .. }));
        let folded = kernel("f32", "1", "[4,16]");
        assert!(!reduces(&folded));
        // -128 is no float's lowest value: folded in first, then the two rows; in two pieces
        // (the second row of the last item, read as the first of a pair, has no pair).
        assert_eq!(folded.nodes.iter().filter(|n| n.op == Op::Maximum).count(), 2 * 2);
        assert!(reduces(&kernel("f32", "2", "[4,2]")), "over the last dimension");
        assert!(reduces(&kernel("s8", "1", "[4,16]")), "integers keep their reductions");
    }

    #[test]
    fn a_window_of_one_element_is_the_operand() {
        let x = Ty::new(DType::S8, vec![4, 16]);
        let w = window("{size=1x1}", 2);
        let steps = lower(&w, MAX, &x, &x, true).expect("lowered");
        assert!(steps.iter().all(|s| s.op == Op::Reshape), "{steps:?}");
        assert_eq!(steps[0].operands, vec![Value::Input(0)]);
        assert_eq!(steps.last().map(|s| &s.ty), Some(&x));
    }
}
