//! Candidate programs: graphs of partially instantiated instructions (PIIs), the hand-over
//! from instruction selection to scheduling and memory allocation.

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
}

impl PiiNode {
    /// The nodes whose values this node reads or stands for.
    pub fn operands(&self) -> &[usize] {
        match self {
            PiiNode::Input { .. } => &[],
            PiiNode::Instr { operands, .. } => operands,
            PiiNode::View { of, .. } => std::slice::from_ref(of),
            PiiNode::Concat { parts, .. } => parts,
        }
    }

    /// Views and concatenations: nodes that name a value without computing it.
    pub fn is_identity(&self) -> bool {
        matches!(self, PiiNode::View { .. } | PiiNode::Concat { .. })
    }
}

impl PiiGraph {
    /// Number of instructions (inputs are free).
    pub fn instruction_count(&self) -> usize {
        self.nodes.iter().filter(|n| matches!(n, PiiNode::Instr { .. })).count()
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
