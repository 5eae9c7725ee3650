//! A lower bound on the cost of every candidate extraction can build, so that the candidate
//! loop can stop as soon as one meets it.
//!
//! Extraction's states and providers form an AND-OR graph: a state is made by one of its
//! providers, and a provider needs every one of its inputs. A candidate is a finite DAG of
//! such nodes, and its cost is the sum of its nodes' costs, none negative. Merging two nodes
//! of one state never raises the cost (the one below the other, or either, takes the other's
//! readers), so the cheapest DAG holds at most one node per state, and a bound on the cost of
//! such DAGs bounds every candidate. Three bounds hold, and the largest is taken:
//! - the dearest chain: a derivation holds a provider and a derivation of each of its inputs,
//!   so at least its own cost plus the bound of its dearest input;
//! - the states every derivation must contain (`must(s) = {s} ∪ ⋂ over providers of ⋃ over
//!   their inputs of must(input)`, the greatest fixed point: by induction on a derivation's
//!   height every post-fixed point lies within each derivation's states), each at the
//!   cheapest cost any of its providers has;
//! - split by sharing: a state that two inputs of one provider may both reach (`shared`) can
//!   be one node serving both; every other node has one reader, so those nodes form a tree
//!   whose cheapest cost is a sum over inputs (shared states free), to which the shared
//!   states every derivation contains add their cheapest costs.
//!
//! A negative cost gives no bound.

/// One way to make a state: its own cost, and the states it needs.
#[derive(Debug, Clone)]
pub struct Provider<'a> {
    pub cost: f64,
    pub inputs: &'a [usize],
}

/// The states that some candidate can make, each with its providers whose inputs can all be
/// made; `output` lists the providers that may write the kernel's output (a node of its own,
/// whose inputs may include the output state itself).
#[derive(Debug, Clone)]
pub struct Derivations<'a> {
    pub providers: Vec<Vec<Provider<'a>>>,
    pub output: Vec<Provider<'a>>,
}

/// States at most this many get the set-based bounds (their sets cost `n^2` bits); larger
/// graphs get the chain bound alone.
const MAX_SET_STATES: usize = 4096;

/// The lower bound, or `None` when a cost is negative, not finite, or no provider writes the
/// output.
pub fn lower_bound(d: &Derivations) -> Option<f64> {
    let all = d.providers.iter().flatten().chain(&d.output);
    if d.output.is_empty() || all.clone().any(|p| !(p.cost.is_finite() && p.cost >= 0.0)) {
        return None;
    }
    let n = d.providers.len();
    let chain = chain_bounds(d);
    let sets = (n <= MAX_SET_STATES).then(|| {
        let shared = shared_states(d, &may_reach(d));
        (must_contain(d), tree_bounds(d, &shared), shared)
    });
    let cheapest: Vec<f64> =
        d.providers.iter().map(|ps| ps.iter().map(|p| p.cost).fold(f64::INFINITY, f64::min)).collect();
    let bound = d
        .output
        .iter()
        .map(|p| {
            let dearest = p.inputs.iter().map(|&i| chain[i]).fold(0.0, f64::max);
            let Some((must, tree, shared)) = &sets else { return p.cost + dearest };
            let mut certain = Bits::empty(n);
            for &i in p.inputs {
                certain.union_with(&must[i]);
            }
            let every: f64 = certain.iter().map(|t| cheapest[t]).sum();
            certain.intersect_with(shared);
            let split = p.inputs.iter().map(|&i| tree[i]).sum::<f64>() + certain.iter().map(|t| cheapest[t]).sum::<f64>();
            p.cost + dearest.max(every).max(split)
        })
        .fold(f64::INFINITY, f64::min);
    bound.is_finite().then_some(bound)
}

/// Per state, the states some derivation of it contains (the least fixed point of `reach(s)
/// = {s} ∪ ⋃ over providers and their inputs of reach(input)`).
fn may_reach(d: &Derivations) -> Vec<Bits> {
    let n = d.providers.len();
    let mut reach: Vec<Bits> = (0..n).map(|s| Bits::single(n, s)).collect();
    loop {
        let mut changed = false;
        for s in 0..n {
            let mut next = reach[s].clone();
            for p in &d.providers[s] {
                for &i in p.inputs {
                    next.union_with(&reach[i]);
                }
            }
            if next != reach[s] {
                reach[s] = next;
                changed = true;
            }
        }
        if !changed {
            return reach;
        }
    }
}

/// The states that two inputs of one provider (the output's included, an input given twice
/// included) may both reach: the only states a node of the cheapest DAG can serve twice.
fn shared_states(d: &Derivations, reach: &[Bits]) -> Bits {
    let mut shared = Bits::empty(d.providers.len());
    for p in d.providers.iter().flatten().chain(&d.output) {
        for (k, &a) in p.inputs.iter().enumerate() {
            for &b in &p.inputs[k + 1..] {
                let mut both = reach[a].clone();
                both.intersect_with(&reach[b]);
                shared.union_with(&both);
            }
        }
    }
    shared
}

/// Per state, the cheapest cost of its unshared nodes: a tree, so `min over providers (cost
/// + sum over inputs)`, with shared states free; relaxed from above until nothing changes.
fn tree_bounds(d: &Derivations, shared: &Bits) -> Vec<f64> {
    let n = d.providers.len();
    let mut tree: Vec<f64> = (0..n).map(|s| if shared.contains(s) { 0.0 } else { f64::INFINITY }).collect();
    for _ in 0..=n {
        let mut changed = false;
        for s in (0..n).filter(|&s| !shared.contains(s)) {
            for p in &d.providers[s] {
                let c = p.cost + p.inputs.iter().map(|&i| tree[i]).sum::<f64>();
                if c < tree[s] {
                    tree[s] = c;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    tree
}

/// Per state, the cheapest chain: `min over providers (cost + max over inputs)`, relaxed from
/// above until nothing changes (costs are not negative, so at most one pass per state).
fn chain_bounds(d: &Derivations) -> Vec<f64> {
    let n = d.providers.len();
    let mut chain = vec![f64::INFINITY; n];
    for _ in 0..=n {
        let mut changed = false;
        for s in 0..n {
            for p in &d.providers[s] {
                let c = p.cost + p.inputs.iter().map(|&i| chain[i]).fold(0.0, f64::max);
                if c < chain[s] {
                    chain[s] = c;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    chain
}

/// Per state, the states every derivation of it contains (the greatest fixed point, from the
/// set of all states down).
fn must_contain(d: &Derivations) -> Vec<Bits> {
    let n = d.providers.len();
    let mut must = vec![Bits::full(n); n];
    loop {
        let mut changed = false;
        for s in 0..n {
            let mut common: Option<Bits> = None;
            for p in &d.providers[s] {
                let mut needed = Bits::empty(n);
                for &i in p.inputs {
                    needed.union_with(&must[i]);
                }
                match &mut common {
                    None => common = Some(needed),
                    Some(c) => c.intersect_with(&needed),
                }
            }
            let mut next = common.unwrap_or_else(|| Bits::empty(n));
            next.insert(s);
            if next != must[s] {
                must[s] = next;
                changed = true;
            }
        }
        if !changed {
            return must;
        }
    }
}

/// A set of state indices.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bits {
    words: Vec<u64>,
}

impl Bits {
    fn empty(n: usize) -> Bits {
        Bits { words: vec![0; n.div_ceil(64)] }
    }

    fn full(n: usize) -> Bits {
        let mut b = Bits { words: vec![u64::MAX; n.div_ceil(64)] };
        if !n.is_multiple_of(64) {
            if let Some(last) = b.words.last_mut() {
                *last = (1u64 << (n % 64)) - 1;
            }
        }
        b
    }

    fn single(n: usize, i: usize) -> Bits {
        let mut b = Bits::empty(n);
        b.insert(i);
        b
    }

    fn contains(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }

    fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    fn union_with(&mut self, other: &Bits) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a |= b);
    }

    fn intersect_with(&mut self, other: &Bits) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a &= b);
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words
            .iter()
            .enumerate()
            .flat_map(|(w, &bits)| (0..64).filter(move |b| bits & (1 << b) != 0).map(move |b| w * 64 + b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(cost: f64, inputs: &[usize]) -> Provider<'_> {
        Provider { cost, inputs }
    }

    #[test]
    fn shared_states_are_counted_once_and_alternatives_by_their_cheapest() {
        // 0: an input (free); 1: a load of it (1); 2 = f(1) (2) or g(1) (5); 3 = h(1, 2) (1).
        // The output stores 3 (1). Every derivation holds 0, 1, 2 and 3: 0 + 1 + 2 + 1 + 1.
        let d = Derivations {
            providers: vec![vec![p(0.0, &[])], vec![p(1.0, &[0])], vec![p(2.0, &[1]), p(5.0, &[1])], vec![
                p(1.0, &[1, 2]),
            ]],
            output: vec![p(1.0, &[3])],
        };
        assert_eq!(lower_bound(&d), Some(5.0));
    }

    #[test]
    fn states_only_some_derivations_hold_are_not_counted() {
        // 2 is made from 0 directly (cost 3) or through 1 (cost 1 + 1): neither 1 nor its
        // cost is certain, and the cheapest way costs 2 in all.
        let d = Derivations {
            providers: vec![vec![p(0.0, &[])], vec![p(1.0, &[0])], vec![p(3.0, &[0]), p(1.0, &[1])]],
            output: vec![p(0.0, &[2])],
        };
        assert_eq!(lower_bound(&d), Some(1.0 + 1.0));
    }

    #[test]
    fn a_copy_cycle_does_not_make_states_certain() {
        // 1 and 2 copy each other; 1 is also loaded from 0. The output reads 2: every
        // derivation holds 0, 1 (the load) and 2.
        let d = Derivations {
            providers: vec![vec![p(0.0, &[])], vec![p(1.0, &[0]), p(1.0, &[2])], vec![p(1.0, &[1])]],
            output: vec![p(1.0, &[2])],
        };
        assert_eq!(lower_bound(&d), Some(3.0));
    }

    #[test]
    fn the_bound_never_exceeds_the_cheapest_derivation() {
        // Two disjoint ways to the output: the bound is the cheaper one's cost or less.
        let d = Derivations {
            providers: vec![vec![p(0.0, &[])], vec![p(4.0, &[0])], vec![p(2.0, &[0])], vec![p(1.0, &[1]), p(1.0, &[2])]],
            output: vec![p(1.0, &[3])],
        };
        let bound = lower_bound(&d).unwrap();
        assert!(bound <= 1.0 + 1.0 + 2.0, "{bound}");
        assert_eq!(bound, 4.0);
    }

    /// The cheapest DAG by brute force: every choice of one provider (or none) per state whose
    /// chosen states are closed under inputs and acyclic, and one output provider.
    fn cheapest_dag(d: &Derivations) -> Option<f64> {
        let n = d.providers.len();
        let options: Vec<usize> = d.providers.iter().map(|ps| ps.len() + 1).collect();
        let mut choice = vec![0usize; n];
        let mut best: Option<f64> = None;
        loop {
            // choice[s] = 0: unused; k: provider k - 1.
            let chosen = |s: usize| choice[s].checked_sub(1).map(|k| &d.providers[s][k]);
            let closed = (0..n).all(|s| chosen(s).is_none_or(|p| p.inputs.iter().all(|&i| choice[i] > 0)));
            // Acyclic: repeatedly remove chosen states all of whose inputs are removed.
            let mut done = vec![false; n];
            let mut progress = true;
            while progress {
                progress = false;
                for s in 0..n {
                    if !done[s] && chosen(s).is_none_or(|p| p.inputs.iter().all(|&i| done[i])) {
                        done[s] = true;
                        progress = true;
                    }
                }
            }
            let acyclic = done.iter().all(|&d| d);
            if closed && acyclic {
                let inner: f64 = (0..n).filter_map(|s| chosen(s).map(|p| p.cost)).sum();
                for out in &d.output {
                    if out.inputs.iter().all(|&i| choice[i] > 0) {
                        let c = inner + out.cost;
                        best = Some(best.map_or(c, |b: f64| b.min(c)));
                    }
                }
            }
            // Next choice vector.
            let mut k = 0;
            while k < n {
                choice[k] += 1;
                if choice[k] < options[k] {
                    break;
                }
                choice[k] = 0;
                k += 1;
            }
            if k == n {
                return best;
            }
        }
    }

    #[test]
    fn the_bound_never_exceeds_the_cheapest_dag_of_random_graphs() {
        let mut seed = 12345u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut tight = 0;
        for _ in 0..1000 {
            let n = 2 + next(5) as usize;
            let mut raw: Vec<Vec<(f64, Vec<usize>)>> = Vec::new();
            for s in 0..n {
                let count = if s == 0 { 1 } else { 1 + next(3) as usize };
                raw.push(
                    (0..count)
                        .map(|_| {
                            let arity = if s == 0 { 0 } else { next(3) as usize };
                            let inputs = (0..arity).map(|_| next(n as u64) as usize).collect();
                            (next(4) as f64, inputs)
                        })
                        .collect(),
                );
            }
            let out_inputs: Vec<Vec<usize>> =
                (0..1 + next(2)).map(|_| (0..1 + next(2)).map(|_| next(n as u64) as usize).collect()).collect();
            // Only providers whose inputs can be made, as extraction hands them over.
            let mut made = vec![false; n];
            loop {
                let before = made.clone();
                for s in 0..n {
                    made[s] |= raw[s].iter().any(|(_, inputs)| inputs.iter().all(|&i| made[i]));
                }
                if made == before {
                    break;
                }
            }
            let usable = |inputs: &Vec<usize>| inputs.iter().all(|&i| made[i]);
            let d = Derivations {
                providers: raw
                    .iter()
                    .map(|ps| ps.iter().filter(|(_, i)| usable(i)).map(|(c, i)| p(*c, i)).collect())
                    .collect(),
                output: out_inputs.iter().filter(|i| usable(i)).map(|i| p(1.0, i)).collect(),
            };
            let (bound, exact) = (lower_bound(&d), cheapest_dag(&d));
            match (bound, exact) {
                (Some(b), Some(e)) => {
                    assert!(b <= e, "bound {b} above the cheapest DAG {e}: {d:?}");
                    tight += usize::from(b == e);
                }
                (None, None) => {}
                (b, e) => panic!("bound {b:?}, cheapest DAG {e:?}: {d:?}"),
            }
        }
        assert!(tight > 300, "the bound is exact on {tight} of 1000 graphs only");
    }

    #[test]
    fn negative_costs_give_no_bound() {
        let d = Derivations { providers: vec![vec![p(-1.0, &[])]], output: vec![p(1.0, &[0])] };
        assert_eq!(lower_bound(&d), None);
        let none = Derivations { providers: vec![vec![p(0.0, &[])]], output: vec![] };
        assert_eq!(lower_bound(&none), None);
    }
}
