//! Convolutions and windowed reductions (pooling) too large for one search, in bands of
//! output rows.
//!
//! A windowed operator's output rows read overlapping rows of its input, and those near the
//! borders read padding, so its blocks are not the equal, disjoint parts [`crate::partition`]
//! splits a kernel into. Here the output rows of each batch item are cut into bands of `rows`
//! rows: a band's kernel is the operator over the input rows it reads, padded only where the
//! whole operator is (the first and last bands), followed by the kernel's elementwise work on
//! those rows. Bands of the same kernel (every band inside the borders) compile once; each
//! run of a band's program is moved to its rows of the input, of inputs read alike (an
//! addend of the output's shape) and of the output, as a block's is
//! ([`crate::partition::moved_runs`]).
//!
//! Only a kernel of one such operator is banded: its input a kernel parameter whose batch and
//! first spatial dimension lead (`b0...`, as the output's; a reduce-window's window leaving
//! the batch whole), everything that depends on the operator elementwise work over its
//! output's shape, with values that do not vary along the rows (scalars, broadcasts along
//! them) or parameters read alike.

use crate::convolution::{self, WindowDim};
use crate::kernel::{Kernel, KernelNode};
use crate::lang::{Op, Ty};

/// One kernel of the bands and where each of its runs lies.
#[derive(Debug, Clone)]
pub struct Band {
    /// The band's kernel, convolutions written as products and constants folded.
    pub kernel: Kernel,
    /// Per run, in the order they run: the bytes from the start of each kernel parameter to
    /// the run's part of it (0 for a parameter read whole), then from the start of the
    /// result to the run's rows of it.
    pub runs: Vec<Vec<i64>>,
}

/// A convolution kernel in bands.
#[derive(Debug, Clone)]
pub struct Bands {
    /// The distinct band kernels, in the order their first runs come.
    pub bands: Vec<Band>,
    /// Output rows per band (the last band of an item may have fewer).
    pub rows: i64,
    /// Bands per batch item, and batch items.
    pub per_item: i64,
    pub items: i64,
}

impl Bands {
    /// How many runs in all.
    pub fn runs(&self) -> usize {
        self.bands.iter().map(|b| b.runs.len()).sum()
    }
}

/// What a banded kernel is made of.
struct Shape {
    /// The windowed operator (a convolution or a reduce-window).
    conv: usize,
    /// Its window, and the index in it of the dimension bands cut (the input's second).
    window: Vec<WindowDim>,
    rows: usize,
    /// The parameter the convolution reads its input from.
    input: usize,
    /// Per node: whether its rows are a band's (it depends on the convolution, or is an
    /// input read alike, or a value broadcast along the rows that only those use).
    banded: Vec<bool>,
}

/// The share of a block's tiles a band holds. A convolution's pieces are many small products,
/// each with its slices: its e-graph grows faster with its tiles than a product's. Measured on
/// a 1x32x32x64 3x3 convolution on Gemmini (each band searched to its node limit): bands of
/// the whole share (6 rows) took 36 s and ran 16,248 instructions; of a third (2 rows) 13 s
/// and 16,928; of one row 6.9 s and 17,992.
const BAND_SHARE: usize = 3;

/// The share for a pooling whose windows overlap along the rows bands cut: each band reads
/// again the input rows it shares with the next, so larger bands run fewer instructions, and
/// a pooling's pieces (maxima of slices, no products) grow its e-graph less than a
/// convolution's. Measured on the Registers test accelerator, 3x3 SAME max poolings, bands
/// of a third against bands of the whole share: at stride 1, 1x8x8x16 652 instructions in
/// 1.2 s against 521 in 1.5 s (505 whole, 0.7 s), 1x16x16x16 2,836 in 3.3 s against 2,441 in
/// 1.9 s, 2x12x12x32 6,208 in 3.4 s against 5,412 in 3.2 s; at stride 2, 1x8x8x64 836 in
/// 1.8 s against 740 in 1.2 s. Poolings whose windows do not overlap (2x2 at stride 2) run
/// the same instructions in any bands, and faster in smaller ones.
const OVERLAPPING_POOLING_BAND_SHARE: usize = 1;

/// The kernel `kernel` (as written: convolutions whole; `whole` is it with them written as
/// products) in bands of the most rows whose kernel has at most a [`BAND_SHARE`] of
/// `max_tiles` tiles as `tiles` counts them (on a kernel with its convolutions written as
/// products); `None` where it is no banded kernel or fits one search whole.
pub fn plan(kernel: &Kernel, whole: &Kernel, tiles: impl Fn(&Kernel) -> usize, max_tiles: usize) -> Option<Bands> {
    let shape = shape(kernel)?;
    let w = &shape.window[shape.rows];
    let pooling = matches!(&kernel.nodes[shape.conv].op, Op::Other { name, .. } if name == "reduce-window");
    let overlapping = (w.size - 1) * w.rhs_dilate + 1 > w.stride;
    let budget = max_tiles / if pooling && overlapping { OVERLAPPING_POOLING_BAND_SHARE } else { BAND_SHARE };
    // Every operation counts one tile at least, as `partition::plan` counts them: a kernel is
    // searched whole where its tiles beyond that are within a band's share, unless its
    // operations alone are more than one search is given (a depthwise convolution's pieces:
    // a product of one column for each feature; 1x8x8x32 by 3x3 ran into its node limit for
    // 55 s and 1.8 GB whole, 6,009 instructions; in 8 bands 10 s and 530 MB, 7,466).
    let counted = tiles(whole);
    if counted <= budget + whole.nodes.len() && counted <= max_tiles {
        return None;
    }
    let out = &kernel.nodes[shape.conv].ty;
    let (items, out_rows) = (out.shape[0], out.shape[1]);
    let band_tiles = |rows: i64| -> Option<usize> {
        // A band inside the borders where there is one: the most a band holds.
        let first = (out_rows - rows).min(w.low.max(0) / w.stride + 1).max(0);
        Some(tiles(&band_kernel(kernel, &shape, first, rows)?))
    };
    let one = band_tiles(1)?.max(1);
    let mut rows = i64::try_from(budget / one).ok()?.clamp(1, out_rows);
    while rows > 1 && band_tiles(rows)? > budget {
        rows -= 1;
    }
    if rows == out_rows && items == 1 {
        return None;
    }
    let per_item = (out_rows + rows - 1) / rows;
    let (x, result) = (&kernel.params[shape.input], &kernel.outputs[0]);
    let input_row = x.shape[2..].iter().product::<i64>() * i64::from(x.dtype.bytes());
    let output_row = result.shape[2..].iter().product::<i64>() * i64::from(result.dtype.bytes());
    let mut bands: Vec<(Vec<i64>, Band)> = Vec::new();
    for item in 0..items {
        for j in 0..per_item {
            let first = j * rows;
            let count = rows.min(out_rows - first);
            let (start, key) = geometry(&shape.window[shape.rows], x.shape[1], first, count)?;
            let mut offsets: Vec<i64> = Vec::with_capacity(kernel.params.len() + 1);
            for (p, ty) in kernel.params.iter().enumerate() {
                let node = kernel.param_nodes[p];
                offsets.push(if p == shape.input {
                    (item * x.shape[1] + start) * input_row
                } else if shape.banded[node] {
                    (item * ty.shape[1] + first) * ty.shape[2..].iter().product::<i64>() * i64::from(ty.dtype.bytes())
                } else {
                    0
                });
            }
            offsets.push((item * result.shape[1] + first) * output_row);
            match bands.iter_mut().find(|(k, _)| *k == key) {
                Some((_, band)) => band.runs.push(offsets),
                None => {
                    let band = Band { kernel: band_kernel(kernel, &shape, first, count)?, runs: vec![offsets] };
                    bands.push((key, band));
                }
            }
        }
    }
    Some(Bands { bands: bands.into_iter().map(|(_, b)| b).collect(), rows, per_item, items })
}

/// The first input row output rows `[first, first + count)` read, and what makes their band's
/// kernel: its input rows, the padding before and after them, its output rows. The window
/// reads rows `[begin, end)` of the input dilated by `lhs_dilate` (rows of it `lhs_dilate`
/// apart, zeros between): the band's input is the rows of the input among them, its padding
/// the rest of them before the first and after the last.
fn geometry(w: &WindowDim, input_rows: i64, first: i64, count: i64) -> Option<(i64, Vec<i64>)> {
    let d = w.lhs_dilate;
    let begin = first * w.stride - w.low;
    let end = (first + count - 1) * w.stride + (w.size - 1) * w.rhs_dilate - w.low + 1;
    let start = (begin.max(0) + d - 1) / d;
    let stop = ((end.min((input_rows - 1) * d + 1) - 1).div_euclid(d) + 1).max(start);
    (stop > start).then(|| (start, vec![stop - start, start * d - begin, end - ((stop - 1) * d + 1), count]))
}

/// Whether `kernel` is a banded kernel, and its parts.
fn shape(kernel: &Kernel) -> Option<Shape> {
    if kernel.results.len() != 1 {
        return None;
    }
    let mut convs = (0..kernel.nodes.len()).filter(|&k| windowed(&kernel.nodes[k]));
    let conv = convs.next()?;
    if convs.next().is_some() {
        return None;
    }
    let node = &kernel.nodes[conv];
    let Op::Other { name, attrs } = &node.op else { return None };
    let lhs = node.operands[0];
    let (window, rows) = if name == "convolution" {
        let spec = convolution::read(attrs, &kernel.nodes[lhs].ty, &kernel.nodes[node.operands[1]].ty).ok()?;
        let leading = |l: &convolution::Layout| l.batch == 0 && l.spatial.first() == Some(&1);
        if !leading(&spec.lhs) || !leading(&spec.out) || spec.batch_groups != 1 {
            return None;
        }
        (spec.window, 0)
    } else {
        // The batch whole; bands cut the dimension after it.
        let window = crate::reduce_window::read(attrs, kernel.nodes[lhs].ty.rank()).ok()?;
        let b = window.first()?;
        if node.ty.rank() < 3 || (b.size, b.stride, b.low, b.high, b.lhs_dilate) != (1, 1, 0, 0, 1) {
            return None;
        }
        (window, 1)
    };
    let Op::Parameter(input) = kernel.nodes[lhs].op else { return None };
    let out = node.ty.shape.clone();
    let n = kernel.nodes.len();
    // What depends on the input parameter, and on the convolution.
    let mut on_input = vec![false; n];
    let mut after = vec![false; n];
    on_input[lhs] = true;
    for k in 0..n {
        let ops = &kernel.nodes[k].operands;
        on_input[k] |= ops.iter().any(|&o| on_input[o]);
        after[k] = k == conv || ops.iter().any(|&o| after[o]);
    }
    // The input is read by the convolution alone.
    if (0..n).any(|k| on_input[k] && k != lhs && !after[k]) || kernel.nodes.iter().enumerate().any(|(k, nd)| k != conv && nd.operands.contains(&lhs)) {
        return None;
    }
    let root = kernel.results[0];
    if !after[root] {
        return None;
    }
    let mut banded = after.clone();
    for k in (0..n).filter(|&k| after[k] && k != conv) {
        let nd = &kernel.nodes[k];
        if nd.ty.shape != out || !convolution::elementwise(&nd.op) {
            return None;
        }
        for &o in &nd.operands {
            let operand = &kernel.nodes[o];
            if after[o] || operand.ty.rank() == 0 {
                continue;
            }
            let along_rows = match &operand.op {
                Op::Parameter(_) => operand.ty.shape == out,
                // One value along the batch and the rows: the same in every band.
                Op::Broadcast(dims) => {
                    let from = &kernel.nodes[operand.operands[0]].ty.shape;
                    operand.ty.shape == out && dims.iter().zip(from).all(|(&d, &size)| d > 1 || size == 1)
                }
                Op::Constant(literal) => operand.ty.shape == out && literal.splat().is_some(),
                _ => false,
            };
            if !along_rows {
                return None;
            }
            banded[o] = true;
        }
    }
    // A value of a band's rows is used only by the band's elementwise work.
    for (k, nd) in kernel.nodes.iter().enumerate() {
        if !after[k] && nd.operands.iter().any(|&o| banded[o] && !after[o]) {
            return None;
        }
    }
    Some(Shape { conv, window, rows, input, banded })
}

/// Whether a node is an operator bands cut: a convolution, or a reduce-window of a recognised
/// reducer (which `reduce_window::lower_kernel` writes out).
fn windowed(node: &KernelNode) -> bool {
    match &node.op {
        Op::Other { name, attrs } => {
            name == "convolution" || (name == "reduce-window" && crate::reduce_window::Fold::of_attributes(attrs).is_some())
        }
        _ => false,
    }
}

/// The kernel of output rows `[first, first + count)` of one batch item.
fn band_kernel(kernel: &Kernel, shape: &Shape, first: i64, count: i64) -> Option<Kernel> {
    let x = &kernel.params[shape.input];
    let (_, key) = geometry(&shape.window[shape.rows], x.shape[1], first, count)?;
    let (rows_in, low, high) = (key[0], key[1], key[2]);
    let band = |ty: &Ty, rows: i64| {
        let mut s = ty.shape.clone();
        s[0] = 1;
        s[1] = rows;
        ty.with_shape(s)
    };
    let mut window = shape.window.clone();
    window[shape.rows].low = low;
    window[shape.rows].high = high;
    let mut nodes = kernel.nodes.clone();
    for (k, node) in nodes.iter_mut().enumerate() {
        if k == kernel.param_nodes[shape.input] {
            node.ty = band(&node.ty, rows_in);
        } else if k == shape.conv {
            let Op::Other { name, attrs } = &node.op else { return None };
            node.op = Op::Other { name: name.clone(), attrs: with_window(attrs, &window) };
            node.ty = band(&node.ty, count);
        } else if shape.banded[k] {
            node.ty = band(&node.ty, count);
        }
    }
    let params: Vec<Ty> = kernel.param_nodes.iter().map(|&k| nodes[k].ty.clone()).collect();
    let outputs: Vec<Ty> = kernel.results.iter().map(|&k| nodes[k].ty.clone()).collect();
    let band = crate::kernel::lowered(Kernel { params, outputs, nodes, ..kernel.clone() });
    // Written out (as products, or folds), or not banded at all.
    (!band.nodes.iter().any(windowed)).then_some(band)
}

/// `attrs` (the `name=value, ...` text a convolution or a reduce-window keeps) with its window
/// written as `window`.
fn with_window(attrs: &str, window: &[WindowDim]) -> String {
    let join = |f: &dyn Fn(&WindowDim) -> String| window.iter().map(f).collect::<Vec<_>>().join("x");
    let text = format!(
        "{{size={} stride={} pad={} lhs_dilate={} rhs_dilate={} rhs_reversal={}}}",
        join(&|w| w.size.to_string()),
        join(&|w| w.stride.to_string()),
        join(&|w| format!("{}_{}", w.low, w.high)),
        join(&|w| w.lhs_dilate.to_string()),
        join(&|w| w.rhs_dilate.to_string()),
        join(&|w| u8::from(w.reversal).to_string()),
    );
    let mut parts: Vec<String> = attrs.split(", ").filter(|kv| !kv.starts_with("window=")).map(str::to_string).collect();
    parts.insert(0, format!("window={text}"));
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::parse_kernel_as_written;

    fn conv_kernel(body_after: &str, root: &str, out: &str) -> Kernel {
        let text = format!(
            "HloModule m\n\nENTRY e {{\n  x = s8[2,8,8,16] parameter(0)\n  w = s8[3,3,16,16] parameter(1)\n  \
             c = s32[2,8,8,16] convolution(x, w), window={{size=3x3 pad=1_1x1_1}}, dim_labels=b01f_01io->b01f\n{body_after}  ROOT r = {out} {root}\n}}\n"
        );
        parse_kernel_as_written(&text, "k.hlo").expect("a valid kernel")
    }

    #[test]
    fn a_band_of_a_dilated_input_reads_the_input_rows_among_its_window_rows() {
        // A stride-2 transposed convolution: 3 window rows over the input dilated by 2,
        // padded 2 above. Output rows 4 and 5 read dilated rows 2 to 5: input rows 1 and 2
        // (dilated rows 2 and 4), no padding before them, one zero row after.
        let w = WindowDim { size: 3, stride: 1, low: 2, high: 1, lhs_dilate: 2, rhs_dilate: 1, reversal: false };
        assert_eq!(geometry(&w, 16, 4, 2), Some((1, vec![2, 0, 1, 2])));
        // Output row 0 reads dilated rows -2 to 0: input row 0 after two rows of padding.
        assert_eq!(geometry(&w, 16, 0, 1), Some((0, vec![1, 2, 0, 1])));
        // The last output row (31) reads dilated rows 29 to 31, of which only 30 is a row.
        assert_eq!(geometry(&w, 16, 31, 1), Some((15, vec![1, 1, 1, 1])));
    }

    #[test]
    fn bands_inside_the_borders_share_one_kernel() {
        let kernel = conv_kernel("", "copy(c)", "s32[2,8,8,16]");
        // Two output rows' worth of tiles at most: bands of 2 rows.
        let tiles = |k: &Kernel| k.nodes.iter().filter(|n| matches!(n.op, Op::Dot(_))).count() * 100;
        let one_row = tiles(&band_kernel(&kernel, &shape(&kernel).expect("banded"), 3, 1).expect("a band"));
        let whole = crate::kernel::lowered(kernel.clone());
        let bands = plan(&kernel, &whole, tiles, 2 * one_row * BAND_SHARE).expect("bands");
        assert_eq!((bands.rows, bands.per_item, bands.items), (2, 4, 2));
        // The first band (padding above), the two inside, the last (padding below).
        assert_eq!(bands.bands.len(), 3);
        assert_eq!(bands.runs(), 8);
        let inside = &bands.bands[1];
        assert_eq!(inside.kernel.params[0].shape, vec![1, 4, 8, 16]);
        assert_eq!(inside.kernel.outputs[0].shape, vec![1, 2, 8, 16]);
        // Input rows 1.. and 3.. of item 0, then of item 1 (8 rows of 8x16 bytes each).
        let row = 8 * 16;
        let starts: Vec<i64> = inside.runs.iter().map(|r| r[0]).collect();
        assert_eq!(starts, vec![row, 3 * row, 9 * row, 11 * row]);
        let outs: Vec<i64> = inside.runs.iter().map(|r| r[2]).collect();
        assert_eq!(outs, vec![2 * row * 4, 4 * row * 4, 10 * row * 4, 12 * row * 4]);
    }

    #[test]
    fn an_addend_of_the_outputs_shape_is_read_in_bands_and_a_broadcast_bias_whole() {
        let kernel = conv_kernel(
            "  y = s32[2,8,8,16] parameter(2)\n  b = s32[16] parameter(3)\n  bb = s32[2,8,8,16] broadcast(b), dimensions={3}\n  s = s32[2,8,8,16] add(c, y)\n",
            "add(s, bb)",
            "s32[2,8,8,16]",
        );
        let s = shape(&kernel).expect("banded");
        let band = band_kernel(&kernel, &s, 2, 2).expect("a band");
        assert_eq!(band.params[2].shape, vec![1, 2, 8, 16]);
        assert_eq!(band.params[3].shape, vec![16]);
    }

    #[test]
    fn a_pooling_is_banded_along_the_rows_after_its_batch() {
        let text = "HloModule m\n\nmax {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                    ROOT c = f32[] maximum(a, b)\n}\n\nENTRY e {\n  x = f32[2,9,8,16] parameter(0)\n  \
                    low = f32[] constant(-inf)\n  ROOT p = f32[2,5,4,16] reduce-window(x, low), \
                    window={size=1x3x2x1 stride=1x2x2x1 pad=0_0x1_1x0_0x0_0}, to_apply=max\n}\n";
        let kernel = parse_kernel_as_written(text, "k.hlo").expect("a valid kernel");
        let s = shape(&kernel).expect("banded");
        assert_eq!(s.rows, 1);
        // Output rows 1 and 2 read input rows 1 to 5, inside the padding: no padding of
        // their own; the first output row reads one row of padding and input rows 0 and 1.
        let band = band_kernel(&kernel, &s, 1, 2).expect("a band");
        assert_eq!(band.params[0].shape, vec![1, 5, 8, 16]);
        assert_eq!(band.outputs[0].shape, vec![1, 2, 4, 16]);
        assert!(!band.nodes.iter().any(windowed), "the band's reduce-window is written out");
        assert_eq!(geometry(&s.window[1], 9, 0, 1), Some((0, vec![2, 1, 0, 1])));
        // A window across the batch is not banded.
        let across = text.replace("size=1x3x2x1", "size=2x3x2x1").replace("f32[2,5,4,16]", "f32[1,5,4,16]");
        assert!(shape(&parse_kernel_as_written(&across, "k.hlo").expect("valid")).is_none());
    }

    #[test]
    fn other_uses_of_the_input_or_work_across_rows_are_not_banded() {
        let across = conv_kernel("", "transpose(c), dimensions={0,2,1,3}", "s32[2,8,8,16]");
        assert!(shape(&across).is_none());
        let rows = conv_kernel("", "slice(c), slice={[0:2],[0:4],[0:8],[0:16]}", "s32[2,4,8,16]");
        assert!(shape(&rows).is_none());
    }
}
