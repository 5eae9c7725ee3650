//! Rules held back in a large search. On a kernel read row by row, a few rules (a row slice
//! moved through an operation, a slice of a byte view) match tens of thousands of times per
//! iteration and fill the e-graph to its node limit before the rewrites that compute the kernel
//! (a minimum as a sum and a ReLU, say) have had their turn. A rule that finds more rewrites
//! than its limit in one iteration is held back for a while; each time it is, its limit and the
//! length of its pause double, so it is never starved for good. Rules are held back only in
//! an e-graph of [`Backoff::from_nodes`] e-nodes or more, and only in a second search, after a
//! first one that applied every rewrite stopped at its node limit without a program: other
//! kernels need exactly those frequent rules (a tile's slices moved through every operation).

use crate::rewrites::Rewrite;
use std::collections::BTreeMap;

/// Per rule: how often it has been held back, and the first iteration it runs again.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    times: u32,
    until: usize,
}

/// Which rules a search holds back, and until when.
#[derive(Debug, Clone)]
pub struct Backoff {
    /// Rewrites a rule may find in one iteration before it is first held back.
    limit: usize,
    /// E-nodes from which rules are held back at all.
    from_nodes: usize,
    held: BTreeMap<&'static str, Held>,
}

impl Backoff {
    pub fn new(limit: usize, from_nodes: usize) -> Backoff {
        Backoff { limit, from_nodes, held: BTreeMap::new() }
    }

    /// Drops from `found` (what the search of iteration `iteration` found, in an e-graph of
    /// `nodes` e-nodes) the rewrites of rules held back; true when any were dropped, so that
    /// the search is not taken for saturated.
    pub fn filter(&mut self, iteration: usize, nodes: usize, found: &mut Vec<Rewrite>) -> bool {
        if nodes < self.from_nodes {
            return false;
        }
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        for r in found.iter() {
            *counts.entry(r.rule).or_default() += 1;
        }
        let mut dropped = false;
        for (rule, n) in counts {
            let held = self.held.entry(rule).or_default();
            if iteration < held.until {
                dropped = true;
            } else if n > self.limit.saturating_mul(1 << held.times.min(20)) {
                held.until = iteration + (1 << held.times.min(20));
                held.times += 1;
                dropped = true;
            }
        }
        if dropped {
            found.retain(|r| self.held.get(r.rule).is_none_or(|h| iteration >= h.until));
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrites::Term;
    use egg::Id;

    fn found(rule: &'static str, n: usize) -> Vec<Rewrite> {
        (0..n).map(|i| Rewrite { rule, class: Id::from(i), term: Term::Class(Id::from(i)) }).collect()
    }

    fn rules(rewrites: &[Rewrite]) -> Vec<&'static str> {
        let mut v: Vec<&str> = rewrites.iter().map(|r| r.rule).collect();
        v.dedup();
        v
    }

    #[test]
    fn a_small_search_applies_everything() {
        let mut b = Backoff::new(10, 1000);
        let mut f = found("many", 50);
        assert!(!b.filter(1, 999, &mut f));
        assert_eq!(f.len(), 50);
    }

    #[test]
    fn a_rule_over_its_limit_waits_one_iteration_then_two_with_a_doubled_limit() {
        let mut b = Backoff::new(10, 0);
        let both = |n| [found("many", n), found("few", 3)].concat();
        let mut f = both(11);
        assert!(b.filter(1, 0, &mut f));
        assert_eq!(rules(&f), ["few"]);
        // Back after one iteration; 20 is within its doubled limit.
        let mut f = both(20);
        assert!(!b.filter(2, 0, &mut f));
        assert_eq!(f.len(), 23);
        // Over 20: held back for iterations 3 and 4.
        let mut f = both(21);
        assert!(b.filter(3, 0, &mut f));
        let mut f = both(1);
        assert!(b.filter(4, 0, &mut f));
        assert_eq!(rules(&f), ["few"]);
        let mut f = both(40);
        assert!(!b.filter(5, 0, &mut f));
        assert_eq!(f.len(), 43);
    }
}
