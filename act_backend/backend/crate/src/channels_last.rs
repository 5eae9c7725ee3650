//! Convolutions laid out channels-first (`NCHW`, what `jax.lax.conv` and PyTorch write)
//! written as channels-last ones between transposes, before they are written as products:
//! the image transposed to batch, spatial dimensions, features, the convolution computing its
//! output so laid out, and the transpose back to the output's own layout moved past the
//! elementwise work after it (a bias, a ReLU, saturation, an addend), so that that work is
//! applied to each piece of the convolution as it is for a channels-last one
//! (`convolution::fused_after`) and only the kernel's result is transposed.
//!
//! Moving a transpose past an elementwise operation is exact for every type: the operation
//! reads the same elements. Its other operands are taken in the convolution's layout: a
//! scalar as it is, a broadcast with its dimensions renamed (where they stay in order), any
//! other value transposed.

use crate::convolution::{self, Convolution, Layout};
use crate::kernel::{Kernel, KernelNode};
use crate::lang::{inverse_permutation, Op, Ty};

/// The order of `layout`'s dimensions as batch, spatial dimensions, features.
fn channels_last_order(layout: &Layout) -> Vec<usize> {
    std::iter::once(layout.batch).chain(layout.spatial.iter().copied()).chain([layout.feature]).collect()
}

fn is_identity(order: &[usize]) -> bool {
    order.iter().enumerate().all(|(i, &d)| i == d)
}

/// `dim_labels` of `conv` with its image and output channels-last (`b01f`), its kernel's as
/// written.
fn channels_last_labels(conv: &Convolution, attrs: &str) -> Option<String> {
    let written = crate::lang::attribute(attrs, "dim_labels")?;
    let [_, kernel, _] = convolution::dim_labels(written)?;
    let image: String = std::iter::once('b').chain((0..conv.window.len()).map(|d| char::from_digit(d as u32, 10).unwrap_or('?'))).chain(['f']).collect();
    Some(attrs.replace(&format!("dim_labels={written}"), &format!("dim_labels={image}_{kernel}->{image}")))
}

/// Writes every convolution of `kernel` whose image or output is not laid out channels-last
/// as one that is (see the module's documentation).
pub fn lower_kernel(kernel: &mut Kernel) {
    let live_before = crate::fold::live(kernel);
    let mut nodes: Vec<KernelNode> = Vec::with_capacity(kernel.nodes.len());
    let mut new_index = vec![usize::MAX; kernel.nodes.len()];
    // Per written node: it is `transpose(inner, perm)`, written here to be moved on.
    let mut moving: Vec<Option<(usize, Vec<usize>)>> = Vec::new();
    let mut written: Vec<usize> = Vec::new();
    for (k, node) in kernel.nodes.iter().enumerate() {
        let operands: Vec<usize> = node.operands.iter().map(|&o| new_index[o]).collect();
        let push = |nodes: &mut Vec<KernelNode>, moving: &mut Vec<Option<(usize, Vec<usize>)>>, n: KernelNode, m| {
            nodes.push(n);
            moving.push(m);
            nodes.len() - 1
        };
        let named = |suffix: &str, op: Op, ty: Ty, operands: Vec<usize>| KernelNode {
            name: format!("{}.{suffix}", node.name),
            op,
            ty,
            operands,
            ..node.clone()
        };
        let mut last = None;
        if let Op::Other { name, attrs } = &node.op {
            let conv = (name == "convolution" && operands.len() == 2)
                .then(|| convolution::read(attrs, &nodes[operands[0]].ty, &nodes[operands[1]].ty).ok())
                .flatten();
            if let Some(conv) = conv {
                let (image, out) = (channels_last_order(&conv.lhs), channels_last_order(&conv.out));
                if let (false, Some(attrs)) = (is_identity(&image) && is_identity(&out), channels_last_labels(&conv, attrs)) {
                    let x_ty = nodes[operands[0]].ty.clone();
                    let x = if is_identity(&image) {
                        operands[0]
                    } else {
                        let t = push(&mut nodes, &mut moving, named("image", Op::Transpose(image.clone()), x_ty.permuted(&image), vec![operands[0]]), None);
                        written.push(t);
                        t
                    };
                    let op = Op::Other { name: name.clone(), attrs };
                    let c = push(&mut nodes, &mut moving, named("channels_last", op, node.ty.permuted(&out), vec![x, operands[1]]), None);
                    last = Some(if is_identity(&out) {
                        c
                    } else {
                        let back = inverse_permutation(&out);
                        let t = push(&mut nodes, &mut moving, named("layout", Op::Transpose(back.clone()), node.ty.clone(), vec![c]), Some((c, back)));
                        written.push(t);
                        t
                    });
                }
            }
        }
        if last.is_none() && convolution::elementwise(&node.op) && node.ty.rank() > 0 {
            last = moved_past(node, &operands, &mut nodes, &mut moving, &mut written);
        }
        new_index[k] = last.unwrap_or_else(|| push(&mut nodes, &mut moving, KernelNode { operands, ..node.clone() }, None));
    }
    kernel.renumber(nodes, &new_index);
    // The transposes moved on, and the operands taken in the convolution's layout instead,
    // are read by nothing any more.
    let made_dead = (0..new_index.len()).filter(|&k| live_before[k]).map(|k| new_index[k]);
    kernel.drop_unread(written.into_iter().chain(made_dead));
}

/// `node` (elementwise, its operands written at `operands`) with a transpose written here
/// among its operands, written in the transposed value's layout and transposed after it:
/// the transpose it then is, `None` where no operand is such a transpose (or two disagree).
fn moved_past(
    node: &KernelNode,
    operands: &[usize],
    nodes: &mut Vec<KernelNode>,
    moving: &mut Vec<Option<(usize, Vec<usize>)>>,
    written: &mut Vec<usize>,
) -> Option<usize> {
    let perms: Vec<&Vec<usize>> = operands.iter().filter_map(|&o| moving[o].as_ref().map(|(_, p)| p)).collect();
    let perm = (*perms.first()?).clone();
    if perms.iter().any(|p| **p != perm) {
        return None;
    }
    // The convolution's layout: dimension `i` there is the result's dimension `order[i]`.
    let order = inverse_permutation(&perm);
    let inner_ty = node.ty.permuted(&order);
    let push = |nodes: &mut Vec<KernelNode>, moving: &mut Vec<Option<(usize, Vec<usize>)>>, suffix: &str, op: Op, ty: Ty, args: Vec<usize>| {
        nodes.push(KernelNode { name: format!("{}.{suffix}", node.name), op, ty, operands: args, ..node.clone() });
        moving.push(None);
        nodes.len() - 1
    };
    let mut inner = Vec::new();
    for &o in operands {
        let operand = nodes[o].clone();
        let arg = if let Some((x, _)) = &moving[o] {
            *x
        } else if operand.ty.rank() == 0 {
            o
        } else {
            let renamed = match &operand.op {
                Op::Broadcast(dims) => Some(dims.iter().map(|&d| perm[d]).collect::<Vec<usize>>()).filter(|d| d.windows(2).all(|w| w[0] < w[1])),
                _ => None,
            };
            match renamed {
                Some(dims) => push(nodes, moving, "broadcast", Op::Broadcast(dims), operand.ty.with_shape(inner_ty.shape.clone()), operand.operands.clone()),
                None => {
                    let ty = operand.ty.permuted(&order);
                    push(nodes, moving, "operand", Op::Transpose(order.clone()), ty, vec![o])
                }
            }
        };
        inner.push(arg);
    }
    let e = push(nodes, moving, "channels_last", node.op.clone(), inner_ty.with_dtype(node.ty.dtype), inner);
    nodes.push(KernelNode { operands: vec![e], op: Op::Transpose(perm.clone()), ..node.clone() });
    moving.push(Some((e, perm)));
    written.push(nodes.len() - 1);
    Some(nodes.len() - 1)
}

#[cfg(test)]
mod tests {
    use crate::kernel::parse_kernel_as_written;
    use crate::lang::Op;

    fn lowered(text: &str) -> crate::kernel::Kernel {
        let mut k = parse_kernel_as_written(text, "t.hlo").expect("parses");
        super::lower_kernel(&mut k);
        for node in &k.nodes {
            let tys: Vec<&crate::lang::Ty> = node.operands.iter().map(|&o| &k.nodes[o].ty).collect();
            crate::infer::check(&node.op, &tys, &node.ty).unwrap_or_else(|e| panic!("{}: {e}", node.name));
        }
        k
    }

    const LAYER: &str = "HloModule m\nENTRY e {\n  x = s8[1,16,8,8] parameter(0)\n  w = s8[16,16,3,3] parameter(1)\n  \
                         b = s32[16] parameter(2)\n  \
                         c = s32[1,16,8,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n  \
                         bb = s32[1,16,8,8] broadcast(b), dimensions={1}\n  a = s32[1,16,8,8] add(c, bb)\n  \
                         z = s32[] constant(0)\n  zz = s32[1,16,8,8] broadcast(z), dimensions={}\n  \
                         ROOT r = s32[1,16,8,8] maximum(a, zz)\n}\n";

    #[test]
    fn a_channels_first_layer_is_computed_channels_last_and_transposed_once_at_its_end() {
        let k = lowered(LAYER);
        let root = &k.nodes[k.root];
        assert_eq!(root.op, Op::Transpose(vec![0, 3, 1, 2]));
        let inner = &k.nodes[root.operands[0]];
        assert_eq!((&inner.op, &inner.ty.shape), (&Op::Maximum, &vec![1, 8, 8, 16]));
        // The bias is broadcast along the features where they now lie; the image transposed.
        assert!(k.nodes.iter().any(|n| n.op == Op::Broadcast(vec![3]) && n.ty.shape == [1, 8, 8, 16]));
        assert_eq!(k.nodes.iter().filter(|n| matches!(n.op, Op::Transpose(_))).count(), 2);
        // Nothing of the channels-first layout is left to compute.
        assert!(!k.nodes.iter().any(|n| n.ty.shape == [1, 16, 8, 8] && !matches!(n.op, Op::Parameter(_)) && n.name != "r"));
        let conv = k.nodes.iter().find(|n| matches!(&n.op, Op::Other { name, .. } if name == "convolution")).expect("a convolution");
        assert!(matches!(&conv.op, Op::Other { attrs, .. } if attrs.contains("dim_labels=b01f_oi01->b01f")));
    }

    #[test]
    fn a_channels_last_convolution_is_left_as_written() {
        let text = LAYER.replace("bf01_oi01->bf01", "b01f_oi01->b01f").replace("s8[1,16,8,8]", "s8[1,8,8,16]");
        let text = text.replace("s32[1,16,8,8]", "s32[1,8,8,16]").replace("dimensions={1}", "dimensions={3}");
        let k = lowered(&text);
        assert!(!k.nodes.iter().any(|n| matches!(n.op, Op::Transpose(_))));
    }
}
