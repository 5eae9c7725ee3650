//! Checks of an HLO syntax tree that XLA makes and the kernel front end must not skip:
//! a computation's written signature agrees with its parameters and ROOT, the header's
//! `entry_computation_layout` with the ENTRY computation, and every attribute is one its
//! operator takes (or one any instruction may carry: both from the operator vocabulary) and
//! is given once. The Python checker (`act_backend/kernel/check.py`) refuses the same trees
//! at the same positions.

use crate::hlo_parse::{
    name_fault, Arg, Computation, EntryLayout, Instr, Module, Pos, SyntaxError, TypeAst, Value, NAME_RULE,
};
use crate::lang::OpCode;
use crate::vocabulary::GENERIC_KERNEL_ATTRIBUTES;

/// The attributes an operator takes in a kernel besides `GENERIC_KERNEL_ATTRIBUTES`, from the
/// vocabulary; `None` for an operator kernels may not use (refused by `kernel.rs`) or that
/// the vocabulary does not know.
pub fn accepted_kernel_attributes(opcode: &str) -> Option<Vec<&'static str>> {
    let info = OpCode::parse(opcode)?.info();
    info.kernels.then(|| info.attributes.iter().chain(info.kernel_attributes).copied().collect())
}

/// The first problem by position, if any.
pub fn check_module(module: &Module) -> Result<(), SyntaxError> {
    let mut problems: Vec<SyntaxError> = Vec::new();
    if let Some(layout) = &module.entry_layout {
        let entries: Vec<&Computation> = module.computations.iter().filter(|c| c.entry).collect();
        if let [entry] = entries.as_slice() {
            problems.extend(entry_layout(layout, entry));
        }
    }
    for comp in &module.computations {
        problems.extend(signature(comp));
        for instr in &comp.instrs {
            problems.extend(attributes(instr));
        }
    }
    match problems.into_iter().min_by_key(|p| (p.pos.line, p.pos.col)) {
        Some(first) => Err(first),
        None => Ok(()),
    }
}

fn problem(pos: Pos, code: &'static str, message: String) -> SyntaxError {
    SyntaxError { pos, code, message }
}

/// Types equal up to positions and layouts (which the syntax tree does not keep).
fn same_type(a: &TypeAst, b: &TypeAst) -> bool {
    match (a, b) {
        (TypeAst::Tensor { dtype: da, dims: xa, .. }, TypeAst::Tensor { dtype: db, dims: xb, .. }) => {
            da == db && xa == xb
        }
        (TypeAst::Tuple { elements: ea, .. }, TypeAst::Tuple { elements: eb, .. }) => {
            ea.len() == eb.len() && ea.iter().zip(eb).all(|(x, y)| same_type(x, y))
        }
        _ => false,
    }
}

fn parameter_index(instr: &Instr) -> Option<i64> {
    match instr.args.as_slice() {
        [Arg::Literal(Value::Word(w, _))] => w.parse::<i64>().ok(),
        _ => None,
    }
}

/// The parameters by index; empty when the indices are not 0..n-1 once each (reported on
/// its own by the kernel builder; comparing by index would only repeat it).
fn parameters_by_index(comp: &Computation) -> (usize, Vec<&Instr>) {
    let params: Vec<&Instr> = comp.instrs.iter().filter(|i| i.opcode == "parameter").collect();
    let mut by_index: Vec<Option<&Instr>> = vec![None; params.len()];
    for p in &params {
        match parameter_index(p) {
            Some(k) if k >= 0 && (k as usize) < params.len() && by_index[k as usize].is_none() => {
                by_index[k as usize] = Some(p)
            }
            _ => return (params.len(), Vec::new()),
        }
    }
    (params.len(), by_index.into_iter().flatten().collect())
}

/// The ROOT when exactly one instruction is marked so.
fn marked_root(comp: &Computation) -> Option<&Instr> {
    let mut roots = comp.instrs.iter().filter(|i| i.root);
    match (roots.next(), roots.next()) {
        (Some(root), None) => Some(root),
        _ => None,
    }
}

fn signature(comp: &Computation) -> Vec<SyntaxError> {
    let Some(sig) = &comp.signature else { return Vec::new() };
    let name = &comp.name;
    let (count, by_index) = parameters_by_index(comp);
    if sig.params.len() != count {
        let message =
            format!("computation `{name}` declares {} parameter(s) but defines {count}", sig.params.len());
        return vec![problem(sig.pos, "signature-mismatch", message)];
    }
    let mut out = Vec::new();
    for (index, ((declared_name, pos, declared), param)) in sig.params.iter().zip(&by_index).enumerate() {
        if &param.name != declared_name {
            out.push(problem(
                *pos,
                "signature-mismatch",
                format!(
                    "computation `{name}` declares parameter {index} as `{declared_name}`, but parameter({index}) is named `{}`",
                    param.name
                ),
            ));
        } else if !same_type(&param.ty, declared) {
            out.push(problem(
                *pos,
                "signature-mismatch",
                format!("computation `{name}` declares parameter {index} as {declared}, but `{}` is {}", param.name, param.ty),
            ));
        }
    }
    if let Some(root) = marked_root(comp) {
        if !same_type(&root.ty, &sig.result) {
            out.push(problem(
                sig.result.pos(),
                "signature-mismatch",
                format!("computation `{name}` declares its result as {}, but ROOT `{}` is {}", sig.result, root.name, root.ty),
            ));
        }
    }
    out
}

fn entry_layout(layout: &EntryLayout, entry: &Computation) -> Vec<SyntaxError> {
    let (count, by_index) = parameters_by_index(entry);
    let name = &entry.name;
    if layout.params.len() != count {
        let message = format!(
            "entry_computation_layout lists {} parameter(s) but the ENTRY computation `{name}` has {count}",
            layout.params.len()
        );
        return vec![problem(layout.pos, "entry-layout-mismatch", message)];
    }
    let mut out = Vec::new();
    for (index, (declared, param)) in layout.params.iter().zip(&by_index).enumerate() {
        if !same_type(&param.ty, declared) {
            out.push(problem(
                declared.pos(),
                "entry-layout-mismatch",
                format!(
                    "entry_computation_layout gives parameter {index} the type {declared}, but `{}` of the ENTRY computation is {}",
                    param.name, param.ty
                ),
            ));
        }
    }
    if let Some(root) = marked_root(entry) {
        if !same_type(&root.ty, &layout.result) {
            out.push(problem(
                layout.result.pos(),
                "entry-layout-mismatch",
                format!(
                    "entry_computation_layout gives the result the type {}, but ROOT `{}` of the ENTRY computation is {}",
                    layout.result, root.name, root.ty
                ),
            ));
        }
    }
    out
}

/// An attribute the operator does not take could change the meaning: refused, as is one
/// given twice.
fn attributes(instr: &Instr) -> Vec<SyntaxError> {
    let mut out = Vec::new();
    for (k, attr) in instr.attrs.iter().enumerate() {
        if instr.attrs[..k].iter().any(|a| a.name == attr.name) {
            out.push(problem(
                attr.pos,
                "duplicate-attribute",
                format!("attribute `{}` is given twice in `{}`", attr.name, instr.name),
            ));
        }
    }
    // A computation an attribute names must be named like one.
    for attr in instr.attrs.iter().filter(|a| matches!(a.name.as_str(), "to_apply" | "calls")) {
        if let Value::Word(word, pos) = &attr.value {
            if let Some(offset) = name_fault(word) {
                let at = Pos { line: pos.line, col: pos.col + word[..offset].chars().count() };
                out.push(problem(at, "bad-name", format!("`{word}` is not a name: {NAME_RULE}")));
            }
        }
    }
    let Some(mut own) = accepted_kernel_attributes(&instr.opcode) else { return out };
    own.sort_unstable();
    let opcode = OpCode::parse(&instr.opcode).map_or(instr.opcode.as_str(), |op| op.name());
    let mut generic = GENERIC_KERNEL_ATTRIBUTES.to_vec();
    generic.sort_unstable();
    for attr in &instr.attrs {
        if !own.contains(&attr.name.as_str()) && !generic.contains(&attr.name.as_str()) {
            let listing = if own.is_empty() {
                format!("none of its own; on any instruction: {}", generic.join(", "))
            } else {
                format!("{}; and on any instruction: {}", own.join(", "), generic.join(", "))
            };
            out.push(problem(
                attr.pos,
                "unknown-attribute",
                format!("{opcode} `{}` does not take the attribute `{}` (accepted: {listing})", instr.name, attr.name),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_says_which_attributes_an_operator_takes() {
        assert_eq!(accepted_kernel_attributes("transpose"), Some(vec!["dimensions"]));
        assert_eq!(accepted_kernel_attributes("copy"), Some(vec![]));
        assert!(accepted_kernel_attributes("dot").is_some_and(|a| a.contains(&"operand_precision")));
        assert!(accepted_kernel_attributes("dynamic-slice").is_some_and(|a| a == ["dynamic_slice_sizes"]));
        assert_eq!(accepted_kernel_attributes("exp"), Some(vec![]));
        assert_eq!(accepted_kernel_attributes("erf"), None, "kernels may not use it");
        assert_eq!(accepted_kernel_attributes("frobnicate"), None);
    }
}
