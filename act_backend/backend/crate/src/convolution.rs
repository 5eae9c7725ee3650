//! XLA's `convolution` in a kernel: its attributes read (`dim_labels`, `window`, the group
//! counts), its type by XLA's shape rule, and the convolution written as the operators
//! instruction semantics contain, so that selection sees products.
//!
//! No TAIDL semantics can state a convolution, but every one is a sum of matrix products:
//! for each position of the window, the input elements it covers (a strided slice, seen as
//! rows of input features) times the kernel's matrix at that position. The output is written
//! in pieces that each lie in one run of it: an output row (a batch item and an index of every
//! spatial dimension but the one pieces run along) and a segment of that dimension, cut where
//! the window positions falling on the input change at the padded borders. A piece's value is
//! computed from the input alone, the padding's zeros never loaded, and the pieces are the
//! output's bytes end to end.
//!
//! - Integer element types sum one product per window position that falls on the input
//!   (the positions in the padding add zero, exactly; integer sums are exact in any order).
//! - Floating-point types take one product per piece, over the window positions side by
//!   side, the ones in the padding as blocks of zeros: one contraction over the whole window,
//!   as the convolution itself, whose zero terms are kept (`0 * inf` is NaN, and the sign of
//!   a zero sum depends on them).
//! - Elementwise work on the output (a bias, a ReLU, saturation: [`fused_after`]) is applied
//!   to each piece, where the ISA applies it to a product's tile.
//! - A dilated input (`lhs_dilate`, a transposed convolution) has zeros between its
//!   elements: a window position reads a real element only for outputs of one residue
//!   modulo the dilation. A piece along a dilated dimension is cut into one part per
//!   residue, each a piece of every `step`-th output whose input rows are consecutive, and
//!   the parts are interleaved (side by side as columns, seen as the piece's rows).
//! - A reversed kernel (`rhs_reversal`) takes window position `k` of a dimension from the
//!   kernel's position `size - 1 - k` there.

use crate::infer::{Site, TypeError};
use crate::kernel::{Kernel, KernelNode};
use crate::lang::{DType, DotDims, Family, Literal, Op, OpCode, Ty};

/// Where an operand's dimensions are: batch (or a kernel's output features), features (or a
/// kernel's input features), and the spatial dimension labelled `d` at `spatial[d]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub batch: usize,
    pub feature: usize,
    pub spatial: Vec<usize>,
}

/// One spatial dimension of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowDim {
    pub size: i64,
    pub stride: i64,
    pub low: i64,
    pub high: i64,
    pub lhs_dilate: i64,
    pub rhs_dilate: i64,
    pub reversal: bool,
}

/// A convolution's attributes, checked against its operands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Convolution {
    pub lhs: Layout,
    /// `batch` is the kernel's output features (`o`), `feature` its input features (`i`).
    pub rhs: Layout,
    pub out: Layout,
    pub window: Vec<WindowDim>,
    pub feature_groups: i64,
    pub batch_groups: i64,
}

/// `dim_labels` as written (`b01f_01io->b01f`, spaces allowed): the three label strings, or
/// `None` where it is not of that form.
pub fn dim_labels(text: &str) -> Option<[String; 3]> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (operands, out) = text.split_once("->")?;
    let (lhs, rhs) = operands.split_once('_')?;
    let labels = [lhs.to_string(), rhs.to_string(), out.to_string()];
    let word = |s: &String| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase() || c == '?');
    labels.iter().all(word).then_some(labels)
}

/// The fields of a window as written (`{size=3x3 stride=2x2 pad=1_1x0_2}`, spaces around `=`
/// allowed), in the order written; `None` where a field is unknown, given twice or malformed.
pub fn window_fields(text: &str) -> Option<Vec<(String, Vec<i64>)>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let compact = inner.split('=').map(str::trim).collect::<Vec<_>>().join("=");
    let mut fields: Vec<(String, Vec<i64>)> = Vec::new();
    for field in compact.split_whitespace() {
        let (key, value) = field.split_once('=')?;
        if fields.iter().any(|(k, _)| k == key) {
            return None;
        }
        let numbers: Option<Vec<i64>> = match key {
            "size" | "stride" | "lhs_dilate" | "rhs_dilate" | "rhs_reversal" => {
                value.split('x').map(|v| v.parse::<i64>().ok()).collect()
            }
            // low_high per dimension, flattened.
            "pad" => value
                .split('x')
                .map(|dim| {
                    let (low, high) = dim.split_once('_')?;
                    Some([low.parse::<i64>().ok()?, high.parse::<i64>().ok()?])
                })
                .collect::<Option<Vec<[i64; 2]>>>()
                .map(|pairs| pairs.concat()),
            _ => None,
        };
        fields.push((key.to_string(), numbers?));
    }
    Some(fields)
}

fn attr_err(name: &'static str, message: String) -> TypeError {
    TypeError { code: "bad-attribute", site: Site::Attr(name), message }
}

fn operand_err(i: usize, message: String) -> TypeError {
    TypeError { code: "operand-type-mismatch", site: Site::Operand(i), message }
}

/// The layout `labels` name: `outer` and `inner` are the batch and feature letters.
fn layout(labels: &str, outer: char, inner: char, n: usize) -> Option<Layout> {
    let chars: Vec<char> = labels.chars().collect();
    let only = |c: char| {
        let at: Vec<usize> = (0..chars.len()).filter(|&k| chars[k] == c).collect();
        (at.len() == 1).then(|| at[0])
    };
    let spatial: Option<Vec<usize>> =
        (0..n).map(|d| char::from_digit(d as u32, 10).and_then(only)).collect();
    let layout = Layout { batch: only(outer)?, feature: only(inner)?, spatial: spatial? };
    (chars.len() == n + 2).then_some(layout)
}

/// Reads and checks a convolution's attributes (`attrs`, the `name=value, ...` text an
/// [`Op::Other`] keeps) against its operands, in the order the Python checker does.
pub fn read(attrs: &str, lhs: &Ty, rhs: &Ty) -> Result<Convolution, TypeError> {
    let attr = |key: &str| crate::lang::attribute(attrs, key);
    if lhs.dtype.is_float() != rhs.dtype.is_float() {
        return Err(operand_err(1, format!("convolution of {lhs} and {rhs}: both floating point or both integer")));
    }
    let written = attr("dim_labels").ok_or_else(|| TypeError {
        code: "missing-attribute",
        site: Site::Opcode,
        message: "convolution needs the attribute dim_labels=".into(),
    })?;
    let bad_labels = |why: &str| attr_err("dim_labels", format!("dim_labels {written}: {why}"));
    let [l, r, o] = dim_labels(written).ok_or_else(|| bad_labels("expected lhs_rhs->out, such as b01f_01io->b01f"))?;
    if l.len() != r.len() || l.len() != o.len() {
        return Err(bad_labels("the input, kernel and output labels must be of one length"));
    }
    let n = l.len().saturating_sub(2);
    let digits = (0..n).map(|d| d.to_string()).collect::<String>();
    let (Some(lhs_layout), Some(rhs_layout), Some(out_layout)) =
        (layout(&l, 'b', 'f', n), layout(&r, 'o', 'i', n), layout(&o, 'b', 'f', n))
    else {
        return Err(bad_labels(&format!(
            "the input and output are labelled b, f and {digits} once each, the kernel o, i and {digits} once each"
        )));
    };
    if l.len() != lhs.rank() {
        return Err(bad_labels(&format!("{} input labels, but the input {lhs} has rank {}", l.len(), lhs.rank())));
    }
    if r.len() != rhs.rank() {
        return Err(bad_labels(&format!("{} kernel labels, but the kernel {rhs} has rank {}", r.len(), rhs.rank())));
    }
    let window = window(attr("window"), n, rhs, &rhs_layout)?;
    let count = |key: &'static str| -> Result<i64, TypeError> {
        match attr(key) {
            None => Ok(1),
            Some(t) => match t.parse::<i64>() {
                Ok(v) if v >= 1 => Ok(v),
                _ => Err(attr_err(key, format!("{key} must be a positive integer, found {t}"))),
            },
        }
    };
    let feature_groups = count("feature_group_count")?;
    let batch_groups = count("batch_group_count")?;
    if feature_groups > 1 && batch_groups > 1 {
        return Err(attr_err("batch_group_count", "feature_group_count and batch_group_count cannot both be above 1".into()));
    }
    let (in_features, kernel_in, kernel_out) =
        (lhs.shape[lhs_layout.feature], rhs.shape[rhs_layout.feature], rhs.shape[rhs_layout.batch]);
    if in_features != kernel_in * feature_groups {
        return Err(operand_err(
            1,
            format!(
                "the input has {in_features} features, but the kernel {rhs} takes {kernel_in} in each of {feature_groups} feature group(s)"
            ),
        ));
    }
    for (key, groups) in [("feature_group_count", feature_groups), ("batch_group_count", batch_groups)] {
        if kernel_out % groups != 0 {
            return Err(operand_err(1, format!("the kernel's {kernel_out} output features do not divide by {key} {groups}")));
        }
    }
    if lhs.shape[lhs_layout.batch] % batch_groups != 0 {
        return Err(operand_err(
            0,
            format!("the input's batch of {} does not divide by batch_group_count {batch_groups}", lhs.shape[lhs_layout.batch]),
        ));
    }
    Ok(Convolution { lhs: lhs_layout, rhs: rhs_layout, out: out_layout, window, feature_groups, batch_groups })
}

/// The window's dimensions, defaults filled in, checked against the kernel's spatial sizes.
fn window(written: Option<&str>, n: usize, rhs: &Ty, rhs_layout: &Layout) -> Result<Vec<WindowDim>, TypeError> {
    let Some(text) = written else {
        if n == 0 {
            return Ok(Vec::new());
        }
        return Err(TypeError {
            code: "bad-attribute",
            site: Site::Opcode,
            message: format!("a convolution over {n} spatial dimension(s) needs window={{size=...}}"),
        });
    };
    let dims = window_dims(text, n, "spatial dimension")?;
    for (d, wd) in dims.iter().enumerate() {
        let kernel = rhs.shape[rhs_layout.spatial[d]];
        if wd.size != kernel {
            return Err(attr_err(
                "window",
                format!("window {text}: size {} in spatial dimension {d}, but the kernel {rhs} is {kernel} there", wd.size),
            ));
        }
    }
    Ok(dims)
}

/// A window as written (`{size=3x3 stride=2x2 pad=1_1x0_2 ...}`) over `n` dimensions (`what`
/// names them in messages), XLA's defaults filled in: every field of `n` entries, the size
/// given, sizes, strides and dilations positive, reversals 0 or 1.
pub fn window_dims(text: &str, n: usize, what: &str) -> Result<Vec<WindowDim>, TypeError> {
    let bad = |why: String| attr_err("window", format!("window {text}: {why}"));
    let fields = window_fields(text).ok_or_else(|| bad("expected {size=AxB stride=AxB pad=l_hxl_h ...}".into()))?;
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    for (key, values) in &fields {
        let entries = if key == "pad" { values.len() / 2 } else { values.len() };
        if entries != n {
            return Err(bad(format!("{key} has {entries} entries for {n} {what}(s)")));
        }
    }
    if n > 0 && field("size").is_none() {
        return Err(bad("the window needs its size".into()));
    }
    let at_least_one = |key: &str| -> Result<Vec<i64>, TypeError> {
        let values = field(key).unwrap_or_else(|| vec![1; n]);
        match values.iter().find(|&&v| v < 1) {
            Some(v) => Err(bad(format!("{key} must be positive, found {v}"))),
            None => Ok(values),
        }
    };
    let size = at_least_one("size")?;
    let stride = at_least_one("stride")?;
    let lhs_dilate = at_least_one("lhs_dilate")?;
    let rhs_dilate = at_least_one("rhs_dilate")?;
    let reversal = field("rhs_reversal").unwrap_or_else(|| vec![0; n]);
    if let Some(v) = reversal.iter().find(|&&v| v != 0 && v != 1) {
        return Err(bad(format!("rhs_reversal is 0 or 1 per dimension, found {v}")));
    }
    let pad = field("pad").unwrap_or_else(|| vec![0; 2 * n]);
    Ok((0..n)
        .map(|d| WindowDim {
            size: size[d],
            stride: stride[d],
            low: pad[2 * d],
            high: pad[2 * d + 1],
            lhs_dilate: lhs_dilate[d],
            rhs_dilate: rhs_dilate[d],
            reversal: reversal[d] == 1,
        })
        .collect())
}

impl WindowDim {
    /// XLA's output size along this dimension over an input of `input` elements.
    pub fn output(&self, input: i64) -> i64 {
        let padded = (input - 1).max(0) * self.lhs_dilate + 1 + self.low + self.high;
        let padded = if input == 0 { self.low + self.high } else { padded };
        let window = (self.size - 1) * self.rhs_dilate + 1;
        if padded < window {
            0
        } else {
            (padded - window) / self.stride + 1
        }
    }

    /// The element of the dilated input window position `k` reads for output `o`.
    fn input_of(&self, o: i64, k: i64) -> i64 {
        o * self.stride + k * self.rhs_dilate - self.low
    }

    /// The input element window position `k` reads for output `o` of an input of `input`
    /// elements, or `None` where it reads padding or a zero the dilation put between two.
    pub fn element_of(&self, o: i64, k: i64, input: i64) -> Option<i64> {
        let j = self.input_of(o, k);
        (j >= 0 && j % self.lhs_dilate == 0 && j / self.lhs_dilate < input).then(|| j / self.lhs_dilate)
    }

    /// The input's extent once dilated: `lhs_dilate - 1` zeros between its elements.
    pub fn dilated(&self, input: i64) -> i64 {
        (input - 1) * self.lhs_dilate + 1
    }

    /// The outputs apart of a piece along this dimension whose outputs all read real input
    /// elements at the same window positions, and the input elements apart they read: with
    /// `lhs_dilate` d and stride t, every `d / gcd(d, t)`-th output, `t / gcd(d, t)` elements
    /// apart (1 and t without dilation).
    fn steps(&self) -> (i64, i64) {
        let (mut a, mut b) = (self.lhs_dilate, self.stride);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        (self.lhs_dilate / a, self.stride / a)
    }

    /// The output range `[first, end)` where window position `k` falls on the input of
    /// `input` elements.
    fn on_input(&self, k: i64, input: i64, outputs: i64) -> (i64, i64) {
        // input_of(o, k) >= 0 and <= input - 1, with o in [0, outputs).
        let lowest = self.low - k * self.rhs_dilate;
        let first = if lowest <= 0 { 0 } else { (lowest + self.stride - 1) / self.stride };
        let highest = input - 1 + self.low - k * self.rhs_dilate;
        let end = if highest < 0 { 0 } else { (highest / self.stride + 1).min(outputs) };
        (first.min(outputs), end.max(first.min(outputs)))
    }

    /// The output cut where the window positions on the input change: `(first, end, the
    /// positions on the input for every output in it)` covering `[0, outputs)` in order.
    pub fn segments(&self, input: i64, outputs: i64) -> Vec<(i64, i64, Vec<i64>)> {
        let ranges: Vec<(i64, i64)> = (0..self.size).map(|k| self.on_input(k, input, outputs)).collect();
        let mut cuts: Vec<i64> = vec![0, outputs];
        for &(a, b) in &ranges {
            if a < b {
                cuts.extend([a, b]);
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        cuts.windows(2)
            .map(|w| {
                let on: Vec<i64> = (0..self.size).filter(|&k| ranges[k as usize].0 <= w[0] && w[1] <= ranges[k as usize].1).collect();
                (w[0], w[1], on)
            })
            .collect()
    }
}

/// The type XLA gives the convolution: the declared element type (the preferred one), the
/// output's batch, features and spatial sizes in the order of its labels.
pub fn result_type(conv: &Convolution, lhs: &Ty, rhs: &Ty, dtype: DType) -> Ty {
    let mut shape = vec![0; conv.out.spatial.len() + 2];
    shape[conv.out.batch] = lhs.shape[conv.lhs.batch] / conv.batch_groups;
    shape[conv.out.feature] = rhs.shape[conv.rhs.batch];
    for (d, w) in conv.window.iter().enumerate() {
        shape[conv.out.spatial[d]] = w.output(lhs.shape[conv.lhs.spatial[d]]);
    }
    Ty::new(dtype, shape)
}

/// What a step of the written convolution reads: `Input(0)` and `Input(1)` are the
/// convolution's input and kernel, `Step(k)` step `k` of the list [`lower`] returns, in the
/// order they are to be added (operands first); its last step is the convolution's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    Input(usize),
    Step(usize),
    /// A kernel node an elementwise step after the convolution reads ([`After`]).
    Node(usize),
}

/// A step of elementwise work on a convolution's output, fused into each piece of it: its
/// operator and element type over the output's shape.
#[derive(Debug, Clone)]
pub struct After {
    pub op: Op,
    pub dtype: DType,
    pub operands: Vec<Operand>,
}

/// What an [`After`] step reads, as a piece of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// The convolution's piece.
    Convolution,
    /// An earlier step's piece.
    Step(usize),
    /// A scalar kernel node (a clamp's bound), as it is.
    Scalar(usize),
    /// A kernel node of one value per output feature (or one in all), broadcast over the
    /// output: broadcast over the piece.
    Features(usize),
    /// A kernel node of the output's shape: the piece's rows of it.
    Rows(usize),
    /// A splat literal of the output's shape (its one value's bits).
    Splat(u64),
}

/// One operator of the written convolution.
#[derive(Debug, Clone)]
pub struct Step {
    pub op: Op,
    pub ty: Ty,
    pub operands: Vec<Value>,
}

/// The convolution as products of slices, or `None` where it is not written so (an empty
/// dimension).
///
/// The output is written in pieces that each lie in one run of it: one output row (an item
/// of the batch, an index of every spatial dimension but the last of more than one output,
/// those after it having one) and a segment of that dimension. A piece's rows of input are then every `stride`-th row of the input seen
/// as a matrix of pixels by features, and the pieces are the output's bytes end to end.
pub fn lower(conv: &Convolution, lhs: &Ty, rhs: &Ty, ty: &Ty) -> Option<Vec<Step>> {
    lower_with(conv, lhs, rhs, ty, &[], &[])
}

/// [`lower`], each piece followed by the elementwise steps `after` (whose kernel nodes have the
/// types `node_types`, by index): the last step's value, of the output's shape, is the last
/// of the list.
pub fn lower_with(conv: &Convolution, lhs: &Ty, rhs: &Ty, ty: &Ty, after: &[After], node_types: &[Ty]) -> Option<Vec<Step>> {
    let n = conv.window.len();
    if lhs.shape.contains(&0)
        || rhs.shape.contains(&0)
        || ty.shape.contains(&0)
    {
        return None;
    }
    let mut w = Writer { steps: Vec::new() };
    // The input as a matrix of pixels [batch x spatial..., features], the kernel as one of
    // [spatial... x in, out].
    let lhs_order: Vec<usize> =
        [conv.lhs.batch].into_iter().chain(conv.lhs.spatial.iter().copied()).chain([conv.lhs.feature]).collect();
    let rhs_order: Vec<usize> = conv.rhs.spatial.iter().copied().chain([conv.rhs.feature, conv.rhs.batch]).collect();
    let x = w.transpose(Value::Input(0), lhs, &lhs_order);
    let k = w.transpose(Value::Input(1), rhs, &rhs_order);
    let xs = lhs.permuted(&lhs_order);
    let ks = rhs.permuted(&rhs_order);
    let features = xs.shape[n + 1];
    let (kernel_in, kernel_out) = (ks.shape[n], ks.shape[n + 1]);
    let pixels = Ty::new(lhs.dtype, vec![xs.elements() / features, features]);
    let weights = Ty::new(rhs.dtype, vec![ks.elements() / kernel_out, kernel_out]);
    let x = w.reshape(x, &xs, pixels.shape.clone());
    let k = w.reshape(k, &ks, weights.shape.clone());
    let inputs: Vec<i64> = (0..n).map(|d| xs.shape[1 + d]).collect();
    let outputs: Vec<i64> = (0..n).map(|d| ty.shape[conv.out.spatial[d]]).collect();
    let groups = conv.feature_groups.max(conv.batch_groups);
    let batch = xs.shape[0] / conv.batch_groups;
    let plan = Pieces {
        conv,
        x,
        k,
        pixels: &pixels,
        weights: &weights,
        inputs: &inputs,
        groups,
        group_batch: batch,
        group_in: features / conv.feature_groups,
        kernel_in,
        group_out: kernel_out / groups,
        dtype: ty.dtype,
        blocks: Vec::new(),
        after,
        node_types,
        outputs: &outputs,
        cached: Vec::new(),
        residue: 0,
        along: (0..n).rev().find(|&d| outputs[d] > 1).unwrap_or(n.saturating_sub(1)),
    };
    let mut plan = plan;
    // The pieces run along the last spatial dimension of more than one output (those after it
    // have one), cut into its segments; every other dimension is taken an index at a time.
    let along = plan.along;
    let segments = match n {
        0 => vec![(0, 1, Vec::new())],
        // Cut on the dilated input: a position on it reads an element or a dilation's zero.
        _ => conv.window[along].segments(conv.window[along].dilated(inputs[along]), outputs[along]),
    };
    let rows_before: i64 = batch * outputs[..along].iter().product::<i64>();
    let mut parts = Vec::new();
    // Pieces no window position of which falls on the input, one run of zeros: zeros beside
    // zeros in an output are one literal, not two parts to place.
    let mut zeros = 0;
    for row in 0..rows_before {
        // The output row's batch item and spatial indices (0 after `along`).
        let mut at = vec![0; n];
        let mut rest = row;
        for d in (0..along).rev() {
            at[d] = rest % outputs[d];
            rest /= outputs[d];
        }
        let item = rest;
        for segment in &segments {
            if plan.reads_nothing(item, &at, segment) {
                zeros += (segment.1 - segment.0) * kernel_out;
                continue;
            }
            if zeros > 0 {
                let zero_ty = Ty::new(ty.dtype, vec![zeros]);
                parts.push((w.zeros(zero_ty.clone()), zero_ty));
                zeros = 0;
            }
            parts.extend(plan.interleaved(&mut w, item, &at, segment));
        }
    }
    if zeros > 0 {
        let zero_ty = Ty::new(ty.dtype, vec![zeros]);
        parts.push((w.zeros(zero_ty.clone()), zero_ty));
    }
    let (all, all_ty) = w.concatenate(parts, 0);
    let mut shape_now = vec![batch];
    shape_now.extend(outputs.iter().copied());
    shape_now.push(kernel_out);
    let dtype = after.last().map_or(ty.dtype, |a| a.dtype);
    let now = Ty::new(dtype, shape_now.clone());
    let whole = w.reshape(all, &all_ty, shape_now);
    // [batch, spatial..., features] to the output's order.
    let mut perm = vec![0; n + 2];
    perm[conv.out.batch] = 0;
    perm[conv.out.feature] = n + 1;
    for d in 0..n {
        perm[conv.out.spatial[d]] = 1 + d;
    }
    w.transpose(whole, &now, &perm);
    Some(w.steps)
}

/// Writes the steps of a lowered operator (a convolution's, a windowed reduction's) in order.
#[derive(Default)]
pub struct Writer {
    pub steps: Vec<Step>,
}

impl Writer {
    pub fn push(&mut self, op: Op, ty: Ty, operands: Vec<Value>) -> Value {
        self.steps.push(Step { op, ty, operands });
        Value::Step(self.steps.len() - 1)
    }

    /// `order[j]` is the source dimension of result dimension `j`.
    pub fn transpose(&mut self, v: Value, src: &Ty, order: &[usize]) -> Value {
        if order.iter().enumerate().all(|(j, &d)| j == d) {
            return v;
        }
        let ty = src.permuted(order);
        self.push(Op::Transpose(order.to_vec()), ty, vec![v])
    }

    pub fn reshape(&mut self, v: Value, from: &Ty, shape: Vec<i64>) -> Value {
        if from.shape == shape {
            return v;
        }
        self.push(Op::Reshape, Ty::new(from.dtype, shape), vec![v])
    }

    pub fn slice(&mut self, v: Value, from: &Ty, ranges: Vec<(i64, i64, i64)>) -> (Value, Ty) {
        let shape: Vec<i64> = ranges.iter().map(|&(a, b, s)| (b - a + s - 1) / s).collect();
        let ty = Ty::new(from.dtype, shape);
        if ranges.iter().zip(&from.shape).all(|(&(a, b, s), &size)| a == 0 && b == size && s == 1) {
            return (v, ty);
        }
        (self.push(Op::Slice(ranges), ty.clone(), vec![v]), ty)
    }

    fn zeros(&mut self, ty: Ty) -> Value {
        let zero = self.push(Op::Constant(Literal::from_values(&[0.0])), Ty::new(ty.dtype, Vec::new()), Vec::new());
        self.push(Op::Broadcast(Vec::new()), ty, vec![zero])
    }

    pub fn concatenate(&mut self, parts: Vec<(Value, Ty)>, dim: usize) -> (Value, Ty) {
        if parts.len() == 1 {
            return parts.into_iter().next().expect("one part");
        }
        let mut shape = parts[0].1.shape.clone();
        shape[dim] = parts.iter().map(|(_, t)| t.shape[dim]).sum();
        let ty = Ty::new(parts[0].1.dtype, shape);
        (self.push(Op::Concatenate(dim), ty.clone(), parts.into_iter().map(|(v, _)| v).collect()), ty)
    }

    fn product(&mut self, a: Value, b: Value, ty: Ty) -> Value {
        let dims = DotDims { lhs_contracting: vec![1], rhs_contracting: vec![0], lhs_batch: vec![], rhs_batch: vec![] };
        self.push(Op::Dot(dims), ty, vec![a, b])
    }
}

/// What every piece reads: the input as pixels by features (`pixels`), the kernel as
/// window positions' input features by output features (`weights`), and the groups' sizes.
struct Pieces<'a> {
    conv: &'a Convolution,
    x: Value,
    k: Value,
    pixels: &'a Ty,
    weights: &'a Ty,
    inputs: &'a [i64],
    groups: i64,
    group_batch: i64,
    group_in: i64,
    kernel_in: i64,
    group_out: i64,
    dtype: DType,
    /// The kernel's block of each window position and group, written once.
    blocks: Vec<((i64, i64), Value)>,
    /// Elementwise work after the convolution, applied to each piece, and the kernel's types.
    after: &'a [After],
    node_types: &'a [Ty],
    /// The output's spatial sizes.
    outputs: &'a [i64],
    /// Operands of `after` written once: per kernel node and piece length.
    cached: Vec<((usize, i64), Value)>,
    /// The spatial dimension pieces run along: the last of more than one output.
    along: usize,
    /// The residue of the part [`Pieces::interleaved`] is writing (0 outside it): its rows
    /// of a value of the output's shape are a column window of the segment's rows.
    residue: i64,
}

impl Pieces<'_> {
    /// How many pixels apart a piece's rows of input lie: the input elements apart its
    /// outputs read along the dimension it runs along ([`WindowDim::steps`]), times the
    /// pixels of one index of it.
    fn stride(&self) -> i64 {
        match self.conv.window.get(self.along) {
            Some(wd) => wd.steps().1 * self.inputs[self.along + 1..].iter().product::<i64>(),
            None => 1,
        }
    }

    /// The outputs apart of a piece's rows ([`WindowDim::steps`]): 1 unless the input is
    /// dilated along the dimension pieces run along.
    fn output_step(&self) -> i64 {
        self.conv.window.get(self.along).map_or(1, |wd| wd.steps().0)
    }

    /// The pixel of the input (a row of it seen as pixels by features) that window position
    /// `pos` reads for a piece's first output (batch item `b`, indices `at`, `first` along
    /// the piece), or `None` where it falls in the padding or on a dilation's zero.
    fn pixel(&self, b: i64, at: &[i64], first: i64, on_along: &[i64], pos: &[i64]) -> Option<i64> {
        let mut pixel = b;
        for (d, wd) in self.conv.window.iter().enumerate() {
            let o = if d == self.along {
                if !on_along.contains(&pos[d]) {
                    return None;
                }
                first
            } else {
                at[d]
            };
            pixel = pixel * self.inputs[d] + wd.element_of(o, pos[d], self.inputs[d])?;
        }
        Some(pixel)
    }

    /// The window position `p`, row-major over the window (the first spatial dimension
    /// slowest).
    fn position(&self, p: i64) -> Vec<i64> {
        let window = &self.conv.window;
        let mut rest = p;
        let mut pos = vec![0; window.len()];
        for d in (0..window.len()).rev() {
            pos[d] = rest % window[d].size;
            rest /= window[d].size;
        }
        pos
    }

    /// Whether a piece is zeros whatever the input: an integer convolution none of whose
    /// window positions falls on the input for any of its outputs (those of each residue of
    /// a dilation), with no work after it.
    fn reads_nothing(&self, item: i64, at: &[i64], segment: &(i64, i64, Vec<i64>)) -> bool {
        let positions: i64 = self.conv.window.iter().map(|wd| wd.size).product();
        let firsts = segment.0..segment.1.min(segment.0 + self.output_step());
        !self.pixels.dtype.is_float()
            && self.after.is_empty()
            && (0..self.groups).all(|g| {
                let b = if self.conv.batch_groups > 1 { g * self.group_batch + item } else { item };
                firsts.clone().all(|first| (0..positions).all(|p| self.pixel(b, at, first, &segment.2, &self.position(p)).is_none()))
            })
    }

    /// A segment's piece, or where the input is dilated along the dimension pieces run
    /// along, its parts: one piece of every `step`-th output per residue, interleaved (side
    /// by side as columns of `[outputs / step, step * features]`, seen as `[outputs,
    /// features]`), then the outputs past the last whole group of `step`, one at a time.
    fn interleaved(&mut self, w: &mut Writer, item: i64, at: &[i64], segment: &(i64, i64, Vec<i64>)) -> Vec<(Value, Ty)> {
        let (first, end, on) = segment;
        let step = self.output_step();
        if step == 1 {
            return vec![self.piece(w, item, at, segment)];
        }
        let rows = (end - first) / step;
        let mut out = Vec::new();
        if rows > 0 {
            let parts: Vec<(Value, Ty)> = (0..step)
                .map(|r| {
                    self.residue = r;
                    let (v, ty) = self.piece(w, item, at, &(first + r, first + r + rows, on.clone()));
                    self.residue = 0;
                    let shape = vec![rows, ty.elements() / rows];
                    (w.reshape(v, &ty, shape.clone()), ty.with_shape(shape))
                })
                .collect();
            let (all, all_ty) = w.concatenate(parts, 1);
            let flat = vec![all_ty.elements()];
            out.push((w.reshape(all, &all_ty, flat.clone()), all_ty.with_shape(flat)));
        }
        for o in first + rows * step..*end {
            out.push(self.piece(w, item, at, &(o, o + 1, on.clone())));
        }
        out
    }

    /// Whether a piece's rows of input, read in groups of `stride` rows, would run past the
    /// input's last pixel for some window position on the input and batch item of a group.
    fn past_the_end(&self, item: i64, at: &[i64], segment: &(i64, i64, Vec<i64>)) -> bool {
        let stride = self.stride();
        let positions: i64 = self.conv.window.iter().map(|wd| wd.size).product();
        let items = if self.conv.batch_groups > 1 { self.groups } else { 1 };
        let count = segment.1 - segment.0;
        (0..items).any(|g| {
            (0..positions).any(|p| {
                let b = g * self.group_batch + item;
                self.pixel(b, at, segment.0, &segment.2, &self.position(p))
                    .is_some_and(|px| strided_rows_run_past(px, count, stride, self.pixels.shape[0]))
            })
        })
    }

    /// The kernel's matrix at window position `p` (row-major over the window) for group `g`:
    /// `[in, out of the group]`; of a reversed kernel, the matrix at the position mirrored in
    /// each reversed dimension.
    fn kernel_block(&mut self, w: &mut Writer, p: i64, g: i64) -> (Value, Ty) {
        let ty = Ty::new(self.weights.dtype, vec![self.kernel_in, self.group_out]);
        let p = self.position(p).iter().zip(&self.conv.window).fold(0, |at, (&k, wd)| {
            at * wd.size + if wd.reversal { wd.size - 1 - k } else { k }
        });
        if let Some((_, v)) = self.blocks.iter().find(|(key, _)| *key == (p, g)) {
            return (*v, ty);
        }
        let ranges = vec![(p * self.kernel_in, (p + 1) * self.kernel_in, 1), (g * self.group_out, (g + 1) * self.group_out, 1)];
        let (v, ty) = w.slice(self.k, self.weights, ranges);
        self.blocks.push(((p, g), v));
        (v, ty)
    }

    /// One piece of the output: batch item `item` (within a group), the indices `at` of the
    /// other spatial dimensions, and `segment` of the one it runs along, as `[elements]`:
    /// `end - first` outputs from `first`, [`Pieces::output_step`] apart.
    fn piece(&mut self, w: &mut Writer, item: i64, at: &[i64], segment: &(i64, i64, Vec<i64>)) -> (Value, Ty) {
        let conv = self.conv;
        let (first, end, on_last) = segment;
        let count = end - first;
        let step = self.output_step();
        if self.past_the_end(item, at, segment) {
            // Its last output on its own: every `stride`-th row read as the first row of
            // each group of `stride` rows would take a group past the input's last row.
            let head = self.piece(w, item, at, &(*first, end - 1, on_last.clone()));
            let last = first + (count - 1) * step;
            let tail = self.piece(w, item, at, &(last, last + 1, on_last.clone()));
            return w.concatenate(vec![head, tail], 0);
        }
        let product_ty = Ty::new(self.dtype, vec![count, self.group_out]);
        let float = self.pixels.dtype.is_float();
        let positions: i64 = conv.window.iter().map(|wd| wd.size).product();
        // The piece's first row of the output seen as [pixels, features].
        let mut row = item;
        for (d, &o) in self.outputs.iter().enumerate() {
            row = row * o + if d == self.along { *first } else { at[d] };
        }
        let mut outs = Vec::new();
        for g in 0..self.groups {
            let (b, f0) = if conv.batch_groups > 1 { (g * self.group_batch + item, 0) } else { (item, g * self.group_in) };
            let mut blocks: Vec<((Value, Ty), (Value, Ty))> = Vec::new();
            for p in 0..positions {
                let pixel = self.pixel(b, at, *first, on_last, &self.position(p));
                if pixel.is_none() && !float {
                    continue;
                }
                let rows = match pixel {
                    Some(px) => {
                        let stride = if count == 1 { 1 } else { self.stride() };
                        let ranges = vec![(px, px + (count - 1) * stride + 1, stride), (f0, f0 + self.group_in, 1)];
                        w.slice(self.x, self.pixels, ranges)
                    }
                    None => {
                        let zero_ty = Ty::new(self.pixels.dtype, vec![count, self.group_in]);
                        (w.zeros(zero_ty.clone()), zero_ty)
                    }
                };
                blocks.push((rows, self.kernel_block(w, p, g)));
            }
            let value = if blocks.is_empty() {
                w.zeros(product_ty.clone())
            } else if float {
                let (lhs_parts, rhs_parts): (Vec<_>, Vec<_>) = blocks.into_iter().unzip();
                let (a, _) = w.concatenate(lhs_parts, 1);
                let (b, _) = w.concatenate(rhs_parts, 0);
                w.product(a, b, product_ty.clone())
            } else {
                let mut sum: Option<Value> = None;
                for ((a, _), (b, _)) in blocks {
                    let p = w.product(a, b, product_ty.clone());
                    sum = Some(match sum {
                        None => p,
                        Some(s) => w.push(Op::Add, product_ty.clone(), vec![s, p]),
                    });
                }
                sum.expect("at least one block")
            };
            // The work after the convolution on the group's features of the piece.
            outs.push(self.after(w, value, &product_ty, row, step, g * self.group_out));
        }
        let (all, all_ty) = w.concatenate(outs, 1);
        let flat = vec![all_ty.elements()];
        let v = w.reshape(all, &all_ty, flat.clone());
        (v, all_ty.with_shape(flat))
    }

    /// The steps of `after` over a piece `value` (`[count, width]`) whose first element is
    /// row `row`, feature `feature` of the output seen as [pixels, features], its rows
    /// `apart` rows of the output apart.
    fn after(&mut self, w: &mut Writer, value: Value, ty: &Ty, row: i64, apart: i64, feature: i64) -> (Value, Ty) {
        let (count, width) = (ty.shape[0], ty.shape[1]);
        let features = self.group_out * self.groups;
        let mut done: Vec<(Value, Ty)> = Vec::new();
        for step in self.after {
            let mut args = Vec::new();
            for operand in &step.operands {
                args.push(match *operand {
                    Operand::Convolution => value,
                    Operand::Step(j) => done[j].0,
                    Operand::Scalar(node) => Value::Node(node),
                    Operand::Features(node) => self.features(w, node, count, feature, width),
                    Operand::Rows(node) => {
                        let whole = &self.node_types[node];
                        let matrix = whole.with_shape(vec![whole.elements() / features, features]);
                        let m = match self.cached.iter().find(|(key, _)| *key == (node, -1)) {
                            Some((_, v)) => *v,
                            None => {
                                let v = w.reshape(Value::Node(node), whole, matrix.shape.clone());
                                self.cached.push(((node, -1), v));
                                v
                            }
                        };
                        if apart == 1 || count == 1 {
                            w.slice(m, &matrix, vec![(row, row + count, 1), (feature, feature + width, 1)]).0
                        } else {
                            // Every `apart`-th row from `row`: the segment's rows from the
                            // first of its group, `apart` to a row, the part's columns of that.
                            let base = row - self.residue;
                            let (span, span_ty) = w.slice(m, &matrix, vec![(base, base + count * apart, 1), (0, features, 1)]);
                            let grouped = span_ty.with_shape(vec![count, apart * features]);
                            let g = w.reshape(span, &span_ty, grouped.shape.clone());
                            let at = self.residue * features + feature;
                            w.slice(g, &grouped, vec![(0, count, 1), (at, at + width, 1)]).0
                        }
                    }
                    Operand::Splat(bits) => {
                        let dtype = step.dtype;
                        let scalar = w.push(Op::Constant(Literal { bits: vec![bits] }), Ty::new(dtype, Vec::new()), Vec::new());
                        w.push(Op::Broadcast(Vec::new()), Ty::new(dtype, vec![count, width]), vec![scalar])
                    }
                });
            }
            let out = Ty::new(step.dtype, vec![count, width]);
            let v = w.push(step.op.clone(), out.clone(), args);
            done.push((v, out));
        }
        done.pop().unwrap_or((value, ty.clone()))
    }

    /// Kernel node `node`, one value per feature or one in all, its features `[feature,
    /// feature + width)` broadcast over `count` rows.
    fn features(&mut self, w: &mut Writer, node: usize, count: i64, feature: i64, width: i64) -> Value {
        let key = (node, count * (self.group_out * self.groups + 1) + feature);
        if let Some((_, v)) = self.cached.iter().find(|(k, _)| *k == key) {
            return *v;
        }
        let ty = self.node_types[node].clone();
        // One value in all, unless there is one feature: then it is that feature's.
        let v = if ty.elements() == 1 && self.group_out * self.groups > 1 {
            let scalar = w.reshape(Value::Node(node), &ty, Vec::new());
            w.push(Op::Broadcast(Vec::new()), Ty::new(ty.dtype, vec![count, width]), vec![scalar])
        } else {
            let vector = ty.with_shape(vec![ty.elements()]);
            let flat = w.reshape(Value::Node(node), &ty, vector.shape.clone());
            let (part, _) = w.slice(flat, &vector, vec![(feature, feature + width, 1)]);
            w.push(Op::Broadcast(vec![1]), Ty::new(ty.dtype, vec![count, width]), vec![part])
        };
        self.cached.push((key, v));
        v
    }
}

/// Whether an operator is applied element by element (including those kept by name).
pub fn elementwise(op: &Op) -> bool {
    match op {
        Op::Convert | Op::Copy => true,
        Op::Other { name, .. } => OpCode::parse(name).is_some_and(|c| {
            matches!(c.info().family, Family::Unary | Family::Binary | Family::Compare | Family::Select | Family::Clamp | Family::Conversion)
        }),
        op => op.is_elementwise(),
    }
}

/// The elementwise work on convolution node `conv`'s output that [`lower_with`] fuses into its
/// pieces, and the kernel nodes it is (the last one the value it ends in); `None` where there
/// is none, or where the output is not laid out batch, spatial dimensions, features, or
/// something else reads a value before the last.
pub fn fused_after(kernel: &Kernel, conv: usize, spec: &Convolution) -> Option<(Vec<After>, Vec<usize>)> {
    let n = spec.window.len();
    if spec.out.batch != 0 || spec.out.feature != n + 1 || spec.out.spatial.iter().enumerate().any(|(d, &s)| s != d + 1) {
        return None;
    }
    let out = &kernel.nodes[conv].ty.shape;
    let mut after: Vec<usize> = Vec::new();
    let mut index = vec![usize::MAX; kernel.nodes.len()];
    let mut steps = Vec::new();
    for (k, node) in kernel.nodes.iter().enumerate().skip(conv + 1) {
        if !node.operands.iter().any(|&o| o == conv || index[o] != usize::MAX) {
            continue;
        }
        // The work ends where something else reads it (the transpose back to a channels-first
        // output, `channels_last`).
        if &node.ty.shape != out || !elementwise(&node.op) {
            break;
        }
        let mut operands = Vec::new();
        for &o in &node.operands {
            let operand = &kernel.nodes[o];
            operands.push(if o == conv {
                Operand::Convolution
            } else if index[o] != usize::MAX {
                Operand::Step(index[o])
            } else if operand.ty.rank() == 0 {
                Operand::Scalar(o)
            } else {
                let along_features = |dims: &[usize]| {
                    let from = &kernel.nodes[operand.operands[0]].ty.shape;
                    dims.iter().zip(from).all(|(&d, &size)| d == n + 1 || size == 1)
                };
                match &operand.op {
                    Op::Broadcast(dims) if along_features(dims) => Operand::Features(operand.operands[0]),
                    Op::Constant(literal) if &operand.ty.shape == out && literal.splat().is_some() => {
                        Operand::Splat(*literal.bits.first()?)
                    }
                    // Any other value of the output's shape (an addend, a literal of many
                    // values, a bias reshaped to an output of one pixel): the piece's rows.
                    _ if &operand.ty.shape == out => Operand::Rows(o),
                    _ => return None,
                }
            });
        }
        index[k] = steps.len();
        after.push(k);
        steps.push(After { op: node.op.clone(), dtype: node.ty.dtype, operands });
    }
    let root = *after.last()?;
    // Only the last step's value is read beyond the steps, and no result is an earlier one.
    let inside = |k: usize| k == conv || index[k] != usize::MAX;
    for (k, node) in kernel.nodes.iter().enumerate() {
        if !inside(k) && node.operands.iter().any(|&o| inside(o) && o != root) {
            return None;
        }
    }
    if kernel.results.iter().any(|&r| inside(r) && r != root) {
        return None;
    }
    Some((steps, after))
}

/// The node a convolution's kernel is read from, looking through the transposes and the
/// reversals of window dimensions it is computed by (`conv_transpose(..., transpose_kernel=
/// True)` swaps a kernel's features with a transpose and mirrors its window with `reverse`):
/// each transpose composed into `conv`'s kernel layout, each reversal into its window's, and
/// the nodes looked through. Both only rename the kernel's elements, which the products read
/// where they lie.
fn through_kernel_moves(kernel: &Kernel, mut k: usize, conv: &mut Convolution) -> (usize, Vec<usize>) {
    let mut moves = Vec::new();
    loop {
        let node = &kernel.nodes[k];
        match &node.op {
            Op::Transpose(p) => {
                let rhs = &conv.rhs;
                conv.rhs = Layout { batch: p[rhs.batch], feature: p[rhs.feature], spatial: rhs.spatial.iter().map(|&d| p[d]).collect() };
            }
            Op::Other { name, attrs } if name == "reverse" => {
                let dims = crate::lang::index_list(attrs, "dimensions");
                let Some(window) = dims.and_then(|dims| {
                    dims.iter().map(|d| conv.rhs.spatial.iter().position(|s| s == d)).collect::<Option<Vec<usize>>>()
                }) else {
                    return (k, moves);
                };
                for w in window {
                    conv.window[w].reversal = !conv.window[w].reversal;
                }
            }
            _ => return (k, moves),
        }
        moves.push(k);
        k = node.operands[0];
    }
}

/// Writes every convolution of `kernel` that [`lower`] writes as its steps: nodes named after
/// it, at its position, the last one its value. Elementwise work on its output
/// ([`fused_after`]) is applied to each piece instead, and the steps are written where that
/// work ends. The others stay whole.
pub fn lower_kernel(kernel: &mut Kernel) {
    let is_conv = |n: &KernelNode| matches!(&n.op, Op::Other { name, .. } if name == "convolution");
    if !kernel.nodes.iter().any(is_conv) {
        return;
    }
    let types: Vec<Ty> = kernel.nodes.iter().map(|n| n.ty.clone()).collect();
    // Per convolution written as steps: its steps, the work fused after it included.
    let mut plans: Vec<Option<Vec<Step>>> = vec![None; kernel.nodes.len()];
    // Per node: the convolution whose steps are written in its place, or that it is fused.
    let mut written_at: Vec<Option<usize>> = vec![None; kernel.nodes.len()];
    let mut fused = vec![false; kernel.nodes.len()];
    // Per convolution written as steps: the node its kernel is read from, and the moves of
    // it looked through.
    let mut kernel_read = vec![usize::MAX; kernel.nodes.len()];
    let mut looked_through = Vec::new();
    for (k, node) in kernel.nodes.iter().enumerate() {
        let Op::Other { attrs, .. } = &node.op else { continue };
        if !is_conv(node) || node.operands.len() != 2 {
            continue;
        }
        let (lhs, rhs) = (&types[node.operands[0]], &types[node.operands[1]]);
        let Ok(mut spec) = read(attrs, lhs, rhs) else { continue };
        let (weights, moves) = through_kernel_moves(kernel, node.operands[1], &mut spec);
        let rhs = &types[weights];
        let (after, fused_nodes) = fused_after(kernel, k, &spec).unwrap_or_default();
        let Some(steps) = lower_with(&spec, lhs, rhs, &node.ty, &after, &types) else { continue };
        let end = fused_nodes.last().copied().unwrap_or(k);
        for &j in std::iter::once(&k).chain(&fused_nodes) {
            fused[j] = j != end;
        }
        written_at[end] = Some(k);
        plans[k] = Some(steps);
        kernel_read[k] = weights;
        looked_through.extend(moves);
    }
    let mut nodes: Vec<KernelNode> = Vec::with_capacity(kernel.nodes.len());
    let mut new_index: Vec<usize> = vec![usize::MAX; kernel.nodes.len()];
    for (k, node) in kernel.nodes.iter().enumerate() {
        let Some(conv) = written_at[k] else {
            if fused[k] {
                continue;
            }
            let operands: Vec<usize> = node.operands.iter().map(|&o| new_index[o]).collect();
            nodes.push(KernelNode { operands, ..node.clone() });
            new_index[k] = nodes.len() - 1;
            continue;
        };
        let steps = plans[conv].take().expect("written above");
        let c = &kernel.nodes[conv];
        let inputs = [new_index[c.operands[0]], new_index[kernel_read[conv]]];
        new_index[k] = splice(&mut nodes, c, steps, &inputs, &new_index, |_, _, _| None);
        debug_assert_eq!(nodes[new_index[k]].ty, node.ty);
    }
    kernel.renumber(nodes, &new_index);
    // Moves of a kernel that nothing else reads are gone with the convolution.
    kernel.drop_unread(looked_through.iter().map(|&k| new_index[k]));
}

/// Whether `count` rows read every `stride`-th from row `first`, each as the first row of a
/// group of `stride` rows (a strided load reads whole groups), would take a group past the
/// last of `rows` rows: the piece's last row is then read on its own.
pub fn strided_rows_run_past(first: i64, count: i64, stride: i64, rows: i64) -> bool {
    count > 1 && stride > 1 && first + count * stride > rows
}

/// Appends a lowering's `steps` to `nodes` as the nodes that compute `node`, each named after
/// it and placed at its line, and returns the node of the last step's value.
///
/// `inputs` are the nodes `Value::Input` reads and `new_index` the nodes `Value::Node` reads
/// (the old kernel's node `n` is `new_index[n]`). `reuse` may answer a node already written
/// that is a step's value (a peephole); that step is then not written.
pub fn splice(
    nodes: &mut Vec<KernelNode>,
    node: &KernelNode,
    steps: Vec<Step>,
    inputs: &[usize],
    new_index: &[usize],
    mut reuse: impl FnMut(&Step, &[usize], &[KernelNode]) -> Option<usize>,
) -> usize {
    // The node each step's value is.
    let mut at: Vec<usize> = Vec::with_capacity(steps.len());
    for (j, step) in steps.into_iter().enumerate() {
        let args: Vec<usize> = step
            .operands
            .iter()
            .map(|v| match *v {
                Value::Input(i) => inputs[i],
                Value::Step(s) => at[s],
                Value::Node(n) => new_index[n],
            })
            .collect();
        if let Some(existing) = reuse(&step, &args, nodes) {
            at.push(existing);
            continue;
        }
        debug_assert!(
            crate::infer::check(&step.op, &args.iter().map(|&a| &nodes[a].ty).collect::<Vec<_>>(), &step.ty).is_ok(),
            "step {j} of {}: {:?}",
            node.name,
            step.op
        );
        nodes.push(KernelNode { name: format!("{}.{j}", node.name), op: step.op, ty: step.ty, operands: args, ..node.clone() });
        at.push(nodes.len() - 1);
    }
    *at.last().expect("a lowering writes at least one step")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nhwc(window: &str) -> String {
        format!("window={window}, dim_labels=b01f_01io->b01f")
    }

    #[test]
    fn labels_and_window_are_read_as_written() {
        assert_eq!(dim_labels("b01f_01io -> b01f").map(|l| l[1].clone()), Some("01io".to_string()));
        assert_eq!(dim_labels("b01f->b01f"), None);
        let fields = window_fields("{size = 3x3 pad = -1_2x0_0 stride=2x1}").expect("a window");
        assert_eq!(fields[1], ("pad".to_string(), vec![-1, 2, 0, 0]));
        assert_eq!(window_fields("{size=3x3 size=3x3}"), None);
        assert_eq!(window_fields("{size=3x3 wide=2}"), None);
    }

    #[test]
    fn the_output_size_is_xlas() {
        let lhs = Ty::new(DType::S8, vec![1, 8, 8, 16]);
        let rhs = Ty::new(DType::S8, vec![3, 3, 16, 32]);
        let same = read(&nhwc("{size=3x3 pad=1_1x1_1}"), &lhs, &rhs).expect("typed");
        assert_eq!(result_type(&same, &lhs, &rhs, DType::S32).shape, vec![1, 8, 8, 32]);
        let strided = read(&nhwc("{size=3x3 stride=2x2}"), &lhs, &rhs).expect("typed");
        assert_eq!(result_type(&strided, &lhs, &rhs, DType::S32).shape, vec![1, 3, 3, 32]);
        let dilated = read(&nhwc("{size=3x3 rhs_dilate=2x2}"), &lhs, &rhs).expect("typed");
        assert_eq!(result_type(&dilated, &lhs, &rhs, DType::S32).shape, vec![1, 4, 4, 32]);
    }

    #[test]
    fn refusals_name_the_attribute_or_operand() {
        let lhs = Ty::new(DType::S8, vec![1, 8, 8, 16]);
        let rhs = Ty::new(DType::S8, vec![3, 3, 16, 32]);
        let site = |attrs: &str, rhs: &Ty| read(attrs, &lhs, rhs).expect_err("refused").site;
        assert_eq!(site(&nhwc("{size=3x5}"), &rhs), Site::Attr("window"));
        assert_eq!(site("window={size=3x3}, dim_labels=b01f_01xo->b01f", &rhs), Site::Attr("dim_labels"));
        assert_eq!(site("dim_labels=b01f_01io->b01f", &rhs), Site::Opcode);
        assert_eq!(site(&nhwc("{size=3x3}"), &Ty::new(DType::S8, vec![3, 3, 8, 32])), Site::Operand(1));
    }

    #[test]
    fn segments_separate_the_borders_where_the_window_reaches_padding() {
        let w = WindowDim { size: 3, stride: 1, low: 1, high: 1, lhs_dilate: 1, rhs_dilate: 1, reversal: false };
        assert_eq!(w.segments(8, 8), vec![(0, 1, vec![1, 2]), (1, 7, vec![0, 1, 2]), (7, 8, vec![0, 1])]);
        let valid = WindowDim { low: 0, high: 0, stride: 2, ..w };
        assert_eq!(valid.segments(8, 3), vec![(0, 3, vec![0, 1, 2])]);
    }

    #[test]
    fn an_integer_convolution_sums_one_product_per_window_position_on_the_input() {
        let lhs = Ty::new(DType::S8, vec![1, 4, 4, 16]);
        let rhs = Ty::new(DType::S8, vec![3, 3, 16, 16]);
        let conv = read(&nhwc("{size=3x3 pad=1_1x1_1}"), &lhs, &rhs).expect("typed");
        let ty = result_type(&conv, &lhs, &rhs, DType::S32);
        let steps = lower(&conv, &lhs, &rhs, &ty).expect("written as products");
        let products = steps.iter().filter(|s| matches!(s.op, Op::Dot(_))).count();
        // Pieces of one output row's first, middle two and last pixels: 2, 3 and 2 window
        // columns on the input, times 2, 3, 3 and 2 window rows for the four output rows.
        assert_eq!(products, (2 + 3 + 2) * (2 + 3 + 3 + 2));
        assert_eq!(steps.last().map(|s| s.ty.clone()), Some(ty));
    }

    #[test]
    fn a_float_convolution_is_one_product_per_piece_zeros_kept() {
        let lhs = Ty::new(DType::F32, vec![1, 4, 4, 8]);
        let rhs = Ty::new(DType::F32, vec![3, 3, 8, 8]);
        let conv = read(&nhwc("{size=3x3 pad=1_1x1_1}"), &lhs, &rhs).expect("typed");
        let ty = result_type(&conv, &lhs, &rhs, DType::F32);
        let steps = lower(&conv, &lhs, &rhs, &ty).expect("written as products");
        let products: Vec<&Step> = steps.iter().filter(|s| matches!(s.op, Op::Dot(_))).collect();
        assert_eq!(products.len(), 4 * 3);
        assert!(steps.iter().any(|s| matches!(s.op, Op::Broadcast(_))));
    }

    /// Every node of `kernel` has the type its operator gives its operands'.
    fn assert_typed(kernel: &Kernel) {
        for node in &kernel.nodes {
            let tys: Vec<&Ty> = node.operands.iter().map(|&o| &kernel.nodes[o].ty).collect();
            crate::infer::check(&node.op, &tys, &node.ty).unwrap_or_else(|e| panic!("{}: {e}", node.name));
        }
    }

    #[test]
    fn a_bias_relu_and_saturation_after_a_convolution_apply_to_each_piece() {
        let text = "HloModule m\n\nENTRY e {\n  x = s8[1,4,4,16] parameter(0)\n  w = s8[3,3,16,16] parameter(1)\n  \
                    c = s32[1,4,4,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n  \
                    b = s32[16] parameter(2)\n  bb = s32[1,4,4,16] broadcast(b), dimensions={3}\n  s = s32[1,4,4,16] add(c, bb)\n  \
                    z = s32[] constant(0)\n  zz = s32[1,4,4,16] broadcast(z), dimensions={}\n  r = s32[1,4,4,16] maximum(s, zz)\n  \
                    lo = s32[] constant(-128)\n  hi = s32[] constant(127)\n  k = s32[1,4,4,16] clamp(lo, r, hi)\n  \
                    ROOT q = s8[1,4,4,16] convert(k)\n}\n";
        let mut kernel = crate::kernel::parse_kernel_as_written(text, "k.hlo").expect("a valid kernel");
        lower_kernel(&mut kernel);
        assert_typed(&kernel);
        // Each of the 12 pieces (4 rows of 1, 2 and 1 pixels) sums its products and adds its
        // bias (as many adds as products), takes the maximum, clamps and converts its own rows.
        let count = |name: &str| kernel.nodes.iter().filter(|n| n.op.hlo_name() == name).count();
        assert_eq!(count("add"), count("dot"));
        assert_eq!((count("maximum"), count("clamp"), count("convert")), (12, 12, 12));
        assert_eq!(kernel.nodes[kernel.root].ty, Ty::new(DType::S8, vec![1, 4, 4, 16]));
    }

    #[test]
    fn a_literal_of_many_values_after_a_convolution_is_added_by_its_rows() {
        // A literal of the output's shape whose elements differ is read a piece's rows at a
        // time, not as one value (its first) broadcast over every piece.
        let text = "HloModule m\n\nENTRY e {\n  x = s8[1,2,16] parameter(0)\n  w = s8[1,16,2] parameter(1)\n  \
                    c = s32[1,2,2] convolution(x, w), window={size=1}, dim_labels=b0f_0io->b0f\n  \
                    k = s32[1,2,2] constant({ { {1, 2}, {3, 4} } })\n  ROOT r = s32[1,2,2] add(c, k)\n}\n";
        let kernel = crate::kernel::parse_kernel_as_written(text, "k.hlo").expect("a valid kernel");
        let conv = kernel.nodes.iter().position(|n| n.name == "c").expect("the convolution");
        let literal = kernel.nodes.iter().position(|n| n.name == "k").expect("the literal");
        let Op::Other { attrs, .. } = &kernel.nodes[conv].op else { panic!("kept whole as written") };
        let spec = read(attrs, &kernel.nodes[0].ty, &kernel.nodes[1].ty).expect("typed");
        let (after, _) = fused_after(&kernel, conv, &spec).expect("fused");
        assert_eq!(after[0].operands, vec![Operand::Convolution, Operand::Rows(literal)]);
    }

    #[test]
    fn output_rows_wholly_in_the_padding_are_one_run_of_zeros() {
        // One window row, one padding row above and below: output rows 0 and 2 read only
        // padding, each of their two pieces (the window's last column off the input in the
        // second) zeros, merged into one literal run per row.
        let lhs = Ty::new(DType::S8, vec![1, 1, 5, 32]);
        let rhs = Ty::new(DType::S8, vec![1, 2, 32, 3]);
        let conv = read(&nhwc("{size=1x2 pad=1_1x0_1}"), &lhs, &rhs).expect("typed");
        let ty = result_type(&conv, &lhs, &rhs, DType::S32);
        assert_eq!(ty.shape, vec![1, 3, 5, 3]);
        let steps = lower(&conv, &lhs, &rhs, &ty).expect("written as products");
        let zeros: Vec<&Ty> = steps.iter().filter(|s| matches!(s.op, Op::Broadcast(_))).map(|s| &s.ty).collect();
        assert_eq!(zeros, vec![&Ty::new(DType::S32, vec![15]); 2]);
        assert_eq!(steps.iter().filter(|s| matches!(s.op, Op::Dot(_))).count(), 3);
    }

    /// A 1-D int8 convolution of four 16-feature samples by a 3-tap 16x16 kernel whose
    /// `window` is as written, accumulated in int32: its type and its steps.
    fn written_1d(window: &str) -> (Ty, Vec<Step>) {
        let lhs = Ty::new(DType::S8, vec![1, 4, 16]);
        let rhs = Ty::new(DType::S8, vec![3, 16, 16]);
        let conv = read(&format!("window={window}, dim_labels=b0f_0io->b0f"), &lhs, &rhs).expect("typed");
        let ty = result_type(&conv, &lhs, &rhs, DType::S32);
        let steps = lower(&conv, &lhs, &rhs, &ty).expect("written as products");
        (ty, steps)
    }

    #[test]
    fn a_dilated_input_reads_each_element_at_the_positions_of_its_residue() {
        // Four samples dilated by 2 (seven, zeros between), a 3-tap window padded by one on
        // each side: seven outputs. Output 0 reads sample 0 at tap 1; outputs 1 and 3 read
        // samples at taps 0 and 2 (two products of two rows), 2 and 4 at tap 1 (one); output
        // 5 (past the last pair) at taps 0 and 2; output 6 at tap 1.
        let (ty, steps) = written_1d("{size=3 pad=1_1 lhs_dilate=2}");
        assert_eq!(ty.shape, vec![1, 7, 16]);
        let rows: Vec<i64> = steps.iter().filter(|s| matches!(s.op, Op::Dot(_))).map(|s| s.ty.shape[0]).collect();
        assert_eq!(rows, vec![1, 2, 2, 2, 1, 1, 1]);
        // The residues' parts side by side as columns: [2, 2 x 16].
        assert!(steps.iter().any(|s| matches!(s.op, Op::Concatenate(1)) && s.ty.shape == vec![2, 32]));
        assert_eq!(steps.last().map(|s| s.ty.clone()), Some(ty));
    }

    #[test]
    fn a_reversed_kernel_takes_each_window_position_from_its_mirror() {
        // Four samples, a 3-tap window padded by one: output 0 reads samples 0 and 1 at taps 1
        // and 2, which a reversed kernel takes from its rows of taps 1 and 0.
        let (_, steps) = written_1d("{size=3 pad=1_1 rhs_reversal=1}");
        let kernel_rows = |s: &Step| match s.operands[1] {
            Value::Step(k) => match &steps[k].op {
                Op::Slice(ranges) => ranges[0],
                other => panic!("the kernel's block is a slice, found {other:?}"),
            },
            other => panic!("a step, found {other:?}"),
        };
        let first: Vec<(i64, i64, i64)> = steps.iter().filter(|s| matches!(s.op, Op::Dot(_))).take(2).map(kernel_rows).collect();
        assert_eq!(first, vec![(16, 32, 1), (0, 16, 1)]);
    }

    #[test]
    fn a_kernel_mirrored_and_with_its_features_swapped_is_read_where_it_lies() {
        // What `conv_transpose(..., transpose_kernel=True)` writes: the window reversed, then
        // the features swapped. The products read the parameter itself, the reversal folded
        // into the window and the swap into the kernel's layout.
        let text = "HloModule m\nENTRY e {\n  x = s8[1,4,4,16] parameter(0)\n  \
                    w = s8[3,3,8,16] parameter(1)\n  \
                    r = s8[3,3,8,16] reverse(w), dimensions={0,1}\n  \
                    t = s8[3,3,16,8] transpose(r), dimensions={0,1,3,2}\n  \
                    ROOT c = s32[1,4,4,8] convolution(x, t), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n";
        let kernel = crate::kernel::parse_kernel(text, "m.hlo").expect("parses");
        assert_typed(&kernel);
        assert!(!kernel.nodes.iter().any(|n| n.name == "r" || n.name == "t"), "the kernel's moves are gone");
        let mut conv = read(&nhwc("{size=3x3 pad=1_1x1_1}"), &Ty::new(DType::S8, vec![1, 4, 4, 16]), &Ty::new(DType::S8, vec![3, 3, 16, 8]))
            .expect("typed");
        let (weights, moves) = through_kernel_moves(&kernel_as_written(text), 3, &mut conv);
        assert_eq!((weights, moves), (1, vec![3, 2]));
        assert_eq!((conv.rhs.feature, conv.rhs.batch), (3, 2));
        assert!(conv.window.iter().all(|w| w.reversal));
    }

    fn kernel_as_written(text: &str) -> Kernel {
        crate::kernel::parse_kernel_as_written(text, "m.hlo").expect("parses")
    }
}
