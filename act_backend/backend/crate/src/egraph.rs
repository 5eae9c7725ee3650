//! The e-graph of instruction selection: its per-class data (the element type and shape every
//! member computes) and its starting point, the kernel with byte-flattened inputs and output.

use crate::kernel::Kernel;
use crate::lang::{DType, Node, Op, Ty};
use egg::{Analysis, DidMerge, EGraph, Id};

/// The e-graph instruction selection works on.
pub type SelGraph = EGraph<Node, TypeAnalysis>;

/// Every e-node carries its result type, and equal values have equal types, so a class's data
/// is the type of any of its members. A merge of two types is a bug in a rewrite.
#[derive(Debug, Default, Clone)]
pub struct TypeAnalysis;

impl Analysis<Node> for TypeAnalysis {
    type Data = Ty;

    fn make(_egraph: &mut SelGraph, enode: &Node) -> Ty {
        enode.ty.clone()
    }

    fn merge(&mut self, a: &mut Ty, b: Ty) -> DidMerge {
        assert_eq!(*a, b, "a rewrite equated values of types {a} and {b}");
        DidMerge(false, false)
    }
}

/// The kernel's e-graph and where its operations landed.
pub struct KernelGraph {
    pub egraph: SelGraph,
    /// Class of kernel node `k` (not canonical after unions: use `egraph.find`).
    pub node_class: Vec<Id>,
    /// Class of the byte-flattened output, which must be produced in d0.
    pub root: Id,
    /// Class of the byte leaf of parameter `i`.
    pub inputs: Vec<Id>,
}

/// The bytes of a `ty` value laid out element by element: `u8[shape..., width]` (XLA's
/// bitcast to bytes adds a trailing dimension of the element's width; none for one byte).
pub fn raw_bytes(ty: &Ty) -> Ty {
    let width = i64::from(ty.dtype.bytes());
    let mut shape = ty.shape.clone();
    if width > 1 {
        shape.push(width);
    }
    Ty::new(DType::U8, shape)
}

/// `dtype[shape]` read from `u8[bytes]` at `bytes`: `bitcast_convert(reshape(bytes) :
/// u8[shape..., width]) : dtype[shape]` (XLA's bitcast consumes the trailing width dimension);
/// steps that would be identities are left out.
pub fn from_bytes(egraph: &mut SelGraph, bytes: Id, ty: &Ty) -> Id {
    let raw = raw_bytes(ty);
    let reshaped =
        if egraph[bytes].data == raw { bytes } else { egraph.add(Node::new(Op::Reshape, raw.clone(), vec![bytes])) };
    if raw == *ty {
        reshaped
    } else {
        egraph.add(Node::new(Op::BitcastConvert, ty.clone(), vec![reshaped]))
    }
}

/// The bytes of `value`: `reshape(bitcast_convert(value) : u8[shape..., width]) : u8[bytes]`.
pub fn to_bytes(egraph: &mut SelGraph, value: Id) -> Id {
    let ty = egraph[value].data.clone();
    let raw = raw_bytes(&ty);
    let cast = if raw == ty { value } else { egraph.add(Node::new(Op::BitcastConvert, raw.clone(), vec![value])) };
    let flat = Ty::new(DType::U8, vec![ty.bytes()]);
    if raw == flat {
        cast
    } else {
        egraph.add(Node::new(Op::Reshape, flat, vec![cast]))
    }
}

/// The starting e-graph: every kernel operation, each parameter read from its bytes.
pub fn build(kernel: &Kernel) -> KernelGraph {
    let mut egraph = SelGraph::new(TypeAnalysis);
    let mut node_class = Vec::with_capacity(kernel.nodes.len());
    let mut inputs = vec![Id::from(0usize); kernel.param_nodes.len()];
    for node in &kernel.nodes {
        let id = match node.op {
            Op::Parameter(i) => {
                let bytes = egraph.add(Node::leaf(Op::Input(i), Ty::new(DType::U8, vec![node.ty.bytes()])));
                inputs[i] = bytes;
                from_bytes(&mut egraph, bytes, &node.ty)
            }
            _ => {
                let children = node.operands.iter().map(|&k| node_class[k]).collect();
                egraph.add(Node::new(node.op.clone(), node.ty.clone(), children))
            }
        };
        node_class.push(id);
    }
    let root = to_bytes(&mut egraph, node_class[kernel.root]);
    egraph.rebuild();
    KernelGraph { egraph, node_class, root, inputs }
}

/// Lets every kernel value also travel through HBM: `x = from_bytes(to_bytes(x))` (a bit cast
/// and its inverse), so that store and load instructions can match on it and extraction can
/// offer a spill and reload when on-chip buffers are too small to keep the value.
pub fn add_spill_paths(kg: &mut KernelGraph, kernel: &Kernel) {
    let eg = &mut kg.egraph;
    for (k, node) in kernel.nodes.iter().enumerate() {
        // A shaped constant (one the kernel wrote, or one folded from constants) travels too:
        // its bytes in HBM are how an instruction's load reaches it.
        let scalar_constant = matches!(node.op, Op::Constant(_)) && node.ty.shape.is_empty();
        if matches!(node.op, Op::Parameter(_)) || scalar_constant || k == kernel.root {
            continue;
        }
        let x = kg.node_class[k];
        let bytes = to_bytes(eg, x);
        let back = from_bytes(eg, bytes, &node.ty);
        eg.union(x, back);
    }
    eg.rebuild();
}

/// Each kernel result that computes nothing (an input or a literal written out as it is,
/// copied or reshaped) also seen as rows of each on-chip buffer that holds its element type
/// (any, where none does), those rows' bytes being the result's: the rows a load and a store
/// move it through. A computed result gets its rows from the operation it is (tiling); this
/// one's class is an input's or a literal's, which no tiling splits.
pub fn add_row_views_of_results(kg: &mut KernelGraph, kernel: &Kernel, isa: &crate::isa::Isa) {
    let on_chip: Vec<&crate::isa::Buffer> = isa.buffers.iter().filter(|b| !b.is_hbm() && b.access_dims.len() >= 2).collect();
    for &k in &kernel.results {
        let node = &kernel.nodes[k];
        let mut source = node;
        while matches!(source.op, Op::Copy | Op::Reshape) {
            source = &kernel.nodes[source.operands[0]];
        }
        if !matches!(source.op, Op::Parameter(_) | Op::Constant(_)) || node.ty.rank() == 0 {
            continue;
        }
        // The buffers holding its element type, or any where none does.
        let typed: Vec<&&crate::isa::Buffer> = on_chip.iter().filter(|b| b.dtype == node.ty.dtype).collect();
        let buffers = if typed.is_empty() { on_chip.iter().collect() } else { typed };
        let mut widths: Vec<i64> = buffers.iter().filter_map(|b| *b.access_dims.last()?).collect();
        widths.sort_unstable();
        widths.dedup();
        for &w in &widths {
            let elements = node.ty.elements();
            if elements % w != 0 || node.ty.shape == [elements / w, w] {
                continue;
            }
            let rows = node.ty.with_shape(vec![elements / w, w]);
            // Its bytes are the result's: a store of the rows writes the result.
            let view = kg.egraph.add(Node::new(Op::Reshape, rows, vec![kg.node_class[k]]));
            let (of_view, of_result) = (to_bytes(&mut kg.egraph, view), to_bytes(&mut kg.egraph, kg.node_class[k]));
            kg.egraph.union(of_view, of_result);
        }
    }
    kg.egraph.rebuild();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::parse_kernel;

    #[test]
    fn parameters_are_bit_casts_of_their_bytes() {
        let k = parse_kernel(
            "HloModule m\nENTRY e {\n  a = bf16[4,8] parameter(0)\n  ROOT c = bf16[4,8] copy(a)\n}\n",
            "m.hlo",
        )
        .unwrap();
        let g = build(&k);
        let input = g.inputs[0];
        assert_eq!(g.egraph[input].data, Ty::new(DType::U8, vec![64]));
        let a = g.egraph.find(g.node_class[0]);
        let cast = &g.egraph[a].nodes[0];
        assert_eq!(cast.op, Op::BitcastConvert);
        let reshape = &g.egraph[cast.children[0]].nodes[0];
        assert_eq!(reshape.ty, Ty::new(DType::U8, vec![4, 8, 2]));
        assert_eq!(g.egraph.find(reshape.children[0]), g.egraph.find(input));
        assert_eq!(g.egraph[g.root].data, Ty::new(DType::U8, vec![64]));
    }

    #[test]
    fn byte_types_need_no_bit_cast() {
        let k =
            parse_kernel("HloModule m\nENTRY e {\n  a = u8[16] parameter(0)\n  ROOT c = u8[16] copy(a)\n}\n", "m.hlo")
                .unwrap();
        let g = build(&k);
        assert_eq!(g.egraph.find(g.node_class[0]), g.egraph.find(g.inputs[0]));
    }
}
