//! The candidate loop: for each candidate in selection order, schedule, allocate, emit and
//! cost it, keeping the cheapest (ties to the earlier). The loop stops when every candidate
//! was tried, or as soon as the best costs no more than a lower bound on every candidate's
//! cost (`Config::lower_bound`: nothing after it can be cheaper), or when none improved on the
//! best for as many candidates again as the best took (at least `min_patience`, fewer for a
//! long program: [`PATIENCE_WORK`]), or when the wall-clock safety net fires.

use crate::alloc::{self, Outcome, Prepared};
use crate::cost::{self, CostError};
use crate::emit::PlacedProgram;
use crate::isa::Isa;
use crate::lang::Ty;
use crate::layout::{HbmLayout, LayoutError, Signature};
use crate::memory_map::{self, MemoryMap};
use crate::pii::{PiiGraph, PiiNode};
use crate::reload::{self, Reloaded};
use crate::schedule::{self, Schedule};
use crate::value::{self, Value};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How the loop runs. Only `deadline` and `cancel` involve the wall clock; they end the loop
/// early but never change which of the candidates tried wins.
#[derive(Debug, Clone)]
pub struct Config {
    pub alloc: alloc::Limits,
    /// Candidates tried without improvement before stopping, at least (but for long
    /// programs, `patience_work`).
    pub min_patience: usize,
    /// Instructions scheduled, allocated and emitted without improvement before stopping,
    /// where that is fewer than `min_patience` candidates of the best one's length (at least
    /// one candidate). Past some thousands of instructions each candidate takes seconds, and
    /// the enumeration's next candidates differ from the best in a few tiles (the order of a
    /// tile's accumulation, one load more): a 512^3 product on Gemmini (34,848 instructions)
    /// tried nine, all of the same cost, 1.5 s each. Counted in instructions, not time, so
    /// the program chosen never depends on the machine.
    pub patience_work: usize,
    /// No candidate costs less than this under the cost model in use: a candidate that
    /// costs it ends the search. `None`: no bound is known (a user's cost model).
    pub lower_bound: Option<f64>,
    pub deadline: Option<Instant>,
    /// The number of the first candidate (candidates of a second selection follow those of
    /// the first in the report and the candidate files).
    pub first_index: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alloc: alloc::Limits::default(),
            min_patience: 8,
            patience_work: 100_000,
            lower_bound: None,
            deadline: None,
            first_index: 0,
        }
    }
}

/// What happened to one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Solved,
    Infeasible,
    OutOfBudget,
    /// No order honours its in-place writes.
    Unschedulable,
    /// It breaks the selection contract (a selection bug).
    Malformed,
    /// The allocator called its request invalid (a bug in the request builder).
    Invalid,
    /// The safety net fired before an order was found.
    TimeLimit,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Solved => "solved",
            Status::Infeasible => "infeasible",
            Status::OutOfBudget => "out_of_budget",
            Status::Unschedulable => "unschedulable",
            Status::Malformed => "malformed",
            Status::Invalid => "invalid",
            Status::TimeLimit => "time_limit",
        }
    }
}

/// Wall-clock time spent per phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Phases {
    pub schedule: Duration,
    pub allocate: Duration,
    pub emit: Duration,
    pub cost: Duration,
}

impl Phases {
    pub fn add(&mut self, other: &Phases) {
        self.schedule += other.schedule;
        self.allocate += other.allocate;
        self.emit += other.emit;
        self.cost += other.cost;
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CandidateRecord {
    pub index: usize,
    /// Instructions in the program (those the output needs).
    pub instructions: usize,
    pub status: Status,
    /// The heuristic of the order that was allocated, if one was.
    pub order: Option<&'static str>,
    /// Orders handed to the allocator, and orders skipped because their interference
    /// contains that of an order already found infeasible.
    pub orders_tried: usize,
    pub orders_skipped: usize,
    pub cost: Option<f64>,
    /// The assembly file written for it.
    pub file: Option<PathBuf>,
    /// Why it failed, or the allocator's note.
    pub message: String,
    pub phases: Phases,
}

/// The cheapest candidate so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    pub index: usize,
    pub cost: f64,
    pub assembly: String,
    /// Its steps and where each of its values lives, for the report.
    pub memory: MemoryMap,
    /// The program itself, placed.
    pub program: PlacedProgram,
}

/// A placed candidate's assembly, its memory map and its program.
type Emitted = (String, MemoryMap, PlacedProgram);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    AllTried,
    /// The best candidate costs the lower bound: no other can be cheaper.
    LowerBound,
    NoImprovement,
    TimeLimit,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::AllTried => "all candidates tried",
            StopReason::LowerBound => "lower bound reached",
            StopReason::NoImprovement => "no improvement",
            StopReason::TimeLimit => "time limit",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub records: Vec<CandidateRecord>,
    pub best: Option<Best>,
    pub stop: StopReason,
    pub phases: Phases,
}

/// Errors that end the compile.
#[derive(Debug)]
pub enum DriverError {
    /// The cost model failed on a candidate.
    Cost { candidate: usize, path: PathBuf, error: CostError },
    /// The kernel's types have no HBM layout.
    Layout(LayoutError),
    /// A candidate's assembly could not be written.
    Io { path: PathBuf, error: std::io::Error },
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Cost { candidate, path, error } => write!(
                f,
                "cost model failed on candidate {candidate} ({}): {error}",
                path.display()
            ),
            DriverError::Layout(e) => write!(f, "kernel signature: {e}"),
            DriverError::Io { path, error } => {
                write!(f, "cannot write {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for DriverError {}

impl Run {
    /// Why no candidate could be used, one line per candidate.
    pub fn failure_summary(&self) -> String {
        if self.records.is_empty() {
            return "selection found no candidate".into();
        }
        let lines: Vec<String> = self
            .records
            .iter()
            .map(|r| format!("candidate {}: {}: {}", r.index, r.status.name(), r.message))
            .collect();
        lines.join("\n")
    }
}

/// Tries `candidates` in order; `dir` receives `candidate_<k>.py` for every candidate
/// emitted; `observe` sees each record and the best so far, as they happen.
pub fn run(
    isa: &Isa,
    sig: &Signature,
    candidates: &[PiiGraph],
    dir: &Path,
    config: &Config,
    cancel: &AtomicBool,
    observe: &mut dyn FnMut(&CandidateRecord, Option<&Best>),
) -> Result<Run, DriverError> {
    let layout = HbmLayout::packed(sig).map_err(DriverError::Layout)?;
    let ctx = Ctx { isa, sig, layout: &layout, dir, config, cancel };
    let mut records = Vec::new();
    let mut best: Option<Best> = None;
    let mut phases = Phases::default();
    let mut stop = StopReason::AllTried;
    let mut best_length = 0;
    for (k, graph) in candidates.iter().enumerate() {
        let index = config.first_index + k;
        if ctx.out_of_time() {
            stop = StopReason::TimeLimit;
            break;
        }
        let (record, assembly) = ctx.candidate(index, graph)?;
        phases.add(&record.phases);
        if let (Some(cost), Some((text, memory, program))) = (record.cost, assembly) {
            if best.as_ref().is_none_or(|b| cost < b.cost) {
                best = Some(Best { index, cost, assembly: text, memory, program });
                best_length = record.instructions;
            }
        }
        observe(&record, best.as_ref());
        let timed_out = record.status == Status::TimeLimit;
        records.push(record);
        if timed_out {
            stop = StopReason::TimeLimit;
            break;
        }
        if let Some(b) = &best {
            if config.lower_bound.is_some_and(|bound| b.cost <= bound) && k + 1 < candidates.len() {
                stop = StopReason::LowerBound;
                break;
            }
            let patience = config.min_patience.min(config.patience_work / best_length.max(1)).max(1);
            if index - b.index >= (b.index + 1).max(patience) {
                stop = StopReason::NoImprovement;
                break;
            }
        }
    }
    Ok(Run { records, best, stop, phases })
}

struct Ctx<'a> {
    isa: &'a Isa,
    sig: &'a Signature,
    layout: &'a HbmLayout,
    dir: &'a Path,
    config: &'a Config,
    cancel: &'a AtomicBool,
}

impl Ctx<'_> {
    fn out_of_time(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
            || self.config.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn candidate(
        &self,
        index: usize,
        graph: &PiiGraph,
    ) -> Result<(CandidateRecord, Option<Emitted>), DriverError> {
        let mut record = CandidateRecord {
            index,
            instructions: graph.instruction_count(),
            status: Status::Malformed,
            order: None,
            orders_tried: 0,
            orders_skipped: 0,
            cost: None,
            file: None,
            message: String::new(),
            phases: Phases::default(),
        };
        let clock = Instant::now();
        let values = match value::analyse(graph, self.isa) {
            Ok(v) => v,
            Err(e) => {
                record.message = e.to_string();
                return Ok((record, None));
            }
        };
        let orders = schedule::Orders::new(graph, self.isa, &values);
        record.phases.schedule = clock.elapsed();
        let mut orders = match orders {
            Ok(o) => o,
            Err(e) => {
                record.status = Status::Unschedulable;
                record.message = e.to_string();
                return Ok((record, None));
            }
        };
        record.instructions = orders.get(0).map_or(0, |s| s.steps.len());
        // Orders that keep more on chip than the buffers hold: loads run again instead.
        let reloaded: (Reloaded, Vec<Value>);
        let (graph, values, schedule, placement, original) =
            match self.allocate(graph, &values, &mut orders, &mut record) {
                Some((schedule, placement)) => (graph, &values[..], schedule, placement, None),
                None if record.status == Status::Infeasible => {
                    match self.reloaded(graph, &values, &mut orders, &mut record) {
                        Some((r, values, schedule)) => {
                            reloaded = (r, values);
                            let (r, values) = &reloaded;
                            let mut given = schedule::Orders::given(vec![schedule]);
                            let Some((schedule, placement)) = self.allocate(&r.graph, values, &mut given, &mut record)
                            else {
                                return Ok((record, None));
                            };
                            record.instructions = schedule.steps.len();
                            (&r.graph, &values[..], schedule, placement, Some(&r.original[..]))
                        }
                        None => return Ok((record, None)),
                    }
                }
                None => return Ok((record, None)),
            };
        let memory =
            match memory_map::map(graph, self.isa, values, &schedule, &placement, self.layout) {
                Ok(m) => m.renumbered(original),
                Err(e) => {
                    record.message = format!("the placement does not add up: {e}");
                    return Ok((record, None));
                }
            };
        record.status = Status::Solved;
        record.order = Some(schedule.heuristic);

        let clock = Instant::now();
        let program = PlacedProgram {
            steps: schedule
                .steps
                .iter()
                .zip(&placement.addrs)
                .map(|(&n, addr)| match &graph.nodes[n] {
                    PiiNode::Instr { instr, comp, .. } => (*instr, comp.clone(), addr.clone()),
                    _ => unreachable!("schedules hold instruction nodes only"),
                })
                .collect(),
            constants: placement
                .constants
                .iter()
                .map(|&(n, addr)| match &graph.nodes[n] {
                    PiiNode::Constant { dtype, shape, bits } => (addr, Ty::new(*dtype, shape.clone()), bits.clone()),
                    _ => unreachable!("the placement lists constant nodes only"),
                })
                .collect(),
            hbm_end: placement.hbm_end,
        };
        let text = program.assembly(self.isa, self.sig, self.layout).map_err(DriverError::Layout)?;
        let path = self.dir.join(format!("candidate_{index}.py"));
        std::fs::write(&path, &text)
            .map_err(|error| DriverError::Io { path: path.clone(), error })?;
        record.phases.emit = clock.elapsed();

        let clock = Instant::now();
        let mut cost = cost::cost_of(&path).map_err(|error| DriverError::Cost {
            candidate: index,
            path: path.clone(),
            error,
        })?;
        if cost::DEFAULT_MODEL {
            let extra = cost::table_weights(self.isa, graph).map_err(|message| DriverError::Cost {
                candidate: index,
                path: path.clone(),
                error: cost::CostError::Table(message),
            })?;
            cost = cost::check(cost + extra).map_err(|error| DriverError::Cost {
                candidate: index,
                path: path.clone(),
                error,
            })?;
        }
        record.phases.cost = clock.elapsed();
        record.cost = Some(cost);
        record.file = Some(path);
        Ok((record, Some((text, memory, program))))
    }

    /// `graph` with its loads run again where an order overflows a buffer, analysed and
    /// scheduled in that order: of `orders`, the one that repeats the fewest loads; `None`
    /// (the record left as it is) where reloading does not help.
    fn reloaded(
        &self,
        graph: &PiiGraph,
        values: &[Value],
        orders: &mut schedule::Orders,
        record: &mut CandidateRecord,
    ) -> Option<(Reloaded, Vec<Value>, Schedule)> {
        let clock = Instant::now();
        let reloaded = reload::fewest(graph, self.isa, values, orders.all())?;
        let values = value::analyse(&reloaded.graph, self.isa).ok()?;
        let schedule =
            schedule::from_order(&reloaded.graph, &values, "reloading", reloaded.order.clone()).ok()?;
        record.phases.schedule += clock.elapsed();
        Some((reloaded, values, schedule))
    }

    /// Tries the orders until one is placed; fills the record's status and message otherwise.
    fn allocate(
        &self,
        graph: &PiiGraph,
        values: &[Value],
        orders: &mut schedule::Orders,
        record: &mut CandidateRecord,
    ) -> Option<(Schedule, alloc::Placement)> {
        let clock = Instant::now();
        let mut infeasible: Vec<BTreeSet<(usize, usize)>> = Vec::new();
        let mut reasons: Vec<String> = Vec::new();
        let mut out_of_budget = false;
        // A failure that ends the search over orders: time limit, malformed, invalid.
        let mut ended: Option<Status> = None;
        let mut found = None;
        let mut making = Duration::ZERO;
        for i in 0.. {
            let made = Instant::now();
            let Some(schedule) = orders.get(i) else { break };
            making += made.elapsed();
            if self.out_of_time() {
                ended = Some(Status::TimeLimit);
                reasons.push("the time limit was reached".into());
                break;
            }
            // Overfull at some instant: no placement exists, and nothing is gained by
            // remembering its pairs.
            if let Some(why) = schedule.overflow(self.isa, values) {
                reasons.push(format!("{}: {why}", schedule.heuristic));
                continue;
            }
            // The pairs of values live together: millions in a long program, so made only to
            // compare with an order found infeasible, or to remember this one as such.
            let mut interference = None;
            if !infeasible.is_empty() {
                let pairs = schedule.interference(values);
                if infeasible.iter().any(|f| pairs.is_superset(f)) {
                    record.orders_skipped += 1;
                    continue;
                }
                interference = Some(pairs);
            }
            let mut interference = move || interference.take().unwrap_or_else(|| schedule.interference(values));
            let prepared =
                alloc::prepare(graph, self.isa, values, schedule, self.layout, self.config.alloc);
            let plan = match prepared {
                Ok(Prepared::Plan(plan)) => plan,
                // Overfull at some instant: every order is checked for that before the
                // allocator runs, so nothing is gained by remembering its pairs.
                Ok(Prepared::Infeasible(why)) => {
                    reasons.push(format!("{}: {why}", schedule.heuristic));
                    continue;
                }
                Err(e) => {
                    ended = Some(Status::Malformed);
                    reasons.push(e.to_string());
                    break;
                }
            };
            record.orders_tried += 1;
            match plan.solve() {
                Ok(Outcome::Solved(placement)) => {
                    record.message = placement.message.clone();
                    found = Some((schedule.clone(), placement));
                    break;
                }
                Ok(Outcome::Infeasible(why)) => {
                    infeasible.push(interference());
                    reasons.push(format!("{}: {why}", schedule.heuristic));
                }
                Ok(Outcome::OutOfBudget(why)) => {
                    out_of_budget = true;
                    reasons.push(format!("{}: {why}", schedule.heuristic));
                }
                Err(e) => {
                    ended = Some(Status::Invalid);
                    reasons.push(e.to_string());
                    break;
                }
            }
        }
        // Orders made on the way are scheduling time.
        record.phases.schedule += making;
        record.phases.allocate += clock.elapsed().saturating_sub(making);
        if found.is_none() {
            record.status = ended.unwrap_or(if out_of_budget {
                Status::OutOfBudget
            } else {
                Status::Infeasible
            });
            record.message = reasons.join("; ");
        }
        found
    }
}
