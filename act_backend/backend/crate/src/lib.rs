//! The generic compiler backend of act-backend.
//!
//! Everything specific to one accelerator comes from its ISA table (`isa.json`), embedded in
//! the binary at build time; this crate is the same for every accelerator.

pub mod alloc;
pub mod cost;
pub mod emit;
pub mod isa;
pub mod layout;
pub mod pii;
pub mod schedule;
pub mod value;
