//! The generic compiler backend of act-backend.
//!
//! Everything specific to one accelerator comes from its ISA table (`isa.json`), embedded in
//! the binary at build time; this crate is the same for every accelerator. [`compile`] is the
//! entry point: kernel text and options in, [`Assembly`] or [`CompileError`] out.

pub mod alloc;
pub mod backoff;
pub mod bands;
pub mod bound;
pub mod changes;
pub mod channels_last;
pub mod cli;
pub mod compile;
pub mod convolution;
pub mod cost;
pub mod driver;
pub mod egraph;
pub mod emit;
pub mod extract;
pub mod fold;
pub mod greedy;
pub mod hlo_parse;
pub mod identities;
pub mod infer;
pub mod isa;
pub mod isa_match;
pub mod kernel;
pub mod kernel_checks;
pub mod lang;
pub mod layout;
pub mod memory_map;
pub mod memory_svg;
pub mod output;
pub mod parallel;
pub mod partition;
pub mod pii;
pub mod precision;
pub mod provenance;
pub mod report;
pub mod report_program;
pub mod reduce_window;
pub mod reload;
pub mod results;
pub mod rewrites;
pub mod schedule;
pub mod select;
pub mod solve;
pub mod stages;
pub mod tiling;
pub mod transposes;
pub mod value;
pub mod views;
pub mod vocabulary;

pub use compile::{compile, Assembly, CompileError, CompileOptions, Target};
