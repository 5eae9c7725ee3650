//! Which classes a pass of the search must visit: those whose nodes changed since the pass last
//! ran, and every class above one of them.
//!
//! Every rule and ISA pattern reads only the class it starts from and the classes below it (its
//! nodes, their operands' nodes, and so on; types never change), and each pass applies all it
//! finds. A class below which nothing changed would therefore find only what the e-graph already
//! holds: late in a search most rewrites found are such rediscoveries (a row softmax on QKV that
//! no instruction computes finds 116,000 an iteration and adds 640 e-nodes). A pass that drops
//! some of what it found (rules held back) names their classes with [`Changes::revisit`].

use crate::egraph::SelGraph;
use egg::Id;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

/// What one pass saw of each class when it last visited it.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// Per canonical class: a hash of its nodes (canonical, sorted by egg's rebuild).
    seen: HashMap<Id, u64>,
    /// Classes to visit next time whatever they hold.
    again: BTreeSet<Id>,
}

fn signature(eg: &SelGraph, id: Id) -> u64 {
    let mut h = DefaultHasher::new();
    eg[id].nodes.hash(&mut h);
    h.finish()
}

impl Changes {
    pub fn new() -> Changes {
        Changes::default()
    }

    /// The canonical classes, in increasing id order, that are new or whose nodes changed since
    /// the last call (every class on the first), with every class above them; the e-graph must
    /// be rebuilt. Records what each class holds now.
    pub fn since_last(&mut self, eg: &SelGraph) -> Vec<Id> {
        let mut seen = HashMap::with_capacity(eg.number_of_classes());
        let mut changed: Vec<Id> = Vec::new();
        for class in eg.classes() {
            let sig = signature(eg, class.id);
            if self.seen.get(&class.id) != Some(&sig) {
                changed.push(class.id);
            }
            seen.insert(class.id, sig);
        }
        self.seen = seen;
        changed.extend(std::mem::take(&mut self.again).into_iter().map(|id| eg.find(id)));
        let mut visit: BTreeSet<Id> = BTreeSet::new();
        while let Some(id) = changed.pop() {
            if visit.insert(id) {
                changed.extend(eg[id].parents().map(|p| eg.find(p)).filter(|p| !visit.contains(p)));
            }
        }
        visit.into_iter().collect()
    }

    /// Marks classes (and so every class above them) to be visited by the next call however
    /// little they changed: what the pass found there was not all applied.
    pub fn revisit(&mut self, ids: impl IntoIterator<Item = Id>) {
        self.again.extend(ids);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egraph::TypeAnalysis;
    use crate::lang::{DType, Node, Op, Ty};

    fn ty() -> Ty {
        Ty::new(DType::S8, vec![4])
    }

    #[test]
    fn the_first_call_visits_every_class_and_a_second_with_nothing_new_none() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty()));
        let y = eg.add(Node::new(Op::Exponential, ty(), vec![x]));
        eg.rebuild();
        let mut changes = Changes::new();
        assert_eq!(changes.since_last(&eg), vec![x, y]);
        assert!(changes.since_last(&eg).is_empty());
    }

    #[test]
    fn a_class_that_gains_a_node_is_visited_with_every_class_above_it() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty()));
        let other = eg.add(Node::leaf(Op::Input(1), ty()));
        let neg = eg.add(Node::new(Op::Exponential, ty(), vec![x]));
        let top = eg.add(Node::new(Op::Add, ty(), vec![neg, other]));
        eg.rebuild();
        let mut changes = Changes::new();
        changes.since_last(&eg);
        let copy = eg.add(Node::new(Op::Copy, ty(), vec![x]));
        eg.union(x, copy);
        eg.rebuild();
        let mut expected = vec![eg.find(x), neg, top];
        expected.sort();
        assert_eq!(changes.since_last(&eg), expected);
    }

    #[test]
    fn a_class_named_again_is_visited_though_it_did_not_change() {
        let mut eg = SelGraph::new(TypeAnalysis);
        let x = eg.add(Node::leaf(Op::Input(0), ty()));
        let y = eg.add(Node::new(Op::Exponential, ty(), vec![x]));
        eg.rebuild();
        let mut changes = Changes::new();
        changes.since_last(&eg);
        changes.revisit([y]);
        assert_eq!(changes.since_last(&eg), vec![y]);
    }
}
