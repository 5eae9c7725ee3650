//! Solving the equations a match collects on computational attributes: `expr(c.*) = value`,
//! one per unified dimension or attribute. Equations linear in a single unknown are solved
//! one at a time (integer, non-negative, consistent); the others are checked once every
//! attribute they mention is known.

use crate::isa::{Expr, ExprError};
use std::collections::BTreeMap;

/// An equation `expr = value`.
pub type Equation = (Expr, i64);

/// Why a set of equations has no usable solution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsolvable {
    /// An equation does not hold (or has no integer, non-negative solution).
    Contradiction(String),
    /// Some attribute is not determined by the equations.
    Underdetermined(Vec<String>),
}

/// Solves `eqs` for the attributes `unknowns`; every unknown must be determined.
pub fn solve(eqs: &[Equation], unknowns: &[String]) -> Result<BTreeMap<String, i64>, Unsolvable> {
    solve_signed(eqs, unknowns, &[])
}

/// [`solve`], where the attributes in `signed` (values, not sizes) may be negative.
pub fn solve_signed(
    eqs: &[Equation],
    unknowns: &[String],
    signed: &[String],
) -> Result<BTreeMap<String, i64>, Unsolvable> {
    let mut env: BTreeMap<String, i64> = BTreeMap::new();
    let mut open: Vec<&Equation> = eqs.iter().collect();
    loop {
        let mut progress = false;
        let mut still_open = Vec::new();
        for eq in open {
            let (expr, value) = eq;
            match expr.affine(&env) {
                Ok(aff) => match aff.terms.len() {
                    0 => {
                        if aff.constant != *value {
                            return Err(Unsolvable::Contradiction(format!(
                                "{expr} = {} but must be {value}",
                                aff.constant
                            )));
                        }
                    }
                    1 => {
                        let (name, coef) = aff.terms.iter().next().map(|(n, c)| (n.clone(), *c)).expect("one term");
                        let rhs = value - aff.constant;
                        if rhs % coef != 0 || (rhs / coef < 0 && !signed.contains(&name)) {
                            return Err(Unsolvable::Contradiction(format!(
                                "{expr} = {value} has no non-negative integer solution for @{name}"
                            )));
                        }
                        env.insert(name, rhs / coef);
                        progress = true;
                    }
                    _ => still_open.push(eq),
                },
                Err(ExprError::NotAffine(_)) | Err(ExprError::Unbound(_)) => still_open.push(eq),
                Err(ExprError::DivisionByZero) => {
                    return Err(Unsolvable::Contradiction(format!("{expr} divides by zero")));
                }
            }
        }
        open = still_open;
        if open.is_empty() || !progress {
            break;
        }
    }
    let missing: Vec<String> = unknowns.iter().filter(|u| !env.contains_key(*u)).cloned().collect();
    if !missing.is_empty() {
        return Err(Unsolvable::Underdetermined(missing));
    }
    for (expr, value) in open {
        match expr.eval(&env) {
            Ok(v) if v == *value => {}
            Ok(v) => return Err(Unsolvable::Contradiction(format!("{expr} = {v} but must be {value}"))),
            Err(e) => return Err(Unsolvable::Contradiction(format!("{expr}: {e}"))),
        }
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(n: &str) -> Expr {
        Expr::Attr(n.to_string())
    }

    fn mul(a: Expr, b: Expr) -> Expr {
        Expr::Mul(Box::new(a), Box::new(b))
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn solves_one_unknown_at_a_time() {
        let eqs = vec![(mul(attr("c.n"), Expr::Int(128)), 8192), (attr("c.n"), 64)];
        let env = solve(&eqs, &names(&["c.n"])).unwrap();
        assert_eq!(env["c.n"], 64);
    }

    #[test]
    fn nonlinear_equations_wait_for_their_unknowns() {
        let eqs = vec![(mul(attr("c.m"), attr("c.n")), 24), (attr("c.n"), 4), (attr("c.m"), 6)];
        assert!(solve(&eqs, &names(&["c.m", "c.n"])).is_ok());
        let eqs = vec![(mul(attr("c.m"), attr("c.n")), 25), (attr("c.n"), 4), (attr("c.m"), 6)];
        assert!(matches!(solve(&eqs, &names(&["c.m", "c.n"])), Err(Unsolvable::Contradiction(_))));
    }

    #[test]
    fn rejects_fractions_negatives_and_conflicts() {
        let frac = vec![(mul(attr("c.n"), Expr::Int(128)), 100)];
        assert!(matches!(solve(&frac, &names(&["c.n"])), Err(Unsolvable::Contradiction(_))));
        let neg = vec![(Expr::Add(Box::new(attr("c.n")), Box::new(Expr::Int(10))), 4)];
        assert!(matches!(solve(&neg, &names(&["c.n"])), Err(Unsolvable::Contradiction(_))));
        let conflict = vec![(attr("c.n"), 4), (attr("c.n"), 5)];
        assert!(matches!(solve(&conflict, &names(&["c.n"])), Err(Unsolvable::Contradiction(_))));
    }

    #[test]
    fn every_unknown_must_be_determined() {
        let eqs = vec![(mul(attr("c.m"), attr("c.n")), 24)];
        assert_eq!(solve(&eqs, &names(&["c.m", "c.n"])), Err(Unsolvable::Underdetermined(names(&["c.m", "c.n"]))));
    }
}
