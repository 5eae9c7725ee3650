//! The default cost model linked into the crate: one per instruction line of the assembly.

use act_compiler::cost::{cost_of, CostError};
use std::path::PathBuf;

/// A file in a folder of its own, removed with the folder when dropped.
struct ScratchFile {
    dir: PathBuf,
    path: PathBuf,
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn scratch_file(name: &str, text: &str) -> ScratchFile {
    let dir = std::env::temp_dir().join(format!("act-cost-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    ScratchFile { dir, path }
}

#[test]
fn counts_lines_whose_text_starts_with_an_api_call() {
    let text = "import jax.numpy as jnp\n\
                def k(kernel, api):\n\
                \x20   def k_():\n\
                \x20       api.load_rm(n=64, addr_in=0, addr_out=0)\n\
                \t\tapi.gemm(addr_1=0, addr_2=64, addr_out=0)\n\
                api.mov(n=1)\r\n\
                \x20       # api.commented_out()\n\
                \x20       x = api.not_a_statement()\n\
                \x20       apix.other()\n\
                \x20       api\n\
                \x20       api.softmax(n=64, addr=0); api.mov(n=1)\n\
                \x20   return k_\n\
                api.last_line_without_newline()";
    let file = scratch_file("count.py", text);
    assert_eq!(cost_of(&file.path), Ok(5.0));
}

#[test]
fn handles_lines_longer_than_any_buffer() {
    let long = format!("        api.x({})\n", "a".repeat(1 << 20));
    let file = scratch_file("long.py", &format!("{long}{long}  not.api()\n"));
    assert_eq!(cost_of(&file.path), Ok(2.0));
}

#[test]
fn an_unreadable_file_is_an_error() {
    let missing = std::env::temp_dir().join("act-cost-test-no-such-file.py");
    assert!(matches!(cost_of(&missing), Err(CostError::Status(s)) if s != 0));
    let dir = std::env::temp_dir();
    assert!(matches!(cost_of(&dir), Err(CostError::Status(s)) if s != 0), "a directory");
}
