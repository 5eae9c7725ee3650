//! The generic compiler backend of act-backend.
//!
//! Everything specific to one accelerator comes from its ISA table (`isa.json`), embedded in
//! the binary at build time; this crate is the same for every accelerator.

pub mod alloc;
pub mod analysis;
pub mod cli;
pub mod cost;
pub mod driver;
pub mod emit;
pub mod extract;
pub mod hlo_parse;
pub mod identities;
pub mod infer;
pub mod isa;
pub mod isa_match;
pub mod kernel;
pub mod lang;
pub mod layout;
pub mod output;
pub mod pii;
pub mod report;
pub mod rewrites;
pub mod schedule;
pub mod select;
pub mod solve;
pub mod value;
pub mod vocabulary;
