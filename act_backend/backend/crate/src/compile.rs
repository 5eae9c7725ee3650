//! The library entry point: [`compile`] takes a kernel's text and gives its assembly, or a
//! [`CompileError`] that says what stopped it. It parses and types the kernel, selects
//! instructions, then tries the candidates (schedule, allocate, emit, cost) and keeps the
//! cheapest. The command line (`cli.rs`) is a thin layer over it: files, threads, printing.

use crate::cost::CostError;
use crate::driver::{self, Best, CandidateRecord, Config, DriverError, Status, StopReason};
use crate::isa::{Isa, TableError};
use crate::isa_match::{FreeAttribute, Patterns};
use crate::kernel::{self, KernelError, KernelErrorKind};
use crate::kernel::Kernel;
use crate::layout::{HbmLayout, LayoutError, Signature};
use crate::bands;
use crate::partition;
use crate::output::ScratchDir;
use crate::report::Progress;
use crate::report_program::HloInstruction;
use crate::select::{self, SelectError, SelectLimits};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// An ISA table decoded and checked once, at start-up: the table and the pattern of every
/// instruction.
#[derive(Debug, Clone)]
pub struct Target {
    pub isa: Isa,
    pub patterns: Patterns,
}

impl Target {
    /// Decodes `isa.json`; a table selection cannot use is an error naming the instruction.
    pub fn from_json(text: &str) -> Result<Target, TableError> {
        Target::new(Isa::from_json(text)?)
    }

    pub fn new(isa: Isa) -> Result<Target, TableError> {
        let patterns = Patterns::compile(&isa)?;
        Ok(Target { isa, patterns })
    }
}

/// A line the compile gives as it goes: progress (phase timings, one line per candidate) or
/// a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    Progress(&'a str),
    Warning(&'a str),
}

/// Receives the compile's [`Message`]s.
pub type Listener = Arc<dyn Fn(Message<'_>) + Send + Sync>;

/// How to compile. [`CompileOptions::new`] gives the defaults.
#[derive(Clone)]
pub struct CompileOptions {
    pub target: Arc<Target>,
    /// The kernel's name in messages (`file:line:col`).
    pub file: String,
    /// Where every candidate's assembly (`candidate_<k>.py`) goes; `None`: a private scratch
    /// directory, removed when the compile ends.
    pub candidates_dir: Option<PathBuf>,
    /// Safety net: no candidate is started after this long; the best so far is the answer.
    pub time_limit: Option<Duration>,
    pub select: SelectLimits,
    /// The candidate loop's limits; its `deadline` is set from `time_limit`.
    pub driver: Config,
    /// Set from outside to stop the candidate loop as the time limit would.
    pub cancel: Arc<AtomicBool>,
    /// What the compile did so far, updated as it goes (readable while it runs).
    pub progress: Arc<Mutex<Progress>>,
    pub listener: Option<Listener>,
}

impl CompileOptions {
    pub fn new(target: Arc<Target>, file: &str) -> CompileOptions {
        CompileOptions {
            target,
            file: file.to_string(),
            candidates_dir: None,
            time_limit: None,
            select: SelectLimits::default(),
            driver: Config::default(),
            cancel: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(Mutex::new(Progress::default())),
            listener: None,
        }
    }
}

/// A compiled kernel.
#[derive(Debug, Clone)]
pub struct Assembly {
    /// The assembly program (Python).
    pub text: String,
    /// Its cost, by the cost model.
    pub cost: f64,
    /// Instructions it executes.
    pub instructions: usize,
    /// The candidate it is (selection order).
    pub candidate: usize,
    /// Set when the time limit ended the search early: says so and what is emitted.
    pub warning: Option<String>,
    /// Computational attributes of the table that no semantics use, and the value given.
    pub free_attributes: Vec<FreeAttribute>,
    /// Everything `report.json` holds.
    pub report: Progress,
}

/// One candidate that could not be placed, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unplaced {
    pub candidate: usize,
    pub status: Status,
    pub message: String,
}

/// Why a compile produced no assembly.
#[derive(Debug)]
pub enum CompileError {
    /// The kernel is not a well-formed kernel: syntax, undefined names, ill-typed operations.
    Syntax(KernelError),
    /// The kernel uses an operator the backend does not know.
    UnsupportedOperator { operator: String, error: KernelError },
    /// The kernel uses a construct the backend does not accept (an element type, a tuple, a
    /// reduce form, an operator outside the single-computation subset).
    Unsupported(KernelError),
    /// No program of the ISA computes the kernel: `operation` (at `file:line`) is the first
    /// one found without an instruction, `message` says why.
    Inexpressible { file: String, line: usize, operation: String, message: String },
    /// Selection returned no candidate program.
    NoCandidate,
    /// No candidate could be placed in memory.
    NoPlacement { found: usize, unplaced: Vec<Unplaced> },
    /// The time limit fired before any candidate was placed.
    TimeLimit { limit: Duration, tried: usize },
    /// The cost model failed on a candidate.
    CostModel { candidate: usize, path: PathBuf, error: CostError },
    /// The kernel's parameters and result have no HBM layout.
    Signature(LayoutError),
    /// The ISA table cannot be used.
    Table(TableError),
    /// A file or directory could not be made.
    Io { what: String, error: std::io::Error },
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Syntax(e) | CompileError::Unsupported(e) => write!(f, "{e}"),
            CompileError::UnsupportedOperator { error, .. } => write!(f, "{error}"),
            CompileError::Inexpressible { file, line, message, .. } => {
                write!(f, "{file}:{line}: {message}")
            }
            CompileError::NoCandidate => {
                write!(f, "instruction selection found no candidate program")
            }
            CompileError::NoPlacement { found, unplaced } => {
                // Selection offers variants that spill values to HBM among the candidates.
                write!(
                    f,
                    "the kernel does not fit in memory even with spilling: none of the {found} \
                     candidates could be placed:"
                )?;
                for u in unplaced {
                    write!(f, "\n  candidate {}: {}: {}", u.candidate, u.status.name(), u.message)?;
                }
                Ok(())
            }
            CompileError::TimeLimit { limit, tried } => write!(
                f,
                "the {} s time limit was reached after {tried} candidates, none of them placed",
                limit.as_secs_f64()
            ),
            CompileError::CostModel { candidate, path, error } => write!(
                f,
                "cost model failed on candidate {candidate} ({}): {error}",
                path.display()
            ),
            CompileError::Signature(e) => write!(f, "kernel signature: {e}"),
            CompileError::Table(e) => write!(f, "{e}"),
            CompileError::Io { what, error } => write!(f, "cannot {what}: {error}"),
        }
    }
}

impl std::error::Error for CompileError {}

impl From<SelectError> for CompileError {
    fn from(e: SelectError) -> CompileError {
        match e {
            SelectError::NoInstruction { file, line, op, message } => {
                CompileError::Inexpressible { file, line, operation: op, message }
            }
            SelectError::BadTable(t) => CompileError::Table(t),
        }
    }
}

impl From<DriverError> for CompileError {
    fn from(e: DriverError) -> CompileError {
        match e {
            DriverError::Cost { candidate, path, error } => {
                CompileError::CostModel { candidate, path, error }
            }
            DriverError::Layout(e) => CompileError::Signature(e),
            DriverError::Io { path, error } => {
                CompileError::Io { what: format!("write {}", path.display()), error }
            }
        }
    }
}

/// Sorts a kernel front-end error; `text` is the kernel, to read the operator's name from.
fn kernel_error(error: KernelError, text: &str) -> CompileError {
    match error.kind {
        KernelErrorKind::UnknownOperator => {
            let operator = word_at(text, error.line, error.col);
            CompileError::UnsupportedOperator { operator, error }
        }
        KernelErrorKind::Unsupported => CompileError::Unsupported(error),
        _ => CompileError::Syntax(error),
    }
}

/// The name starting at `line:col` (both from 1).
fn word_at(text: &str, line: usize, col: usize) -> String {
    let Some(row) = text.lines().nth(line.saturating_sub(1)) else { return String::new() };
    row.chars()
        .skip(col.saturating_sub(1))
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect()
}

fn lock(progress: &Mutex<Progress>) -> MutexGuard<'_, Progress> {
    // A panic elsewhere leaves the data as it was: still worth reporting.
    progress.lock().unwrap_or_else(|p| p.into_inner())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Compiles `kernel_text` for `options.target`.
///
/// Selection recurses over the e-graph: large kernels want a thread with a large stack.
pub fn compile(kernel_text: &str, options: &CompileOptions) -> Result<Assembly, CompileError> {
    let started = Instant::now();
    let target = &*options.target;
    let progress = &*options.progress;
    let say = |line: &str| say(options, line);
    {
        let mut p = lock(progress);
        p.free_attributes = target.patterns.free.clone();
        p.phase = "parsing the kernel";
    }
    for free in &target.patterns.free {
        say(&format!(
            "{}: computational attribute `{}` is used by no shape or expression of its \
             semantics; it is set to {}",
            free.instruction, free.attribute, free.value
        ));
    }

    let clock = Instant::now();
    let written = kernel::parse_kernel_as_written(kernel_text, &options.file)
        .map_err(|e| kernel_error(e, kernel_text))?;
    let kernel = kernel::lowered(written.clone());
    let parsed = clock.elapsed();
    say(&format!("parse: {:.3} ms", ms(parsed)));
    {
        let mut p = lock(progress);
        p.parse = Some(parsed);
        p.module = Some(kernel.name.clone());
        p.hlo = HloInstruction::list(&kernel);
    }

    let scratch;
    let dir = match &options.candidates_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|error| CompileError::Io {
                what: format!("create {}", d.display()),
                error,
            })?;
            d.clone()
        }
        None => {
            scratch = ScratchDir::new("act-backend").map_err(|error| CompileError::Io {
                what: "create a scratch directory".into(),
                error,
            })?;
            scratch.path().to_path_buf()
        }
    };
    let tiles = |k: &Kernel| select::tile_count(k, &target.isa, &target.patterns);
    let mut whole = NO_BLOCKS.to_string();
    let rows_written = select::result_tile_rows(&kernel, &target.isa, &target.patterns);
    let max_tiles = select::block_tiles(&target.isa, &target.patterns);
    // A channels-first convolution whose channels-last form is banded runs in stages, and so
    // does one whose elementwise work reads a parameter transposed to channels-last (whole,
    // the ISA would have to transpose it on chip; Gemmini cannot, for int32, and its search
    // runs to the node limit before it refuses).
    let stages = crate::stages::plan(&written);
    let staged_first =
        stages.as_ref().is_some_and(|stages| stages.iter().any(|s| s.beside) || banded_stage(stages, tiles, max_tiles));
    if let Some(stages) = stages.as_ref().filter(|_| staged_first) {
        say(&format!("compiling {} stages: {}", stages.len(), stages.iter().map(|s| s.kernel.name.as_str()).collect::<Vec<_>>().join(", ")));
        // A stage refused (a transpose an ISA computes only fused with what reads it) leaves
        // the kernel to the whole search, as a stage that cannot be moved does.
        match in_stages(&kernel, stages, options, &dir, started) {
            Ok(Some(assembly)) => return Ok(assembly),
            Ok(None) | Err(CompileError::Inexpressible { .. } | CompileError::NoPlacement { .. }) => {
                say("a stage was not compiled on its own, or its program reads or writes HBM where it cannot be moved; compiling the kernel whole");
                restart(options);
            }
            Err(e) => return Err(e),
        }
    }
    if let Some(bands) = bands::plan(&written, &kernel, tiles, max_tiles) {
        say(&format!(
            "compiling bands of {} output rows of its {} output ({} kernels), run {} times in all",
            bands.rows,
            dims(&kernel.outputs[0].shape),
            bands.bands.len(),
            bands.runs()
        ));
        match in_bands(&kernel, &bands, options, &dir, started)? {
            Some(assembly) => return Ok(assembly),
            None => {
                say("a band's program reads or writes HBM where it cannot be moved to the other bands; compiling the kernel whole");
                restart(options);
            }
        }
    }
    if let Some(plan) = partition::plan(&kernel, tiles, max_tiles, rows_written) {
        let back = plan.levels.last().map_or(0, |l| l.back);
        // The innermost split dimension: columns where it is the last of a matrix's.
        let shape = &kernel.outputs[0].shape;
        let along = plan.part.iter().zip(shape).rposition(|(p, n)| p != n);
        let lines = if shape.len() >= 2 && along == Some(shape.len() - 1) { "columns" } else { "rows" };
        let overlap = if back > 0 { format!("; the last block starts {back} {lines} early, computing them again") } else { String::new() };
        say(&format!(
            "compiling one block of {} of its {} output ({} tiles), run {} times{overlap}",
            dims(&plan.part),
            dims(&kernel.outputs[0].shape),
            plan.tiles,
            plan.blocks()
        ));
        whole = match place(&plan.block, options, &dir, started) {
            Ok(placed) => match in_blocks(&kernel, &plan, placed, options, &dir) {
                Some(assembly) => return Ok(assembly),
                None => "a block's program reads or writes HBM where it cannot be moved to the other blocks".to_string(),
            },
            Err(e) => format!("one block was not compiled ({e})"),
        };
        say(&format!("{whole}; compiling the kernel whole"));
        restart(options);
    }
    let placed = match too_many_tiles(&kernel, tiles(&kernel), &whole, options) {
        Some(refusal) => Err(refusal),
        None => place(&kernel, options, &dir, started),
    };
    let (report, warning) = match placed {
        Ok(placed) => placed,
        // Whole, a convolution is searched with the transposes of its layouts, which an ISA
        // may compute only as a kernel's inputs or results (Gemmini transposes int32 values
        // a column at a time through HBM): in stages they are.
        Err(refusal @ (CompileError::Inexpressible { .. } | CompileError::NoPlacement { .. })) => {
            let Some(stages) = stages.filter(|_| !staged_first) else { return Err(refusal) };
            say(&format!("{refusal}; compiling {} stages instead", stages.len()));
            restart(options);
            return match in_stages(&kernel, &stages, options, &dir, started) {
                Ok(Some(assembly)) => Ok(assembly),
                _ => Err(refusal),
            };
        }
        Err(e) => return Err(e),
    };
    let best = report.best.clone().expect("an outcome without error has a best candidate");
    let instructions =
        report.records.iter().find(|r| r.index == best.index).map_or(0, |r| r.instructions);
    Ok(Assembly {
        text: best.assembly,
        cost: best.cost,
        instructions,
        candidate: best.index,
        warning,
        free_attributes: report.free_attributes.clone(),
        report,
    })
}

/// Whether one of `stages` is a kernel [`bands::plan`] cuts into bands: only then is a kernel
/// worth running in stages (a smaller one is searched whole, its transposes fused).
fn banded_stage(stages: &[crate::stages::Stage], tiles: impl Fn(&Kernel) -> usize, max_tiles: usize) -> bool {
    stages.iter().any(|s| bands::plan(&s.kernel, &kernel::lowered(s.kernel.clone()), &tiles, max_tiles).is_some())
}

/// Why a kernel that does not split into blocks is compiled whole.
const NO_BLOCKS: &str = "no split into blocks computes it (a block is a part of the leading dimension of \
    each result, computed from one range of the bytes of each input it splits and all of the others)";

/// A refusal of a kernel compiled whole (`whole` says why) whose tiles are more than any
/// search could hold (`select::most_tiles_searched`), given before a search that would grow
/// for minutes and gigabytes to its node limit and refuse then. Not a proof that no program
/// exists: the message says which limit it meets.
fn too_many_tiles(kernel: &Kernel, tiles: usize, whole: &str, options: &CompileOptions) -> Option<CompileError> {
    let (most, per_tile) = select::most_tiles_searched(&options.target.isa, &options.target.patterns);
    if tiles <= most {
        return None;
    }
    // A proof that no program exists says more than a limit.
    if let Some(proof) = select::refusal_without_search(kernel, &options.target.isa) {
        return Some(proof.into());
    }
    let result = &kernel.nodes[kernel.results[0]];
    Some(CompileError::Inexpressible {
        file: kernel.file.clone(),
        line: result.line,
        operation: result.op.hlo_name().to_string(),
        message: format!(
            "the kernel is not searched: it has {tiles} tiles as the tiling rules count them ({per_tile} \
             e-nodes each), more than {} times what the largest search holds ({} e-nodes), and {whole} \
             ({})",
            select::SEARCH_OVERREACH,
            select::MAX_TILED_NODES,
            result.text
        ),
    })
}

/// Clears the progress of a search before another one starts, keeping what the kernel's
/// parse reported.
fn restart(options: &CompileOptions) {
    let mut p = lock(&options.progress);
    *p = Progress { free_attributes: p.free_attributes.clone(), parse: p.parse, module: p.module.clone(), hlo: p.hlo.clone(), ..Progress::default() };
}

/// The interface of `kernel` as the assembly sees it.
fn signature(kernel: &Kernel) -> Signature {
    Signature { module: kernel.name.clone(), inputs: kernel.params.clone(), outputs: kernel.outputs.clone() }
}

/// A shape as `64x16` (`scalar` for none).
pub(crate) fn dims(shape: &[i64]) -> String {
    if shape.is_empty() {
        return "scalar".into();
    }
    shape.iter().map(i64::to_string).collect::<Vec<_>>().join("x")
}

/// Hands `line` to the listener as progress.
fn say(options: &CompileOptions, line: &str) {
    if let Some(listen) = &options.listener {
        listen(Message::Progress(line));
    }
}

/// The assembly of `kernel` as `plan`'s blocks ([`blocked`]); `None` where the program cannot
/// be moved.
fn in_blocks(kernel: &Kernel, plan: &partition::Plan, placed: (Progress, Option<String>), options: &CompileOptions, dir: &std::path::Path) -> Option<Assembly> {
    let blocks = plan.blocks();
    let assembly = blocked(kernel, plan, placed, options, dir)?.assembly(kernel, options, dir, "blocks.py", Split::Parts(blocks, plan.part.clone()))?;
    say(options, &format!("{blocks} blocks: {} instructions, cost {}", assembly.instructions, assembly.cost));
    Some(assembly)
}

/// The program of `kernel` as `plan`'s blocks, each running the program `placed` found for
/// one block, moved to its rows; `None` where the program cannot be moved.
fn blocked(kernel: &Kernel, plan: &partition::Plan, placed: (Progress, Option<String>), options: &CompileOptions, dir: &std::path::Path) -> Option<Composed> {
    let (report, warning) = placed;
    let best = report.best.clone()?;
    let (sig, block_sig) = (signature(kernel), signature(&plan.block));
    let (layout, block_layout) = (HbmLayout::packed(&sig).ok()?, HbmLayout::packed(&block_sig).ok()?);
    let program = partition::instantiated(&options.target.isa, plan, &best.program, &block_layout, &sig, &layout)?;
    // The cost model costs the whole program; the table's weights, added to one block's, are
    // the block's times the blocks.
    let weights = table_weights(dir, &best)? * plan.blocks() as f64;
    Some(Composed { program, weights, report, warning, candidate: best.index })
}

/// What the table's weights add to the cost model's cost of `best`'s assembly (a candidate
/// written in `dir`): a part's, which a program made of parts adds once per run of it.
fn table_weights(dir: &std::path::Path, best: &Best) -> Option<f64> {
    Some(best.cost - crate::cost::cost_of(&dir.join(format!("candidate_{}.py", best.index))).ok()?)
}

/// A program made of the programs of other kernels (blocks, bands, stages), placed in its kernel's
/// packed layout: what the cost model's table weights add to its assembly's cost, and the
/// report, warning and candidate of the last search it ran.
struct Composed {
    program: crate::emit::PlacedProgram,
    weights: f64,
    report: Progress,
    warning: Option<String>,
    candidate: usize,
}

impl Composed {
    /// Its assembly for `kernel`, written to `name` in `dir` and costed; `blocks` as the
    /// report gives them. `None` where it cannot be written or costed.
    fn assembly(self, kernel: &Kernel, options: &CompileOptions, dir: &std::path::Path, name: &str, split: Split) -> Option<Assembly> {
        // Literals the parts' programs find in HBM are placed apart (a check: one part's
        // literal over another's would hand one of them the wrong values).
        let mut literals: Vec<(i64, i64)> = self.program.constants.iter().map(|(addr, ty, _)| (*addr, addr + ty.bytes())).collect();
        literals.sort_unstable();
        if literals.windows(2).any(|w| w[1].0 < w[0].1) {
            return None;
        }
        let sig = signature(kernel);
        let layout = HbmLayout::packed(&sig).ok()?;
        let text = self.program.assembly(&options.target.isa, &sig, &layout).ok()?;
        let path = dir.join(name);
        std::fs::write(&path, &text).ok()?;
        let cost = crate::cost::cost_of(&path).ok()? + self.weights;
        let instructions = self.program.steps.len();
        let mut report = self.report;
        report.program_cost = Some(cost);
        match split {
            Split::Parts(count, part) => report.blocks = Some((count, part)),
            Split::Stages(count) => report.stages = Some(count),
        }
        *lock(&options.progress) = report.clone();
        Some(Assembly { text, cost, instructions, candidate: self.candidate, warning: self.warning, free_attributes: report.free_attributes.clone(), report })
    }
}

/// How a [`Composed`] program splits its kernel, as the report gives it.
enum Split {
    /// Runs of block or band kernels: how many runs, and the shape of one run's part of the
    /// output.
    Parts(i64, Vec<i64>),
    /// Stages: how many.
    Stages(usize),
}

/// The assembly of `kernel` as `bands` ([`banded`]); `None` where a band's program cannot be
/// moved. A band that does not compile refuses the kernel.
fn in_bands(kernel: &Kernel, bands: &bands::Bands, options: &CompileOptions, dir: &std::path::Path, started: Instant) -> Result<Option<Assembly>, CompileError> {
    let Some(composed) = banded(kernel, bands, options, dir, started)? else { return Ok(None) };
    let mut part = kernel.outputs[0].shape.clone();
    part[0] = 1;
    part[1] = bands.rows;
    let Some(assembly) = composed.assembly(kernel, options, dir, "bands.py", Split::Parts(bands.runs() as i64, part)) else { return Ok(None) };
    say(options, &format!("{} bands: {} instructions, cost {}", bands.runs(), assembly.instructions, assembly.cost));
    Ok(Some(assembly))
}

/// The program of `kernel` as `bands`: each band's kernel compiled once (its candidates in a
/// folder of `dir` of its own), each run of its program moved to its rows, the runs' scratch
/// shared and each band's literals placed apart; `None` where a band's program cannot be
/// moved. A band that does not compile refuses the kernel.
fn banded(kernel: &Kernel, bands: &bands::Bands, options: &CompileOptions, dir: &std::path::Path, started: Instant) -> Result<Option<Composed>, CompileError> {
    let isa = &options.target.isa;
    let sig = signature(kernel);
    let Ok(layout) = HbmLayout::packed(&sig) else { return Ok(None) };
    let (mut steps, mut constants) = (Vec::new(), Vec::new());
    let mut scratch = layout.output.end();
    let mut hbm_end = scratch;
    let mut weights = 0.0;
    let mut last = None;
    for (k, band) in bands.bands.iter().enumerate() {
        let sub = dir.join(format!("band_{k}"));
        std::fs::create_dir_all(&sub).map_err(|error| CompileError::Io { what: format!("create {}", sub.display()), error })?;
        restart(options);
        let (report, warning) = place(&band.kernel, options, &sub, started)?;
        let Some(best) = report.best.clone() else { return Ok(None) };
        let Ok(block) = HbmLayout::packed(&signature(&band.kernel)) else { return Ok(None) };
        let offsets = |i: usize| band.runs.iter().map(|r| r[i]).collect::<Vec<i64>>();
        let mut regions: Vec<partition::Region> = block
            .inputs
            .iter()
            .zip(&layout.inputs)
            .enumerate()
            .map(|(p, (b, w))| partition::Region { start: b.addr, end: b.end(), moved: w.addr - b.addr, offsets: offsets(p), whole_end: w.end(), runs: None })
            .collect();
        let (out, whole) = (block.output, layout.output);
        regions.push(partition::Region { start: out.addr, end: out.end(), moved: whole.addr - out.addr, offsets: offsets(block.inputs.len()), whole_end: whole.end(), runs: None });
        let moved = scratch - out.end();
        regions.push(partition::Region { start: out.end(), end: i64::MAX, moved, offsets: vec![0; band.runs.len()], whole_end: i64::MAX, runs: None });
        regions.retain(|r| r.start < r.end);
        let Some((run_steps, end)) = partition::moved_runs(isa, &best.program, &regions, band.runs.len()) else { return Ok(None) };
        steps.extend(run_steps);
        constants.extend(best.program.constants.iter().map(|(addr, ty, bits)| (addr + moved, ty.clone(), bits.clone())));
        scratch += best.program.hbm_end - out.end();
        hbm_end = hbm_end.max(end).max(scratch);
        let Some(one) = table_weights(&sub, &best) else { return Ok(None) };
        weights += one * band.runs.len() as f64;
        last = Some((report, warning, best.index));
    }
    let Some((report, warning, candidate)) = last else { return Ok(None) };
    let program = crate::emit::PlacedProgram { steps, constants, hbm_end };
    Ok(Some(Composed { program, weights, report, warning, candidate }))
}

/// The assembly of `kernel` as `stages` ([`crate::stages`]), each stage's kernel compiled
/// on its own (in bands, in blocks or whole: [`stage_program`]) and the stages run one after
/// another: each one's program moved to where its parameters lie (the kernel's inputs, or
/// earlier stages' results, kept after the kernel's output) and to where its result goes
/// (the next free HBM, or the kernel's output for the last), each stage's scratch after the
/// results and the scratch of the stages before it. `None` where a stage cannot be compiled
/// so or its program moved; a stage's refusal is the error.
fn in_stages(kernel: &Kernel, stages: &[crate::stages::Stage], options: &CompileOptions, dir: &std::path::Path, started: Instant) -> Result<Option<Assembly>, CompileError> {
    use crate::stages::Source;
    let isa = &options.target.isa;
    let Ok(layout) = HbmLayout::packed(&signature(kernel)) else { return Ok(None) };
    // Where each stage's result lies: the kernel's output for the last, else one after another
    // past the output.
    let mut results = Vec::with_capacity(stages.len());
    let mut next = layout.output.end();
    for (j, stage) in stages.iter().enumerate() {
        if j + 1 == stages.len() {
            results.push(layout.output);
        } else {
            let bytes = stage.kernel.outputs[0].bytes();
            results.push(crate::layout::Placed { addr: next, bytes });
            next += bytes;
        }
    }
    // Each stage's scratch after the ones before: the literals a stage's program finds in HBM
    // are placed there before the kernel runs, and an earlier stage's scratch must not
    // overwrite them.
    let mut scratch = next;
    let (mut steps, mut constants, mut hbm_end, mut weights) = (Vec::new(), Vec::new(), scratch, 0.0);
    let mut last = None;
    for (j, stage) in stages.iter().enumerate() {
        let sub = dir.join(format!("stage_{j}"));
        std::fs::create_dir_all(&sub).map_err(|error| CompileError::Io { what: format!("create {}", sub.display()), error })?;
        restart(options);
        say(options, &format!("stage {} of {}: {}", j + 1, stages.len(), stage.kernel.name));
        let Some((composed, own)) = stage_program(&stage.kernel, options, &sub, started)? else { return Ok(None) };
        let whole = |p: usize| match stage.inputs[p] {
            Source::Param(i) => layout.inputs[i],
            Source::Stage(s) => results[s],
        };
        let mut regions: Vec<partition::Region> = own
            .inputs
            .iter()
            .enumerate()
            .map(|(p, b)| partition::Region { start: b.addr, end: b.end(), moved: whole(p).addr - b.addr, offsets: vec![0], whole_end: whole(p).end(), runs: None })
            .collect();
        let out = own.output;
        regions.push(partition::Region { start: out.addr, end: out.end(), moved: results[j].addr - out.addr, offsets: vec![0], whole_end: results[j].end(), runs: None });
        let moved = scratch - out.end();
        regions.push(partition::Region { start: out.end(), end: i64::MAX, moved, offsets: vec![0], whole_end: i64::MAX, runs: None });
        regions.retain(|r| r.start < r.end);
        let Some((stage_steps, end)) = partition::moved_runs(isa, &composed.program, &regions, 1) else { return Ok(None) };
        steps.extend(stage_steps);
        constants.extend(composed.program.constants.iter().map(|(addr, ty, bits)| (addr + moved, ty.clone(), bits.clone())));
        scratch += (composed.program.hbm_end - out.end()).max(0);
        hbm_end = hbm_end.max(end).max(scratch);
        weights += composed.weights;
        last = Some((composed.report, composed.warning, composed.candidate));
    }
    let Some((report, warning, candidate)) = last else { return Ok(None) };
    let program = crate::emit::PlacedProgram { steps, constants, hbm_end };
    let composed = Composed { program, weights, report, warning, candidate };
    let Some(assembly) = composed.assembly(kernel, options, dir, "stages.py", Split::Stages(stages.len())) else { return Ok(None) };
    say(options, &format!("{} stages: {} instructions, cost {}", stages.len(), assembly.instructions, assembly.cost));
    Ok(Some(assembly))
}

/// The program of one stage's kernel (`written`, as written) in its own packed layout, and
/// that layout: in bands where it is a banded kernel, in blocks where it splits into them,
/// else whole where one search holds its tiles; `None` otherwise, or where a band's or a
/// block's program cannot be moved. A stage's refusal is the error.
fn stage_program(written: &Kernel, options: &CompileOptions, dir: &std::path::Path, started: Instant) -> Result<Option<(Composed, HbmLayout)>, CompileError> {
    let target = &*options.target;
    let kernel = kernel::lowered(written.clone());
    let Ok(layout) = HbmLayout::packed(&signature(&kernel)) else { return Ok(None) };
    let tiles = |k: &Kernel| select::tile_count(k, &target.isa, &target.patterns);
    let max_tiles = select::block_tiles(&target.isa, &target.patterns);
    if let Some(bands) = bands::plan(written, &kernel, tiles, max_tiles) {
        return Ok(banded(&kernel, &bands, options, dir, started)?.map(|c| (c, layout)));
    }
    let rows_written = select::result_tile_rows(&kernel, &target.isa, &target.patterns);
    if let Some(plan) = partition::plan(&kernel, tiles, max_tiles, rows_written) {
        let placed = place(&plan.block, options, dir, started)?;
        return Ok(blocked(&kernel, &plan, placed, options, dir).map(|c| (c, layout)));
    }
    if select::most_tiles_searched(&target.isa, &target.patterns).0 < tiles(&kernel) {
        return Ok(None);
    }
    let (report, warning) = place(&kernel, options, dir, started)?;
    let Some(best) = report.best.clone() else { return Ok(None) };
    let Some(weights) = table_weights(dir, &best) else { return Ok(None) };
    Ok(Some((Composed { program: best.program, weights, report, warning, candidate: best.index }, layout)))
}

/// Selects instructions for `kernel` and tries the candidates, writing them into `dir`: the
/// finished report, whose best candidate is the answer, and a warning when the time limit cut
/// the search short.
fn place(kernel: &Kernel, options: &CompileOptions, dir: &std::path::Path, started: Instant) -> Result<(Progress, Option<String>), CompileError> {
    let target = &*options.target;
    let isa = &target.isa;
    let progress = &*options.progress;
    let say = |line: &str| say(options, line);
    let warn = |line: &str| {
        if let Some(listen) = &options.listener {
            listen(Message::Warning(line));
        }
    };
    lock(progress).phase = "instruction selection";
    let clock = Instant::now();
    let selection = select::select_with(kernel, isa, &target.patterns, &options.select)?;
    let selected = clock.elapsed();
    let s = &selection.stats;
    say(&format!(
        "select: {:.3} ms (rewrite {:.3}, match {:.3}, extract {:.3}); e-graph {} nodes, {} \
         classes after {} iterations ({}{}); {} candidates; lower bound {}",
        ms(selected),
        s.rewrite_ms,
        s.match_ms,
        s.extract_ms,
        s.egraph_nodes,
        s.egraph_classes,
        s.iterations,
        s.stop_reason,
        if s.rules_held_back { ", frequent rules held back" } else { "" },
        selection.candidates.len(),
        s.lower_bound.map_or("unknown".to_string(), |b| b.to_string())
    ));
    {
        let mut p = lock(progress);
        p.select = Some(selected);
        p.stats = Some(selection.stats.clone());
        p.candidates_found = Some(selection.candidates.len());
        p.origins = selection.origins.clone();
        p.phase = "the candidate loop";
    }

    let sig = signature(kernel);
    // The bound holds for the table's costs, which only the default model adds up.
    let lower_bound = if crate::cost::DEFAULT_MODEL { selection.stats.lower_bound } else { None };
    let config = Config {
        deadline: options.time_limit.map(|l| started + l),
        lower_bound,
        ..options.driver.clone()
    };
    let mut observe = |record: &CandidateRecord, best: Option<&Best>| {
        say(&candidate_line(record));
        if matches!(record.status, Status::Malformed | Status::Invalid) {
            warn(&format!(
                "candidate {} skipped, a backend bug: {}",
                record.index, record.message
            ));
        }
        let mut p = lock(progress);
        p.records.push(record.clone());
        if best.map(|b| b.index) != p.best.as_ref().map(|b| b.index) {
            p.best = best.cloned();
        }
    };
    let mut run = driver::run(
        isa,
        &sig,
        &selection.candidates,
        dir,
        &config,
        &options.cancel,
        &mut observe,
    )?;
    // Where every candidate overfilled a buffer, programs of smaller tiles may fit: each
    // value within half its buffer, then within a quarter.
    let mut tried = selection.candidates.clone();
    for divisor in NARROWING {
        if run.best.is_some() || run.stop == StopReason::TimeLimit || tried.is_empty() {
            break;
        }
        lock(progress).phase = "instruction selection of smaller tiles";
        let clock = Instant::now();
        let Some(narrow) = select::select_narrow(kernel, isa, &target.patterns, &options.select, divisor) else {
            continue;
        };
        let (candidates, origins): (Vec<_>, Vec<_>) =
            narrow.candidates.into_iter().zip(narrow.origins).filter(|(g, _)| !tried.contains(g)).unzip();
        say(&format!(
            "select within 1/{divisor} of each buffer: {:.3} ms; {} more candidates",
            ms(clock.elapsed()),
            candidates.len()
        ));
        let config = Config { first_index: tried.len(), ..config.clone() };
        tried.extend(candidates.iter().cloned());
        {
            let mut p = lock(progress);
            p.candidates_found = Some(tried.len());
            p.origins.extend(origins);
            p.phase = "the candidate loop";
        }
        let more = driver::run(isa, &sig, &candidates, dir, &config, &options.cancel, &mut observe)?;
        run.phases.add(&more.phases);
        run.records.extend(more.records);
        run.best = more.best;
        run.stop = more.stop;
    }
    let report = {
        let mut p = lock(progress);
        p.stop = Some(run.stop);
        p.phases = run.phases;
        p.phase = "done";
        p.clone()
    };
    say(&format!(
        "schedule {:.3} ms, allocate {:.3} ms, emit {:.3} ms, cost {:.3} ms",
        ms(run.phases.schedule),
        ms(run.phases.allocate),
        ms(run.phases.emit),
        ms(run.phases.cost)
    ));
    let limit = options.time_limit.unwrap_or_default();
    let warning = outcome(&report, limit)?;
    Ok((report, warning))
}

/// The shares of a buffer (1/2, then 1/4) that the selections after a first one whose
/// candidates all overfill a buffer keep every on-chip value within.
const NARROWING: [i64; 2] = [2, 4];

/// What a finished candidate loop comes to: the best candidate, with a warning when the
/// time limit cut the search short, or the error saying why there is none.
fn outcome(p: &Progress, limit: Duration) -> Result<Option<String>, CompileError> {
    let timed_out = p.stop == Some(StopReason::TimeLimit);
    match &p.best {
        Some(best) if timed_out => Ok(Some(format!(
            "the {} s time limit was reached after {} of {} candidates; emitting candidate {}, \
             the best so far",
            limit.as_secs_f64(),
            p.records.len(),
            p.candidates_found.unwrap_or(0),
            best.index
        ))),
        Some(_) => Ok(None),
        None if timed_out => Err(CompileError::TimeLimit { limit, tried: p.records.len() }),
        None => match p.candidates_found.unwrap_or(0) {
            0 => Err(CompileError::NoCandidate),
            found => Err(CompileError::NoPlacement {
                found,
                unplaced: p
                    .records
                    .iter()
                    .map(|r| Unplaced {
                        candidate: r.index,
                        status: r.status,
                        message: r.message.clone(),
                    })
                    .collect(),
            }),
        },
    }
}


fn candidate_line(r: &CandidateRecord) -> String {
    let outcome = match (r.status, r.cost) {
        (Status::Solved, Some(cost)) => format!(
            "cost {cost} (order {}, {} allocated, {} skipped)",
            r.order.unwrap_or("?"),
            r.orders_tried,
            r.orders_skipped
        ),
        (status, _) => format!("{}: {}", status.name(), r.message),
    };
    let p = &r.phases;
    format!(
        "candidate {}: {} instructions, {outcome} [schedule {:.3} ms, allocate {:.3} ms, emit \
         {:.3} ms, cost {:.3} ms]",
        r.index,
        r.instructions,
        ms(p.schedule),
        ms(p.allocate),
        ms(p.emit),
        ms(p.cost)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory_map::MemoryMap;

    fn best(index: usize) -> Best {
        Best { index, cost: 9.0, assembly: String::new(), memory: MemoryMap::default(), program: Default::default() }
    }

    #[test]
    fn the_outcome_is_the_best_with_a_warning_when_the_time_limit_cut_the_search() {
        let mut p =
            Progress { best: Some(best(2)), candidates_found: Some(5), ..Progress::default() };
        assert!(matches!(outcome(&p, Duration::from_secs(1)), Ok(None)));
        p.stop = Some(StopReason::TimeLimit);
        let Ok(Some(warning)) = outcome(&p, Duration::from_secs(1)) else { panic!() };
        assert!(warning.contains("1 s time limit"), "{warning}");
        assert!(warning.contains("emitting candidate 2"), "{warning}");
    }

    #[test]
    fn the_outcome_without_a_candidate_says_why() {
        let limit = Duration::from_millis(500);
        let mut p = Progress { candidates_found: Some(0), ..Progress::default() };
        let err = outcome(&p, limit).unwrap_err().to_string();
        assert!(err.contains("found no candidate"), "{err}");
        p.stop = Some(StopReason::TimeLimit);
        let err = outcome(&p, limit).unwrap_err().to_string();
        assert!(err.contains("0.5 s time limit was reached after 0 candidates"), "{err}");
    }

    #[test]
    fn an_unknown_operator_is_named_from_the_kernel_text() {
        let text = "HloModule m\n\nENTRY e {\n  ROOT r = f32[2] frobnicate(f32[2] x)\n}\n";
        assert_eq!(word_at(text, 4, 19), "frobnicate");
        assert_eq!(word_at(text, 9, 1), "");
    }
}
