//! Which kernel (HLO) instructions each node of a candidate stands for: the kernel values it
//! holds or is a part of and, for an instruction, the kernel instructions it implements. A
//! candidate names instructions and their operands only, so the link is read back from the
//! e-graph it was extracted from: each node is one e-node of a class (an instruction's PII
//! node, a slice of HBM bytes for a view, a concatenation), and each kernel instruction is the
//! class it was added as.
//!
//! - A node *holds* the kernel values of its class or, when its class is no kernel value's,
//!   those reached through reshapes and bit casts (the bytes of `x` in HBM hold `x`).
//! - Nodes that hold one value up to layout form a *group*: an instruction and an operand of
//!   the same value (a load, a store, a copy). A group is a *part of* what a view it holds
//!   views, or what a concatenation it is a part of holds (a row tile of a product).
//! - An instruction *implements* what its group holds or is a part of. A kernel instruction
//!   held by no group (fused into an instruction that computes more) is implemented by the
//!   instructions that compute its users: those that make their group's value from other
//!   groups' values. An instruction whose value is none of these (a transposed load, a
//!   constant matrix) implements what the instructions reading it compute.

use crate::egraph::KernelGraph;
use crate::kernel::Kernel;
use crate::lang::{DType, Op, Ty};
use crate::pii::{PiiGraph, PiiNode};
use egg::Id;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

/// How far reshapes and bit casts are followed to find the kernel value a class holds: the
/// bytes of a value are at most a reshape of a bit cast of it.
const LAYOUT_DEPTH: usize = 4;

/// The kernel instructions one node of a candidate stands for (indices into `Kernel::nodes`,
/// in program order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The kernel values the node's value is.
    pub holds: Vec<usize>,
    /// The kernel values the node's value is a part of: a view of one, a part of a
    /// concatenation that holds one (a row tile of a product), or a copy of such a part.
    pub part_of: Vec<usize>,
    /// For an instruction node: the kernel instructions it implements: the values it holds
    /// or is a part of, those fused into it, and for a value that is neither, what its
    /// readers compute. Empty for the other nodes.
    pub implements: Vec<usize>,
}

/// Reads candidates of one e-graph back to the kernel it was built from.
pub struct Tracer<'a> {
    kernel: &'a Kernel,
    kg: &'a KernelGraph,
    /// E-nodes a candidate node can be, by operator.
    by_op: HashMap<Op, ENodes>,
    /// Kernel nodes by canonical class.
    in_class: HashMap<Id, Vec<usize>>,
    /// Kernel nodes that use each kernel node.
    users: Vec<Vec<usize>>,
    /// [`Tracer::layout_closure`] and [`Tracer::through_layout`] of the classes seen so far:
    /// every candidate of a selection walks the same classes, and a class of a long program
    /// of register-sized instructions has many reshapes to walk.
    closures: RefCell<HashMap<Id, Rc<BTreeSet<Id>>>>,
    layouts: RefCell<HashMap<Id, Rc<Vec<usize>>>>,
}

/// What `cache` holds for `class`, computed by `walk` the first time.
fn cached<T>(cache: &RefCell<HashMap<Id, Rc<T>>>, class: Id, walk: impl FnOnce() -> T) -> Rc<T> {
    if let Some(known) = cache.borrow().get(&class) {
        return Rc::clone(known);
    }
    let value = Rc::new(walk());
    cache.borrow_mut().insert(class, Rc::clone(&value));
    value
}

impl<'a> Tracer<'a> {
    pub fn new(kernel: &'a Kernel, kg: &'a KernelGraph) -> Tracer<'a> {
        let eg = &kg.egraph;
        let mut lists: HashMap<Op, Vec<(Vec<Id>, Id)>> = HashMap::new();
        for class in eg.classes() {
            for node in &class.nodes {
                let wanted = matches!(
                    node.op,
                    Op::Pii { .. }
                        | Op::Slice(_)
                        | Op::Concatenate(_)
                        | Op::Constant(_)
                        | Op::Reshape
                        | Op::BitcastConvert
                );
                if wanted {
                    let children = node.children.iter().map(|&c| eg.find(c)).collect();
                    lists.entry(node.op.clone()).or_default().push((children, eg.find(class.id)));
                }
            }
        }
        let by_op = lists.into_iter().map(|(op, list)| (op, ENodes::new(list))).collect();
        let mut in_class: HashMap<Id, Vec<usize>> = HashMap::new();
        for (k, &class) in kg.node_class.iter().enumerate() {
            in_class.entry(eg.find(class)).or_default().push(k);
        }
        let mut users = vec![Vec::new(); kernel.nodes.len()];
        for (k, node) in kernel.nodes.iter().enumerate() {
            for &o in &node.operands {
                if !users[o].contains(&k) {
                    users[o].push(k);
                }
            }
        }
        Tracer { kernel, kg, by_op, in_class, users, closures: RefCell::default(), layouts: RefCell::default() }
    }

    /// The origin of every node of `graph`, a candidate extracted from this e-graph.
    pub fn origins(&self, graph: &PiiGraph) -> Vec<Origin> {
        let nodes = &graph.nodes;
        let kernel_nodes = self.kernel.nodes.len();
        let classes = self.classes(graph);
        let holds: Vec<Vec<usize>> =
            nodes.iter().zip(&classes).map(|(node, &class)| self.holds(node, class)).collect();
        let groups = Groups::of(graph, &classes, |c| self.layout_closure(c));
        let members = groups.members();
        let mut group_holds: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); nodes.len()];
        for (n, list) in holds.iter().enumerate() {
            group_holds[groups.of[n]].extend(list);
        }
        let part_of = part_of(graph, &groups, &group_holds);
        // Per kernel value, the instructions of the groups that hold it or a part of it, and
        // of those the ones that compute it: entries of their group (operands elsewhere).
        let instr = |n: &usize| matches!(nodes[*n], PiiNode::Instr { .. });
        let entry = |n: &usize| {
            instr(n) && nodes[*n].operands().iter().all(|&o| groups.of[o] != groups.of[*n])
        };
        let mut implemented_by: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); kernel_nodes];
        let mut computed_by: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); kernel_nodes];
        // Users come after their operands: a backward pass sees every user first.
        for k in (0..kernel_nodes).rev() {
            let holders: Vec<usize> = (0..nodes.len())
                .filter(|&g| group_holds[g].contains(&k) || part_of[g].contains(&k))
                .collect();
            if holders.is_empty() {
                let fused: BTreeSet<usize> =
                    self.users[k].iter().flat_map(|&u| computed_by[u].clone()).collect();
                implemented_by[k].clone_from(&fused);
                computed_by[k] = fused;
                continue;
            }
            for g in holders {
                implemented_by[k].extend(members[g].iter().filter(|n| instr(n)));
                computed_by[k].extend(members[g].iter().filter(|n| entry(n)));
            }
        }
        let mut implements: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); nodes.len()];
        for (k, by) in implemented_by.iter().enumerate() {
            for &n in by {
                implements[n].insert(k);
            }
        }
        // A value that is no kernel value nor part of one (a transposed load of a value, a
        // constant matrix) is part of computing what its readers compute.
        let mut computes: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); nodes.len()];
        for (k, by) in computed_by.iter().enumerate() {
            for &n in by {
                computes[n].insert(k);
            }
        }
        let anonymous =
            |n: usize| group_holds[groups.of[n]].is_empty() && part_of[groups.of[n]].is_empty();
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (n, node) in nodes.iter().enumerate() {
            for &o in node.operands() {
                readers[o].push(n);
            }
        }
        for n in (0..nodes.len()).rev() {
            if !(instr(&n) && anonymous(n)) {
                continue;
            }
            let mut feeds = BTreeSet::new();
            for &r in &readers[n] {
                feeds.extend(&computes[r]);
                if anonymous(r) {
                    feeds.extend(&implements[r]);
                }
            }
            implements[n] = feeds;
        }
        nodes
            .iter()
            .enumerate()
            .map(|(n, node)| Origin {
                holds: holds[n].clone(),
                part_of: part_of[groups.of[n]].iter().copied().collect(),
                implements: match node {
                    PiiNode::Instr { .. } => implements[n].iter().copied().collect(),
                    _ => Vec::new(),
                },
            })
            .collect()
    }

    /// The classes `class` is a reshape or bit cast of, and so on, `class` included.
    fn layout_closure(&self, class: Id) -> Rc<BTreeSet<Id>> {
        cached(&self.closures, class, || self.walk_layout_closure(class))
    }

    fn walk_layout_closure(&self, class: Id) -> BTreeSet<Id> {
        let eg = &self.kg.egraph;
        let mut seen = BTreeSet::from([class]);
        let mut frontier = vec![class];
        for _ in 0..LAYOUT_DEPTH {
            let mut next = Vec::new();
            for c in frontier {
                for node in &eg[c].nodes {
                    if matches!(node.op, Op::Reshape | Op::BitcastConvert) {
                        let child = eg.find(node.children[0]);
                        if seen.insert(child) {
                            next.push(child);
                        }
                    }
                }
            }
            frontier = next;
        }
        seen
    }

    /// The canonical class of each node, `None` where the e-graph has no single e-node for it.
    fn classes(&self, graph: &PiiGraph) -> Vec<Option<Id>> {
        let eg = &self.kg.egraph;
        let mut classes: Vec<Option<Id>> = Vec::with_capacity(graph.nodes.len());
        for node in &graph.nodes {
            let class = match node {
                PiiNode::Input { param, .. } => self.kg.inputs.get(*param).map(|&c| eg.find(c)),
                PiiNode::Constant { dtype, shape, bits } => self.literal_bytes(*dtype, shape, bits),
                // Implements no operation of the kernel.
                PiiNode::Uninit { .. } => None,
                PiiNode::Instr { instr, comp, operands } => {
                    let op = Op::Pii { instr: *instr, comp: comp.clone() };
                    let children: Vec<Option<Id>> = operands.iter().map(|&o| classes[o]).collect();
                    self.unique(&op, &children)
                }
                PiiNode::View { of, offset, size } => match (offset.as_slice(), size.as_slice()) {
                    ([offset], [size]) => {
                        let op = Op::Slice(vec![(*offset, offset + size, 1)]);
                        self.unique(&op, &[classes[*of]])
                    }
                    _ => None,
                },
                PiiNode::Concat { parts, dim } => {
                    let children: Vec<Option<Id>> = parts.iter().map(|&p| classes[p]).collect();
                    self.unique(&Op::Concatenate(*dim), &children)
                }
                PiiNode::Overlay { parts, starts } => {
                    let children: Vec<Option<Id>> = parts.iter().map(|&p| classes[p]).collect();
                    self.unique(&Op::Overlay { dim: 0, starts: starts.clone() }, &children)
                }
            };
            classes.push(class);
        }
        classes
    }

    /// The one class with an e-node `op` over `children` (`None` in `children` matches any).
    fn unique(&self, op: &Op, children: &[Option<Id>]) -> Option<Id> {
        let mut found = self.by_op.get(op)?.matching(children);
        let first = found.next()?;
        found.all(|other| other == first).then_some(first)
    }

    /// The class of a literal's bytes: `reshape(bitcast_convert(literal))`, as
    /// `egraph::to_bytes` builds it (steps that would be identities left out).
    fn literal_bytes(&self, dtype: DType, shape: &[i64], bits: &[u64]) -> Option<Id> {
        let eg = &self.kg.egraph;
        let ty = Ty::new(dtype, shape.to_vec());
        let literal = self.by_op.iter().find_map(|(op, list)| match op {
            Op::Constant(lit) if lit.bits == bits => {
                list.nodes.iter().map(|&(_, class)| class).find(|&c| eg[c].data == ty)
            }
            _ => None,
        })?;
        let width = i64::from(dtype.bytes());
        let mut raw_shape = shape.to_vec();
        if width > 1 {
            raw_shape.push(width);
        }
        let raw = Ty::new(DType::U8, raw_shape);
        let flat = Ty::new(DType::U8, vec![ty.bytes()]);
        let mut class = literal;
        for (op, want) in [(Op::BitcastConvert, &raw), (Op::Reshape, &flat)] {
            if eg[class].data == *want {
                continue;
            }
            class = self.by_op.get(&op)?.matching(&[Some(class)]).find(|&c| eg[c].data == *want)?;
        }
        Some(class)
    }

    /// The kernel values a node of class `class` holds.
    fn holds(&self, node: &PiiNode, class: Option<Id>) -> Vec<usize> {
        let mut out: BTreeSet<usize> = BTreeSet::new();
        if let PiiNode::Input { param, .. } = node {
            out.extend(self.kernel.param_nodes.get(*param));
        }
        if let Some(class) = class {
            out.extend(self.through_layout(class).iter().copied());
        }
        out.into_iter().collect()
    }

    /// The kernel values of `class`, or of the nearest class its reshapes and bit casts read.
    fn through_layout(&self, class: Id) -> Rc<Vec<usize>> {
        cached(&self.layouts, class, || self.walk_through_layout(class))
    }

    fn walk_through_layout(&self, class: Id) -> Vec<usize> {
        let eg = &self.kg.egraph;
        let mut queue = VecDeque::from([(class, 0usize)]);
        let mut seen = BTreeSet::from([class]);
        while let Some((c, depth)) = queue.pop_front() {
            if let Some(ks) = self.in_class.get(&c) {
                return ks.clone();
            }
            if depth == LAYOUT_DEPTH {
                continue;
            }
            for node in &eg[c].nodes {
                if matches!(node.op, Op::Reshape | Op::BitcastConvert) {
                    let child = eg.find(node.children[0]);
                    if seen.insert(child) {
                        queue.push_back((child, depth + 1));
                    }
                }
            }
        }
        Vec::new()
    }
}

/// The e-nodes of one operator, `(children, class)` in canonical ids, found by their children:
/// a large product has thousands of e-nodes of one instruction, and a candidate as many nodes.
struct ENodes {
    /// Sorted: the e-nodes over given children are a range of it.
    nodes: Vec<(Vec<Id>, Id)>,
    /// Per (operand position, child): the indices of the e-nodes with that child there.
    with_child: HashMap<(usize, Id), Vec<usize>>,
}

impl ENodes {
    fn new(mut nodes: Vec<(Vec<Id>, Id)>) -> ENodes {
        nodes.sort();
        nodes.dedup();
        let mut with_child: HashMap<(usize, Id), Vec<usize>> = HashMap::new();
        for (i, (children, _)) in nodes.iter().enumerate() {
            for (position, &child) in children.iter().enumerate() {
                with_child.entry((position, child)).or_default().push(i);
            }
        }
        ENodes { nodes, with_child }
    }

    /// The classes of the e-nodes over `children` (`None` matches any child), in order.
    fn matching<'s>(&'s self, children: &'s [Option<Id>]) -> Box<dyn Iterator<Item = Id> + 's> {
        let fits = move |have: &[Id]| {
            have.len() == children.len()
                && have.iter().zip(children).all(|(h, w)| w.is_none_or(|w| w == *h))
        };
        if let Some(known) = children.iter().copied().collect::<Option<Vec<Id>>>() {
            let start = self.nodes.partition_point(|(have, _)| *have < known);
            let end = start + self.nodes[start..].partition_point(|(have, _)| *have == known);
            return Box::new(self.nodes[start..end].iter().map(|&(_, class)| class));
        }
        // The known child with the fewest e-nodes narrows the search; none known: all of them.
        let narrowest = children
            .iter()
            .enumerate()
            .filter_map(|(position, child)| Some(self.with_child.get(&(position, (*child)?))))
            .min_by_key(|list| list.map_or(0, Vec::len));
        match narrowest {
            Some(None) => Box::new(std::iter::empty()),
            Some(Some(list)) => Box::new(
                list.iter().map(|&i| &self.nodes[i]).filter(move |(have, _)| fits(have)).map(|&(_, class)| class),
            ),
            None => Box::new(self.nodes.iter().filter(move |(have, _)| fits(have)).map(|&(_, class)| class)),
        }
    }
}

/// Nodes that hold one value up to layout: an instruction and each operand whose class is its
/// own up to reshapes and bit casts (a load, a store, a copy of a value), transitively.
struct Groups {
    /// The group (a representative node) of each node.
    of: Vec<usize>,
}

impl Groups {
    fn of(
        graph: &PiiGraph,
        classes: &[Option<Id>],
        closure: impl Fn(Id) -> Rc<BTreeSet<Id>>,
    ) -> Groups {
        let closures: Vec<Rc<BTreeSet<Id>>> =
            classes.iter().map(|c| c.map(&closure).unwrap_or_default()).collect();
        let mut parent: Vec<usize> = (0..graph.nodes.len()).collect();
        fn root(parent: &mut [usize], mut n: usize) -> usize {
            while parent[n] != n {
                parent[n] = parent[parent[n]];
                n = parent[n];
            }
            n
        }
        for (n, node) in graph.nodes.iter().enumerate() {
            // A view is a part of what it views, not the same value.
            if !matches!(node, PiiNode::Instr { .. }) {
                continue;
            }
            for &o in node.operands() {
                let same = match (classes[n], classes[o]) {
                    (Some(a), Some(b)) => closures[n].contains(&b) || closures[o].contains(&a),
                    _ => false,
                };
                if same {
                    let (a, b) = (root(&mut parent, n), root(&mut parent, o));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        let of = (0..graph.nodes.len()).map(|n| root(&mut parent, n)).collect();
        Groups { of }
    }

    /// The nodes of each group, by representative.
    fn members(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.of.len()];
        for (n, &g) in self.of.iter().enumerate() {
            out[g].push(n);
        }
        out
    }
}

/// Per group, the kernel values it is a part of (and does not hold whole): a view is a part of
/// what it views, a part of a concatenation a part of what the concatenation holds.
fn part_of(graph: &PiiGraph, groups: &Groups, holds: &[BTreeSet<usize>]) -> Vec<BTreeSet<usize>> {
    let mut parts: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); graph.nodes.len()];
    // Views point back, parts of concatenations forward; nesting is shallow.
    loop {
        let mut changed = false;
        for (n, node) in graph.nodes.iter().enumerate() {
            let links: Vec<(usize, usize)> = match node {
                PiiNode::View { of, .. } => vec![(groups.of[*of], groups.of[n])],
                PiiNode::Concat { parts: ps, .. } | PiiNode::Overlay { parts: ps, .. } => {
                    ps.iter().map(|&p| (groups.of[n], groups.of[p])).collect()
                }
                _ => continue,
            };
            for (whole, part) in links {
                let add: Vec<usize> = holds[whole]
                    .iter()
                    .chain(&parts[whole])
                    .filter(|k| !holds[part].contains(k))
                    .copied()
                    .collect();
                for k in add {
                    changed |= parts[part].insert(k);
                }
            }
        }
        if !changed {
            return parts;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egraph;
    use crate::kernel::parse_kernel;
    use crate::lang::Node;

    const KERNEL: &str = "HloModule m
ENTRY main {
  a = bf16[4,8] parameter(0)
  b = bf16[4,8] parameter(1)
  s = bf16[4,8] add(a, b)
  ROOT e = bf16[4,8] exponential(s)
}
";

    /// The kernel's e-graph with one instruction `exp_add` (instruction 0) that computes
    /// `exp(a + b)` on chip, a load (1) per input and a store (2) of the result.
    fn fused() -> (Kernel, KernelGraph, PiiGraph) {
        let kernel = parse_kernel(KERNEL, "m.hlo").unwrap();
        let mut kg = egraph::build(&kernel);
        let ty = kernel.nodes[3].ty.clone();
        let eg = &mut kg.egraph;
        let pii = |instr| Op::Pii { instr, comp: vec![] };
        let (a, b, e) = (kg.node_class[0], kg.node_class[1], kg.node_class[3]);
        let la = eg.add(Node::new(pii(1), ty.clone(), vec![kg.inputs[0]]));
        eg.union(la, a);
        let lb = eg.add(Node::new(pii(1), ty.clone(), vec![kg.inputs[1]]));
        eg.union(lb, b);
        let x = eg.add(Node::new(pii(0), ty.clone(), vec![a, b]));
        eg.union(x, e);
        let st = eg.add(Node::new(pii(2), eg[kg.root].data.clone(), vec![e]));
        eg.union(st, kg.root);
        eg.rebuild();
        let bytes = 64;
        let graph = PiiGraph {
            nodes: vec![
                PiiNode::Input { param: 0, bytes },
                PiiNode::Input { param: 1, bytes },
                PiiNode::Instr { instr: 1, comp: vec![], operands: vec![0] },
                PiiNode::Instr { instr: 1, comp: vec![], operands: vec![1] },
                PiiNode::Instr { instr: 0, comp: vec![], operands: vec![2, 3] },
                PiiNode::Instr { instr: 2, comp: vec![], operands: vec![4] },
            ],
            root: 5,
        };
        (kernel, kg, graph)
    }

    #[test]
    fn instructions_implement_what_they_hold_and_what_is_fused_into_them() {
        let (kernel, kg, graph) = fused();
        let origins = Tracer::new(&kernel, &kg).origins(&graph);
        let names =
            |ks: &[usize]| ks.iter().map(|&k| kernel.nodes[k].name.as_str()).collect::<Vec<_>>();
        let table: Vec<(Vec<&str>, Vec<&str>)> =
            origins.iter().map(|o| (names(&o.holds), names(&o.implements))).collect();
        assert_eq!(
            table,
            [
                (vec!["a"], vec![]),
                (vec!["b"], vec![]),
                (vec!["a"], vec!["a"]),
                (vec!["b"], vec!["b"]),
                // `s` is held by no node: it is fused into the instruction that uses it.
                (vec!["e"], vec!["s", "e"]),
                // The output's bytes in HBM hold `e` through a reshape and a bit cast.
                (vec!["e"], vec!["e"]),
            ]
        );
    }

    #[test]
    fn a_node_the_e_graph_does_not_have_holds_nothing() {
        let (kernel, kg, mut graph) = fused();
        // Instruction 0 over two copies of `a` was never matched.
        graph.nodes[4] = PiiNode::Instr { instr: 0, comp: vec![], operands: vec![2, 2] };
        let origins = Tracer::new(&kernel, &kg).origins(&graph);
        assert_eq!((&origins[4].holds, &origins[4].part_of), (&vec![], &vec![]));
        // Its user, the store, still holds the output's value.
        assert_eq!(origins[5].holds, vec![3]);
    }
}
