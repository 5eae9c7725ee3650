//! A kernel with several results (a tuple ROOT, as JAX prints `return a, b`): the results are
//! written to HBM after the inputs, in order, end to end, so the kernel's root is one byte
//! string, the concatenation of each result's bytes. Selection, allocation and scheduling then
//! treat it like any single output, and a concatenation in HBM is written in place, part by
//! part, at the fixed offsets of the outputs; the assembly lists each output at its own offset.

use crate::hlo_parse::Instr;
use crate::kernel::KernelNode;
use crate::lang::{DType, Op, Ty};

/// Appends to `nodes` the bytes of each result and their concatenation, and returns the
/// concatenation's node (the result itself when there is one). The new nodes carry the tuple's
/// position and text, where a refusal about them belongs.
pub fn bytes_end_to_end(nodes: &mut Vec<KernelNode>, results: &[usize], tuple: &Instr) -> usize {
    if let [one] = results {
        return *one;
    }
    let push = |nodes: &mut Vec<KernelNode>, op: Op, ty: Ty, operand: Vec<usize>| {
        nodes.push(KernelNode {
            name: format!("{}.bytes{}", tuple.name, nodes.len()),
            op,
            ty,
            operands: operand,
            line: tuple.pos.line,
            col: tuple.pos.col,
            text: tuple.text.clone(),
        });
        nodes.len() - 1
    };
    let mut parts = Vec::with_capacity(results.len());
    for &result in results {
        // XLA's bitcast_convert to u8 adds a trailing dimension of the element's width; the
        // same steps as the e-graph's byte view of a value, identities left out.
        let ty = nodes[result].ty.clone();
        let width = i64::from(ty.dtype.bytes());
        let mut shape = ty.shape.clone();
        if width > 1 {
            shape.push(width);
        }
        let raw = Ty::new(DType::U8, shape);
        let cast = if raw == ty { result } else { push(nodes, Op::BitcastConvert, raw.clone(), vec![result]) };
        let flat = Ty::new(DType::U8, vec![ty.bytes()]);
        parts.push(if raw == flat { cast } else { push(nodes, Op::Reshape, flat, vec![cast]) });
    }
    let total: i64 = parts.iter().map(|&p| nodes[p].ty.bytes()).sum();
    push(nodes, Op::Concatenate(0), Ty::new(DType::U8, vec![total]), parts)
}
