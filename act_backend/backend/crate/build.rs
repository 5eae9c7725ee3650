//! Build script: builds the C++ allocator with CMake and links it (with OR-Tools, run path
//! included), links the cost model (the default one compiled here, or the user's library named
//! by `ACT_COST_LIB`), and tells the binary whether an ISA table sits beside `Cargo.toml`.
//!
//! Environment: `ORTOOLS_DIR`, `NLOHMANN_JSON_DIR`, `ORTOOLS_WHEEL_LIBDIR`, `PROTOZERO_DIR` go
//! to CMake; `ACT_ALLOC_BUILD_DIR` names a cache of allocator builds shared between crates
//! (keyed by the allocator's sources and settings); `ACT_COST_LIB` is an absolute path to a
//! `.o`, `.a` or `.so` that defines `act_cost`. Which OR-Tools and nlohmann/json were used is
//! written to `$OUT_DIR/build-info.txt`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const CMAKE_SETTINGS: &[&str] =
    &["ORTOOLS_DIR", "NLOHMANN_JSON_DIR", "ORTOOLS_WHEEL_LIBDIR", "PROTOZERO_DIR"];

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=build.rs");
    for var in CMAKE_SETTINGS.iter().chain(&["ACT_ALLOC_BUILD_DIR", "ACT_COST_LIB", "CXX"]) {
        println!("cargo:rerun-if-env-changed={var}");
    }

    // The table is embedded by the binary target only; its presence is decided once, so an
    // edit of the table recompiles the small binary crate and never the library.
    println!("cargo:rustc-check-cfg=cfg(act_isa_table)");
    if manifest.join("isa.json").is_file() {
        println!("cargo:rustc-cfg=act_isa_table");
    }

    let allocator = beside(&manifest, "allocator");
    println!("cargo:rerun-if-changed={}", allocator.display());
    let built = build_allocator(&allocator, &out_dir);
    link_allocator(&built);

    // The default model counts calls; the crate weighs each by its instruction's table cost.
    println!("cargo:rustc-check-cfg=cfg(act_default_cost)");
    let cost = match env::var("ACT_COST_LIB").ok().filter(|v| !v.is_empty()) {
        Some(lib) => link_user_cost(Path::new(&lib)),
        None => {
            println!("cargo:rustc-cfg=act_default_cost");
            compile_default_cost(&manifest)
        }
    };

    let mut info = fs::read_to_string(built.join("configure.log")).unwrap_or_default();
    info.push_str(&format!("cost model: {cost}\n"));
    fs::write(out_dir.join("build-info.txt"), info).expect("OUT_DIR is writable");
}

/// `<manifest>/<name>` in a generated crate, `<manifest>/../<name>` in the source tree.
fn beside(manifest: &Path, name: &str) -> PathBuf {
    let inside = manifest.join(name);
    if inside.is_dir() || inside.is_file() {
        return inside;
    }
    let outside = manifest.parent().map(|p| p.join(name)).filter(|p| p.exists());
    outside.unwrap_or_else(|| panic!("cannot find `{name}` in {} or beside it", manifest.display()))
}

/// Builds the allocator once per (sources, settings) and returns the directory holding
/// `libact_alloc.a`, `link.txt` and `configure.log`.
fn build_allocator(source: &Path, out_dir: &Path) -> PathBuf {
    let cache = env::var_os("ACT_ALLOC_BUILD_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| out_dir.join("allocator"));
    let done = cache.join(format!("{:016x}", cache_key(source)));
    if done.join("link.txt").is_file() && done.join("libact_alloc.a").is_file() {
        return done;
    }
    fs::create_dir_all(&cache).unwrap_or_else(|e| panic!("cannot create {}: {e}", cache.display()));
    let pid = std::process::id();
    let work = cache.join(format!(".building-{pid}"));
    let staging = cache.join(format!(".staging-{pid}"));
    let _ = fs::remove_dir_all(&work);
    let _ = fs::remove_dir_all(&staging);

    let mut configure = Command::new("cmake");
    configure.arg("-S").arg(source).arg("-B").arg(&work);
    configure.args(["-DCMAKE_BUILD_TYPE=Release", "-DACT_ALLOC_BUILD_TESTS=OFF"]);
    for var in CMAKE_SETTINGS {
        if let Some(value) = env::var_os(var).filter(|v| !v.is_empty()) {
            let mut arg = std::ffi::OsString::from(format!("-D{var}="));
            arg.push(value);
            configure.arg(arg);
        }
    }
    let configured = run(&mut configure, "configuring the allocator");
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "2".into());
    run(
        Command::new("cmake").arg("--build").arg(&work).args([
            "--target",
            "act_alloc",
            "--parallel",
            &jobs,
        ]),
        "building the allocator",
    );

    // The link file names the archive inside the build tree; the cache entry keeps its own
    // copy so the entry stays valid once the build tree is gone.
    fs::create_dir_all(&staging).expect("cache is writable");
    let link = fs::read_to_string(work.join("act_alloc_link.txt"))
        .unwrap_or_else(|e| panic!("the allocator build wrote no act_alloc_link.txt: {e}"));
    let mut lines = Vec::new();
    for line in link.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.ends_with("libact_alloc.a") {
            fs::copy(line, staging.join("libact_alloc.a"))
                .unwrap_or_else(|e| panic!("cannot copy {line}: {e}"));
            lines.push(done.join("libact_alloc.a").display().to_string());
        } else {
            lines.push(line.to_string());
        }
    }
    fs::write(staging.join("link.txt"), lines.join("\n") + "\n").expect("cache is writable");
    let found: Vec<&str> =
        configured.lines().filter_map(|l| l.trim().strip_prefix("-- act_alloc: ")).collect();
    fs::write(staging.join("configure.log"), found.join("\n") + "\n").expect("cache is writable");
    // Another build may have finished the same entry meanwhile; either copy is as good.
    if fs::rename(&staging, &done).is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    let _ = fs::remove_dir_all(&work);
    done
}

/// FNV-1a over the allocator's files (sorted by path) and the settings that change its build.
fn cache_key(source: &Path) -> u64 {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.expect("readable directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes.iter().chain(&[0xff]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let mut all = Vec::new();
    files(source, &mut all);
    for p in all {
        feed(p.strip_prefix(source).expect("under source").to_string_lossy().as_bytes());
        feed(&fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display())));
    }
    for var in CMAKE_SETTINGS.iter().chain(&["CXX", "CXXFLAGS"]) {
        feed(var.as_bytes());
        feed(env::var(var).unwrap_or_default().as_bytes());
    }
    // Where ORTOOLS_DIR is unset, CMake's choice depends on whether the default exists.
    let ortools = env::var("ORTOOLS_DIR").unwrap_or_else(|_| "/opt/ortools".into());
    feed(&[u8::from(Path::new(&ortools).exists())]);
    hash
}

/// Runs a command, returning its standard output; on failure stops the build with all of its
/// output, which cargo shows to the user.
fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        eprintln!("{stdout}");
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        panic!("{what} failed ({}): {cmd:?}", out.status);
    }
    stdout
}

/// Turns the allocator's link lines into cargo directives.
fn link_allocator(built: &Path) {
    let link = fs::read_to_string(built.join("link.txt")).expect("cache entry has link.txt");
    for item in link.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(dir) = item.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(file) = item.strip_prefix("-l:") {
            println!("cargo:rustc-link-lib=dylib:+verbatim={file}");
        } else if let Some(name) = item.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={name}");
        } else if item.starts_with("-Wl,") {
            println!("cargo:rustc-link-arg={item}");
        } else if let Some(name) = archive_name(item) {
            let dir = Path::new(item).parent().expect("an archive path has a directory");
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static={name}");
        } else {
            panic!("act_alloc_link.txt: cannot use link item {item:?}");
        }
    }
}

/// `foo` for a path `.../libfoo.a`.
fn archive_name(item: &str) -> Option<&str> {
    let file = Path::new(item).file_name()?.to_str()?;
    file.strip_prefix("lib")?.strip_suffix(".a")
}

fn compile_default_cost(manifest: &Path) -> String {
    let source = beside(manifest, "cost").join("default_cost.c");
    println!("cargo:rerun-if-changed={}", source.display());
    cc::Build::new().file(&source).warnings(true).compile("act_default_cost");
    format!("the default model ({})", source.display())
}

/// Links the user's cost library: objects and static archives whole (they are carried inside
/// the binary), shared libraries where they are, with a run path to their directory.
fn link_user_cost(lib: &Path) -> String {
    println!("cargo:rerun-if-changed={}", lib.display());
    if !lib.is_absolute() || !lib.is_file() {
        panic!("ACT_COST_LIB={}: not an absolute path to an existing file", lib.display());
    }
    let path = lib.display();
    match lib.extension().and_then(|e| e.to_str()) {
        Some("o") => println!("cargo:rustc-link-arg={path}"),
        Some("a") => {
            println!("cargo:rustc-link-arg=-Wl,--whole-archive");
            println!("cargo:rustc-link-arg={path}");
            println!("cargo:rustc-link-arg=-Wl,--no-whole-archive");
        }
        Some("so") => {
            let dir = lib.parent().expect("an absolute file path has a directory");
            println!("cargo:rustc-link-arg={path}");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
        _ => panic!("ACT_COST_LIB={path}: expected a .o, .a or .so file"),
    }
    // The C and C++ runtimes, after the library so that its references to them count.
    println!("cargo:rustc-link-arg=-lstdc++");
    println!("cargo:rustc-link-arg=-lm");
    format!("{path}")
}
