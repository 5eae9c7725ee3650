//! Candidate programs: graphs of partially instantiated instructions (PIIs), the hand-over
//! from instruction selection to scheduling and memory allocation.

use crate::lang::DType;
use std::collections::HashMap;

/// A candidate program. `nodes` is in topological order (operands before users); `root` is the
/// node whose value is the kernel's output, which lives in HBM (d0).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PiiGraph {
    pub nodes: Vec<PiiNode>,
    pub root: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PiiNode {
    /// Kernel parameter `param`, `bytes` long, in d0 at its packed offset.
    Input { param: usize, bytes: u64 },
    /// An instruction of the ISA table (`instr` indexes `Isa::instructions`) with its
    /// computational attributes fixed (in `comp_attrs` order); `operands[i]` is the node whose
    /// value feeds input slice `i`. Addressing attributes are left to the allocator.
    Instr { instr: usize, comp: Vec<i64>, operands: Vec<usize> },
    /// An identity view: no instruction runs; the value is the part of `of`'s value that
    /// starts `offset` positions into it (per access dimension of its buffer) and spans
    /// `size`. It lives in `of`'s buffer, inside `of`'s storage.
    View { of: usize, offset: Vec<i64>, size: Vec<i64> },
    /// An identity concatenation: no instruction runs; the parts, all in one buffer, lie side
    /// by side along access dimension `dim`, so each part's producer writes it into place.
    /// A part may not be a kernel input or a view, nor a part of another concatenation.
    Concat { parts: Vec<usize>, dim: usize },
    /// An identity overlay in HBM: no instruction runs; each part, a byte string, is written
    /// in place at its start (bytes into the value), where parts may overlap: selection
    /// builds overlays only of parts whose overlapping bytes are the same values computed
    /// twice (the last tile of a dimension no multiple of a fixed unit), so the order of the
    /// writes does not matter. Parts as for a concatenation.
    Overlay { parts: Vec<usize>, starts: Vec<i64> },
    /// A literal the kernel uses, placed in d0 before the program runs (the assembly's
    /// `constant` list): `bits` are the values' f64 bit patterns, row-major, or one value
    /// that every element holds.
    Constant { dtype: DType, shape: Vec<i64>, bits: Vec<u64> },
    /// `bytes` of HBM whose contents do not matter, placed by the allocator: the region an
    /// instruction that reads and writes back its output span (a strided store) starts from.
    /// It exists from just before its first reader.
    Uninit { bytes: u64 },
}

impl PiiNode {
    /// The nodes whose values this node reads or stands for.
    pub fn operands(&self) -> &[usize] {
        match self {
            PiiNode::Input { .. } | PiiNode::Constant { .. } | PiiNode::Uninit { .. } => &[],
            PiiNode::Instr { operands, .. } => operands,
            PiiNode::View { of, .. } => std::slice::from_ref(of),
            PiiNode::Concat { parts, .. } | PiiNode::Overlay { parts, .. } => parts,
        }
    }

    /// Kernel inputs and constants: in d0 from the start, live to the end.
    pub fn is_given(&self) -> bool {
        matches!(self, PiiNode::Input { .. } | PiiNode::Constant { .. })
    }

    /// Storage that no instruction produces: kernel inputs, constants and uninitialised HBM,
    /// there before the first step.
    pub fn is_source(&self) -> bool {
        self.is_given() || matches!(self, PiiNode::Uninit { .. })
    }

    /// Views and concatenations: nodes that name a value without computing it.
    pub fn is_identity(&self) -> bool {
        matches!(self, PiiNode::View { .. } | PiiNode::Concat { .. } | PiiNode::Overlay { .. })
    }
}

impl PiiGraph {
    /// Number of instructions (inputs are free).
    pub fn instruction_count(&self) -> usize {
        self.nodes.iter().filter(|n| matches!(n, PiiNode::Instr { .. })).count()
    }

    /// Bytes a constant node occupies in d0.
    pub fn constant_bytes(dtype: DType, shape: &[i64]) -> i64 {
        shape.iter().product::<i64>() * i64::from(dtype.bytes())
    }

    /// The nodes that read each node (with repeats when one node reads another twice).
    pub fn readers(&self) -> Vec<Vec<usize>> {
        let mut readers = vec![Vec::new(); self.nodes.len()];
        for (n, node) in self.nodes.iter().enumerate() {
            for &op in node.operands() {
                readers[op].push(n);
            }
        }
        readers
    }

    /// Whether instruction node `writer` may overwrite the value of node `op` in place
    /// (`readers` from [`PiiGraph::readers`]): a value no view or concatenation names, or a
    /// view that `writer` alone reads of an instruction's value that nothing else reads (the
    /// rest of that storage is never read again, so writing over part of it changes nothing
    /// anyone sees).
    pub fn may_overwrite(&self, readers: &[Vec<usize>], op: usize, writer: usize) -> bool {
        let named = |v: usize| readers[v].iter().any(|&r| self.nodes[r].is_identity());
        match &self.nodes[op] {
            PiiNode::View { of, .. } => {
                matches!(self.nodes[*of], PiiNode::Instr { .. })
                    && readers[*of] == [op]
                    && readers[op] == [writer]
            }
            node => !node.is_identity() && !named(op),
        }
    }

    /// The same program with each view that repeats an earlier one (the same part of the same
    /// value) replaced by that one. Views run no instruction and two names of one region are
    /// placed at the same addresses, so both graphs give the same assembly; selection reaches
    /// such pairs through different classes of one value (a window of an input as a slice of
    /// its bytes, and as rows of its matrix), and tells candidates apart by this form.
    pub fn without_repeated_views(&self) -> PiiGraph {
        self.as_program(|_| false)
    }

    /// [`PiiGraph::without_repeated_views`], also with each view that `whole` says covers
    /// all of the value it views replaced by that value: the same region under another name
    /// (a reshape held where the value lies), so again the same assembly.
    pub fn as_program(&self, whole: impl Fn(usize) -> bool) -> PiiGraph {
        let mut first: HashMap<PiiNode, usize> = HashMap::new();
        let mut index = Vec::with_capacity(self.nodes.len());
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for (n, node) in self.nodes.iter().enumerate() {
            let mut node = node.clone();
            match &mut node {
                PiiNode::Instr { operands, .. } => operands.iter_mut().for_each(|o| *o = index[*o]),
                PiiNode::View { of, .. } => *of = index[*of],
                PiiNode::Concat { parts, .. } | PiiNode::Overlay { parts, .. } => parts.iter_mut().for_each(|p| *p = index[*p]),
                PiiNode::Input { .. } | PiiNode::Constant { .. } | PiiNode::Uninit { .. } => {}
            }
            if let PiiNode::View { of, .. } = node {
                if whole(n) {
                    index.push(of);
                    continue;
                }
                if let Some(&earlier) = first.get(&node) {
                    index.push(earlier);
                    continue;
                }
                first.insert(node.clone(), nodes.len());
            }
            index.push(nodes.len());
            nodes.push(node);
        }
        PiiGraph { nodes, root: index[self.root] }
    }

    /// Checks the structural invariants: operands precede their users, the root exists.
    pub fn check(&self) -> Result<(), String> {
        if self.root >= self.nodes.len() {
            return Err(format!("root {} out of {} nodes", self.root, self.nodes.len()));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if let Some(bad) = node.operands().iter().find(|&&o| o >= i) {
                return Err(format!("node {i} uses node {bad}, which does not precede it"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(of: usize, offset: i64) -> PiiNode {
        PiiNode::View { of, offset: vec![offset], size: vec![16] }
    }

    fn instr(operands: Vec<usize>) -> PiiNode {
        PiiNode::Instr { instr: 0, comp: vec![16], operands }
    }

    #[test]
    fn a_repeated_view_becomes_the_first_one() {
        let input = PiiNode::Input { param: 0, bytes: 64 };
        let g = PiiGraph { nodes: vec![input.clone(), view(0, 0), instr(vec![1]), view(0, 0), instr(vec![3, 2])], root: 4 };
        let expected = PiiGraph { nodes: vec![input, view(0, 0), instr(vec![1]), instr(vec![1, 2])], root: 3 };
        assert_eq!(g.without_repeated_views(), expected);
    }

    #[test]
    fn a_view_of_a_whole_value_is_that_value() {
        let input = PiiNode::Input { param: 0, bytes: 64 };
        // Node 2 views all of the load at node 1 (a reshape of it); node 4 only a part.
        let g = PiiGraph {
            nodes: vec![input.clone(), instr(vec![0]), view(1, 0), instr(vec![2]), view(3, 0), instr(vec![4, 2])],
            root: 5,
        };
        let expected = PiiGraph {
            nodes: vec![input, instr(vec![0]), instr(vec![1]), view(2, 0), instr(vec![3, 1])],
            root: 4,
        };
        assert_eq!(g.as_program(|n| n == 2), expected);
    }

    #[test]
    fn views_of_other_parts_and_repeated_instructions_stay() {
        let input = PiiNode::Input { param: 0, bytes: 64 };
        // Two loads of one window compute twice: a different program, kept as it is.
        let g = PiiGraph {
            nodes: vec![input, view(0, 0), view(0, 16), instr(vec![1]), instr(vec![1]), instr(vec![2, 3, 4])],
            root: 5,
        };
        assert_eq!(g.without_repeated_views(), g);
    }
}
