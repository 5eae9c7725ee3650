//! Extraction of candidate PII graphs from the saturated e-graph.
//!
//! A *state* is a value placed somewhere: (e-class, buffer, slice sizes). A kernel input is
//! available in d0 at cost 0; a PII node provides its class in its output slice and needs
//! operand `i` in input slice `i` (same buffer, same sizes: the producer's output slice is the
//! consumer's input slice). Best costs (instructions, counted as a tree) are found by
//! fixed-point relaxation, so copy cycles such as `mov` back and forth neither loop nor hide
//! a solution. Candidates are then enumerated best-first by their DAG instruction count: the
//! best choice everywhere, then alternatives one choice at a time, and each also for every
//! state of the candidate that has one by the same instruction. A choice is how a state's
//! shared instance is made, or, for one use of a value, a fresh instance of its own (a reload
//! from HBM of a value stored earlier, a second copy), so that a value can live in the same
//! buffer twice when a buffer is too small to keep it in between. Spilling variants of the
//! best candidate, in which on-chip values are reloaded from HBM for every reader, take up to
//! half of the candidate places (see [`Extractor::candidates`]).
//!
//! Besides instructions, four providers cost no instruction: a contiguous byte run of an HBM
//! value is a view of it, a slice of a value on chip that is a region of its storage is a view
//! of it there (`views.rs`), byte strings end to end in HBM are a concatenation whose parts are
//! written in place, and the bytes of a literal are a constant placed in HBM.

use crate::bound;
use crate::egraph::SelGraph;
use crate::isa::Isa;
use crate::isa_match;
use crate::lang::{DType, Op};
use crate::pii::{PiiGraph, PiiNode};
use crate::views;
use egg::Id;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct StateKey {
    class: Id,
    buffer: usize,
    sizes: Vec<i64>,
    /// A part of an HBM concatenation: written there by an instruction, never a view or a
    /// kernel input (which already lie elsewhere). Its providers are the instructions of its
    /// unwritten twin.
    written: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum How {
    Input { param: usize, bytes: u64 },
    Instr { instr: usize, comp: Vec<i64> },
    /// The part of the operand's value that starts `offset` positions into it and spans
    /// `size`, per access dimension of its buffer (bytes in HBM): no instruction.
    View { offset: Vec<i64>, size: Vec<i64> },
    /// The operands' bytes end to end in HBM, each written in place: no instruction.
    Concat,
    /// The operands' bytes written in place at these byte offsets of a value in HBM, where
    /// they may overlap with the same bytes ([`Op::Overlay`]): no instruction.
    Overlay { starts: Vec<i64> },
    /// A literal's bytes, placed in HBM before the program runs.
    Constant { dtype: DType, shape: Vec<i64>, bits: Vec<u64> },
    /// HBM whose contents do not matter.
    Uninit { bytes: u64 },
}

/// Cost of one instruction. Views and concatenations cost one, kernel inputs nothing, so
/// instruction counts decide and, among equal counts, fewer identity nodes win; and every
/// provider costs more than each of its operands, which keeps best choices acyclic (up to
/// [`CAP`]).
const INSTR_COST: u64 = 1 << 20;

#[derive(Debug, Clone)]
struct Provider {
    how: How,
    inputs: Vec<usize>,
}

const INF: u64 = u64::MAX;

/// Where tree costs stop growing. A value read many times is counted once per reader, so a
/// kernel that reuses its values at every level has a tree cost exponential in its depth (a
/// chain of 32x32 int8 clamps and reversals read row by row overflowed 64 bits). Costs that
/// reach the cap no longer rise from operand to user; among providers at the cap, the best is
/// the one of least height (see [`Extractor::relax`]), which keeps best choices acyclic.
const CAP: u64 = INF - 1;

/// The output's node, as the consumer of its operands' uses.
const OUTPUT: usize = usize::MAX;

/// Graph nodes the spilling variants of one selection may build in all, and again the
/// best-first enumeration: every variant of a program of a few hundred instructions is tried,
/// one of thousands tries a few hundred (a 128^3 product read row by row has 6,000 nodes and
/// 2,000 values to spill: 9 s before), and the enumeration builds at most as many graphs.
pub const BUILD_WORK: usize = 1_000_000;

/// A choice a candidate makes: how the output is written, how a state's shared instance is
/// made, or which instance one operand slot of a shared instance (or of the output) reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Choice {
    Output,
    State(usize),
    Use { consumer: usize, slot: usize },
}

/// A candidate waiting in the enumeration: its choices, its graph, the choice points it went
/// through, and whether its operands fit their buffers (see `Extractor::operands_fit`).
/// A candidate waiting in the enumeration: its choices, its graph, the choice points it went
/// through, whether it fits the buffers, and the state each node makes.
type Pending = (BTreeMap<Choice, usize>, PiiGraph, Vec<(Choice, usize)>, bool, Vec<usize>);

/// A candidate built from its choices: the graph, the choice points it went through (with
/// the state whose alternatives apply), and the state each node of the graph makes.
type Built = (PiiGraph, Vec<(Choice, usize)>, Vec<usize>);

/// The states of an e-graph and the best ways to reach them.
pub struct Extractor {
    keys: Vec<StateKey>,
    /// Providers of each state, in a deterministic order (class id, node order).
    providers: Vec<Vec<Provider>>,
    cost: Vec<u64>,
    /// Providers of each state with a finite cost, best first.
    alts: Vec<Vec<usize>>,
    root: Option<usize>,
    /// Index of HBM among the ISA's buffers.
    hbm: usize,
    /// Per instruction, the operand slots it overwrites in place.
    in_place: Vec<Vec<usize>>,
    /// Per buffer, the positions it holds; `None` for HBM.
    capacity: Vec<Option<i64>>,
    /// Per instruction, its place in [`content_order`]: how providers of equal cost are
    /// ordered.
    instr_rank: Vec<usize>,
}

/// The instructions of `isa` ordered by what they compute, not by where the spec lists them
/// or what it names them: fewer operations in their semantics first (a load before the load
/// that also transposes), then by the operations themselves; the spec's order only among
/// instructions of the same operations. Where two programs take as many instructions, the
/// simpler instruction's is the first choice, so that renaming or reordering a spec's
/// instructions does not change which program wins a tie (a tile of a product stored
/// transposed beside one stored as it is cannot share the other's operand loads).
fn content_order(isa: &Isa) -> Vec<usize> {
    let key = |i: usize| {
        let ops = &isa.instructions[i].semantics;
        (ops.len(), ops.iter().map(|op| (op.op, op.dtype)).collect::<Vec<_>>(), i)
    };
    let mut order: Vec<usize> = (0..isa.instructions.len()).collect();
    order.sort_by_key(|&i| key(i));
    let mut rank = vec![0; order.len()];
    for (place, &i) in order.iter().enumerate() {
        rank[i] = place;
    }
    rank
}

/// Literals whose bytes class `bytes` holds: `bytes` must contain `bitcast_convert(x)` to u8
/// where `x`'s class holds a shaped constant (every value, or one for all).
fn literal_bytes(eg: &SelGraph, bytes: Id) -> Vec<(DType, Vec<i64>, Vec<u64>)> {
    let mut out = Vec::new();
    for cast in &eg[bytes].nodes {
        if cast.op != Op::BitcastConvert || eg[bytes].data.dtype != DType::U8 {
            continue;
        }
        let literal = &eg[cast.children[0]];
        for node in &literal.nodes {
            let Op::Constant(lit) = &node.op else { continue };
            let ty = &literal.data;
            if ty.rank() >= 1 && (lit.bits.len() == 1 || lit.bits.len() as i64 == ty.elements()) {
                out.push((ty.dtype, ty.shape.clone(), lit.bits.clone()));
            }
        }
    }
    out
}

/// The states found so far, each with its providers.
#[derive(Default)]
struct States {
    index: BTreeMap<StateKey, usize>,
    keys: Vec<StateKey>,
    providers: Vec<Vec<Provider>>,
}

impl States {
    /// The index of state `key`, added (without providers) if new.
    fn intern(&mut self, key: StateKey) -> usize {
        if let Some(&s) = self.index.get(&key) {
            return s;
        }
        self.index.insert(key.clone(), self.keys.len());
        self.keys.push(key);
        self.providers.push(Vec::new());
        self.keys.len() - 1
    }
}

/// Ways an extraction can fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractFailure {
    /// The output cannot be produced in HBM by any instruction.
    RootUnreachable,
}

impl Extractor {
    /// Collects states and providers from `eg`; `root` is the byte-flattened output class.
    pub fn new(eg: &SelGraph, isa: &Isa, root: Id) -> Result<Extractor, String> {
        let hbm = isa.buffers.iter().position(|b| b.is_hbm()).ok_or("the ISA table has no HBM buffer")?;
        let mut st = States::default();
        let mut ids: Vec<Id> = eg.classes().map(|c| c.id).collect();
        ids.sort();
        for id in ids {
            let class = &eg[id];
            for node in &class.nodes {
                match &node.op {
                    Op::Uninit(_) => {
                        let bytes = class.data.bytes();
                        let s = st.intern(StateKey { class: id, buffer: hbm, sizes: vec![bytes], written: false });
                        st.providers[s].push(Provider { how: How::Uninit { bytes: bytes as u64 }, inputs: vec![] });
                    }
                    Op::Input(param) => {
                        let bytes = class.data.bytes();
                        let s =
                            st.intern(StateKey { class: id, buffer: hbm, sizes: vec![bytes], written: false });
                        st.providers[s]
                            .push(Provider { how: How::Input { param: *param, bytes: bytes as u64 }, inputs: vec![] });
                    }
                    // The bytes of a literal are a constant in HBM.
                    Op::Reshape if class.data.dtype == DType::U8 && class.data.rank() == 1 => {
                        for (dtype, shape, bits) in literal_bytes(eg, node.children[0]) {
                            let s = st.intern(StateKey { class: id, buffer: hbm, sizes: vec![class.data.bytes()], written: false });
                            let how = How::Constant { dtype, shape, bits };
                            if !st.providers[s].iter().any(|p| p.how == how) {
                                st.providers[s].push(Provider { how, inputs: vec![] });
                            }
                        }
                    }
                    // A contiguous run of bytes of a value in HBM is a view of it.
                    Op::Slice(ranges) if class.data.dtype == DType::U8 && class.data.rank() == 1 => {
                        let (lo, hi, stride) = ranges[0];
                        let whole = eg[node.children[0]].data.bytes();
                        if stride != 1 || hi - lo >= whole {
                            continue;
                        }
                        let from = StateKey { class: eg.find(node.children[0]), buffer: hbm, sizes: vec![whole], written: false };
                        let from = st.intern(from);
                        let s = st.intern(StateKey { class: id, buffer: hbm, sizes: vec![hi - lo], written: false });
                        st.providers[s].push(Provider { how: How::View { offset: vec![lo], size: vec![hi - lo] }, inputs: vec![from] });
                    }
                    // Byte strings end to end in HBM (a concatenation), or overlaid at their
                    // starts (an overlay): each written in place.
                    Op::Concatenate(0) | Op::Overlay { dim: 0, .. }
                        if class.data.dtype == DType::U8 && class.data.rank() == 1 && node.children.len() > 1 =>
                    {
                        let mut inputs = Vec::new();
                        for &child in &node.children {
                            let key =
                                StateKey { class: eg.find(child), buffer: hbm, sizes: vec![eg[child].data.bytes()], written: true };
                            inputs.push(st.intern(key));
                        }
                        let s = st.intern(StateKey { class: id, buffer: hbm, sizes: vec![class.data.bytes()], written: false });
                        let how = match &node.op {
                            Op::Overlay { starts, .. } => How::Overlay { starts: starts.clone() },
                            _ => How::Concat,
                        };
                        st.providers[s].push(Provider { how, inputs });
                    }
                    Op::Pii { instr, comp } => {
                        let ins = &isa.instructions[*instr];
                        let env = ins.comp_env(comp);
                        let sized = |slice| {
                            isa_match::slice_sizes(isa, slice, &env)
                                .ok_or_else(|| format!("instruction {} has a slice that does not fit", ins.name))
                        };
                        let out_slice = &ins.outputs[0];
                        let out = StateKey {
                            class: id,
                            buffer: isa.buffer_index(&out_slice.buffer).expect("checked table"),
                            sizes: sized(out_slice)?,
                            written: false,
                        };
                        let mut inputs = Vec::new();
                        for (slice, &child) in ins.inputs.iter().zip(&node.children) {
                            let key = StateKey {
                                class: eg.find(child),
                                buffer: isa.buffer_index(&slice.buffer).expect("checked table"),
                                sizes: sized(slice)?,
                                written: false,
                            };
                            inputs.push(st.intern(key));
                        }
                        let s = st.intern(out);
                        st.providers[s].push(Provider { how: How::Instr { instr: *instr, comp: comp.clone() }, inputs });
                    }
                    _ => {}
                }
            }
        }
        on_chip(eg, isa, hbm, &mut st);
        let States { index, keys, mut providers } = st;
        // Parts of concatenations are written by instructions: their twins' instructions.
        for s in 0..keys.len() {
            if keys[s].written {
                let twin = StateKey { written: false, ..keys[s].clone() };
                if let Some(&t) = index.get(&twin) {
                    let instrs: Vec<Provider> =
                        providers[t].iter().filter(|p| matches!(p.how, How::Instr { .. })).cloned().collect();
                    providers[s] = instrs;
                }
            }
        }
        let root_key = StateKey { class: eg.find(root), buffer: hbm, sizes: vec![eg[root].data.bytes()], written: false };
        let root = index.get(&root_key).copied();
        let in_place = isa.instructions.iter().map(crate::value::in_place_slots).collect();
        let capacity = isa.buffers.iter().map(|b| b.capacity()).collect();
        let instr_rank = content_order(isa);
        let mut ex =
            Extractor { keys, providers, cost: Vec::new(), alts: Vec::new(), root, hbm, in_place, capacity, instr_rank };
        ex.relax();
        Ok(ex)
    }

    /// The same states with no provider for an on-chip value that takes more than the share
    /// `1 / divisor` of its buffer: the programs whose every value leaves room for others as
    /// large. Where every candidate's values overfill a buffer together (few large tiles, a
    /// whole operand and a gathered result), these are programs of smaller tiles, stored one
    /// at a time.
    pub fn within_buffer_share(mut self, divisor: i64) -> Extractor {
        for (key, providers) in self.keys.iter().zip(&mut self.providers) {
            let Some(capacity) = self.capacity[key.buffer] else { continue };
            if divisor * key.sizes.iter().product::<i64>() > capacity {
                providers.clear();
            }
        }
        self.relax();
        self
    }

    fn provider_cost(&self, p: &Provider) -> u64 {
        let base = match p.how {
            How::Input { .. } | How::Constant { .. } | How::Uninit { .. } => 0,
            How::Instr { .. } => INSTR_COST,
            How::View { .. } | How::Concat | How::Overlay { .. } => 1,
        };
        p.inputs
            .iter()
            .try_fold(base, |acc, &i| (self.cost[i] != INF).then(|| acc.saturating_add(self.cost[i]).min(CAP)))
            .unwrap_or(INF)
    }

    /// Bellman-Ford style: every provider costs at least one per instruction, so costs only
    /// fall and settle after at most one pass per state.
    fn relax(&mut self) {
        let n = self.keys.len();
        self.cost = vec![INF; n];
        for _ in 0..=n {
            let mut changed = false;
            for s in 0..n {
                for p in &self.providers[s] {
                    let c = self.provider_cost(p);
                    if c < self.cost[s] {
                        self.cost[s] = c;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let height = self.capped_heights();
        let provider_height =
            |p: &Provider| p.inputs.iter().map(|&i| height[i]).max().map_or(0, |h| h.saturating_add(1));
        // Among equal costs, instructions in content order (views and inputs first).
        let rank = |p: &Provider| match p.how {
            How::Instr { instr, .. } => self.instr_rank[instr] + 1,
            _ => 0,
        };
        self.alts = (0..n)
            .map(|s| {
                let mut v: Vec<(u64, usize, usize, usize)> = self.providers[s]
                    .iter()
                    .enumerate()
                    .map(|(k, p)| {
                        let c = self.provider_cost(p);
                        (c, if c == CAP { provider_height(p) } else { 0 }, rank(p), k)
                    })
                    .filter(|(c, ..)| *c != INF)
                    .collect();
                v.sort();
                v.into_iter().map(|(.., k)| k).collect()
            })
            .collect();
    }

    /// Per state, the least height of a derivation through providers as cheap as the state
    /// (0 for a state given whole, `usize::MAX` for one that cannot be made). Below the cap
    /// every provider costs more than its operands, so the best choices form no cycle; at the
    /// cap costs tie, and ordering the tied providers by height restores that: a state's best
    /// provider then reads only states of smaller height.
    fn capped_heights(&self) -> Vec<usize> {
        let n = self.keys.len();
        if !self.cost.contains(&CAP) {
            // No tie to break: heights are never read.
            return vec![0; n];
        }
        let mut height = vec![usize::MAX; n];
        for _ in 0..=n {
            let mut changed = false;
            for s in 0..n {
                if self.cost[s] == INF {
                    continue;
                }
                for p in &self.providers[s] {
                    if self.provider_cost(p) != self.cost[s] {
                        continue;
                    }
                    let h = p.inputs.iter().map(|&i| height[i]).max().map_or(Some(0), |h| h.checked_add(1));
                    if let Some(h) = h.filter(|&h| h < height[s]) {
                        height[s] = h;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        height
    }

    /// The cheapest way to write the output to HBM, counted as a tree (a value read twice is
    /// counted twice); `None` while nothing writes it.
    pub fn output_cost(&self) -> Option<u64> {
        self.root.map(|r| self.cost[r]).filter(|&c| c != INF)
    }

    /// Whether some state of `class` can be produced (in any buffer).
    pub fn reachable(&self, class: Id) -> bool {
        self.keys.iter().zip(&self.cost).any(|(k, &c)| k.class == class && c != INF)
    }

    /// Whether `class` can be produced by an instruction (not only given as an input).
    pub fn computed(&self, class: Id) -> bool {
        (0..self.keys.len()).any(|s| {
            self.keys[s].class == class
                && self.alts[s].iter().any(|&k| matches!(self.providers[s][k].how, How::Instr { .. }))
        })
    }

    /// A lower bound on the cost of every candidate the e-graph holds (see `bound.rs`), when
    /// a call of instruction `instr` with computational attributes `comp` costs `weight(instr,
    /// comp)` and inputs, literals, views and concatenations cost nothing; `None` when the
    /// output cannot be made or a weight is unknown (`None`) or negative.
    pub fn lower_bound(&self, weight: impl Fn(usize, &[i64]) -> Option<f64>) -> Option<f64> {
        let root = self.root?;
        fn provider<'p>(p: &'p Provider, weight: &impl Fn(usize, &[i64]) -> Option<f64>) -> Option<bound::Provider<'p>> {
            let cost = match &p.how {
                How::Instr { instr, comp } => weight(*instr, comp)?,
                _ => 0.0,
            };
            Some(bound::Provider { cost, inputs: &p.inputs })
        }
        let provider = |p| provider(p, &weight);
        let mut providers = Vec::with_capacity(self.keys.len());
        for s in 0..self.keys.len() {
            providers.push(self.alts[s].iter().map(|&k| provider(&self.providers[s][k])).collect::<Option<Vec<_>>>()?);
        }
        let output =
            self.root_alts(root).iter().map(|&k| provider(&self.providers[root][k])).collect::<Option<Vec<_>>>()?;
        bound::lower_bound(&bound::Derivations { providers, output })
    }

    /// Alternatives of the root state: instructions, or a concatenation whose parts are
    /// written into the output in place (the output needs its own copy, never a view).
    fn root_alts(&self, root: usize) -> Vec<usize> {
        self.alts[root]
            .iter()
            .copied()
            .filter(|&k| matches!(self.providers[root][k].how, How::Instr { .. } | How::Concat | How::Overlay { .. }))
            .collect()
    }

    /// Builds the candidate that makes each choice as `overrides` says (rank among the
    /// alternatives, 0 = best; absent = 0). `None` when the choices form a cycle. Also returns
    /// the choice points the candidate went through, with the state whose alternatives apply.
    fn build(&self, root: usize, overrides: &BTreeMap<Choice, usize>) -> Option<(PiiGraph, Vec<(Choice, usize)>)> {
        self.build_placed(root, overrides).map(|(g, used, _)| (g, used))
    }

    /// [`Extractor::build`], also returning the state each node of the graph makes.
    fn build_placed(&self, root: usize, overrides: &BTreeMap<Choice, usize>) -> Option<Built> {
        struct Walk<'e> {
            ex: &'e Extractor,
            overrides: &'e BTreeMap<Choice, usize>,
            node_of: Vec<Option<usize>>,
            on_stack: Vec<bool>,
            nodes: Vec<PiiNode>,
            state_of: Vec<usize>,
            used: Vec<(Choice, usize)>,
            /// The nodes an instruction already writes in place.
            overwritten: HashSet<usize>,
        }
        impl Walk<'_> {
            /// Emits provider `p` of state `state`; `owner` (a state, or [`OUTPUT`]) when its
            /// operands may each be given an instance of their own, `None` for such an
            /// instance itself.
            fn emit(&mut self, owner: Option<usize>, state: usize, p: &Provider) -> Option<usize> {
                let mut operands = Vec::new();
                for (slot, &i) in p.inputs.iter().enumerate() {
                    let choice = owner.map(|consumer| Choice::Use { consumer, slot });
                    let rank = choice.and_then(|c| self.overrides.get(&c)).copied().unwrap_or(0);
                    let node = if rank == 0 && self.ex.keys[i].written {
                        // A part is written into its concatenation's place: an instance of its
                        // own for each concatenation that has it.
                        let q = &self.ex.providers[i][*self.ex.alts[i].first()?];
                        self.emit(Some(i), i, q)?
                    } else if rank == 0 {
                        self.visit(i)?
                    } else {
                        // A fresh instance of the operand for this use only (a reload, a second
                        // copy), made by provider `rank - 1` (the best one included: a second
                        // load of an input); what it reads is shared as usual.
                        let q = &self.ex.providers[i][*self.ex.alts[i].get(rank - 1)?];
                        if matches!(q.how, How::Input { .. } | How::Constant { .. } | How::Uninit { .. }) {
                            // Kernel inputs and literals are given once.
                            return None;
                        }
                        self.emit(None, i, q)?
                    };
                    let node = match &p.how {
                        How::Instr { instr, .. } if self.ex.in_place[*instr].contains(&slot) && self.overwritten.contains(&node) => {
                            self.fresh_for_overwrite(i).unwrap_or(node)
                        }
                        _ => node,
                    };
                    if let Some(c) = choice {
                        self.used.push((c, i));
                    }
                    operands.push(node);
                }
                if let How::Instr { instr, .. } = &p.how {
                    self.overwritten.extend(self.ex.in_place[*instr].iter().filter_map(|&slot| operands.get(slot)));
                }
                self.nodes.push(match &p.how {
                    How::Input { param, bytes } => PiiNode::Input { param: *param, bytes: *bytes },
                    How::Uninit { bytes } => PiiNode::Uninit { bytes: *bytes },
                    How::Instr { instr, comp } => PiiNode::Instr { instr: *instr, comp: comp.clone(), operands },
                    How::View { offset, size } => {
                        PiiNode::View { of: operands[0], offset: offset.clone(), size: size.clone() }
                    }
                    How::Concat => PiiNode::Concat { parts: operands, dim: 0 },
                    How::Overlay { starts } => PiiNode::Overlay { parts: operands, starts: starts.clone() },
                    How::Constant { dtype, shape, bits } => {
                        PiiNode::Constant { dtype: *dtype, shape: shape.clone(), bits: bits.clone() }
                    }
                });
                self.state_of.push(state);
                Some(self.nodes.len() - 1)
            }

            /// A fresh instance of state `s` by its best provider, for an instruction that
            /// writes it in place where another already does: each writer then has a copy of
            /// its own, the copy's own in-place operands made fresh in turn (a value written
            /// into several places of the output, each through a chain of accumulations that
            /// would otherwise share its start, or its region of HBM whose contents do not
            /// matter). `None` for kernel inputs and literals, which are given once.
            fn fresh_for_overwrite(&mut self, s: usize) -> Option<usize> {
                let q = &self.ex.providers[s][*self.ex.alts[s].first()?];
                if matches!(q.how, How::Input { .. } | How::Constant { .. }) {
                    return None;
                }
                self.emit(None, s, q)
            }

            fn visit(&mut self, s: usize) -> Option<usize> {
                if let Some(n) = self.node_of[s] {
                    return Some(n);
                }
                if self.on_stack[s] {
                    return None;
                }
                self.on_stack[s] = true;
                let rank = self.overrides.get(&Choice::State(s)).copied().unwrap_or(0);
                let p = &self.ex.providers[s][*self.ex.alts[s].get(rank)?];
                let n = self.emit(Some(s), s, p)?;
                self.used.push((Choice::State(s), s));
                self.on_stack[s] = false;
                self.node_of[s] = Some(n);
                Some(n)
            }

            /// The output is written by an instruction of its own, even when its value is
            /// also available elsewhere (an input the kernel returns unchanged): its state may
            /// appear again below it as an ordinary operand.
            fn output(&mut self, root: usize) -> Option<usize> {
                let rank = self.overrides.get(&Choice::Output).copied().unwrap_or(0);
                let p = &self.ex.providers[root][*self.ex.root_alts(root).get(rank)?];
                let n = self.emit(Some(OUTPUT), root, p)?;
                self.used.push((Choice::Output, root));
                Some(n)
            }
        }
        let n = self.keys.len();
        let mut walk = Walk {
            ex: self,
            overrides,
            node_of: vec![None; n],
            on_stack: vec![false; n],
            nodes: Vec::new(),
            state_of: Vec::new(),
            used: Vec::new(),
            overwritten: HashSet::new(),
        };
        let r = walk.output(root)?;
        Some((PiiGraph { nodes: walk.nodes, root: r }, walk.used, walk.state_of))
    }

    /// Whether the operands of each instruction of `g` fit their buffers together (`state_of`:
    /// the state each node makes). All of an instruction's operand storage is live while it
    /// runs, whatever the order (a view or a concatenation holds on to what it names), so a
    /// candidate where some instruction's does not fit can never be placed: reading a 96-row
    /// operand whole beside a 64-row one in QKV's 128-row `d1`.
    fn operands_fit(&self, g: &PiiGraph, state_of: &[usize]) -> bool {
        let mut storage: Vec<Vec<usize>> = Vec::with_capacity(g.nodes.len());
        for (n, node) in g.nodes.iter().enumerate() {
            let named = if node.is_identity() {
                let mut all: Vec<usize> = node.operands().iter().flat_map(|&o| storage[o].iter().copied()).collect();
                all.sort_unstable();
                all.dedup();
                all
            } else {
                vec![n]
            };
            storage.push(named);
        }
        let mut used = vec![0i64; self.capacity.len()];
        g.nodes.iter().all(|node| {
            let PiiNode::Instr { operands, .. } = node else { return true };
            let mut read: Vec<usize> = operands.iter().flat_map(|&o| storage[o].iter().copied()).collect();
            read.sort_unstable();
            read.dedup();
            used.iter_mut().for_each(|u| *u = 0);
            for v in read {
                let key = &self.keys[state_of[v]];
                used[key.buffer] += key.sizes.iter().product::<i64>();
            }
            used.iter().zip(&self.capacity).all(|(u, c)| c.is_none_or(|c| *u <= c))
        })
    }

    /// Up to `max` distinct candidates, best first (DAG instruction count, then discovery
    /// order); at most `budget` candidate graphs are built while searching (fewer for a large
    /// program: see [`BUILD_WORK`]). Up to half of the
    /// places go to spilling variants of the best candidate (see [`Extractor::spill_plans`]),
    /// so that a kernel whose values do not fit on chip together still has candidates that fit.
    pub fn candidates(&self, max: usize, budget: usize) -> Result<Vec<PiiGraph>, ExtractFailure> {
        let root = self.root.filter(|&r| !self.root_alts(r).is_empty()).ok_or(ExtractFailure::RootUnreachable)?;
        let mut heap: BinaryHeap<Reverse<(usize, usize)>> = BinaryHeap::new();
        let mut pending: Vec<Pending> = Vec::new();
        let mut tried: BTreeSet<Vec<(Choice, usize)>> = BTreeSet::new();
        let mut seen: HashSet<PiiGraph> = HashSet::new();
        let mut out: Vec<(usize, usize, PiiGraph)> = Vec::new();
        // Candidates that can never be placed are offered only when there is nothing else, so
        // that the refusal says the kernel does not fit.
        let mut unplaceable: Vec<(usize, usize, PiiGraph)> = Vec::new();
        let mut built = 0usize;
        let start = BTreeMap::new();
        tried.insert(Vec::new());
        let (g, used, states) =
            self.build_placed(root, &start).expect("best choices are acyclic: each operand costs strictly less than its user");
        let fits = self.operands_fit(&g, &states);
        built += 1;
        // Spilling variants of the best candidate get up to half of the places: first those of
        // the best candidate without views and concatenations on chip (which keep values on
        // chip longer: a whole operand read in tiles, results gathered for one store), then
        // those of the best.
        let mut plans: Vec<BTreeMap<Choice, usize>> = Vec::new();
        if let Some(plain) = self.without_on_chip_identities(root) {
            if let Some((_, plain_used)) = self.build(root, &plain) {
                plans.push(plain.clone());
                plans.extend(self.spill_plans(root, &plain_used, &plain, 1));
            }
        }
        let views = self.with_on_chip_views(root);
        if let Some(views) = &views {
            if let Some((_, views_used)) = self.build(root, views) {
                plans.extend(self.spill_plans(root, &views_used, views, 1));
            }
        }
        // Each plan is a whole graph to build: a program of thousands of instructions tries
        // fewer of them (one per value would cost time quadratic in its length).
        let attempts = BUILD_WORK / g.nodes.len().max(1);
        plans.extend(self.spill_plans(root, &used, &BTreeMap::new(), attempts.max(1)));
        let mut spilled: Vec<(PiiGraph, PiiGraph)> = Vec::new();
        // Programs told apart as the enumeration tells them apart (below).
        let mut keys: HashSet<PiiGraph> = HashSet::from([self.program(&g, &states)]);
        let budget = budget.min(attempts.max(max));
        for plan in plans.into_iter().take(attempts.max(1)) {
            if spilled.len() >= max / 2 {
                break;
            }
            if let Some((s, _, states)) = self.build_placed(root, &plan) {
                let key = self.program(&s, &states);
                if !keys.contains(&key) && self.overwrites_once(&s) && self.operands_fit(&s, &states) {
                    keys.insert(key.clone());
                    spilled.push((s, key));
                }
            }
        }
        let max = max - spilled.len();
        heap.push(Reverse((g.instruction_count(), 0)));
        pending.push((start, g, used, fits, states));
        if let Some(views) = views {
            let key: Vec<(Choice, usize)> = views.iter().map(|(a, b)| (*a, *b)).collect();
            if self.queue(root, views, &mut heap, &mut pending) {
                built += 1;
                tried.insert(key);
            }
        }
        while let Some(Reverse((count, seq))) = heap.pop() {
            if out.len() >= max {
                break;
            }
            let (overrides, graph, used, fits, states) = pending[seq].clone();
            if self.overwrites_once(&graph) && seen.insert(self.program(&graph, &states)) {
                if fits {
                    out.push((count, seq, graph));
                } else if unplaceable.len() < max {
                    unplaceable.push((count, seq, graph));
                }
            }
            for &(choice, s) in &used {
                let rank = overrides.get(&choice).copied().unwrap_or(0) + 1;
                let available = match choice {
                    Choice::Output => self.root_alts(root).len(),
                    Choice::State(_) => self.alts[s].len(),
                    // Shared, or a fresh instance by any provider.
                    Choice::Use { .. } => self.alts[s].len() + 1,
                };
                if rank >= available || built >= budget {
                    continue;
                }
                let mut next = overrides.clone();
                next.insert(choice, rank);
                if !tried.insert(next.iter().map(|(a, b)| (*a, *b)).collect()) {
                    continue;
                }
                built += 1;
                self.queue(root, next.clone(), &mut heap, &mut pending);
                // The same alternative for every state of the candidate that has one: a
                // provider whose operands are shared pays off only once every state takes it
                // (a row bias broadcast in HBM by 16 stores, then read a tile at a time, saves
                // instructions only when every bias tile is read from it), so one choice at a
                // time sees each step cost more and never gets there.
                let Some(group) = self.same_alternative_everywhere(choice, s, rank, &next, &used) else { continue };
                if built >= budget || !tried.insert(group.iter().map(|(a, b)| (*a, *b)).collect()) {
                    continue;
                }
                built += 1;
                self.queue(root, group, &mut heap, &mut pending);
            }
        }
        // Spilling variants the enumeration did not reach come after its candidates of the
        // same size.
        let next = pending.len();
        for (k, (g, key)) in spilled.into_iter().enumerate() {
            if seen.insert(key) {
                out.push((g.instruction_count(), next + k, g));
            }
        }
        if out.is_empty() {
            out = unplaceable;
        }
        out.sort_by_key(|(count, seq, _)| (*count, *seq));
        Ok(out.into_iter().map(|(_, _, g)| g).collect())
    }

    /// Builds the candidate `overrides` choose and queues it by its instruction count; false
    /// when its choices build no graph.
    fn queue(
        &self,
        root: usize,
        overrides: BTreeMap<Choice, usize>,
        heap: &mut BinaryHeap<Reverse<(usize, usize)>>,
        pending: &mut Vec<Pending>,
    ) -> bool {
        let Some((g, u, states)) = self.build_placed(root, &overrides) else { return false };
        heap.push(Reverse((g.instruction_count(), pending.len())));
        let fits = self.operands_fit(&g, &states);
        pending.push((overrides, g, u, fits, states));
        true
    }

    /// `g` as the program it runs, by which candidates are told apart: a view repeated or
    /// one of all of the value it views (a reshape held where the value lies) is one region
    /// under two names, placed at the same addresses, so the assembly is the same. `states`
    /// gives the state each node makes.
    fn program(&self, g: &PiiGraph, states: &[usize]) -> PiiGraph {
        g.as_program(|n| match &g.nodes[n] {
            PiiNode::View { of, offset, size } => {
                offset.iter().all(|&o| o == 0) && *size == self.keys[states[*of]].sizes
            }
            _ => false,
        })
    }

    /// The instruction of alternative `rank` of state `s`, if it is one.
    fn alternative_instr(&self, s: usize, rank: usize) -> Option<usize> {
        match self.providers[s][*self.alts[s].get(rank)?].how {
            How::Instr { instr, .. } => Some(instr),
            _ => None,
        }
    }

    /// `next` (which gives state `s` at choice `choice` its alternative `rank`) with every other
    /// state of `used` that has an alternative by the same instruction given its first such;
    /// `None` when no state without an override yet gains one.
    fn same_alternative_everywhere(
        &self,
        choice: Choice,
        s: usize,
        rank: usize,
        next: &BTreeMap<Choice, usize>,
        used: &[(Choice, usize)],
    ) -> Option<BTreeMap<Choice, usize>> {
        if !matches!(choice, Choice::State(_)) {
            return None;
        }
        let instr = self.alternative_instr(s, rank)?;
        let mut group = next.clone();
        for &(other, t) in used {
            if !matches!(other, Choice::State(_)) || other == choice {
                continue;
            }
            if let Some(r) = (1..self.alts[t].len()).find(|&r| self.alternative_instr(t, r) == Some(instr)) {
                if self.alternative_instr(t, 0) != Some(instr) {
                    group.insert(other, r);
                }
            }
        }
        (group.len() > next.len()).then_some(group)
    }

    /// Whether no value of `g` is overwritten in place by two instructions (a fresh instance
    /// of an in-place writer would read the same instance as the shared one), and none that
    /// shares its storage with a view or a concatenation (the other names would change).
    fn overwrites_once(&self, g: &PiiGraph) -> bool {
        let mut written = vec![false; g.nodes.len()];
        let readers = g.readers();
        for (n, node) in g.nodes.iter().enumerate() {
            let PiiNode::Instr { instr, operands, .. } = node else { continue };
            for &slot in &self.in_place[*instr] {
                let Some(&op) = operands.get(slot) else { continue };
                if std::mem::replace(&mut written[op], true) || !g.may_overwrite(&readers, op, n) {
                    return false;
                }
            }
        }
        true
    }

    /// Spilling variants of the candidate that made the choices `used`: for a value held on
    /// chip, every reader gets a fresh reload of its own (a load from HBM: of a kernel input or
    /// a literal as it is, of a computed value after one store, which is then the shared
    /// instance's only reader), so that the value need not stay on chip between its making
    /// and its uses. First a plan with every such value spilled (its schedule needs little
    /// more than the operands of one instruction on chip at a time), then one per value: at
    /// most `limit` in all, each on top of the choices `base` (built only as far as taken: a
    /// copy of a large `base` per value of a long program grew quadratically).
    fn spill_plans(
        &self,
        root: usize,
        used: &[(Choice, usize)],
        base: &BTreeMap<Choice, usize>,
        limit: usize,
    ) -> Vec<BTreeMap<Choice, usize>> {
        let reloads = self.reloads(used);
        let mut plans: Vec<BTreeMap<Choice, usize>> = Vec::new();
        if reloads.len() > 1 && limit > 0 {
            // Every value's reloads on top of `base`, a later value's choice over an earlier
            // one's, and a choice of `base` over all but the last value's.
            let mut all: BTreeMap<Choice, usize> = reloads.iter().flatten().map(|(c, r)| (*c, *r)).collect();
            let last = reloads.last().expect("more than one");
            all.extend(base.iter().filter(|(c, _)| !last.contains_key(c)).map(|(c, r)| (*c, *r)));
            plans.push(self.spill_everything(root, all));
        }
        for plan in reloads {
            if plans.len() >= limit {
                break;
            }
            let mut with_base = base.clone();
            with_base.extend(plan);
            plans.push(with_base);
        }
        plans
    }

    /// Choices that read every state on chip that is a view of another as that view, where the
    /// best choices compute it (grown over a few rounds; stopped before a round whose choices
    /// would form a cycle); `None` when that changes nothing. Costs count a value shared by
    /// several readers once per reader, so the best choices can compute each row of a tile
    /// apart (one product per row, to store a result row by row) where viewing the rows of
    /// the one tile product, whose cost is then shared, runs fewer instructions.
    fn with_on_chip_views(&self, root: usize) -> Option<BTreeMap<Choice, usize>> {
        const ROUNDS: usize = 16;
        let view = |s: usize, k: usize| self.keys[s].buffer != self.hbm && matches!(self.providers[s][k].how, How::View { .. });
        let mut plan: BTreeMap<Choice, usize> = BTreeMap::new();
        for _ in 0..ROUNDS {
            let Some((_, used)) = self.build(root, &plan) else { break };
            let mut grown = plan.clone();
            for (choice, s) in used {
                let Choice::State(_) = choice else { continue };
                let rank = plan.get(&choice).copied().unwrap_or(0);
                if view(s, self.alts[s][rank]) {
                    continue;
                }
                if let Some(r) = self.alts[s].iter().position(|&k| view(s, k)) {
                    grown.insert(choice, r);
                }
            }
            if grown == plan || self.build(root, &grown).is_none() {
                break;
            }
            plan = grown;
        }
        (!plan.is_empty()).then_some(plan)
    }

    /// Choices that make every state on chip that an instruction can make by an instruction
    /// rather than as a view or a concatenation (grown over a few rounds: a new choice reaches
    /// new states), with the output written the way that leaves the fewest concatenations on
    /// chip (parts stored one by one rather than gathered for one store); `None` when that
    /// changes nothing.
    fn without_on_chip_identities(&self, root: usize) -> Option<BTreeMap<Choice, usize>> {
        const ROUNDS: usize = 16;
        let on_chip = |s: usize, k: usize, concat_only: bool| {
            self.keys[s].buffer != self.hbm
                && match self.providers[s][k].how {
                    How::Concat => true,
                    How::View { .. } => !concat_only,
                    _ => false,
                }
        };
        let mut best: Option<(usize, BTreeMap<Choice, usize>)> = None;
        for output in 0..self.root_alts(root).len() {
            let mut plan = BTreeMap::from([(Choice::Output, output)]);
            let mut gathered = usize::MAX;
            for _ in 0..ROUNDS {
                let Some((_, used)) = self.build(root, &plan) else { break };
                let mut grown = plan.clone();
                gathered = 0;
                for (choice, s) in used {
                    let Choice::State(_) = choice else { continue };
                    let rank = plan.get(&choice).copied().unwrap_or(0);
                    if !on_chip(s, self.alts[s][rank], false) {
                        continue;
                    }
                    match self.alts[s].iter().position(|&k| !on_chip(s, k, false)) {
                        Some(r) => {
                            grown.insert(choice, r);
                        }
                        None => gathered += usize::from(on_chip(s, self.alts[s][rank], true)),
                    }
                }
                if grown == plan {
                    break;
                }
                plan = grown;
            }
            if best.as_ref().is_none_or(|(g, _)| gathered < *g) {
                best = Some((gathered, plan));
            }
        }
        best.map(|(_, plan)| plan).filter(|plan| plan.len() > 1 || plan.get(&Choice::Output) != Some(&0))
    }

    /// The union of `per_value`, grown to a fixed point: reloads change which instances the
    /// candidate shares (a stored value's reload is read where the shared instance was), so
    /// the readers of the graph it builds are spilled in turn, a bounded number of rounds.
    fn spill_everything(&self, root: usize, mut plan: BTreeMap<Choice, usize>) -> BTreeMap<Choice, usize> {
        const ROUNDS: usize = 8;
        for _ in 0..ROUNDS {
            let Some((_, used)) = self.build(root, &plan) else { break };
            let mut grown = plan.clone();
            for (c, r) in self.reloads(&used).iter().flatten() {
                grown.entry(*c).or_insert(*r);
            }
            if grown.len() == plan.len() || self.build(root, &grown).is_none() {
                break;
            }
            plan = grown;
        }
        plan
    }

    /// For each on-chip value the choices `used` read, the reload of every reader, by the
    /// cheapest provider that reads HBM only (rank + 1: rank 0 of a use is the shared
    /// instance); values without such a provider are left out.
    fn reloads(&self, used: &[(Choice, usize)]) -> Vec<BTreeMap<Choice, usize>> {
        // In order of first use; `at` finds a state's entry without a scan of them all.
        let mut uses: Vec<(usize, Vec<Choice>)> = Vec::new();
        let mut at: BTreeMap<usize, usize> = BTreeMap::new();
        for &(choice, s) in used {
            // The readers that store to HBM (spills, the output) keep reading the shared
            // instance: a reload for them would read what they write.
            let Choice::Use { consumer, .. } = choice else { continue };
            if self.keys[s].buffer == self.hbm || consumer == OUTPUT || self.keys[consumer].buffer == self.hbm {
                continue;
            }
            match at.get(&s) {
                Some(&k) => uses[k].1.push(choice),
                None => {
                    at.insert(s, uses.len());
                    uses.push((s, vec![choice]));
                }
            }
        }
        uses.into_iter()
            .filter_map(|(s, list)| {
                let reload = self.alts[s].iter().position(|&k| {
                    let p = &self.providers[s][k];
                    matches!(p.how, How::Instr { .. }) && p.inputs.iter().all(|&i| self.keys[i].buffer == self.hbm)
                })?;
                Some(list.iter().map(|c| (*c, reload + 1)).collect())
            })
            .collect()
    }
}

/// Adds the identity providers on chip. A state that is a slice of a value some other state
/// holds in the same on-chip buffer, where the slice is a region of that value's storage
/// ([`views::region_of_slice`]), is a view of that state; a state that is a concatenation
/// along dimension 0 whose parts are such regions is a concatenation whose parts their
/// instructions write in place. Which of them an instruction may then overwrite in place is
/// decided per candidate ([`PiiGraph::may_overwrite`]).
fn on_chip(eg: &SelGraph, isa: &Isa, hbm: usize, st: &mut States) {
    let existing = st.keys.len();
    let mut held: BTreeMap<(Id, usize), Vec<usize>> = BTreeMap::new();
    for (s, key) in st.keys.iter().enumerate() {
        if key.buffer != hbm && !key.written {
            held.entry((key.class, key.buffer)).or_default().push(s);
        }
    }
    for s in 0..existing {
        let key = st.keys[s].clone();
        if key.buffer == hbm || key.written {
            continue;
        }
        let buffer = &isa.buffers[key.buffer];
        for node in &eg[key.class].nodes {
            match &node.op {
                Op::Slice(ranges) => {
                    let x = eg.find(node.children[0]);
                    for &t in held.get(&(x, key.buffer)).into_iter().flatten() {
                        let region = views::region_of_slice(&eg[x].data, ranges, &st.keys[t].sizes, buffer);
                        let Some((offset, size)) = region.filter(|(_, size)| t != s && *size == key.sizes) else {
                            continue;
                        };
                        let how = How::View { offset, size };
                        if !st.providers[s].iter().any(|p| p.how == how && p.inputs == [t]) {
                            st.providers[s].push(Provider { how, inputs: vec![t] });
                        }
                    }
                }
                // A value fills its region row-major (see `views.rs`), so a reshape of a value
                // held in a region of the same extents is those same bytes: the whole region.
                // (A transposing move writes `[64, n]` into `n` rows; a store of rows reads it
                // as `[n, 64]`.)
                Op::Reshape => {
                    let x = eg.find(node.children[0]);
                    for &t in held.get(&(x, key.buffer)).into_iter().flatten() {
                        if t == s || st.keys[t].sizes != key.sizes {
                            continue;
                        }
                        let how = How::View { offset: vec![0; key.sizes.len()], size: key.sizes.clone() };
                        if !st.providers[s].iter().any(|p| p.how == how && p.inputs == [t]) {
                            st.providers[s].push(Provider { how, inputs: vec![t] });
                        }
                    }
                }
                Op::Concatenate(0) if node.children.len() > 1 => {
                    let ty = &eg[key.class].data;
                    let mut inputs = Vec::new();
                    let mut at = 0;
                    for &child in &node.children {
                        let rows = eg[child].data.shape[0];
                        let ranges: Vec<(i64, i64, i64)> = ty
                            .shape
                            .iter()
                            .enumerate()
                            .map(|(d, &n)| if d == 0 { (at, at + rows, 1) } else { (0, n, 1) })
                            .collect();
                        at += rows;
                        let Some((_, size)) = views::region_of_slice(ty, &ranges, &key.sizes, buffer) else { break };
                        inputs.push(st.intern(StateKey { class: eg.find(child), buffer: key.buffer, sizes: size, written: true }));
                    }
                    let complete = inputs.len() == node.children.len();
                    if complete && !st.providers[s].iter().any(|p| p.how == How::Concat && p.inputs == inputs) {
                        st.providers[s].push(Provider { how: How::Concat, inputs });
                    }
                }
                _ => {}
            }
        }
    }
}

