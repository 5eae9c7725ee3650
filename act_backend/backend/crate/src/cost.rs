//! The cost of a candidate, from the `act_cost` function linked into the binary: the default
//! model (`cost/default_cost.c`, one per instruction) or the user's library in its place.
//! With the default model each call weighs its instruction's table cost (`cost`, an
//! expression over `c.*`, 1 where the spec gives none): the crate adds, per call, its cost
//! minus the 1 the default model counted.

use std::ffi::{c_char, c_int, CString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::isa::Isa;
use crate::pii::{PiiGraph, PiiNode};

extern "C" {
    fn act_cost(asm_path: *const c_char, cost: *mut f64) -> c_int;
}

/// A cost model that did not give a usable cost.
#[derive(Debug, Clone, PartialEq)]
pub enum CostError {
    /// `act_cost` returned this non-zero status.
    Status(i32),
    /// It returned 0 but wrote NaN, an infinity or a negative number.
    BadValue(f64),
    /// The path cannot be handed to C (it holds a NUL byte).
    BadPath(String),
    /// An instruction's table cost cannot be evaluated.
    Table(String),
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CostError::Status(code) => write!(f, "act_cost returned {code}"),
            CostError::BadValue(v) => {
                write!(f, "act_cost gave cost {v}; a cost must be finite and not negative")
            }
            CostError::BadPath(p) => write!(f, "cannot pass the path {p:?} to act_cost"),
            CostError::Table(m) => write!(f, "table cost: {m}"),
        }
    }
}

impl std::error::Error for CostError {}

/// Asks the linked cost model for the cost of the assembly at `asm_path`.
pub fn cost_of(asm_path: &Path) -> Result<f64, CostError> {
    let path = CString::new(asm_path.as_os_str().as_bytes())
        .map_err(|_| CostError::BadPath(asm_path.display().to_string()))?;
    // NaN until written: a model that returns 0 without writing is caught below.
    let mut cost = f64::NAN;
    // SAFETY: `path` is NUL-terminated and outlives the call; `cost` is a valid f64 slot.
    let code = unsafe { act_cost(path.as_ptr(), &mut cost) };
    if code != 0 {
        return Err(CostError::Status(code));
    }
    check(cost)
}

/// Whether the linked cost model is the default one (built without `ACT_COST_LIB`).
pub const DEFAULT_MODEL: bool = cfg!(act_default_cost);

/// What the table's per-instruction costs add to the default model's count of calls: per
/// call, its instruction's cost (at the call's computational attributes) minus 1.
pub fn table_weights(isa: &Isa, graph: &PiiGraph) -> Result<f64, String> {
    let mut extra = 0.0;
    for node in &graph.nodes {
        if let PiiNode::Instr { instr, comp, .. } = node {
            let def = &isa.instructions[*instr];
            let cost = def.cost.eval(&def.comp_env(comp)).map_err(|e| format!("{}: cost {}: {e}", def.name, def.cost))?;
            extra += cost as f64 - 1.0;
        }
    }
    Ok(extra)
}

/// A cost is usable when finite and not negative; large values are fine (the model's way of
/// saying it cannot evaluate a candidate).
pub fn check(cost: f64) -> Result<f64, CostError> {
    if cost.is_finite() && cost >= 0.0 {
        Ok(cost)
    } else {
        Err(CostError::BadValue(cost))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_large_finite_costs_only() {
        assert_eq!(check(0.0), Ok(0.0));
        assert_eq!(check(1e300), Ok(1e300));
        assert!(matches!(check(-1.0), Err(CostError::BadValue(_))));
        assert!(matches!(check(f64::NAN), Err(CostError::BadValue(_))));
        assert!(matches!(check(f64::INFINITY), Err(CostError::BadValue(_))));
    }
}
