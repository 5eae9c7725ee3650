//! The kernel conformance corpus (`tests/conformance/verdicts.json`): every kernel listed there
//! goes through the crate's parser and type rules (`parse_kernel`) and must get the verdict the
//! corpus records, the one `tests/test_conformance_corpus.py` holds the Python checker to: the
//! same code (`KernelError::code`) at the same line and column. The corpus's `kinds` table is
//! the crate's `KernelErrorKind::of_code`.

use act_compiler::kernel::{parse_kernel, KernelErrorKind};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("conformance")
}

fn manifest() -> Map<String, Value> {
    let path = corpus_dir().join("verdicts.json");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => map,
        other => panic!("{} is not a JSON object: {other:?}", path.display()),
    }
}

/// The verdict the crate must give: the case's string, or its `crate` entry where the two
/// front ends differ on purpose.
fn crate_verdict<'a>(name: &str, case: &'a Value) -> &'a str {
    match case {
        Value::String(v) => v,
        Value::Object(o) => {
            assert!(o.get("why").and_then(Value::as_str).is_some_and(|w| !w.is_empty()), "{name}: a split verdict says why");
            o.get("crate").and_then(Value::as_str).unwrap_or_else(|| panic!("{name}: no `crate` verdict"))
        }
        other => panic!("{name}: a verdict is a string or an object, found {other}"),
    }
}

/// What `parse_kernel` answered, written as a verdict: `accepted` or `<code> <line>:<col>`.
fn verdict_of(text: &str, name: &str) -> (String, String) {
    match parse_kernel(text, name) {
        Ok(_) => ("accepted".into(), String::new()),
        Err(e) => (format!("{} {}:{}", e.code, e.line, e.col), e.message),
    }
}

#[test]
fn every_kernel_of_the_corpus_gets_its_recorded_verdict() {
    let manifest = manifest();
    let cases = manifest.get("cases").and_then(Value::as_object).expect("a `cases` table");
    assert!(cases.len() >= 100, "the corpus lists {} kernels", cases.len());
    let mut wrong = Vec::new();
    for (name, case) in cases {
        let verdict = crate_verdict(name, case);
        let path = corpus_dir().join(name);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: cannot read {}: {e}", path.display()));
        let (got, message) = verdict_of(&text, name);
        if got != verdict {
            wrong.push(format!("{name}: recorded `{verdict}`, the crate says `{got}` ({message})"));
        }
    }
    assert!(wrong.is_empty(), "{} kernel(s) got another verdict:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_kinds_table_is_the_crates() {
    let manifest = manifest();
    let kinds = manifest.get("kinds").and_then(Value::as_object).expect("a `kinds` table");
    for (code, kind) in kinds {
        assert_eq!(Some(format!("{:?}", KernelErrorKind::of_code(code)).as_str()), kind.as_str(), "{code}");
    }
    let cases = manifest.get("cases").and_then(Value::as_object).expect("a `cases` table");
    for (name, case) in cases {
        let verdict = crate_verdict(name, case);
        if let Some(code) = verdict.split_whitespace().next().filter(|c| *c != "accepted") {
            assert!(kinds.contains_key(code), "{name}: the code `{code}` has no kind in the `kinds` table");
        }
    }
}

#[test]
fn every_kernel_file_of_the_corpus_is_listed() {
    fn walk(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in fs::read_dir(dir).expect("readable corpus") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "hlo") {
                out.insert(path);
            }
        }
    }
    let mut files = BTreeSet::new();
    walk(&corpus_dir(), &mut files);
    let listed: BTreeSet<PathBuf> = manifest()["cases"]
        .as_object()
        .expect("a `cases` table")
        .keys()
        .map(|k| corpus_dir().join(k))
        .filter(|p| p.starts_with(corpus_dir()))
        .collect();
    let unlisted: Vec<_> = files.difference(&listed).collect();
    assert!(unlisted.is_empty(), "kernels without a verdict: {unlisted:?}");
}
