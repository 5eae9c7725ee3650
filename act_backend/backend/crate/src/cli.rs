//! The command line: `backend --input kernel.hlo --output kernel.py [options]`, a thin layer
//! over [`compile`]: arguments, files (written whole or not at all), the time limit's thread,
//! printing and the exit status.
//!
//! Exit status: 0 when the assembly was written, 1 when the compile failed (the message says
//! why; no output file is left behind, not even one from an earlier run), 2 for a usage
//! error. `main` returns normally in every case, so the cost library's `atexit` handlers run.

use crate::compile::{compile, Assembly, CompileOptions, Message, Target};
use crate::driver::{Best, StopReason};
use crate::isa::Isa;
use crate::output::{write_atomically, ScratchDir};
use crate::report::Progress;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The memory picture's name in the report directory, beside `report.json`.
pub const MEMORY_SVG: &str = "memory.svg";

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
         --report-dir DIR      keep every candidate's assembly, a report.json and the\n                        \
         chosen program's memory.svg in DIR\n  \
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
    // Decoded once, at start-up: a table the compiler cannot use is reported before anything.
    let target = table.map(Target::from_json);
    let isa_name = match &target {
        Some(Ok(t)) => Some(t.isa.name.as_str()),
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
    let target = match target {
        Some(Ok(t)) => t,
        Some(Err(e)) => return fail(&args, &format!("the embedded {e}")),
        None => {
            return fail(
                &args,
                "this compiler was built without an ISA table (isa.json beside Cargo.toml); \
                 build it with act_backend.generate_backend",
            )
        }
    };
    run(&args, Arc::new(target))
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

/// What the compile thread sends back: `Err` is the compile error's message.
type WorkResult = Result<Assembly, String>;

/// Runs [`compile`] on its own thread (a large stack for selection; a time limit the main
/// thread enforces even when the thread is stuck) and writes what it answers.
fn run(args: &Args, target: Arc<Target>) -> ExitCode {
    let started = Instant::now();
    // The candidates' folder is owned here, so that it is removed even when the compile
    // thread is given up on.
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
    let mut options = CompileOptions::new(Arc::clone(&target), &args.input.display().to_string());
    options.candidates_dir = Some(dir);
    options.time_limit = args.time_limit;
    let (verbose, quiet) = (args.verbose, args.quiet);
    options.listener = Some(Arc::new(move |message| match message {
        Message::Progress(line) if verbose => eprintln!("{line}"),
        Message::Warning(line) if !quiet => eprintln!("warning: {line}"),
        _ => {}
    }));
    let progress = Arc::clone(&options.progress);
    let cancel = Arc::clone(&options.cancel);
    let (tx, rx) = mpsc::channel::<WorkResult>();
    let spawned = {
        let input = args.input.clone();
        std::thread::Builder::new().name("compile".into()).stack_size(STACK_BYTES).spawn(
            move || {
                let result = read_kernel(&input, &options.progress)
                    .and_then(|text| compile(&text, &options).map_err(|e| e.to_string()));
                let _ = tx.send(result);
            },
        )
    };
    if let Err(e) = spawned {
        return fail(args, &format!("cannot start the compile thread: {e}"));
    }
    let finished = wait(&rx, args.time_limit, &cancel);
    let snapshot = lock(&progress).clone();
    let verdict = match finished {
        Some(Ok(assembly)) => Ok((assembly.text, assembly.warning)),
        Some(Err(msg)) => Err(msg),
        None => given_up(&snapshot, args.time_limit.unwrap_or_default())
            .map(|(best, warning)| (best.assembly.clone(), Some(warning))),
    };
    let written = verdict.and_then(|(text, warning)| {
        write_atomically(&args.output, text.as_bytes())
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
        write_report(args, dir, &target.isa, &snapshot, status, error, total);
    }
    match written {
        Ok(warning) => {
            if let (Some(w), false) = (warning, args.quiet) {
                eprintln!("warning: {w}");
            }
            if args.verbose {
                if let Some(best) = &snapshot.best {
                    let of = match (&snapshot.blocks, snapshot.stages) {
                        (Some((n, shape)), _) => format!(" for one block of {} of the output, run {n} times", crate::compile::dims(shape)),
                        (None, Some(n)) => format!(" for the last of {n} stages"),
                        (None, None) => String::new(),
                    };
                    eprintln!(
                        "chose candidate {} (cost {}) of {} tried ({}){of}; total {:.3} ms",
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

/// The kernel's text; the error says which file and why.
fn read_kernel(input: &Path, progress: &Mutex<Progress>) -> Result<String, String> {
    lock(progress).phase = "reading the kernel";
    let file = input.display().to_string();
    let bytes = fs::read(input).map_err(|e| format!("cannot read {file}: {e}"))?;
    String::from_utf8(bytes).map_err(|e| {
        format!("{file}: not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to())
    })
}

/// The answer when the compile thread did not answer within the time limit and the grace
/// period after it: the best candidate so far, with the warning to print, or the error.
fn given_up(p: &Progress, limit: Duration) -> Result<(&Best, String), String> {
    let limit = limit.as_secs_f64();
    match &p.best {
        Some(best) => Ok((
            best,
            format!(
                "the {limit} s time limit was reached during {}; emitting candidate {}, the \
                 best so far",
                p.phase, best.index
            ),
        )),
        None => Err(format!(
            "the {limit} s time limit was reached during {}, before any candidate was placed",
            p.phase
        )),
    }
}

/// `report.json` and, when a candidate was placed, `memory.svg` in the report directory (a
/// picture from an earlier run is removed otherwise); failing to write them is only a warning.
fn write_report(
    args: &Args,
    dir: &Path,
    isa: &Isa,
    p: &Progress,
    status: &str,
    error: Option<&str>,
    total: Duration,
) {
    let json = p.to_json(&args.input.display().to_string(), isa, status, error, total);
    let text = serde_json::to_string_pretty(&json).expect("a report serialises") + "\n";
    let warn = |path: &Path, e: std::io::Error| {
        if !args.quiet {
            eprintln!("warning: cannot write {}: {e}", path.display());
        }
    };
    let path = dir.join("report.json");
    if let Err(e) = write_atomically(&path, text.as_bytes()) {
        warn(&path, e);
    }
    let svg_path = dir.join(MEMORY_SVG);
    match p.memory_svg(isa) {
        Some(svg) => {
            if let Err(e) = write_atomically(&svg_path, svg.as_bytes()) {
                warn(&svg_path, e);
            }
        }
        None => {
            let _ = fs::remove_file(&svg_path);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory_map::MemoryMap;

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

    #[test]
    fn a_compile_given_up_on_emits_the_best_so_far_or_says_where_it_was() {
        let best =
            Best { index: 2, cost: 9.0, assembly: String::new(), memory: MemoryMap::default(), program: Default::default() };
        let mut p = Progress {
            best: Some(best),
            phase: "the candidate loop",
            candidates_found: Some(5),
            ..Progress::default()
        };
        let Ok((b, warning)) = given_up(&p, Duration::from_secs(1)) else { panic!() };
        assert_eq!(b.index, 2);
        assert!(warning.contains("during the candidate loop"), "{warning}");
        assert!(warning.contains("emitting candidate 2"), "{warning}");
        p.best = None;
        p.phase = "instruction selection";
        let err = given_up(&p, Duration::from_millis(500)).unwrap_err();
        assert!(err.contains("0.5 s time limit was reached during instruction selection"), "{err}");
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
