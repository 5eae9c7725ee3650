//! Loads run again instead of keeping their value on chip, when an order keeps more live than
//! the buffers hold: the operand tiles of a product larger than the scratchpad (a 512^3 int8
//! product reads 512 KiB of tiles through a 256 KiB scratchpad).
//!
//! A *reloadable* value is an instruction's on-chip result made from kernel inputs and
//! constants alone (a load of a tile), read only by instructions and never overwritten in
//! place: running that instruction again gives the same bits, since nothing writes the HBM it
//! reads. Walking the order, when a buffer would overflow, the reloadable value whose next
//! read is farthest away (Belady's choice) is let go after its last read so far, and loaded
//! again just before its next read. The new program is a new candidate graph with its order;
//! scheduling and allocation then check and place it as any other.

use crate::isa::Isa;
use crate::pii::{PiiGraph, PiiNode};
use crate::schedule::Schedule;
use crate::value::Value;
use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

/// A candidate rewritten to load some values more than once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloaded {
    pub graph: PiiGraph,
    /// Its instruction nodes in execution order.
    pub order: Vec<usize>,
    /// The node of the original candidate each node stands for (a copy of a load: the load).
    pub original: Vec<usize>,
    /// How many loads were added.
    pub added: usize,
}

/// Of `orders`, the reloading that repeats the fewest loads (the first of equals): the order
/// that keeps the tiles it reads most often on chip; `None` when reloading helps none.
pub fn fewest(graph: &PiiGraph, isa: &Isa, values: &[Value], orders: &[Schedule]) -> Option<Reloaded> {
    orders.iter().filter_map(|order| reload(graph, isa, values, order)).min_by_key(|r| r.added)
}

/// `graph` run in `schedule`'s order with loads repeated wherever an on-chip buffer would
/// hold more than its capacity; `None` when no repeated load helps (nothing is reloadable at
/// an overflow, or the buffers overflow without counting reloadable values).
pub fn reload(graph: &PiiGraph, isa: &Isa, values: &[Value], schedule: &Schedule) -> Option<Reloaded> {
    let n_nodes = graph.nodes.len();
    let capacity = crate::schedule::capacities(isa, values);
    let size = |n: usize| -> i64 {
        if values[n].identity || capacity[values[n].buffer].is_none() {
            0
        } else {
            values[n].size.iter().product()
        }
    };
    let from_hbm = given_in_hbm(graph, isa, values);
    let reloadable: Vec<bool> = (0..n_nodes)
        .map(|n| {
            matches!(&graph.nodes[n], PiiNode::Instr { operands, .. } if operands.iter().all(|&o| from_hbm[o]))
                && n != graph.root
                && size(n) > 0
                && values[n].overwritten_by.is_none()
                && values[n].users.iter().all(|&(u, _)| matches!(graph.nodes[u], PiiNode::Instr { .. }))
        })
        .collect();
    // Per reloadable value, the steps that read it, in order.
    let mut reads: Vec<Vec<usize>> = vec![Vec::new(); n_nodes];
    for (p, &x) in schedule.steps.iter().enumerate() {
        for &o in graph.nodes[x].operands() {
            if reloadable[o] && reads[o].last() != Some(&p) {
                reads[o].push(p);
            }
        }
    }
    // The other values' use of each buffer at each instant, from the order's live ranges.
    let end = schedule.end as usize;
    let mut fixed: Vec<Vec<i64>> = vec![vec![0; end + 1]; capacity.len()];
    for (n, range) in schedule.live.iter().enumerate() {
        let Some((s, e)) = *range else { continue };
        if !reloadable[n] && size(n) > 0 {
            fixed[values[n].buffer][s as usize] += size(n);
            fixed[values[n].buffer][e as usize] -= size(n);
        }
    }
    for row in &mut fixed {
        for t in 1..row.len() {
            row[t] += row[t - 1];
        }
    }
    if fixed.iter().zip(&capacity).any(|(row, c)| c.is_some_and(|c| row.iter().any(|&u| u > c))) {
        return None;
    }

    // Walk the order. A reloadable value is loaded just before the first step that reads it
    // while it is not on chip: the first time by its own node, later by a copy of it.
    // `resident` holds (next read, node) of the values on chip with reads to come.
    let mut resident: BTreeSet<(Reverse<usize>, usize)> = BTreeSet::new();
    let mut used: Vec<i64> = vec![0; capacity.len()];
    let mut next: Vec<usize> = vec![0; n_nodes];
    let mut loads: Vec<Load> = Vec::new();
    let mut current: Vec<Option<usize>> = vec![None; n_nodes];
    let mut read_from: HashMap<(usize, usize), usize> = HashMap::new();
    let over = |used: &[i64], b: usize, t: usize| capacity[b].is_some_and(|c| used[b] + fixed[b][t] > c);
    for (p, &x) in schedule.steps.iter().enumerate() {
        if reloadable[x] {
            continue;
        }
        let operands: Vec<usize> = graph.nodes[x].operands().iter().copied().filter(|&o| reloadable[o]).collect();
        for &o in &operands {
            if !resident.contains(&(Reverse(p), o)) && current[o].is_none_or(|l| loads[l].before != p) {
                loads.push(Load { node: o, before: p, first: current[o].is_none() });
                current[o] = Some(loads.len() - 1);
                used[values[o].buffer] += size(o);
                resident.insert((Reverse(p), o));
            }
            read_from.insert((o, x), current[o].expect("loaded above"));
        }
        let buffers: BTreeSet<usize> = operands.iter().map(|&o| values[o].buffer).collect();
        for b in buffers {
            if !evict(&mut resident, &mut used, values, &size, b, 2 * p, &over, &operands) {
                return None;
            }
        }
        // Operands read here move on to their next read, or are done with.
        for &o in &operands {
            if !resident.remove(&(Reverse(p), o)) {
                continue;
            }
            next[o] += 1;
            match reads[o].get(next[o]) {
                Some(&q) => {
                    resident.insert((Reverse(q), o));
                }
                None => used[values[o].buffer] -= size(o),
            }
        }
        if !evict(&mut resident, &mut used, values, &size, values[x].buffer, 2 * p + 1, &over, &[]) {
            return None;
        }
    }
    Some(rebuild(graph, schedule, &reloadable, &loads, &read_from))
}

/// One run of a reloadable value's instruction: before step `before` of the order, by the
/// value's own node (`first`) or by a copy of it.
struct Load {
    node: usize,
    before: usize,
    first: bool,
}

/// Lets go of the reloadable values of buffer `b` whose next read is farthest until `b` fits
/// at instant `t`, keeping `keep`; `false` when it cannot fit.
#[allow(clippy::too_many_arguments)]
fn evict(
    resident: &mut BTreeSet<(Reverse<usize>, usize)>,
    used: &mut [i64],
    values: &[Value],
    size: &impl Fn(usize) -> i64,
    b: usize,
    t: usize,
    over: &impl Fn(&[i64], usize, usize) -> bool,
    keep: &[usize],
) -> bool {
    while over(used, b, t) {
        let victim = resident.iter().find(|&&(_, v)| values[v].buffer == b && !keep.contains(&v)).copied();
        let Some(entry) = victim else { return false };
        resident.remove(&entry);
        used[b] -= size(entry.1);
    }
    true
}

/// Nodes whose value is in HBM from the start: kernel inputs, constants, and views of them.
fn given_in_hbm(graph: &PiiGraph, isa: &Isa, values: &[Value]) -> Vec<bool> {
    let mut given = vec![false; graph.nodes.len()];
    for (n, node) in graph.nodes.iter().enumerate() {
        given[n] = match node {
            PiiNode::Input { .. } | PiiNode::Constant { .. } => true,
            PiiNode::View { of, .. } => given[*of] && isa.buffers[values[n].buffer].is_hbm(),
            _ => false,
        };
    }
    given
}

/// The graph with each copy of a load inserted just before its first reader in node order
/// (operands still precede their users) and its readers pointed at it, and the order
/// with every load run just before the step that needs it.
fn rebuild(
    graph: &PiiGraph,
    schedule: &Schedule,
    reloadable: &[bool],
    loads: &[Load],
    read_from: &HashMap<(usize, usize), usize>,
) -> Reloaded {
    // A copy goes before the first of its readers in node order (not in execution order).
    let mut first_reader: Vec<usize> = vec![usize::MAX; loads.len()];
    for (&(_, x), &l) in read_from {
        first_reader[l] = first_reader[l].min(x);
    }
    let mut copies_before: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut loads_before: HashMap<usize, Vec<usize>> = HashMap::new();
    for (l, load) in loads.iter().enumerate() {
        if !load.first {
            copies_before.entry(first_reader[l]).or_default().push(l);
        }
        loads_before.entry(load.before).or_default().push(l);
    }
    let mut nodes = Vec::with_capacity(graph.nodes.len() + loads.len());
    let mut original = Vec::with_capacity(nodes.capacity());
    let mut new_index = vec![0usize; graph.nodes.len()];
    let mut load_index = vec![0usize; loads.len()];
    for (n, node) in graph.nodes.iter().enumerate() {
        for &l in copies_before.get(&n).map_or(&[][..], Vec::as_slice) {
            let mut copy = graph.nodes[loads[l].node].clone();
            if let PiiNode::Instr { operands, .. } = &mut copy {
                operands.iter_mut().for_each(|o| *o = new_index[*o]);
            }
            load_index[l] = nodes.len();
            nodes.push(copy);
            original.push(loads[l].node);
        }
        let mut node = node.clone();
        match &mut node {
            PiiNode::Instr { operands, .. } => {
                for o in operands.iter_mut() {
                    *o = match read_from.get(&(*o, n)) {
                        Some(&l) if !loads[l].first => load_index[l],
                        _ => new_index[*o],
                    };
                }
            }
            PiiNode::View { of, .. } => *of = new_index[*of],
            PiiNode::Concat { parts, .. } | PiiNode::Overlay { parts, .. } => parts.iter_mut().for_each(|p| *p = new_index[*p]),
            _ => {}
        }
        new_index[n] = nodes.len();
        nodes.push(node);
        original.push(n);
    }
    for (l, load) in loads.iter().enumerate() {
        if load.first {
            load_index[l] = new_index[load.node];
        }
    }
    let mut order = Vec::with_capacity(schedule.steps.len() + loads.len());
    for (p, &n) in schedule.steps.iter().enumerate() {
        order.extend(loads_before.get(&p).map_or(&[][..], Vec::as_slice).iter().map(|&l| load_index[l]));
        if !reloadable[n] {
            order.push(new_index[n]);
        }
    }
    let added = loads.iter().filter(|l| !l.first).count();
    Reloaded { graph: PiiGraph { nodes, root: new_index[graph.root] }, order, original, added }
}
