//! Execution orders of a candidate and the live range of every value under each order.
//!
//! The first order is a Sethi-Ullman-like one that keeps few on-chip rows live (summed over
//! the on-chip buffers); deterministic fallbacks follow. When none of the heuristic orders
//! keeps every on-chip buffer within its capacity, a bounded depth-first search over
//! topological orders looks for one that does (see `search`). An instruction that overwrites an
//! operand in place must be that operand's last reader: orders breaking this are rejected
//! here, before the allocator spends time on them.
//!
//! Time: step `p` reads its operands at `2p` and writes its result at `2p + 1`. A value made
//! at step `p` and last read at step `u` is live over `[2p + 1, 2u + 1)`, so a result may
//! reuse the space of what its own step reads last. Kernel inputs are live over the whole
//! program `[0, end)`, the kernel output from its producer to `end`, where `end = 2N + 1`.

use crate::isa::Isa;
use crate::pii::{PiiGraph, PiiNode};
use crate::value::Value;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

/// One execution order of a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Which heuristic produced the order (for reports).
    pub heuristic: &'static str,
    /// Instruction node indices, in execution order. Instructions whose result the kernel
    /// output does not depend on are left out.
    pub steps: Vec<usize>,
    /// Per node: its half-open live range, `None` for a node the program leaves out.
    pub live: Vec<Option<(i64, i64)>>,
    /// `2 * steps.len() + 1`: the end of every range that lasts to the end.
    pub end: i64,
}

/// Why a candidate has no valid order at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unschedulable(pub String);

impl fmt::Display for Unschedulable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no valid order: {}", self.0)
    }
}

impl std::error::Error for Unschedulable {}

/// The distinct valid orders of `graph`, best guess first.
pub fn orders(
    graph: &PiiGraph,
    isa: &Isa,
    values: &[Value],
) -> Result<Vec<Schedule>, Unschedulable> {
    let mut orders = Orders::new(graph, isa, values)?;
    orders.all();
    Ok(orders.made)
}

/// A heuristic order: its name (for reports) and how it orders a candidate.
type Heuristic = (&'static str, fn(&Ctx<'_>) -> Vec<usize>);

/// The heuristic orders, in the order they are tried.
const HEURISTICS: [Heuristic; 6] = [
    ("sethi-ullman", |c| c.depth_first(true, false)),
    ("min-live", |c| c.list(true)),
    ("operand-order", |c| c.depth_first(false, false)),
    ("node-order", |c| c.list(false)),
    ("stores-first", |c| c.depth_first(true, true)),
    ("closest-first", |c| c.closest_first()),
];

/// The distinct valid orders of a candidate, made one at a time as they are asked for:
/// most candidates are placed in their first order, and each heuristic walks the whole graph
/// (a 32,000-instruction program spent most of its scheduling time on orders never tried).
/// They come in the order [`orders`] lists them, so what is placed does not depend on how
/// many were made.
pub struct Orders<'a> {
    /// What makes more orders; `None` for a fixed list.
    maker: Option<Maker<'a>>,
    made: Vec<Schedule>,
}

/// The heuristics' shared context and how far they have run.
struct Maker<'a> {
    graph: &'a PiiGraph,
    isa: &'a Isa,
    values: &'a [Value],
    ctx: Ctx<'a>,
    /// The next heuristic of [`HEURISTICS`] to run; past the last, whether the search ran.
    next: usize,
    searched: bool,
}

impl<'a> Orders<'a> {
    /// The orders of `graph`, the first of them made; an error where it has none.
    pub fn new(graph: &'a PiiGraph, isa: &'a Isa, values: &'a [Value]) -> Result<Orders<'a>, Unschedulable> {
        let ctx = Ctx::new(graph, isa, values)?;
        let maker = Maker { graph, isa, values, ctx, next: 0, searched: false };
        let mut orders = Orders { maker: Some(maker), made: Vec::new() };
        if orders.get(0).is_none() {
            // Ctx::new() proved that some order exists and list scheduling finds one whenever
            // one does, so this is a bug here rather than a property of the candidate.
            return Err(Unschedulable("every heuristic broke an in-place constraint".into()));
        }
        Ok(orders)
    }

    /// Exactly `schedules`, in that order.
    pub fn given(schedules: Vec<Schedule>) -> Orders<'a> {
        Orders { maker: None, made: schedules }
    }

    /// Order `i`, made now if it was not yet; `None` past the last.
    pub fn get(&mut self, i: usize) -> Option<&Schedule> {
        while self.made.len() <= i && self.make_next() {}
        self.made.get(i)
    }

    /// Every order, all made.
    pub fn all(&mut self) -> &[Schedule] {
        while self.make_next() {}
        &self.made
    }

    /// Runs the next heuristic (or, once all ran, the search); false when nothing is left.
    fn make_next(&mut self) -> bool {
        let Some(m) = &mut self.maker else { return false };
        let (heuristic, steps) = if let Some(&(heuristic, order)) = HEURISTICS.get(m.next) {
            m.next += 1;
            (heuristic, order(&m.ctx))
        } else if !m.searched {
            m.searched = true;
            // The search only runs when every heuristic order overfills some buffer: such
            // orders are certainly infeasible, and an order that fits is worth handing to the
            // allocator. It is skipped where no order can fit: an instruction whose operands
            // alone overfill a buffer.
            let capacity = capacities(m.isa, m.values);
            if self.made.iter().any(|s| fits(s, m.values, &capacity)) || !m.ctx.operands_fit(&capacity) {
                return false;
            }
            let budget = SEARCH_BUDGET.min(SEARCH_WORK / m.graph.nodes.len().max(1));
            let Some(steps) = m.ctx.search(&capacity, budget) else { return false };
            ("search", steps)
        } else {
            return false;
        };
        if !self.made.iter().any(|s| s.steps == steps) {
            if let Ok(schedule) = from_order(m.graph, m.values, heuristic, steps) {
                self.made.push(schedule);
            }
        }
        true
    }
}

/// Builds the schedule of a given order, checking that operands come first, that every
/// instruction the output needs is there once, and that in-place writers are last readers.
pub fn from_order(
    graph: &PiiGraph,
    values: &[Value],
    heuristic: &'static str,
    steps: Vec<usize>,
) -> Result<Schedule, String> {
    let live_nodes = reachable(graph);
    let mut step_of: Vec<Option<usize>> = vec![None; graph.nodes.len()];
    for (p, &n) in steps.iter().enumerate() {
        if !matches!(graph.nodes.get(n), Some(PiiNode::Instr { .. })) || !live_nodes[n] {
            return Err(format!("step {p} names node {n}, which is not a needed instruction"));
        }
        if step_of[n].replace(p).is_some() {
            return Err(format!("node {n} is scheduled twice"));
        }
    }
    for (n, node) in graph.nodes.iter().enumerate() {
        let PiiNode::Instr { operands, .. } = node else { continue };
        if !live_nodes[n] {
            continue;
        }
        let Some(p) = step_of[n] else { return Err(format!("node {n} is not scheduled")) };
        for &op in operands {
            if matches!(step_of[op], Some(q) if q >= p) {
                return Err(format!("node {n} runs before its operand node {op}"));
            }
        }
    }
    for (v, value) in values.iter().enumerate() {
        let Some(writer) = value.overwritten_by.filter(|&w| live_nodes[w]) else { continue };
        for &(user, _) in &value.users {
            if live_nodes[user] && user != writer && step_of[user] > step_of[writer] {
                return Err(format!(
                    "node {user} reads node {v} after node {writer} overwrote it in place"
                ));
            }
        }
    }
    let end = 2 * steps.len() as i64 + 1;
    // A view exists once what it views does, a concatenation once its last part does.
    let mut begin: Vec<i64> = vec![0; graph.nodes.len()];
    for (n, node) in graph.nodes.iter().enumerate() {
        begin[n] = match (node, step_of[n]) {
            (PiiNode::Input { .. } | PiiNode::Constant { .. }, _) => 0,
            // Uninitialised HBM exists from just before its first reader runs.
            (PiiNode::Uninit { .. }, _) => values[n]
                .users
                .iter()
                .filter_map(|&(u, _)| step_of[u])
                .map(|p| 2 * p as i64)
                .min()
                .unwrap_or(0),
            (PiiNode::Instr { .. }, Some(p)) => 2 * p as i64 + 1,
            (PiiNode::Instr { .. }, None) => continue,
            (PiiNode::View { of, .. }, _) => begin[*of],
            (PiiNode::Concat { parts, .. } | PiiNode::Overlay { parts, .. }, _) => parts.iter().map(|&p| begin[p]).max().unwrap_or(0),
        };
    }
    // A value read through a view or concatenation lasts as long as that name of it does;
    // users come after their operands, so a backward pass sees every user's end first.
    let mut live: Vec<Option<(i64, i64)>> = vec![None; graph.nodes.len()];
    for n in (0..graph.nodes.len()).rev() {
        if !live_nodes[n] {
            continue;
        }
        let node = &graph.nodes[n];
        let last_read = values[n]
            .users
            .iter()
            .filter(|&&(u, _)| live_nodes[u])
            .map(|&(u, _)| match step_of[u] {
                Some(p) => 2 * p as i64 + 1,
                None => live[u].map_or(0, |(_, e)| e),
            })
            .max();
        let finish = match (node, last_read) {
            _ if n == graph.root => end,
            (PiiNode::Input { .. } | PiiNode::Constant { .. }, _) => end,
            (_, Some(u)) => u,
            (_, None) => unreachable!("a live non-root value has a live reader"),
        };
        live[n] = Some((begin[n], finish));
    }
    Ok(Schedule { heuristic, steps, live, end })
}

impl Schedule {
    /// Pairs `(a, b)`, `a < b`, of values in the same buffer whose live ranges overlap: the
    /// non-overlap constraints this order asks the allocator for. An order whose set contains
    /// the set of an order found infeasible is infeasible too.
    pub fn interference(&self, values: &[Value]) -> BTreeSet<(usize, usize)> {
        // By start: each value meets the values of its buffer started before it and not yet
        // ended (a sweep, not every pair: programs of thousands of steps have millions).
        let mut by_start: Vec<(i64, i64, usize)> =
            self.live.iter().enumerate().filter_map(|(n, r)| r.map(|(s, e)| (s, e, n))).collect();
        by_start.sort();
        let mut open: Vec<Vec<(i64, i64, usize)>> = Vec::new();
        let mut out = BTreeSet::new();
        for (s, e, b) in by_start {
            let buffer = values[b].buffer;
            if open.len() <= buffer {
                open.resize(buffer + 1, Vec::new());
            }
            open[buffer].retain(|&(end, _, _)| end > s);
            // An empty range overlaps only what started strictly before it.
            for &(_, _, a) in open[buffer].iter().filter(|&&(_, start, _)| e > s || start < s) {
                out.insert((a.min(b), a.max(b)));
            }
            open[buffer].push((e, s, b));
        }
        out
    }

    /// Where the values live together cover more of a buffer than it holds: a message naming
    /// the buffer, the instant and both sizes; `None` when the order never overfills one.
    pub fn overflow(&self, isa: &Isa, values: &[Value]) -> Option<String> {
        let (b, t, used) = overflow(self, values, &capacities(isa, values))?;
        let buffer = &isa.buffers[b];
        let holds: i64 = buffer.access_dims.iter().map(|d| d.unwrap_or(0)).product();
        Some(format!(
            "the values live at time {t} cover {used} positions of buffer \"{}\", which holds {holds}",
            buffer.name
        ))
    }

    /// The largest number of on-chip rows live at once (summed over on-chip buffers).
    pub fn peak_on_chip_rows(&self, isa: &Isa, values: &[Value]) -> i64 {
        let mut change = vec![0i64; self.end as usize + 1];
        for (n, r) in self.live.iter().enumerate() {
            if let Some((s, e)) = *r {
                change[s as usize] += values[n].on_chip_rows(isa);
                change[e as usize] -= values[n].on_chip_rows(isa);
            }
        }
        let mut live = 0;
        change[..self.end as usize].iter().map(|c| { live += c; live }).max().unwrap_or(0).max(0)
    }
}

/// States the fallback search may expand before giving up: enough for every kernel the
/// examples hold many times over, small enough to cost milliseconds.
pub const SEARCH_BUDGET: usize = 20_000;

/// Nodes the fallback search may look at in all (each state it expands looks at every node
/// of the candidate): a program of thousands of instructions gets fewer states, so that a
/// search that fails costs tens of milliseconds rather than seconds per candidate.
pub const SEARCH_WORK: usize = 4_000_000;

/// Per buffer: the positions it holds (product of its access dims), `None` if unbounded
/// (HBM, or a dimension of unknown extent). Only buffers that some value lives in matter.
pub(crate) fn capacities(isa: &Isa, values: &[Value]) -> Vec<Option<i64>> {
    let mut cap = vec![None; isa.buffers.len()];
    for v in values {
        let b = &isa.buffers[v.buffer];
        if !b.is_hbm() {
            cap[v.buffer] = b.access_dims.iter().try_fold(1i64, |acc, d| d.map(|d| acc * d));
        }
    }
    cap
}

/// Whether, at every instant of `schedule`, the values live in each bounded buffer cover no
/// more positions than it holds. Necessary for a placement to exist, not sufficient.
fn fits(schedule: &Schedule, values: &[Value], capacity: &[Option<i64>]) -> bool {
    overflow(schedule, values, capacity).is_none()
}

/// The first bounded buffer, instant and positions where the values live in it cover more
/// than it holds; `None` when none does.
fn overflow(schedule: &Schedule, values: &[Value], capacity: &[Option<i64>]) -> Option<(usize, i64, i64)> {
    // Per buffer, the change of its use at each instant, summed up along the schedule.
    let mut change = vec![vec![0i64; schedule.end as usize + 1]; capacity.len()];
    for (n, r) in schedule.live.iter().enumerate() {
        if let (Some((s, e)), false) = (*r, values[n].identity) {
            let size = values[n].size.iter().product::<i64>();
            change[values[n].buffer][s as usize] += size;
            change[values[n].buffer][e as usize] -= size;
        }
    }
    change.iter().zip(capacity).enumerate().find_map(|(b, (change, c))| {
        let c = (*c)?;
        let mut used = 0;
        change[..schedule.end as usize].iter().enumerate().find_map(|(t, d)| {
            used += d;
            (used > c).then_some((b, t as i64, used))
        })
    })
}

/// Nodes the root depends on (the root included).
fn reachable(graph: &PiiGraph) -> Vec<bool> {
    let mut seen = vec![false; graph.nodes.len()];
    seen[graph.root] = true;
    for n in (0..graph.nodes.len()).rev() {
        if seen[n] {
            for &op in graph.nodes[n].operands() {
                seen[op] = true;
            }
        }
    }
    seen
}

/// What the heuristics share: the needed nodes, each value's on-chip rows and readers.
struct Ctx<'a> {
    graph: &'a PiiGraph,
    values: &'a [Value],
    live: Vec<bool>,
    rows: Vec<i64>,
    /// Per instruction: the distinct inputs and instructions whose storage it reads, looking
    /// through views and concatenations (which never run); empty for other nodes.
    sources: Vec<Vec<usize>>,
    /// Distinct needed instructions reading each node's storage, in node order.
    readers: Vec<Vec<usize>>,
}

impl<'a> Ctx<'a> {
    fn new(graph: &'a PiiGraph, isa: &Isa, values: &'a [Value]) -> Result<Self, Unschedulable> {
        if let PiiNode::Input { param, .. } = graph.nodes[graph.root] {
            return Err(Unschedulable(format!(
                "the output is kernel parameter {param} itself, and no instruction copies it"
            )));
        }
        if let PiiNode::Constant { .. } = graph.nodes[graph.root] {
            return Err(Unschedulable(
                "the output is a constant, and no instruction copies it".into(),
            ));
        }
        let live = reachable(graph);
        let rows = values.iter().map(|v| v.on_chip_rows(isa)).collect();
        let count = graph.nodes.len();
        // What each node stands for: itself, or for an identity node what it names.
        let mut stands_for: Vec<Vec<usize>> = Vec::with_capacity(count);
        for (n, node) in graph.nodes.iter().enumerate() {
            stands_for.push(if node.is_identity() {
                distinct(&node.operands().iter().flat_map(|&o| stands_for[o].clone()).collect::<Vec<_>>())
            } else {
                vec![n]
            });
        }
        let sources: Vec<Vec<usize>> = graph
            .nodes
            .iter()
            .map(|node| match node {
                PiiNode::Instr { operands, .. } => {
                    distinct(&operands.iter().flat_map(|&o| stands_for[o].clone()).collect::<Vec<_>>())
                }
                _ => Vec::new(),
            })
            .collect();
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); count];
        for n in (0..count).filter(|&n| live[n]) {
            for &v in &sources[n] {
                readers[v].push(n);
            }
        }
        let ctx = Ctx { graph, values, live, rows, sources, readers };
        ctx.check_in_place()?;
        Ok(ctx)
    }

    /// Proves that some order honours every in-place write, or says why none can.
    fn check_in_place(&self) -> Result<(), Unschedulable> {
        for (v, value) in self.values.iter().enumerate() {
            let Some(writer) = value.overwritten_by.filter(|&w| self.live[w]) else { continue };
            if let PiiNode::Input { param, .. } = self.graph.nodes[v] {
                return Err(Unschedulable(format!(
                    "node {writer} overwrites kernel parameter {param} in place, but kernel \
                     inputs stay live for the whole program"
                )));
            }
            if let PiiNode::Constant { .. } = self.graph.nodes[v] {
                return Err(Unschedulable(format!(
                    "node {writer} overwrites constant node {v} in place, but constants stay \
                     live for the whole program"
                )));
            }
            if v == self.graph.root {
                return Err(Unschedulable(format!(
                    "node {writer} overwrites the kernel output (node {v}) in place"
                )));
            }
            let after = self.dependents(writer);
            if let Some(&u) = self.readers[v].iter().find(|&&u| u != writer && after[u]) {
                return Err(Unschedulable(format!(
                    "node {u} reads node {v} but depends on node {writer}, which overwrites \
                     node {v} in place"
                )));
            }
        }
        Ok(())
    }

    /// Nodes that depend on `x` (x included).
    fn dependents(&self, x: usize) -> Vec<bool> {
        let mut dep = vec![false; self.graph.nodes.len()];
        dep[x] = true;
        for n in x + 1..self.graph.nodes.len() {
            dep[n] = self.graph.nodes[n].operands().iter().any(|&o| dep[o]);
        }
        dep
    }

    /// What instruction `n` reads, as storage: see `sources`.
    fn operands(&self, n: usize) -> &[usize] {
        &self.sources[n]
    }

    /// A needed instruction that has not run.
    fn pending_instr(&self, n: usize, ran: &[bool]) -> bool {
        self.live[n] && !ran[n] && matches!(self.graph.nodes[n], PiiNode::Instr { .. })
    }

    /// Depth-first post-order from the root. With `by_need`, operands needing more on-chip
    /// rows (Sethi-Ullman numbers, generalised to DAGs and row counts) go first; otherwise
    /// operands go in slot order. Before an in-place writer, the other readers of the value
    /// it overwrites are pulled in. With `stores_first`, after each instruction its readers
    /// that hold nothing on chip (stores) and can run run at once, so a value written out in
    /// pieces leaves before the next is made: a result stored row by row into the halves
    /// of a wider one is stored whole before the other half is computed.
    fn depth_first(&self, by_need: bool, stores_first: bool) -> Vec<usize> {
        self.run_depth_first(DepthFirst { by_need, stores_first, closest_part: false, need: &self.need() })
    }

    /// Stores-first, except that the parts of a concatenation (an output written in pieces)
    /// are not taken in slot order: each time, the part with the fewest instructions left to
    /// run before it, ties to the lower slot. Work nearly done is finished first, so the
    /// values it reads die before new ones are made: a product whose tiles share operand
    /// windows computes every tile of a window while the window is on chip, rather than
    /// interleaving the tiles that one output row spans.
    fn closest_first(&self) -> Vec<usize> {
        self.run_depth_first(DepthFirst { by_need: true, stores_first: true, closest_part: true, need: &self.need() })
    }

    fn run_depth_first(&self, order: DepthFirst) -> Vec<usize> {
        // Inputs, constants and uninitialised regions are there from the start.
        let mut done: Vec<bool> = self.graph.nodes.iter().map(PiiNode::is_source).collect();
        let mut steps = Vec::new();
        let mut marks = Marks { stamp: 0, seen: vec![0; self.graph.nodes.len()], stack: Vec::new() };
        self.visit(self.graph.root, &order, &mut done, &mut steps, &mut marks);
        steps
    }

    fn visit(&self, n: usize, order: &DepthFirst, done: &mut [bool], out: &mut Vec<usize>, marks: &mut Marks) {
        if done[n] {
            return;
        }
        let PiiNode::Instr { .. } = self.graph.nodes[n] else {
            // A view or a concatenation runs nothing: what it stands for does (an output
            // written in parts is a concatenation of the parts' stores).
            done[n] = true;
            let mut parts = distinct(self.graph.nodes[n].operands());
            if !order.closest_part {
                for &o in &parts {
                    self.visit(o, order, done, out, marks);
                }
                return;
            }
            while !parts.is_empty() {
                let p = parts.remove(self.closest_part(&parts, done, marks));
                self.visit(p, order, done, out, marks);
            }
            return;
        };
        let mut ops = distinct(self.operands(n));
        if order.by_need {
            // Stable sort: equal keys keep slot order, so the order is deterministic.
            ops.sort_by_key(|&o| -(order.need[o] - self.rows[o]));
        }
        for &o in &ops {
            self.visit(o, order, done, out, marks);
        }
        for v in ops {
            if self.values[v].overwritten_by == Some(n) {
                for &u in &self.readers[v] {
                    if u != n {
                        self.visit(u, order, done, out, marks);
                    }
                }
            }
        }
        if !done[n] {
            done[n] = true;
            out.push(n);
            if order.stores_first {
                for &r in &self.readers[n] {
                    if !done[r] && self.rows[r] == 0 && self.is_ready(r, done) {
                        self.visit(r, order, done, out, marks);
                    }
                }
            }
        }
    }

    /// The slot of the part of `parts` with the fewest instructions left to run, the lowest
    /// slot among equals. Nothing beats one left (a part with none adds no step), so the first
    /// part that is done or ready is taken without walking any other; and parts that read the
    /// same storage have the same work left (the rows of one tile stored one by one), so each
    /// such set is walked once. Walking every part, a 128^3 int8 product written row by row
    /// (1,024 parts) took 0.6 s of each candidate's schedule, 256^3 (4,096) 20 to 70 s.
    fn closest_part(&self, parts: &[usize], done: &[bool], marks: &mut Marks) -> usize {
        let nearly_done = |p: usize, marks: &mut Marks| match self.graph.nodes[p] {
            PiiNode::Instr { .. } => done[p] || self.operands(p).iter().all(|&o| done[o]),
            _ => self.instructions_left(p, done, 2, marks) <= 1,
        };
        if let Some(slot) = parts.iter().position(|&p| nearly_done(p, marks)) {
            return slot;
        }
        let mut known: HashMap<&[usize], usize> = HashMap::new();
        let (mut fewest, mut next) = (usize::MAX, 0);
        for (slot, &p) in parts.iter().enumerate() {
            // A count cut short at an earlier, larger `fewest` is still no better than this.
            let left = match self.graph.nodes[p] {
                PiiNode::Instr { .. } => *known
                    .entry(self.operands(p))
                    .or_insert_with(|| self.instructions_left(p, done, fewest, marks)),
                _ => self.instructions_left(p, done, fewest, marks),
            };
            if left < fewest {
                (fewest, next) = (left, slot);
            }
        }
        next
    }

    /// The instructions that have not run among `n` and what it depends on, counted up to
    /// `limit` (the count stops there).
    fn instructions_left(&self, n: usize, done: &[bool], limit: usize, marks: &mut Marks) -> usize {
        marks.stamp += 1;
        let Marks { stamp, seen, stack } = marks;
        stack.clear();
        stack.push(n);
        let mut left = 0;
        while let Some(m) = stack.pop() {
            if done[m] || seen[m] == *stamp {
                continue;
            }
            seen[m] = *stamp;
            let operands = if matches!(self.graph.nodes[m], PiiNode::Instr { .. }) {
                left += 1;
                if left >= limit {
                    return left;
                }
                self.operands(m)
            } else {
                self.graph.nodes[m].operands()
            };
            // A product reads hundreds of rows loaded long before: only what is left is walked.
            stack.extend(operands.iter().filter(|&&o| !done[o] && seen[o] != *stamp));
        }
        left
    }

    /// On-chip rows needed to evaluate each node, Sethi-Ullman style: operands in the order
    /// that minimises the peak, each operand's result held while the later ones run.
    fn need(&self) -> Vec<i64> {
        let mut need = vec![0i64; self.graph.nodes.len()];
        for n in 0..self.graph.nodes.len() {
            let mut ops = distinct(self.operands(n));
            ops.sort_by_key(|&o| -(need[o] - self.rows[o]));
            let mut held = 0;
            let mut peak = 0;
            for o in ops {
                peak = peak.max(held + need[o]);
                held += self.rows[o];
            }
            need[n] = peak.max(held + self.rows[n]);
        }
        need
    }

    /// List scheduling. With `min_live`, each step runs the ready instruction that grows the
    /// live on-chip rows least; otherwise the ready instruction of lowest node index. An
    /// instruction is ready once its operands ran and, for an operand it overwrites in
    /// place, every other reader of that operand ran.
    fn list(&self, min_live: bool) -> Vec<usize> {
        let count = self.graph.nodes.len();
        let ran: Vec<bool> = self.graph.nodes.iter().map(PiiNode::is_source).collect();
        let mut pending: Vec<usize> = self.readers.iter().map(Vec::len).collect();
        // Per instruction, the conditions still unmet (an operand that has not run, another
        // reader of an operand it overwrites that has not run): ready at zero. Kept up to
        // date as instructions run, so each step costs what it changes, not a scan.
        let mut unmet = vec![0usize; count];
        let mut ready: BTreeSet<(i64, usize)> = BTreeSet::new();
        let key = |n: usize, pending: &[usize]| if min_live { self.growth(n, pending) } else { 0 };
        let mut keys = vec![0i64; count];
        for n in (0..count).filter(|&n| self.pending_instr(n, &ran)) {
            for &o in self.operands(n) {
                unmet[n] += usize::from(!ran[o]);
                if self.values[o].overwritten_by == Some(n) {
                    unmet[n] += self.readers[o].iter().filter(|&&u| u != n && !ran[u]).count();
                }
            }
            if unmet[n] == 0 {
                keys[n] = key(n, &pending);
                ready.insert((keys[n], n));
            }
        }
        let mut steps = Vec::new();
        let meet = |n: usize, unmet: &mut [usize], ready: &mut BTreeSet<(i64, usize)>, keys: &mut [i64], pending: &[usize]| {
            unmet[n] -= 1;
            if unmet[n] == 0 {
                keys[n] = key(n, pending);
                ready.insert((keys[n], n));
            }
        };
        while let Some((_, m)) = ready.pop_first() {
            steps.push(m);
            for &o in self.operands(m) {
                pending[o] -= 1;
            }
            for &o in self.operands(m) {
                // The last reader of `o` frees it when it runs: its growth drops.
                if min_live && pending[o] == 1 {
                    if let Some(&r) = self.readers[o].iter().find(|&&r| r != m && ready.contains(&(keys[r], r))) {
                        ready.remove(&(keys[r], r));
                        keys[r] = key(r, &pending);
                        ready.insert((keys[r], r));
                    }
                }
                if let Some(w) = self.values[o].overwritten_by.filter(|&w| w != m && self.pending_instr(w, &ran)) {
                    meet(w, &mut unmet, &mut ready, &mut keys, &pending);
                }
            }
            for &r in &self.readers[m] {
                meet(r, &mut unmet, &mut ready, &mut keys, &pending);
            }
        }
        steps
    }

    /// Depth-first search over topological orders for one that keeps every bounded buffer
    /// within `capacity` (by positions covered, as `fits` measures). At each step the ready
    /// instructions are tried in order of least growth of live on-chip rows, ties to the
    /// lower node, so the first order found is deterministic. The live values after a step
    /// depend only on which instructions ran, so a set of ran instructions from which no
    /// order completes is remembered and never expanded again. Gives up after `budget`
    /// expanded states.
    fn search(&self, capacity: &[Option<i64>], budget: usize) -> Option<Vec<usize>> {
        let count = self.graph.nodes.len();
        let mut state = SearchState {
            ran: self.graph.nodes.iter().map(PiiNode::is_source).collect(),
            pending: self.readers.iter().map(Vec::len).collect(),
            used: vec![0; capacity.len()],
            steps: Vec::new(),
            dead: HashSet::new(),
            budget,
        };
        // Kernel inputs and the output never leave; inputs occupy their buffer throughout.
        for n in 0..count {
            if self.live[n] && self.graph.nodes[n].is_given() {
                state.used[self.values[n].buffer] += self.positions(n);
            }
        }
        let total = (0..count).filter(|&n| self.pending_instr(n, &state.ran)).count();
        // Every step of an order expands a state: a longer program cannot be ordered within
        // the budget (and each state scans the whole graph).
        if total > budget {
            return None;
        }
        if self.dfs(capacity, total, &mut state) {
            Some(state.steps)
        } else {
            None
        }
    }

    /// Whether the storage every needed instruction reads fits each bounded buffer at once:
    /// all of it is live while the instruction runs, whatever the order.
    fn operands_fit(&self, capacity: &[Option<i64>]) -> bool {
        let mut used = vec![0i64; capacity.len()];
        (0..self.graph.nodes.len()).filter(|&n| self.live[n]).all(|n| {
            used.iter_mut().for_each(|u| *u = 0);
            for &o in self.operands(n) {
                used[self.values[o].buffer] += self.positions(o);
            }
            used.iter().zip(capacity).all(|(u, c)| c.is_none_or(|c| *u <= c))
        })
    }

    /// Positions `n` occupies in its buffer; identity nodes occupy none of their own.
    fn positions(&self, n: usize) -> i64 {
        if self.values[n].identity {
            0
        } else {
            self.values[n].size.iter().product()
        }
    }

    fn dfs(&self, capacity: &[Option<i64>], total: usize, st: &mut SearchState) -> bool {
        if st.steps.len() == total {
            return true;
        }
        if st.budget == 0 || st.dead.contains(&st.ran) {
            return false;
        }
        st.budget -= 1;
        let mut ready: Vec<(i64, usize)> = (0..self.graph.nodes.len())
            .filter(|&n| self.pending_instr(n, &st.ran) && self.is_ready(n, &st.ran))
            .map(|n| (self.growth(n, &st.pending), n))
            .collect();
        ready.sort_unstable();
        for (_, n) in ready {
            let ops = distinct(self.operands(n));
            // The result is written after the operands are read, so operands read for the
            // last time here free their space for it.
            let buffer = self.values[n].buffer;
            let freed: Vec<usize> = ops
                .iter()
                .copied()
                .filter(|&o| {
                    st.pending[o] == 1
                        && o != self.graph.root
                        && !self.graph.nodes[o].is_given()
                })
                .collect();
            for &o in &freed {
                st.used[self.values[o].buffer] -= self.positions(o);
            }
            st.used[buffer] += self.positions(n);
            let within = capacity[buffer].is_none_or(|c| st.used[buffer] <= c);
            // A value nobody reads (only the root) stays; others leave after their last read.
            if within {
                st.ran[n] = true;
                for &o in &ops {
                    st.pending[o] -= 1;
                }
                st.steps.push(n);
                if self.dfs(capacity, total, st) {
                    return true;
                }
                st.steps.pop();
                for &o in &ops {
                    st.pending[o] += 1;
                }
                st.ran[n] = false;
            }
            st.used[buffer] -= self.positions(n);
            for &o in &freed {
                st.used[self.values[o].buffer] += self.positions(o);
            }
            if st.budget == 0 {
                return false;
            }
        }
        st.dead.insert(st.ran.clone());
        false
    }

    fn is_ready(&self, n: usize, ran: &[bool]) -> bool {
        self.operands(n).iter().all(|&o| ran[o])
            && self.operands(n).iter().all(|&v| {
                self.values[v].overwritten_by != Some(n)
                    || self.readers[v].iter().all(|&u| u == n || ran[u])
            })
    }

    /// Change of live on-chip rows if `n` ran now: its result minus the operands it reads last.
    fn growth(&self, n: usize, pending: &[usize]) -> i64 {
        let freed: i64 = distinct(self.operands(n))
            .into_iter()
            .filter(|&o| pending[o] == 1 && o != self.graph.root)
            .map(|o| self.rows[o])
            .sum();
        self.rows[n] - freed
    }
}

/// How [`Ctx::depth_first`] orders a node's operands and what it runs early.
struct DepthFirst<'n> {
    by_need: bool,
    stores_first: bool,
    /// The parts of a concatenation go closest to done first (see [`Ctx::closest_first`]).
    closest_part: bool,
    need: &'n [i64],
}

/// Nodes seen by the current walk of [`Ctx::instructions_left`]: those whose mark is the
/// current stamp (one array for every walk, rather than one per walk).
struct Marks {
    stamp: u32,
    seen: Vec<u32>,
    /// The walk's stack, kept between walks.
    stack: Vec<usize>,
}

/// The mutable part of the fallback search.
struct SearchState {
    ran: Vec<bool>,
    /// Needed readers of each value that have not run yet.
    pending: Vec<usize>,
    /// Positions covered per buffer by the values live after the last step.
    used: Vec<i64>,
    steps: Vec<usize>,
    /// Sets of ran instructions from which no order completes.
    dead: HashSet<Vec<bool>>,
    budget: usize,
}

/// The distinct entries of `items`, first occurrences in order.
fn distinct(items: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(items.len());
    for &i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}
