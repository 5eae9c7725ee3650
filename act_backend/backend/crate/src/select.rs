//! Instruction selection, start to end: the kernel's e-graph is grown by alternating one pass
//! of IR-to-IR rewrites with one pass of IR-to-ISA matching until nothing changes or a limit
//! is reached, then candidate PII graphs are extracted. Limits count iterations and e-nodes,
//! never time, so the same kernel and ISA always give the same candidates.
//!
//! The loop is ours rather than egg's `Runner`: rules read attributes of the nodes they match
//! and of their operands' nodes, which egg's substitutions cannot carry, and ISA matching runs
//! between rewrite passes. egg provides the e-graph itself (hash-consing, union-find,
//! rebuilding, the type analysis).

use crate::backoff::Backoff;
use crate::changes::Changes;
use crate::egraph::{self, KernelGraph, SelGraph};
use crate::extract::{ExtractFailure, Extractor};
use crate::isa::{Instruction, Isa, TableError};
use crate::isa_match::{self, Patterns};
use crate::kernel::Kernel;
use crate::lang::{Op, OpCode, Ty};
use crate::pii::PiiGraph;
use crate::provenance::{Origin, Tracer};
use crate::rewrites::{self, RuleSet};
use egg::Id;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Instant;

/// E-nodes the search of a tiled kernel grows to per tile (see `tiling::Extents::tile_count`)
/// beyond [`TILED_BASE_NODES`] (past [`SelectLimits::node_limit`] only while no program
/// computes the kernel yet), and on to twice that, up to [`MAX_TILED_NODES`], while none
/// does: `relu(A.B)` at 128x128 over a 32-deep contraction on a 16x16 array (128 tiles)
/// saturates near 57,000 e-nodes; a 128x128x128 int8 product (512 tiles) has its best
/// program at 72,000; with a row bias and a requantization it is first computed at 226,000.
pub const NODES_PER_TILE: usize = 150;

/// How many times [`NODES_PER_TILE`] a tile is given on an ISA that reads windows of HBM a row
/// at a time (no strided loads: `rewrites::RuleSet::strided_reads`), where each tile's window
/// is up to 16 rows read apart. Measured on 30 int8 kernels of 48x48 values on the public ACT
/// Gemmini spec (every search stopping at its node limit): 12 compile at 1x, 16 at 8x (each
/// within 10 s and 0.6 GB), 17 at 16x (up to 0.9 GB).
pub const ROW_BY_ROW_TILE_FACTOR: usize = 8;

/// Iterations in a row without a cheaper program for the output after which a large search
/// stops ([`SelectLimits::patience`]). The cost compared is the extractor's tree cost of the
/// output (instructions, shared values counted per reader). On a tiled kernel rewrites go on
/// multiplying the e-graph per tile long after its program is there: a 128^3 int8 product on
/// Gemmini has its 592-instruction program at the 4th of 6 iterations (32,000 e-nodes; 2.4 s
/// to the node limit at 86,000, 1.0 s when it settles at the 5th).
pub const PATIENCE: usize = 1;

/// E-nodes from which a search may settle ([`SelectLimits::settle_nodes`]). Smaller searches
/// saturate cheaply, and their late iterations find programs the tree cost does not foresee:
/// of 100 random Gemmini layer kernels (`gemmini_campaign.py --seed 2`, all under 13,000
/// e-nodes), 10 ran 2 to 30 more instructions when stopped at the first iteration without a
/// cheaper output, 6 with a patience of 2; from 20,000 e-nodes none changed.
pub const SETTLE_NODES: usize = 20_000;

/// Rewrites one rule may find in an iteration of a search of [`SETTLE_NODES`] e-nodes or more
/// before it is held back (`backoff.rs`), in the second search of a kernel whose first one
/// stopped at its node limit without a program. Holding rules back in every search would cost
/// others: a 64x64 layered int8 kernel on Gemmini needs its row and column slices moved through
/// every operation (20,000 an iteration) and was refused with them held back.
/// On the public ACT Gemmini spec, most kernels of 32x32 int8 values read row by row that
/// were refused at their node limit compile this way (README, "Tiling").
pub const RULE_MATCH_LIMIT: usize = 4_000;

/// A tiled kernel's rules find rewrites per tile (each tile's slice moved through the
/// operation it splits): the limit of [`RULE_MATCH_LIMIT`] is raised to this many per tile of
/// the kernel. A 256^3 int8 product on Gemmini (4,098 tiles) moves 32,000 column slices in one
/// iteration, all of which its program needs.
pub const RULE_MATCHES_PER_TILE: usize = 16;

/// The e-nodes a tiled kernel's search may grow to before its tiles are counted.
pub const TILED_BASE_NODES: usize = 40_000;

/// The most e-nodes a tiled kernel's search may grow to (memory: about 3 KiB each).
pub const MAX_TILED_NODES: usize = 1_000_000;

/// Budgets of the search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectLimits {
    /// Rewrite-and-match iterations.
    pub iter_limit: usize,
    /// E-nodes after which no further iteration starts.
    pub node_limit: usize,
    /// Candidates returned at most.
    pub max_candidates: usize,
    /// Iterations in a row that find no cheaper program for the output, once one computes it,
    /// after which a search of at least [`SelectLimits::settle_nodes`] e-nodes stops
    /// ([`StopReason::Settled`]).
    pub patience: usize,
    /// E-nodes from which a search may settle.
    pub settle_nodes: usize,
}

impl Default for SelectLimits {
    fn default() -> Self {
        SelectLimits { iter_limit: 32, node_limit: 50_000, max_candidates: 16, patience: PATIENCE, settle_nodes: SETTLE_NODES }
    }
}

/// Why the rewrite-and-match loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A pass of rewrites and matching added nothing.
    Saturated,
    IterationLimit,
    NodeLimit,
    /// The output was computed, the e-graph held [`SelectLimits::settle_nodes`] e-nodes, and
    /// [`SelectLimits::patience`] iterations in a row found no cheaper program for it.
    Settled,
}

impl StopReason {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Saturated => "saturated",
            StopReason::IterationLimit => "iteration limit",
            StopReason::NodeLimit => "node limit",
            StopReason::Settled => "settled",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the search did (for reports; nothing here decides the result but the counts).
#[derive(Debug, Clone)]
pub struct SelectStats {
    pub egraph_nodes: usize,
    pub egraph_classes: usize,
    pub iterations: usize,
    pub stop_reason: StopReason,
    pub rewrite_ms: f64,
    pub match_ms: f64,
    pub extract_ms: f64,
    /// No candidate costs less than this under the table's instruction costs (the default
    /// cost model; see `bound.rs`); `None` when no bound is known.
    pub lower_bound: Option<f64>,
    /// Whether the search that found the candidates held back the rules that match thousands
    /// of times an iteration (`backoff.rs`): a second search, after the first stopped at its
    /// node limit without a program.
    pub rules_held_back: bool,
}

#[derive(Debug, Clone)]
pub struct Selection {
    /// Distinct candidates, best first.
    pub candidates: Vec<PiiGraph>,
    /// Per candidate, the kernel instructions each of its nodes stands for.
    pub origins: Vec<Vec<Origin>>,
    pub stats: SelectStats,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectError {
    /// No candidate computes the kernel; `op` is the first kernel operation (program order)
    /// that has no implementation, `line` its line, `message` the whole explanation.
    NoInstruction { file: String, line: usize, op: String, message: String },
    /// The ISA table cannot be used.
    BadTable(TableError),
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectError::NoInstruction { file, line, message, .. } => write!(f, "{file}:{line}: {message}"),
            SelectError::BadTable(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SelectError {}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Grows the e-graph of `kernel` under the rewrites and the ISA's patterns.
pub fn saturate(kernel: &Kernel, isa: &Isa, patterns: &Patterns, limits: &SelectLimits) -> (KernelGraph, SelectStats) {
    search(kernel, isa, patterns, limits, Mode::default())
}

/// The rewrite rules a search for `isa` runs (`patterns` compiled from it).
pub fn rules_for(isa: &Isa, patterns: &Patterns) -> RuleSet {
    let mut rules = RuleSet::for_ops(&patterns.ops).with_tiles_of(isa).with_dot_forms_of(isa).with_identities_of(isa);
    rules.precision = crate::precision::Widenings::of(isa);
    rules
}

/// How many tiles the split rules make of `kernel`'s operations on `isa`: the scale of the
/// search it needs (see `tiling::Extents::tile_count`).
pub fn tile_count(kernel: &Kernel, isa: &Isa, patterns: &Patterns) -> usize {
    rules_for(isa, patterns).tiles.tile_count(kernel)
}

/// The most rows one instruction computes of `kernel`'s (first) result on `isa`: of its
/// operation's last two dimensions, the largest leading extent its semantics give (1 where
/// none computes it, or where no instruction writes HBM by strided stores). A block of the
/// result's columns is written in place into at most that many rows (`partition::plan`).
pub fn result_tile_rows(kernel: &Kernel, isa: &Isa, patterns: &Patterns) -> i64 {
    let rules = rules_for(isa, patterns);
    // Parts of columns are written by strided stores.
    let Some(result) = kernel.results.first().map(|&r| &kernel.nodes[r]).filter(|_| rules.strided_writes) else { return 1 };
    let rank = result.ty.rank();
    let item = result.ty.with_shape(result.ty.shape[rank.saturating_sub(2)..].to_vec());
    crate::tiling::opcode(&result.op).and_then(|code| rules.tiles.leading_extent(code, &item)).unwrap_or(1)
}

/// The most tiles one search of a kernel on `isa` is given before the kernel is compiled in
/// blocks (`partition.rs`): [`crate::partition::MAX_BLOCK_TILES`], or on an ISA that reads
/// windows a row at a time, whose tiles each grow [`ROW_BY_ROW_TILE_FACTOR`] times the
/// e-nodes, that many times fewer (a 256^3 int8 product on the Contiguous test accelerator in
/// two blocks of 2,048 tiles took 42 s and 3.6 GB).
pub fn block_tiles(isa: &Isa, patterns: &Patterns) -> usize {
    let most = crate::partition::MAX_BLOCK_TILES;
    if rules_for(isa, patterns).strided_reads {
        most
    } else {
        most / ROW_BY_ROW_TILE_FACTOR
    }
}

/// How many times more e-nodes than the largest search ([`MAX_TILED_NODES`]) a kernel's tiles
/// may need for it to be searched whole at all: a 512^3 int8 product on Gemmini (32,768
/// tiles, about 5 million e-nodes as counted) compiles whole in 35 s, a 1024^3 one (262,144)
/// was refused at its node limit after 100 s and 7.6 GB, a batch of two of those ran past
/// 200 s and 14.6 GB.
pub const SEARCH_OVERREACH: usize = 16;

/// The most tiles a kernel that does not split into blocks is searched with on `isa`, and the
/// e-nodes a tile is counted: past that many tiles, they need more than
/// [`SEARCH_OVERREACH`] times the largest search.
pub fn most_tiles_searched(isa: &Isa, patterns: &Patterns) -> (usize, usize) {
    let per_tile = nodes_per_tile(&rules_for(isa, patterns));
    (MAX_TILED_NODES * SEARCH_OVERREACH / per_tile, per_tile)
}

/// The e-nodes a search is given per tile under `rules`: [`NODES_PER_TILE`], times
/// [`ROW_BY_ROW_TILE_FACTOR`] on an ISA that reads windows a row at a time.
fn nodes_per_tile(rules: &RuleSet) -> usize {
    if rules.strided_reads { NODES_PER_TILE } else { NODES_PER_TILE * ROW_BY_ROW_TILE_FACTOR }
}

/// The e-graph a search of `kernel` starts from: its operations, the HBM paths its values may
/// spill through (where the ISA both loads and stores), the rows of results that compute
/// nothing ([`egraph::add_row_views_of_results`]), and what the rules add once (identity
/// paths for its values, its windows one dimension at a time, the rows of a product with a
/// transposed operand, and transposes computed by products, where nothing transposes).
pub fn initial_graph(kernel: &Kernel, isa: &Isa, rules: &RuleSet) -> KernelGraph {
    let mut kg = egraph::build(kernel);
    let hbm = |slice: &crate::isa::Slice| isa.buffer(&slice.buffer).is_hbm();
    let stores = isa.instructions.iter().any(|i| i.outputs.iter().any(hbm) && !i.inputs.iter().any(hbm));
    let loads = isa.instructions.iter().any(|i| i.inputs.iter().any(hbm) && !i.outputs.iter().any(hbm));
    if stores && loads {
        egraph::add_spill_paths(&mut kg, kernel);
    }
    egraph::add_row_views_of_results(&mut kg, kernel, isa);
    let eg = &mut kg.egraph;
    rewrites::apply(eg, &rewrites::pass_through(eg, rules, kernel, &kg.node_class));
    rewrites::apply(eg, &rewrites::kernel_windows(eg, kernel, &kg.node_class));
    rewrites::apply(eg, &rewrites::rows_as_matrix_vector_products(eg, kernel, &kg.node_class, rules));
    rewrites::apply(eg, &rewrites::transposes_by_products(eg, kernel, &kg.node_class, rules));
    kg
}

/// How a search runs: the first one runs every rule and extracts any program.
#[derive(Debug, Clone, Copy, Default)]
struct Mode {
    /// Rules that match thousands of times an iteration are held back (a second search).
    hold_back: bool,
    /// Above 1: rows are also split into tiles of the largest size divided by this, and
    /// extraction keeps every on-chip value within that share of its buffer
    /// ([`select_narrow`]).
    narrow: i64,
}

/// [`saturate`], holding back the rules that match too often in a [`Mode::hold_back`] search
/// (see [`RULE_MATCH_LIMIT`]).
fn search(kernel: &Kernel, isa: &Isa, patterns: &Patterns, limits: &SelectLimits, mode: Mode) -> (KernelGraph, SelectStats) {
    let hold_back = mode.hold_back;
    let mut rules = rules_for(isa, patterns);
    rules.tile_divisor = mode.narrow.max(1);
    let mut kg = initial_graph(kernel, isa, &rules);
    let mut stats = SelectStats {
        egraph_nodes: 0,
        egraph_classes: 0,
        iterations: 0,
        stop_reason: StopReason::Saturated,
        rewrite_ms: 0.0,
        match_ms: 0.0,
        extract_ms: 0.0,
        lower_bound: None,
        rules_held_back: hold_back,
    };
    // A tiled kernel needs room for every tile: the limit grows with their number.
    let tiles = rules.tiles.tile_count(kernel);
    let per_tile = nodes_per_tile(&rules);
    let tiled = TILED_BASE_NODES.saturating_add(tiles.saturating_mul(per_tile)).min(MAX_TILED_NODES);
    let node_limit = limits.node_limit.max(tiled);
    let hard_limit = if tiles == 0 { node_limit } else { node_limit.saturating_mul(2).min(MAX_TILED_NODES) };
    let trace = std::env::var_os("ACT_TRACE_SEARCH").is_some();
    let eg = &mut kg.egraph;
    // Each pass visits only the classes at or above a change since it last ran.
    let (mut rule_changes, mut match_changes) = (Changes::new(), Changes::new());
    // The cheapest output found so far, and the iterations since it last fell.
    let (mut best, mut stale): (Option<u64>, usize) = (None, 0);
    let mut backoff = hold_back
        .then(|| Backoff::new(RULE_MATCH_LIMIT.max(tiles.saturating_mul(RULE_MATCHES_PER_TILE)), limits.settle_nodes));
    stats.stop_reason = loop {
        if stats.iterations >= limits.iter_limit {
            break StopReason::IterationLimit;
        }
        stats.iterations += 1;
        let t = Instant::now();
        let mut found = rewrites::search_classes(eg, &rules, &rule_changes.since_last(eg));
        let nodes = eg.total_number_of_nodes();
        let targets: Vec<Id> = if backoff.is_some() { found.iter().map(|r| r.class).collect() } else { Vec::new() };
        let held_back = backoff.as_mut().is_some_and(|b| b.filter(stats.iterations, nodes, &mut found));
        if held_back {
            // What was dropped is found again once its rule runs again.
            rule_changes.revisit(targets);
        }
        if trace {
            trace_rules(stats.iterations, nodes, &found);
        }
        let rewrote = rewrites::apply(eg, &found);
        stats.rewrite_ms += ms(t);
        let t = Instant::now();
        let matches = isa_match::find_in(eg, isa, patterns, &match_changes.since_last(eg));
        let matched = isa_match::apply(eg, &matches);
        stats.match_ms += ms(t);
        if !rewrote && !matched && !held_back {
            break StopReason::Saturated;
        }
        let nodes = eg.total_number_of_nodes();
        if nodes >= hard_limit {
            break StopReason::NodeLimit;
        }
        let root = eg.find(kg.root);
        let Ok(ex) = Extractor::new(eg, isa, root) else { continue };
        match ex.output_cost() {
            Some(cost) if best.is_none_or(|b| cost < b) => (best, stale) = (Some(cost), 0),
            Some(_) => {
                stale += 1;
                if stale >= limits.patience && nodes >= limits.settle_nodes {
                    break StopReason::Settled;
                }
            }
            None => {}
        }
        // Past the ordinary limit a tiled kernel grows on only while nothing computes it;
        // past its own limit too, up to twice that (a bias and a requantization on a 128^3
        // product add rules' work per tile: it is first computed at 226,000 e-nodes).
        if nodes >= limits.node_limit && ex.reachable(root) {
            break StopReason::NodeLimit;
        }
    };
    stats.egraph_nodes = eg.total_number_of_nodes();
    stats.egraph_classes = eg.number_of_classes();
    (kg, stats)
}

/// With `ACT_TRACE_SEARCH` set, each iteration's e-graph size and the rules that found the
/// most rewrites, on stderr: where a search that reaches its node limit spends its nodes.
fn trace_rules(iteration: usize, nodes: usize, found: &[rewrites::Rewrite]) {
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for r in found {
        *counts.entry(r.rule).or_default() += 1;
    }
    let mut top: Vec<(&'static str, usize)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let top: Vec<String> = top.iter().take(8).map(|(r, n)| format!("{r} {n}")).collect();
    eprintln!("search: iteration {iteration}, {nodes} e-nodes, {} rewrites: {}", found.len(), top.join(", "));
}

/// Selects instructions of `isa` for `kernel`: distinct candidate PII graphs, best first.
/// Compiles the table's patterns first; [`select_with`] takes them compiled.
pub fn select(kernel: &Kernel, isa: &Isa, limits: &SelectLimits) -> Result<Selection, SelectError> {
    let patterns = Patterns::compile(isa).map_err(SelectError::BadTable)?;
    select_with(kernel, isa, &patterns, limits)
}

/// [`select`] with the patterns of `isa` already compiled. A search that stops at its node
/// limit without a program is tried again holding back the rules that match thousands of
/// times an iteration; when that one finds none either, the first one's refusal stands.
pub fn select_with(
    kernel: &Kernel,
    isa: &Isa,
    patterns: &Patterns,
    limits: &SelectLimits,
) -> Result<Selection, SelectError> {
    if !isa.buffers.iter().any(|b| b.is_hbm()) {
        return Err(SelectError::BadTable(TableError::NoHbm));
    }
    if let Some(refusal) = refusal_without_search(kernel, isa) {
        return Err(refusal);
    }
    match select_once(kernel, isa, patterns, limits, Mode::default()) {
        Err((refusal @ SelectError::NoInstruction { .. }, StopReason::NodeLimit, iterations)) => {
            // Held-back rules keep a search from saturating, and each iteration near the node
            // limit costs seconds: the second search gets twice the first one's iterations.
            let limits = SelectLimits { iter_limit: limits.iter_limit.min(2 * iterations), ..limits.clone() };
            select_once(kernel, isa, patterns, &limits, Mode { hold_back: true, ..Mode::default() }).map_err(|_| refusal)
        }
        other => other.map_err(|(e, _, _)| e),
    }
}

/// A refusal of `kernel` that is a proof without a search: a float reduction on an ISA that
/// never reduces, or an operation larger than every instruction that nothing could shrink.
pub fn refusal_without_search(kernel: &Kernel, isa: &Isa) -> Option<SelectError> {
    float_reduction_without_instruction(kernel, isa)
        .or_else(|| division_without_instruction(kernel, isa))
        .or_else(|| too_large_for_every_instruction(kernel, isa))
}

/// Per node of `kernel`: whether its value depends on a kernel input and a result needs it
/// (values of constants alone are folded before the search).
fn needed_of_inputs(kernel: &Kernel) -> Vec<bool> {
    let mut of_inputs = vec![false; kernel.nodes.len()];
    let mut needed = vec![false; kernel.nodes.len()];
    needed[kernel.root] = true;
    for (k, node) in kernel.nodes.iter().enumerate() {
        of_inputs[k] = matches!(node.op, Op::Parameter(_)) || node.operands.iter().any(|&o| of_inputs[o]);
    }
    for k in (0..kernel.nodes.len()).rev() {
        if needed[k] {
            kernel.nodes[k].operands.iter().for_each(|&o| needed[o] = true);
        }
    }
    needed.iter().zip(&of_inputs).map(|(&n, &i)| n && i).collect()
}

/// A division of inputs on an ISA none of whose semantics divides, by a divisor that is not
/// one power of two throughout: no program computes it. The one rule that removes a division
/// writes a float division by a power of two as the multiplication by its reciprocal (exact
/// only there); a mean over 3 or 9 positions searched to saturation before it was refused
/// (14 s for a 1x10x12x48 mean pooling on the Registers test accelerator).
fn division_without_instruction(kernel: &Kernel, isa: &Isa) -> Option<SelectError> {
    if isa.instructions.iter().flat_map(|i| &i.semantics).any(|o| o.op == OpCode::Divide) {
        return None;
    }
    let needed = needed_of_inputs(kernel);
    let by_power_of_two = |d: usize| match &kernel.nodes[d].op {
        Op::Constant(lit) => kernel.nodes[d].ty.dtype.is_float() && lit.splat().is_some_and(crate::identities::is_power_of_two),
        _ => false,
    };
    let k = (0..kernel.nodes.len()).find(|&k| {
        let node = &kernel.nodes[k];
        node.op == Op::Divide && needed[k] && node.operands.len() == 2 && !by_power_of_two(node.operands[1])
    })?;
    let node = &kernel.nodes[k];
    let divisor = &kernel.nodes[node.operands[1]];
    let why = match &divisor.op {
        Op::Constant(lit) if divisor.ty.dtype.is_float() => match lit.splat() {
            Some(v) => format!("its divisor, {v}, is no power of two (a float division by one is the multiplication by its reciprocal)"),
            None => "its divisor is not one value throughout".to_string(),
        },
        Op::Constant(_) => format!("no rule computes a {} division by other operations", node.ty.dtype),
        _ => "its divisor is a value of the inputs, not a constant".to_string(),
    };
    Some(SelectError::NoInstruction {
        file: kernel.file.clone(),
        line: node.line,
        op: node.op.hlo_name().to_string(),
        message: format!(
            "no instruction of {} computes `{}` ({}): no instruction's semantics divides, and {why}",
            isa.name,
            node.op.hlo_name(),
            node.text
        ),
    })
}

/// A float reduction of inputs over more than one element on an ISA none of whose semantics
/// reduces: no program computes it (no rule computes a float reduction by other operations,
/// which would fix the order of its accumulation), so the search is not run. A search would
/// grow the windows of its input to the node limit and refuse without proof (a row sum of
/// 17x32 floats on the Registers test accelerator took 15 s).
fn float_reduction_without_instruction(kernel: &Kernel, isa: &Isa) -> Option<SelectError> {
    let reduces = isa.instructions.iter().flat_map(|i| &i.semantics).any(|o| matches!(o.op, OpCode::Reduce | OpCode::ReduceAdd));
    if reduces {
        return None;
    }
    // Only reductions of inputs count.
    let needed = needed_of_inputs(kernel);
    let k = (0..kernel.nodes.len()).find(|&k| {
        let node = &kernel.nodes[k];
        let Some(&x) = node.operands.first() else { return false };
        let (Op::ReduceAdd(dims) | Op::Reduce { dims, .. }) = &node.op else { return false };
        let x_ty = &kernel.nodes[x].ty;
        let reduced: i64 = dims.iter().map(|&d| x_ty.shape[d]).product();
        needed[k] && needed[x] && x_ty.dtype.is_float() && reduced > 1
    })?;
    let node = &kernel.nodes[k];
    Some(SelectError::NoInstruction {
        file: kernel.file.clone(),
        line: node.line,
        op: node.op.hlo_name().to_string(),
        message: format!(
            "no instruction of {} computes `{}` ({}): no instruction's semantics reduces, and no \
             rule computes a {} reduction by other operations",
            isa.name,
            node.op.hlo_name(),
            node.text,
            kernel.nodes[node.operands[0]].ty.dtype
        ),
    })
}

/// The selection to try where no candidate of [`select_with`]'s fits in memory: the search
/// also splits rows into tiles of the largest size divided by `divisor`, and extraction takes
/// only programs whose every on-chip value fills at most that share of its buffer. `None`
/// where there is none.
pub fn select_narrow(
    kernel: &Kernel,
    isa: &Isa,
    patterns: &Patterns,
    limits: &SelectLimits,
    divisor: i64,
) -> Option<Selection> {
    select_once(kernel, isa, patterns, limits, Mode { narrow: divisor, ..Mode::default() }).ok()
}

/// One search and extraction ([`search`]); a refusal comes with how the search stopped and
/// after how many iterations.
fn select_once(
    kernel: &Kernel,
    isa: &Isa,
    patterns: &Patterns,
    limits: &SelectLimits,
    mode: Mode,
) -> Result<Selection, (SelectError, StopReason, usize)> {
    let (kg, mut stats) = search(kernel, isa, patterns, limits, mode);
    let t = Instant::now();
    let ex = Extractor::new(&kg.egraph, isa, kg.root)
        .map_err(|_| (SelectError::BadTable(TableError::NoHbm), stats.stop_reason, stats.iterations))?;
    let ex = if mode.narrow > 1 { ex.within_buffer_share(mode.narrow) } else { ex };
    // The search budget grows with the e-graph: more iterations, more alternatives to try.
    let budget = limits.max_candidates.saturating_mul(8).saturating_add(stats.iterations * 16);
    let found = ex.candidates(limits.max_candidates, budget);
    stats.lower_bound = ex.lower_bound(|instr, comp| {
        let def = &isa.instructions[instr];
        def.cost.eval(&def.comp_env(comp)).ok().map(|c| c as f64)
    });
    stats.extract_ms = ms(t);
    match found {
        Ok(candidates) => {
            let tracer = Tracer::new(kernel, &kg);
            let origins = candidates.iter().map(|g| tracer.origins(g)).collect();
            Ok(Selection { candidates, origins, stats })
        }
        Err(ExtractFailure::RootUnreachable) => {
            let (mut error, proof) = no_instruction(kernel, isa, &kg, &ex);
            // A search cut short proves nothing, unless the blame is a proof by itself: say so.
            if let (StopReason::NodeLimit, false, SelectError::NoInstruction { message, .. }) = (stats.stop_reason, proof, &mut error) {
                message.push_str(&format!(
                    "; the search stopped at its node limit ({} e-nodes) before saturating, so a \
                     larger search might find a program",
                    stats.egraph_nodes
                ));
            }
            Err((error, stats.stop_reason, stats.iterations))
        }
    }
}

/// Whether class `c` is a concatenation or overlay of parts that are each produced, or a
/// window of a produced value (the last columns kept of a tile overlapping the one before,
/// the real rows of a padded product), each in turn possibly such (memoized in `memo`).
fn produced_in_tiles(eg: &SelGraph, ex: &Extractor, c: Id, memo: &mut BTreeMap<Id, bool>) -> bool {
    if let Some(&known) = memo.get(&c) {
        return known;
    }
    // A cycle through concatenations produces nothing.
    memo.insert(c, false);
    let placed = |p: Id, memo: &mut BTreeMap<Id, bool>| ex.reachable(p) || produced_in_tiles(eg, ex, p, memo);
    let produced = eg[c].nodes.iter().any(|n| match n.op {
        Op::Concatenate(_) | Op::Overlay { .. } => n.children.iter().all(|&p| placed(eg.find(p), memo)),
        Op::Slice(_) => placed(eg.find(n.children[0]), memo),
        _ => false,
    });
    memo.insert(c, produced);
    produced
}

/// Which way a value crosses between HBM and the buffers ([`unit_rows`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transfer {
    Load,
    Store,
}

/// Why a row-major value of type `ty` cannot be loaded (stored) whole or in windows, where
/// every instruction that reads (writes) HBM writes (reads) whole units of a fixed number of
/// elements on chip (QKV writes rows of 64 into `d1`) and the value's rows are no multiple of
/// any of them: the dimension that does not divide, as a clause for the refusal; `None`
/// otherwise. Only the buffers that hold elements of the value's type count where some do (a
/// float vector is not read into an int32 tile register); where its element count is no
/// multiple either, the clause says so (no view of it as other rows divides).
///
/// With `rows_of_elements`, a value whose elements divide into such rows whatever its shape
/// (as elementwise work sees it) moves too.
fn unit_rows(isa: &Isa, ty: &Ty, transfer: Transfer, rows_of_elements: bool) -> Option<String> {
    let n = *ty.shape.last()?;
    let in_hbm = |slices: &[crate::isa::Slice]| slices.iter().any(|s| isa.buffer(&s.buffer).is_hbm());
    let moves = |i: &&Instruction| match transfer {
        Transfer::Load => in_hbm(&i.inputs) && !in_hbm(&i.outputs),
        Transfer::Store => in_hbm(&i.outputs) && i.inputs.iter().any(|s| !isa.buffer(&s.buffer).is_hbm()),
    };
    let on_chip = |i: &Instruction| -> Vec<&crate::isa::Buffer> {
        let slices = match transfer {
            Transfer::Load => &i.outputs,
            Transfer::Store => &i.inputs,
        };
        slices.iter().map(|s| isa.buffer(&s.buffer)).filter(|b| !b.is_hbm()).collect()
    };
    let all: Vec<&Instruction> = isa.instructions.iter().filter(moves).collect();
    let same_type: Vec<&Instruction> =
        all.iter().copied().filter(|&i| on_chip(i).iter().any(|b| b.dtype == ty.dtype)).collect();
    let transfers = if same_type.is_empty() { all } else { same_type };
    let mut units: Vec<(i64, &str)> = Vec::new();
    for instr in &transfers {
        for buffer in on_chip(instr) {
            let unit: i64 = buffer.unit_dims.iter().product();
            if buffer.unit_dims.len() != 1 || n % unit == 0 || (rows_of_elements && ty.elements() % unit == 0) {
                return None;
            }
            if !units.contains(&(unit, buffer.name.as_str())) {
                units.push((unit, buffer.name.as_str()));
            }
        }
    }
    let names: Vec<String> = transfers.iter().map(|i| format!("`{}`", i.name)).collect();
    let (verb, what, preposition) = match transfer {
        Transfer::Load => ("reads", "writes", "into"),
        Transfer::Store => ("writes", "reads", "from"),
    };
    let elements = ty.elements();
    let indivisible = ty.rank() > 1 && units.iter().all(|(u, _)| elements % u != 0);
    // Fewer elements than every unit holds cannot be moved at all, not even as windows that
    // overlap.
    let total = if units.iter().all(|(u, _)| elements < *u) {
        format!(", and all {elements} of its elements are fewer than one such row")
    } else if indivisible {
        format!(" (nor are its {elements} elements)")
    } else {
        String::new()
    };
    let units: Vec<String> = units.iter().map(|(u, b)| format!("rows of {u} elements {preposition} `{b}`")).collect();
    (!units.is_empty()).then(|| {
        format!(
            ": every instruction that {verb} HBM ({}) {what} {}, and its dimension {} ({n}) is no multiple of that{total}",
            names.join(", "),
            units.join(" or "),
            ty.rank() - 1
        )
    })
}

/// An operation larger than every instruction as [`too_large`] says, that the output needs, and
/// that no rule could make smaller: what it reads is computed from inputs alone by operations
/// no identity removes or shortens (no literal, broadcast, padding or concatenation), so the
/// search is not run. A search would only grow to its node limit (a product of 256x256 bf16
/// matrices on QKV's 64-long contraction took 7 s to refuse).
fn too_large_for_every_instruction(kernel: &Kernel, isa: &Isa) -> Option<SelectError> {
    let n = kernel.nodes.len();
    let mut plain = vec![false; n];
    for (k, node) in kernel.nodes.iter().enumerate() {
        // A reduction's initial value is a literal: only what it reduces counts.
        let read = match node.op {
            Op::ReduceAdd(_) | Op::Reduce { .. } => &node.operands[..1],
            _ => &node.operands[..],
        };
        let simple = matches!(
            node.op,
            Op::Parameter(_)
                | Op::Dot(_)
                | Op::ReduceAdd(_)
                | Op::Reduce { .. }
                | Op::Reshape
                | Op::Transpose(_)
                | Op::Convert
                | Op::Copy
                | Op::BitcastConvert
                | Op::Slice(_)
        ) || node.op.is_elementwise();
        plain[k] = simple && read.iter().all(|&o| plain[o]);
    }
    let mut needed = vec![false; n];
    needed[kernel.root] = true;
    for k in (0..n).rev() {
        if needed[k] {
            kernel.nodes[k].operands.iter().for_each(|&o| needed[o] = true);
        }
    }
    let extents = crate::tiling::Extents::of(isa);
    let (k, why) = (0..n).filter(|&k| needed[k] && plain[k]).find_map(|k| Some((k, too_large(kernel, isa, &extents, k)?)))?;
    let node = &kernel.nodes[k];
    Some(SelectError::NoInstruction {
        file: kernel.file.clone(),
        line: node.line,
        op: node.op.hlo_name().to_string(),
        message: format!("no instruction of {} {why} ({})", isa.name, node.text),
    })
}

/// Why operation `k` has no program, where that is a proof by itself: it is larger than every
/// instruction of its operator along a dimension tiling does not split, or it is a reduction
/// or product longer than every instruction's that is not split across tiles (a float sum or
/// contraction, whose order of accumulation a split would change).
fn too_large(kernel: &Kernel, isa: &Isa, extents: &crate::tiling::Extents, k: usize) -> Option<String> {
    let node = &kernel.nodes[k];
    let name = node.op.hlo_name();
    if let Some((dim, widest)) = extents.too_large(&node.op, &node.ty) {
        return Some(format!(
            "computes `{name}` of type {}: its dimension {dim} ({}) is larger than every instruction \
             computing `{name}` takes (at most {widest}), and tiling does not split that dimension",
            node.ty, node.ty.shape[dim]
        ));
    }
    let x_ty = &kernel.nodes[*node.operands.first()?].ty;
    if let Op::Dot(dd) = &node.op {
        let length: i64 = dd.lhs_contracting.iter().map(|&d| x_ty.shape[d]).product();
        // A product whose operands are read from buffers of the result's type could sum
        // partial products against ones.
        let reads_results = isa.instructions.iter().any(|i| {
            i.semantics.iter().any(|o| o.op == OpCode::Dot)
                && i.inputs.iter().any(|s| !isa.buffer(&s.buffer).is_hbm() && isa.buffer(&s.buffer).dtype == node.ty.dtype)
        });
        if let Some(longest) = extents.unsummed_contraction(&node.ty, length).filter(|_| !reads_results) {
            return Some(format!(
                "computes `{name}` of type {}: its contraction ({length}) is longer than every instruction \
                 computing `{name}` contracts (at most {longest}), and no instruction adds {} values \
                 (`add`, `subtract` or a sum by `reduce`) or multiplies them, so the products of its \
                 parts cannot be summed",
                node.ty, node.ty.dtype
            ));
        }
        let longest = extents.unsplit_contraction(&node.ty, length)?;
        return Some(format!(
            "computes `{name}` of type {}: its contraction ({length}) is longer than every instruction \
             computing `{name}` contracts (at most {longest}); a {} contraction is not split across \
             tiles, which would change the order of its accumulation",
            node.ty, node.ty.dtype
        ));
    }
    let (dim, longest) = extents.unsplit_reduction(&node.op, x_ty, &node.ty)?;
    Some(format!(
        "computes `{name}` of {x_ty} over its dimension {dim} ({}), longer than every instruction \
         computing `{name}` reduces (at most {longest}); a {} reduction is not split across tiles, \
         which would change the order of its accumulation",
        x_ty.shape[dim], x_ty.dtype
    ))
}

/// Names the kernel operation to blame: walking from the output through operations that
/// cannot be produced, the first one (program order) whose operands all can; and whether the
/// blame is a proof whatever the search's size.
fn no_instruction(kernel: &Kernel, isa: &Isa, kg: &KernelGraph, ex: &Extractor) -> (SelectError, bool) {
    let eg = &kg.egraph;
    let reachable = |k: usize| ex.reachable(eg.find(kg.node_class[k]));
    // A reshape computes nothing: one of a value that exists is blamed on its reader (a
    // vector no buffer holds, made from a column that one does, is not the obstacle).
    // A value read only in tiles (a parameter, by an operation wider than the instructions; a
    // transposed batch, by the products of its items) is there when a window of it is: the
    // operation on the tiles is then what fails.
    // Windows of a parameter: its slices and reshapes (an item of a batch, squeezed), and
    // slices of those (a tile is a column window of a row tile), a few levels deep.
    let read_in_tiles = |k: usize| {
        let mut windows: BTreeSet<Id> = [eg.find(kg.node_class[k])].into();
        for _ in 0..4 {
            let deeper: Vec<Id> = eg
                .classes()
                .filter(|c| {
                    c.nodes.iter().any(|n| matches!(n.op, Op::Slice(_) | Op::Reshape) && windows.contains(&eg.find(n.children[0])))
                })
                .map(|c| c.id)
                .collect();
            if deeper.iter().any(|&c| ex.reachable(c)) {
                return true;
            }
            let before = windows.len();
            windows.extend(deeper);
            if windows.len() == before {
                return false;
            }
        }
        false
    };
    // A value wider than every instruction is produced in tiles: it is there when each of its
    // tiles is (a concatenation of produced parts), and what fails is a reader that needs it
    // otherwise (`(A.B)^T` names the transpose, not the product).
    let mut in_tiles: BTreeMap<Id, bool> = BTreeMap::new();
    let mut placed = vec![false; kernel.nodes.len()];
    for (k, node) in kernel.nodes.iter().enumerate() {
        placed[k] = reachable(k)
            || produced_in_tiles(eg, ex, eg.find(kg.node_class[k]), &mut in_tiles)
            || (node.op == Op::Reshape && placed[node.operands[0]])
            || read_in_tiles(k);
    }
    let ok = |k: usize| placed[k];
    let error = |k: usize, what: String| {
        let node = &kernel.nodes[k];
        SelectError::NoInstruction {
            file: kernel.file.clone(),
            line: node.line,
            op: node.op.hlo_name().to_string(),
            message: format!("no instruction of {} {what} ({})", isa.name, node.text),
        }
    };
    let root = kernel.root;
    let not_in_hbm = |k: usize| {
        // The value exists somewhere but cannot reach HBM (or only as a kernel input).
        // A computation (produced whole, or in tiles) is stored; a value it only moves, copied.
        let op = &kernel.nodes[k].op;
        let moves = matches!(
            op,
            Op::Reshape
                | Op::Transpose(_)
                | Op::Slice(_)
                | Op::Concatenate(_)
                | Op::Broadcast(_)
                | Op::Copy
                | Op::BitcastConvert
                | Op::Parameter(_)
                | Op::Constant(_)
        );
        let verb = if !moves || ex.computed(eg.find(kg.node_class[k])) { "stores" } else { "copies" };
        let why = unit_rows(isa, &kernel.nodes[k].ty, Transfer::Store, false).unwrap_or_default();
        error(k, format!("{verb} the result of `{}` to HBM{why}", kernel.nodes[k].op.hlo_name()))
    };
    if ok(root) {
        return (not_in_hbm(root), false);
    }
    // Several results: the first one computed but never written to HBM (its bytes, the
    // root's operand, are not produced) is what fails.
    if kernel.results.len() > 1 {
        let parts = &kernel.nodes[root].operands;
        if let Some(k) = kernel.results.iter().zip(parts).find(|&(&r, &p)| ok(r) && !ok(p)).map(|(&r, _)| r) {
            return (not_in_hbm(k), false);
        }
    }
    // Values computed from constants alone are not blamed: an operation that needs one is
    // what has no instruction (`x * 2` on an ISA without a multiply names the multiply).
    let mut constant = vec![false; kernel.nodes.len()];
    for (k, node) in kernel.nodes.iter().enumerate() {
        constant[k] = match node.op {
            Op::Constant(_) => true,
            Op::Parameter(_) => false,
            _ => !node.operands.is_empty() && node.operands.iter().all(|&o| constant[o]),
        };
    }
    // An operation larger than every instruction along a dimension no rule splits is the proof
    // by itself: blame the first one (program order).
    let extents = crate::tiling::Extents::of(isa);
    if let Some((k, why)) = (0..kernel.nodes.len()).filter(|&k| !ok(k)).find_map(|k| Some((k, too_large(kernel, isa, &extents, k)?))) {
        return (error(k, why), true);
    }
    let mut seen = vec![false; kernel.nodes.len()];
    let mut stack = vec![root];
    let mut blamed: Option<usize> = None;
    while let Some(k) = stack.pop() {
        if seen[k] {
            continue;
        }
        seen[k] = true;
        let bad: Vec<usize> =
            kernel.nodes[k].operands.iter().copied().filter(|&o| !ok(o) && (!constant[o] || constant[k])).collect();
        if bad.is_empty() {
            blamed = Some(blamed.map_or(k, |b| b.min(k)));
        }
        stack.extend(bad);
    }
    let mut k = blamed.unwrap_or(root);
    // A parameter read only by an operation no semantics computes (`abs` on an ISA without
    // one), whose rows the loads do take, is not loaded because nothing reads its tiles:
    // that operation is what fails.
    // Its elements as rows of a unit are enough: elementwise work on it would read them so
    // (`abs` of 48x3x3 floats is 27 registers of 16).
    if matches!(kernel.nodes[k].op, Op::Parameter(_)) && unit_rows(isa, &kernel.nodes[k].ty, Transfer::Load, true).is_none() {
        let computed: BTreeSet<OpCode> = isa.instructions.iter().flat_map(|i| i.semantics.iter().map(|o| o.op)).collect();
        let users: Vec<usize> = (0..kernel.nodes.len()).filter(|&u| seen[u] && kernel.nodes[u].operands.contains(&k)).collect();
        let uncomputed = |u: &usize| OpCode::parse(kernel.nodes[*u].op.hlo_name()).is_some_and(|code| !computed.contains(&code));
        if !users.is_empty() && users.iter().all(uncomputed) {
            k = users[0];
        }
    }
    let node = &kernel.nodes[k];
    let what = match &node.op {
        Op::Parameter(i) => {
            // A parameter read by an operation wider than every instruction of its operator
            // could only be read in column windows: say so, since that is why it fails.
            let wide = kernel.nodes.iter().find_map(|user| {
                let (dim, widest) = extents.wider_than_every(&user.op, &user.ty)?;
                user.operands.contains(&k).then_some((user, dim, widest))
            });
            let windows = match wide {
                Some((user, dim, widest)) => format!(
                    " whole or in windows of its columns (it feeds `{name}` of type {ty}, whose dimension \
                     {dim} ({n}) is wider than every instruction computing `{name}` takes (at most {widest}), \
                     so its tiles read such windows)",
                    name = user.op.hlo_name(),
                    ty = user.ty,
                    n = user.ty.shape[dim]
                ),
                None => unit_rows(isa, &node.ty, Transfer::Load, false).unwrap_or_default(),
            };
            format!("loads parameter {i} (`{}`, {}){windows}", node.name, node.ty)
        }
        Op::Constant(_) => format!(
            "uses the constant `{}` as an operand (a constant must be part of an instruction's semantics)",
            node.name
        ),
        op => format!("computes `{}`", op.hlo_name()),
    };
    (error(k, what), false)
}
