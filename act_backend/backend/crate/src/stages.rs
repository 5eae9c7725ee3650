//! Channels-first convolutions too large for one search, in stages: the image transposed to
//! channels-last and the weights to the order the products read them in (`01io`), the
//! convolution and the work after it computed channels-last, and its result transposed back,
//! each a kernel of its own, run one after another with the values between them in HBM.
//!
//! [`crate::channels_last`] writes such a convolution between transposes in one kernel, which
//! is what a small one wants (no value goes through HBM and back). A large one is searched
//! in bands of output rows ([`crate::bands`]), and a band of a channels-first image or output
//! is no run of its bytes: each stage here is one a band, a block or one search can take, the
//! middle one a channels-last convolution like any other.

use crate::kernel::{Kernel, KernelNode};
use crate::lang::Op;

/// Where a stage's parameter lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Parameter `i` of the whole kernel.
    Param(usize),
    /// The result of stage `j` (an earlier one).
    Stage(usize),
}

/// One stage: its kernel, as written (convolutions whole), and where each of its
/// parameters lies.
#[derive(Debug, Clone)]
pub struct Stage {
    pub kernel: Kernel,
    pub inputs: Vec<Source>,
    /// Whether it transposes a parameter that something besides a convolution reads (an
    /// addend of a channels-first output, taken channels-last): a transpose on chip of a
    /// value only loaded, which some ISAs cannot compute where a stage's input is moved.
    pub beside: bool,
}

/// The stages of `written` (a kernel as written), in the order they run, its result the
/// last one's; `None` where it has no convolution laid out otherwise than channels-last with
/// `01io` weights read from a parameter, or several results.
pub fn plan(written: &Kernel) -> Option<Vec<Stage>> {
    if written.results.len() != 1 {
        return None;
    }
    let mut k = written.clone();
    crate::channels_last::lower_kernel(&mut k);
    weights_laid_out_as_read(&mut k);
    if !k.nodes.iter().any(|n| matches!(&n.op, Op::Other { name, .. } if name == "convolution")) {
        return None;
    }
    // Parameters transposed to the layouts the channels-last convolution reads: its image, its
    // weights, an addend of its output's shape.
    let transposed: Vec<usize> = (0..k.nodes.len())
        .filter(|&j| {
            let node = &k.nodes[j];
            j != k.root && matches!(node.op, Op::Transpose(_)) && matches!(k.nodes[node.operands[0]].op, Op::Parameter(_))
        })
        .collect();
    // The result transposed back to its layout, from a value computed channels-last.
    let root = &k.nodes[k.root];
    let back = (matches!(root.op, Op::Transpose(_)) && !matches!(k.nodes[root.operands[0]].op, Op::Parameter(_)))
        .then_some(root.operands[0]);
    if transposed.is_empty() && back.is_none() {
        return None;
    }
    let mut stages: Vec<Stage> = Vec::new();
    let convolution = |n: &KernelNode| matches!(&n.op, Op::Other { name, .. } if name == "convolution");
    for (i, &t) in transposed.iter().enumerate() {
        let (kernel, stands_for) = sub_kernel(&k, t, &[], &format!("transposed{i}"));
        let inputs = stands_for.iter().map(|&s| source(&k, s, &transposed, None)).collect();
        let beside = k.nodes.iter().any(|n| n.operands.contains(&t) && !convolution(n));
        stages.push(Stage { kernel, inputs, beside });
    }
    let middle = back.unwrap_or(k.root);
    let (kernel, stands_for) = sub_kernel(&k, middle, &transposed, "channels_last");
    let inputs = stands_for.iter().map(|&s| source(&k, s, &transposed, None)).collect();
    stages.push(Stage { kernel, inputs, beside: false });
    if let Some(value) = back {
        let body = stages.len() - 1;
        let (kernel, stands_for) = sub_kernel(&k, k.root, &[value], "layout");
        let inputs = stands_for.iter().map(|&s| source(&k, s, &transposed, Some((value, body)))).collect();
        stages.push(Stage { kernel, inputs, beside: false });
    }
    Some(stages)
}

/// Writes the kernel (weights) of each convolution of `k` that reads it from a parameter laid
/// out otherwise as a transpose of it to spatial dimensions, input features, output features
/// (`01io`), the order its products read it in: a stage of its own, which each band of the
/// convolution then reads as it is instead of transposing it again.
fn weights_laid_out_as_read(k: &mut Kernel) {
    let mut nodes: Vec<KernelNode> = Vec::with_capacity(k.nodes.len());
    let mut new_index = vec![usize::MAX; k.nodes.len()];
    for (j, node) in k.nodes.iter().enumerate() {
        let mut node = KernelNode { operands: node.operands.iter().map(|&o| new_index[o]).collect(), ..node.clone() };
        if let Some((order, attrs)) = as_read(&node, &nodes) {
            let w = &nodes[node.operands[1]];
            let t = KernelNode { name: format!("{}.weights", node.name), op: Op::Transpose(order.clone()), ty: w.ty.permuted(&order), operands: vec![node.operands[1]], ..node.clone() };
            nodes.push(t);
            node.operands[1] = nodes.len() - 1;
            node.op = Op::Other { name: "convolution".into(), attrs };
        }
        nodes.push(node);
        new_index[j] = nodes.len() - 1;
    }
    k.renumber(nodes, &new_index);
}

/// For a convolution node (its operands at `nodes`) whose weights are a parameter not laid
/// out `01io`: the transpose to that layout and the convolution's attributes reading it.
fn as_read(node: &KernelNode, nodes: &[KernelNode]) -> Option<(Vec<usize>, String)> {
    let Op::Other { name, attrs } = &node.op else { return None };
    if name != "convolution" || node.operands.len() != 2 || !matches!(nodes[node.operands[1]].op, Op::Parameter(_)) {
        return None;
    }
    let conv = crate::convolution::read(attrs, &nodes[node.operands[0]].ty, &nodes[node.operands[1]].ty).ok()?;
    let order: Vec<usize> = conv.rhs.spatial.iter().copied().chain([conv.rhs.feature, conv.rhs.batch]).collect();
    if order.iter().enumerate().all(|(i, &d)| i == d) {
        return None;
    }
    let written = crate::lang::attribute(attrs, "dim_labels")?;
    let [image, _, out] = crate::convolution::dim_labels(written)?;
    let weights: String = (0..conv.window.len()).filter_map(|d| char::from_digit(d as u32, 10)).chain(['i', 'o']).collect();
    Some((order, attrs.replace(&format!("dim_labels={written}"), &format!("dim_labels={image}_{weights}->{out}"))))
}

/// Where node `s` of `k` (a parameter, a transpose of one, or `computed.0`, the result of
/// stage `computed.1`) lies.
fn source(k: &Kernel, s: usize, transposed: &[usize], computed: Option<(usize, usize)>) -> Source {
    if let Some(i) = transposed.iter().position(|&t| t == s) {
        return Source::Stage(i);
    }
    match (k.nodes[s].op.clone(), computed) {
        (_, Some((value, stage))) if value == s => Source::Stage(stage),
        (Op::Parameter(i), _) => Source::Param(i),
        _ => unreachable!("a stage's parameters stand for parameters and cut values"),
    }
}

/// The kernel computing node `root` of `k`, each node of `cut` and each parameter it reads a
/// parameter of its own (numbered in the order of the nodes), and per parameter the node of
/// `k` it stands for.
fn sub_kernel(k: &Kernel, root: usize, cut: &[usize], suffix: &str) -> (Kernel, Vec<usize>) {
    let mut needed = vec![false; k.nodes.len()];
    let mut stack = vec![root];
    while let Some(j) = stack.pop() {
        if !std::mem::replace(&mut needed[j], true) && !cut.contains(&j) {
            stack.extend(k.nodes[j].operands.iter().copied());
        }
    }
    let (mut nodes, mut index, mut stands_for, mut param_nodes) = (Vec::new(), vec![usize::MAX; k.nodes.len()], Vec::new(), Vec::new());
    for (j, node) in k.nodes.iter().enumerate().filter(|(j, _)| needed[*j]) {
        let new = if cut.contains(&j) || matches!(node.op, Op::Parameter(_)) {
            param_nodes.push(nodes.len());
            stands_for.push(j);
            KernelNode { op: Op::Parameter(stands_for.len() - 1), operands: Vec::new(), ..node.clone() }
        } else {
            KernelNode { operands: node.operands.iter().map(|&o| index[o]).collect(), ..node.clone() }
        };
        index[j] = nodes.len();
        nodes.push(new);
    }
    let kernel = Kernel {
        name: format!("{}.{suffix}", k.name),
        file: k.file.clone(),
        params: param_nodes.iter().map(|&p: &usize| nodes[p].ty.clone()).collect(),
        outputs: vec![k.nodes[root].ty.clone()],
        param_nodes,
        results: vec![index[root]],
        root: index[root],
        nodes,
    };
    (kernel, stands_for)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::parse_kernel_as_written;

    const NCHW: &str = "HloModule m\nENTRY e {\n  x = s8[1,16,8,8] parameter(0)\n  w = s8[16,16,3,3] parameter(1)\n  \
        b = s32[16] parameter(2)\n  c = s32[1,16,8,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, \
        dim_labels=bf01_oi01->bf01\n  bb = s32[1,16,8,8] broadcast(b), dimensions={1}\n  \
        ROOT s = s32[1,16,8,8] add(c, bb)\n}\n";

    #[test]
    fn a_channels_first_convolution_is_its_image_transposed_its_convolution_and_its_result_transposed() {
        let k = parse_kernel_as_written(NCHW, "m.hlo").expect("parses");
        let stages = plan(&k).expect("stages");
        assert_eq!(stages.len(), 4);
        let [image, weights, body, back] = [&stages[0], &stages[1], &stages[2], &stages[3]];
        // The weights transposed to the layout the products read them in, once.
        assert_eq!(weights.inputs, vec![Source::Param(1)]);
        assert_eq!(weights.kernel.outputs[0].shape, vec![3, 3, 16, 16]);
        assert_eq!(image.inputs, vec![Source::Param(0)]);
        assert_eq!(image.kernel.outputs[0].shape, vec![1, 8, 8, 16]);
        assert!(matches!(image.kernel.nodes[image.kernel.root].op, Op::Transpose(_)));
        // The body reads the bias where it lies and the transposed image and weights (its
        // parameters in the order of the nodes they stand for).
        assert_eq!(body.inputs, vec![Source::Param(2), Source::Stage(0), Source::Stage(1)]);
        assert_eq!(body.kernel.params[1].shape, vec![1, 8, 8, 16]);
        assert_eq!(body.kernel.outputs[0].shape, vec![1, 8, 8, 16]);
        assert!(!body.kernel.nodes.iter().any(|n| matches!(n.op, Op::Transpose(_))), "{:?}", body.kernel.nodes);
        assert_eq!(back.inputs, vec![Source::Stage(2)]);
        assert_eq!(back.kernel.outputs[0].shape, vec![1, 16, 8, 8]);
    }

    #[test]
    fn an_addend_of_a_channels_first_output_is_transposed_beside_the_convolution() {
        let text = NCHW.replace("bb = s32[1,16,8,8] broadcast(b), dimensions={1}", "bb = s32[1,16,8,8] parameter(3)");
        let stages = plan(&parse_kernel_as_written(&text, "m.hlo").expect("parses")).expect("stages");
        let beside: Vec<bool> = stages.iter().map(|s| s.beside).collect();
        // The image, the weights, the addend; the convolution; its result transposed back.
        assert_eq!(beside, vec![false, false, true, false, false]);
        assert_eq!(stages[2].inputs, vec![Source::Param(3)]);
    }

    #[test]
    fn a_channels_last_kernel_has_stages_only_for_weights_laid_out_otherwise() {
        let nhwc = NCHW.replace("[1,16,8,8]", "[1,8,8,16]").replace("dimensions={1}", "dimensions={3}");
        let text = nhwc.replace("bf01_oi01->bf01", "b01f_oi01->b01f");
        let stages = plan(&parse_kernel_as_written(&text, "m.hlo").expect("parses")).expect("stages");
        assert_eq!(stages.iter().map(|s| s.inputs.clone()).collect::<Vec<_>>(), vec![vec![Source::Param(1)], vec![Source::Param(0), Source::Param(2), Source::Stage(0)]]);
        let text = nhwc.replace("s8[16,16,3,3]", "s8[3,3,16,16]").replace("bf01_oi01->bf01", "b01f_01io->b01f");
        assert!(plan(&parse_kernel_as_written(&text, "m.hlo").expect("parses")).is_none());
    }
}
