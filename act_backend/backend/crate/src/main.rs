//! The compiler binary of one accelerator: its ISA table is embedded at build time (the only
//! accelerator-specific part), everything else is the generic library.

use std::process::ExitCode;

#[cfg(act_isa_table)]
const ISA_TABLE: Option<&str> =
    Some(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/isa.json")));

// The crate in the source tree has no table; only generated crates do.
#[cfg(not(act_isa_table))]
const ISA_TABLE: Option<&str> = None;

fn main() -> ExitCode {
    // Returning (not exiting) runs destructors first and then the C atexit handlers.
    act_compiler::cli::main(ISA_TABLE)
}
