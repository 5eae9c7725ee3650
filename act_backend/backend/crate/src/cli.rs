//! The command line: `backend --input kernel.hlo --output kernel.py [options]`.
//!
//! Exit status: 0 when the assembly was written, 1 when the compile failed (the message says
//! why; no output file is left behind, not even one from an earlier run), 2 for a usage
//! error. `main` returns normally in every case, so the cost library's `atexit` handlers run.

use crate::driver::{self, Best, CandidateRecord, Config, Status, StopReason};
use crate::isa::Isa;
use crate::kernel;
use crate::layout::{Signature, Tensor};
use crate::output::{write_atomically, ScratchDir};
use crate::report::Progress;
use crate::select::{self, SelectLimits};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long past the time limit the compile thread gets to hand back its best candidate.
const GRACE: Duration = Duration::from_secs(2);
/// Selection recurses over the e-graph; give it room.
const STACK_BYTES: usize = 256 << 20;

#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub input: PathBuf,
    pub output: PathBuf,
    pub report_dir: Option<PathBuf>,
    pub time_limit: Option<Duration>,
    pub verbose: bool,
    pub quiet: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Compile(Args),
    Help,
    Version,
}

/// Parses the arguments after the program name; `Err` is a usage error.
pub fn parse_args(argv: &[OsString]) -> Result<Command, String> {
    let mut input = None;
    let mut output = None;
    let mut report_dir = None;
    let mut time_limit = None;
    let (mut verbose, mut quiet) = (false, false);
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let text = arg.to_string_lossy();
        let (flag, inline) = match text.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(OsString::from(v))),
            _ => (text.to_string(), None),
        };
        let mut value = |name: &str| -> Result<OsString, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "--input" => input = Some(PathBuf::from(value("--input")?)),
            "--output" => output = Some(PathBuf::from(value("--output")?)),
            "--report-dir" => report_dir = Some(PathBuf::from(value("--report-dir")?)),
            "--time-limit" => {
                let v = value("--time-limit")?;
                let secs: f64 = v.to_string_lossy().parse().map_err(|_| {
                    format!("--time-limit: expected a number of seconds, found {v:?}")
                })?;
                if !(secs.is_finite() && secs > 0.0) {
                    return Err(format!("--time-limit: expected a positive number, found {secs}"));
                }
                time_limit = Some(Duration::from_secs_f64(secs));
            }
            "-v" | "--verbose" => verbose = true,
            "-q" | "--quiet" => quiet = true,
            other if inline.is_some() => return Err(format!("unknown option {other}")),
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    if verbose && quiet {
        return Err("-v and -q cannot be used together".into());
    }
    let input = input.ok_or("missing --input KERNEL.hlo")?;
    let output = output.ok_or("missing --output KERNEL.py")?;
    Ok(Command::Compile(Args { input, output, report_dir, time_limit, verbose, quiet }))
}

fn usage(prog: &str, isa: Option<&str>) -> String {
    let target = isa.map_or(String::new(), |n| format!(" for the {n} accelerator"));
    format!(
        "usage: {prog} --input KERNEL.hlo --output KERNEL.py [options]\n\n\
         Compiles an XLA-HLO kernel into assembly{target}.\n\n\
         options:\n  \
         --input FILE          the HLO kernel to compile\n  \
         --output FILE         where the assembly goes (written whole or not at all)\n  \
         --report-dir DIR      keep every candidate's assembly and a report.json in DIR\n  \
         --time-limit SECONDS  safety net: stop trying candidates after SECONDS and emit\n                        \
         the best one so far\n  \
         -v, --verbose         phase timings and one line per candidate on stderr\n  \
         -q, --quiet           no warnings on stderr (errors are still printed)\n  \
         -h, --help            print this message\n  \
         -V, --version         print the version\n"
    )
}

/// The program: `table` is the embedded ISA table, if the binary was built with one.
pub fn main(table: Option<&str>) -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let prog = argv
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map_or("backend".into(), |n| n.to_string_lossy().into_owned());
    let isa = table.map(Isa::from_json);
    let isa_name = match &isa {
        Some(Ok(isa)) => Some(isa.name.as_str()),
        _ => None,
    };
    let command = match parse_args(argv.get(1..).unwrap_or_default()) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("{prog}: {msg}\nTry '{prog} --help' for more information.");
            return ExitCode::from(2);
        }
    };
    let args = match command {
        Command::Help => {
            print!("{}", usage(&prog, isa_name));
            return ExitCode::SUCCESS;
        }
        Command::Version => {
            let target = isa_name.map_or(String::new(), |n| format!(" for {n}"));
            println!("{prog} (act-backend compiler {}){target}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Command::Compile(args) => args,
    };
    let isa = match isa {
        Some(Ok(isa)) => isa,
        Some(Err(e)) => return fail(&args, &format!("the embedded {e}")),
        None => {
            return fail(
                &args,
                "this compiler was built without an ISA table (isa.json beside Cargo.toml); \
                 build it with act_backend.generate_backend",
            )
        }
    };
    compile(&args, Arc::new(isa))
}

/// Reports an error, removes any output file from an earlier run, and exits with 1.
fn fail(args: &Args, message: &str) -> ExitCode {
    eprintln!("error: {message}");
    remove_stale_output(args);
    ExitCode::from(1)
}

fn remove_stale_output(args: &Args) {
    let same_as_input = match (fs::canonicalize(&args.output), fs::canonicalize(&args.input)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same_as_input && args.output.is_file() {
        let _ = fs::remove_file(&args.output);
    }
}

/// What the compile thread sends back: `Err` is a compile error.
type WorkResult = Result<(), String>;

fn compile(args: &Args, isa: Arc<Isa>) -> ExitCode {
    let started = Instant::now();
    let scratch;
    let dir: PathBuf = match &args.report_dir {
        Some(d) => match fs::create_dir_all(d) {
            Ok(()) => d.clone(),
            Err(e) => return fail(args, &format!("cannot create {}: {e}", d.display())),
        },
        None => match ScratchDir::new("act-backend") {
            Ok(s) => {
                scratch = s;
                scratch.path().to_path_buf()
            }
            Err(e) => return fail(args, &format!("cannot create a scratch directory: {e}")),
        },
    };
    let progress = Arc::new(Mutex::new(Progress::default()));
    let cancel = Arc::new(AtomicBool::new(false));
    let config = Config { deadline: args.time_limit.map(|l| started + l), ..Config::default() };
    let (tx, rx) = mpsc::channel::<WorkResult>();
    let spawned = {
        let (args, isa, dir, progress, cancel) = (
            args.clone(),
            Arc::clone(&isa),
            dir.clone(),
            Arc::clone(&progress),
            Arc::clone(&cancel),
        );
        std::thread::Builder::new().name("compile".into()).stack_size(STACK_BYTES).spawn(
            move || {
                let result = work(&args, &isa, &dir, &config, &cancel, &progress);
                let _ = tx.send(result);
            },
        )
    };
    if let Err(e) = spawned {
        return fail(args, &format!("cannot start the compile thread: {e}"));
    }
    let finished = wait(&rx, args.time_limit, &cancel);
    let snapshot = lock(&progress).clone();
    let limit = args.time_limit.map_or(0.0, |l| l.as_secs_f64());
    let verdict = verdict(finished, &snapshot, limit);
    let written = verdict.and_then(|(best, warning)| {
        write_atomically(&args.output, best.assembly.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", args.output.display()))?;
        Ok(warning)
    });
    let total = started.elapsed();
    let (status, error) = match &written {
        Ok(None) => ("ok", None),
        Ok(Some(_)) => ("time_limit", None),
        Err(msg) => ("error", Some(msg.as_str())),
    };
    if let Some(dir) = &args.report_dir {
        write_report(args, dir, &isa.name, &snapshot, status, error, total);
    }
    match written {
        Ok(warning) => {
            if let (Some(w), false) = (warning, args.quiet) {
                eprintln!("warning: {w}");
            }
            if args.verbose {
                if let Some(best) = &snapshot.best {
                    eprintln!(
                        "chose candidate {} (cost {}) of {} tried ({}); total {:.3} ms",
                        best.index,
                        best.cost,
                        snapshot.records.len(),
                        snapshot.stop.map_or("stopped", StopReason::name),
                        total.as_secs_f64() * 1e3
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(msg) => fail(args, &msg),
    }
}

/// What the compile comes to once its thread answered (`Some`) or was given up on (`None`):
/// the candidate to write, with a warning when the time limit cut the search short, or the
/// compile error.
fn verdict(
    finished: Option<WorkResult>,
    p: &Progress,
    limit: f64,
) -> Result<(&Best, Option<String>), String> {
    let timed_out = p.stop == Some(StopReason::TimeLimit);
    match (finished, &p.best) {
        (Some(Err(msg)), _) => Err(msg),
        (Some(Ok(())), Some(best)) if timed_out => Ok((
            best,
            Some(format!(
                "the {limit} s time limit was reached after {} of {} candidates; emitting \
                 candidate {}, the best so far",
                p.records.len(),
                p.candidates_found.unwrap_or(0),
                best.index
            )),
        )),
        (Some(Ok(())), Some(best)) => Ok((best, None)),
        (Some(Ok(())), None) if timed_out => Err(format!(
            "the {limit} s time limit was reached after {} candidates, none of them placed",
            p.records.len()
        )),
        (Some(Ok(())), None) => Err(no_candidate_message(p)),
        (None, Some(best)) => Ok((
            best,
            Some(format!(
                "the {limit} s time limit was reached during {}; emitting candidate {}, the \
                 best so far",
                p.phase, best.index
            )),
        )),
        (None, None) => Err(format!(
            "the {limit} s time limit was reached during {}, before any candidate was placed",
            p.phase
        )),
    }
}

/// `report.json` in the report directory; failing to write it is only a warning.
fn write_report(
    args: &Args,
    dir: &Path,
    isa: &str,
    p: &Progress,
    status: &str,
    error: Option<&str>,
    total: Duration,
) {
    let json = p.to_json(&args.input.display().to_string(), isa, status, error, total);
    let text = serde_json::to_string_pretty(&json).expect("a report serialises") + "\n";
    let path = dir.join("report.json");
    if let Err(e) = write_atomically(&path, text.as_bytes()) {
        if !args.quiet {
            eprintln!("warning: cannot write {}: {e}", path.display());
        }
    }
}

/// Waits for the compile thread; `None` when it did not answer within the time limit and
/// the grace period after it. A thread given up on keeps running until the process exits; it
/// can only be stuck in selection or inside one allocator or cost-model call, since the
/// candidate loop checks the cancel flag between those.
fn wait(
    rx: &mpsc::Receiver<WorkResult>,
    limit: Option<Duration>,
    cancel: &AtomicBool,
) -> Option<WorkResult> {
    let died = || Err("internal error: the compile thread stopped without an answer".to_string());
    let Some(limit) = limit else { return Some(rx.recv().unwrap_or_else(|_| died())) };
    match rx.recv_timeout(limit) {
        Ok(r) => return Some(r),
        Err(RecvTimeoutError::Disconnected) => return Some(died()),
        Err(RecvTimeoutError::Timeout) => {}
    }
    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    match rx.recv_timeout(GRACE) {
        Ok(r) => Some(r),
        Err(RecvTimeoutError::Disconnected) => Some(died()),
        Err(RecvTimeoutError::Timeout) => None,
    }
}

fn lock(progress: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    // A panic elsewhere leaves the data as it was: still worth reporting.
    progress.lock().unwrap_or_else(|p| p.into_inner())
}

fn no_candidate_message(p: &Progress) -> String {
    let found = p.candidates_found.unwrap_or(0);
    if found == 0 {
        return "instruction selection found no candidate program".into();
    }
    let reasons: Vec<String> = p
        .records
        .iter()
        .map(|r| format!("  candidate {}: {}: {}", r.index, r.status.name(), r.message))
        .collect();
    // Selection offers variants that spill values to HBM among the candidates.
    format!(
        "the kernel does not fit in memory even with spilling: none of the {found} candidates \
         could be placed:\n{}",
        reasons.join("\n")
    )
}

/// The compile proper, on its own thread: parse, select, then the candidate loop.
fn work(
    args: &Args,
    isa: &Isa,
    dir: &Path,
    config: &Config,
    cancel: &AtomicBool,
    progress: &Mutex<Progress>,
) -> WorkResult {
    let say = |line: String| {
        if args.verbose {
            eprintln!("{line}");
        }
    };
    lock(progress).phase = "reading the kernel";
    let file = args.input.display().to_string();
    let bytes = fs::read(&args.input).map_err(|e| format!("cannot read {file}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        format!("{file}: not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to())
    })?;

    lock(progress).phase = "parsing the kernel";
    let clock = Instant::now();
    let kernel = kernel::parse_kernel(&text, &file).map_err(|e| e.to_string())?;
    let parsed = clock.elapsed();
    say(format!("parse: {:.3} ms", parsed.as_secs_f64() * 1e3));
    {
        let mut p = lock(progress);
        p.parse = Some(parsed);
        p.module = Some(kernel.name.clone());
        p.phase = "instruction selection";
    }

    let clock = Instant::now();
    let selection =
        select::select(&kernel, isa, &SelectLimits::default()).map_err(|e| e.to_string())?;
    let selected = clock.elapsed();
    let s = &selection.stats;
    say(format!(
        "select: {:.3} ms (rewrite {:.3}, match {:.3}, extract {:.3}); e-graph {} nodes, {} \
         classes after {} iterations ({}); {} candidates",
        selected.as_secs_f64() * 1e3,
        s.rewrite_ms,
        s.match_ms,
        s.extract_ms,
        s.egraph_nodes,
        s.egraph_classes,
        s.iterations,
        s.stop_reason,
        selection.candidates.len()
    ));
    {
        let mut p = lock(progress);
        p.select = Some(selected);
        p.stats = Some(selection.stats.clone());
        p.candidates_found = Some(selection.candidates.len());
        p.phase = "the candidate loop";
    }

    let sig = Signature {
        module: kernel.name.clone(),
        inputs: kernel.params.iter().map(tensor).collect(),
        output: tensor(&kernel.output),
    };
    let mut observe = |record: &CandidateRecord, best: Option<&Best>| {
        say(candidate_line(record));
        if matches!(record.status, Status::Malformed | Status::Invalid) && !args.quiet {
            eprintln!(
                "warning: candidate {} skipped, a backend bug: {}",
                record.index, record.message
            );
        }
        let mut p = lock(progress);
        p.records.push(record.clone());
        if best.map(|b| b.index) != p.best.as_ref().map(|b| b.index) {
            p.best = best.cloned();
        }
    };
    let run = driver::run(isa, &sig, &selection.candidates, dir, config, cancel, &mut observe)
        .map_err(|e| e.to_string())?;
    let mut p = lock(progress);
    p.stop = Some(run.stop);
    p.phases = run.phases;
    p.phase = "done";
    say(format!(
        "schedule {:.3} ms, allocate {:.3} ms, emit {:.3} ms, cost {:.3} ms",
        run.phases.schedule.as_secs_f64() * 1e3,
        run.phases.allocate.as_secs_f64() * 1e3,
        run.phases.emit.as_secs_f64() * 1e3,
        run.phases.cost.as_secs_f64() * 1e3
    ));
    Ok(())
}

fn tensor(t: &kernel::TensorTy) -> Tensor {
    Tensor { dtype: t.dtype.clone(), shape: t.shape.clone() }
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
        p.schedule.as_secs_f64() * 1e3,
        p.allocate.as_secs_f64() * 1e3,
        p.emit.as_secs_f64() * 1e3,
        p.cost.as_secs_f64() * 1e3
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Command, String> {
        parse_args(&list.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn parses_flags_with_separate_or_inline_values() {
        let Ok(Command::Compile(a)) =
            args(&["--input", "k.hlo", "--output=k.py", "--time-limit", "2.5", "-v"])
        else {
            panic!()
        };
        assert_eq!(a.input, PathBuf::from("k.hlo"));
        assert_eq!(a.output, PathBuf::from("k.py"));
        assert_eq!(a.time_limit, Some(Duration::from_millis(2500)));
        assert!(a.verbose && !a.quiet && a.report_dir.is_none());
    }

    fn best(index: usize) -> Best {
        Best { index, cost: 9.0, assembly: String::new() }
    }

    #[test]
    fn the_verdict_emits_the_best_and_says_when_the_time_limit_cut_the_search() {
        let mut p =
            Progress { best: Some(best(2)), candidates_found: Some(5), ..Progress::default() };
        assert!(matches!(verdict(Some(Ok(())), &p, 1.0), Ok((b, None)) if b.index == 2));
        p.stop = Some(StopReason::TimeLimit);
        let Ok((_, Some(warning))) = verdict(Some(Ok(())), &p, 1.0) else { panic!() };
        assert!(warning.contains("emitting candidate 2"), "{warning}");
        p.phase = "the candidate loop";
        let Ok((_, Some(warning))) = verdict(None, &p, 1.0) else { panic!() };
        assert!(warning.contains("during the candidate loop"), "{warning}");
    }

    #[test]
    fn the_verdict_without_a_candidate_is_an_error_that_says_why() {
        let mut p = Progress { phase: "instruction selection", ..Progress::default() };
        let err = verdict(None, &p, 0.5).unwrap_err();
        assert!(err.contains("0.5 s time limit was reached during instruction selection"), "{err}");
        assert_eq!(verdict(Some(Err("bad".into())), &p, 0.5).unwrap_err(), "bad");
        p.candidates_found = Some(0);
        let err = verdict(Some(Ok(())), &p, 0.5).unwrap_err();
        assert!(err.contains("found no candidate"), "{err}");
    }

    #[test]
    fn help_and_version_win_over_everything_else() {
        assert_eq!(args(&["--input", "x", "--help"]), Ok(Command::Help));
        assert_eq!(args(&["-V"]), Ok(Command::Version));
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        for (argv, expected) in [
            (&["--output", "k.py"][..], "missing --input"),
            (&["--input", "k.hlo"][..], "missing --output"),
            (&["--input"][..], "--input needs a value"),
            (&["--input", "a", "--output", "b", "--fast"][..], "unknown option --fast"),
            (&["--input", "a", "--output", "b", "--fast=1"][..], "unknown option --fast"),
            (&["--input", "a", "--output", "b", "extra"][..], "unexpected argument"),
            (&["--input", "a", "--output", "b", "--time-limit", "soon"][..], "number of seconds"),
            (&["--input", "a", "--output", "b", "--time-limit", "-1"][..], "positive"),
            (&["--input", "a", "--output", "b", "-v", "-q"][..], "cannot be used together"),
        ] {
            let err = args(argv).unwrap_err();
            assert!(err.contains(expected), "{argv:?}: {err}");
        }
    }
}
