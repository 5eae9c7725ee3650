//! What scheduling and allocation need to know about each value of a candidate: the buffer it
//! lives in, its extent along each access dimension, who reads it, and which instructions
//! overwrite an operand in place. Also where a candidate breaks the selection contract.

use crate::isa::{Instruction, Isa};
use crate::pii::{PiiGraph, PiiNode};
use std::fmt;

/// A candidate that breaks the contract of docs/architecture.md 5.1: a bug in instruction
/// selection, never the user's fault. The message names the node and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateError(pub String);

impl fmt::Display for CandidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed candidate: {}", self.0)
    }
}

impl std::error::Error for CandidateError {}

/// The value a node produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// Index into `Isa::buffers`.
    pub buffer: usize,
    /// Extent along each access dimension of the buffer (bytes for HBM).
    pub size: Vec<i64>,
    /// `(node, operand slot)` of every read, in node order.
    pub users: Vec<(usize, usize)>,
    /// The instruction node that overwrites this value in place, if any.
    pub overwritten_by: Option<usize>,
}

impl Value {
    /// Positions the value covers in its buffer when flattened row-major: the product of its
    /// extents. Zero for HBM, which is not the scarce resource scheduling minimises.
    pub fn on_chip_rows(&self, isa: &Isa) -> i64 {
        if isa.buffers[self.buffer].is_hbm() {
            0
        } else {
            self.size.iter().product()
        }
    }
}

/// The instruction a node runs, with the environment of its computational attributes.
pub fn instruction_of<'a>(isa: &'a Isa, node: &PiiNode) -> Option<&'a Instruction> {
    match node {
        PiiNode::Instr { instr, .. } => isa.instructions.get(*instr),
        PiiNode::Input { .. } => None,
    }
}

/// Input slots of `instr` that it overwrites in place: same buffer as its output and the very
/// same start expressions, so the result is written over that operand.
pub fn in_place_slots(instr: &Instruction) -> Vec<usize> {
    let Some(out) = instr.outputs.first() else { return Vec::new() };
    instr
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, s)| s.buffer == out.buffer && s.start == out.start)
        .map(|(i, _)| i)
        .collect()
}

/// The index of HBM (`d0`) in the ISA's buffers.
pub fn hbm_index(isa: &Isa) -> Result<usize, CandidateError> {
    isa.buffers
        .iter()
        .position(|b| b.is_hbm())
        .ok_or_else(|| CandidateError("the ISA table has no HBM buffer (d0)".into()))
}

/// Checks `graph` against `isa` and describes the value of every node.
pub fn analyse(graph: &PiiGraph, isa: &Isa) -> Result<Vec<Value>, CandidateError> {
    graph.check().map_err(CandidateError)?;
    let hbm = hbm_index(isa)?;
    let mut values: Vec<Value> = Vec::with_capacity(graph.nodes.len());
    for (n, node) in graph.nodes.iter().enumerate() {
        let value = match node {
            PiiNode::Input { bytes, .. } => Value {
                buffer: hbm,
                size: vec![to_i64(*bytes, n)?],
                users: Vec::new(),
                overwritten_by: None,
            },
            PiiNode::Instr { instr, comp, operands } => {
                let def = isa.instructions.get(*instr).ok_or_else(|| {
                    CandidateError(format!(
                        "node {n} runs instruction #{instr}, but the ISA has {}",
                        isa.instructions.len()
                    ))
                })?;
                instr_value(n, def, comp, operands, isa, &values)?
            }
        };
        values.push(value);
    }
    for (n, node) in graph.nodes.iter().enumerate() {
        if let PiiNode::Instr { instr, operands, .. } = node {
            for (slot, &op) in operands.iter().enumerate() {
                values[op].users.push((n, slot));
            }
            for slot in in_place_slots(&isa.instructions[*instr]) {
                let op = operands[slot];
                if let Some(other) = values[op].overwritten_by {
                    if other != n {
                        return Err(CandidateError(format!(
                            "node {op} is overwritten in place by both node {other} and node {n}"
                        )));
                    }
                }
                values[op].overwritten_by = Some(n);
            }
        }
    }
    if values[graph.root].buffer != hbm {
        return Err(CandidateError(format!(
            "the root (node {}) lives in {}, not in HBM",
            graph.root, isa.buffers[values[graph.root].buffer].name
        )));
    }
    Ok(values)
}

fn to_i64(bytes: u64, n: usize) -> Result<i64, CandidateError> {
    i64::try_from(bytes).map_err(|_| CandidateError(format!("node {n}: input of {bytes} bytes")))
}

fn instr_value(
    n: usize,
    def: &Instruction,
    comp: &[i64],
    operands: &[usize],
    isa: &Isa,
    values: &[Value],
) -> Result<Value, CandidateError> {
    let here = |msg: String| CandidateError(format!("node {n} ({}): {msg}", def.name));
    if comp.len() != def.comp_attrs.len() {
        return Err(here(format!(
            "{} computational attributes given, the instruction has {}",
            comp.len(),
            def.comp_attrs.len()
        )));
    }
    if operands.len() != def.inputs.len() {
        return Err(here(format!(
            "{} operands given, the instruction reads {}",
            operands.len(),
            def.inputs.len()
        )));
    }
    if def.outputs.len() != 1 {
        return Err(here(format!(
            "the instruction writes {} slices; a PII value is exactly one",
            def.outputs.len()
        )));
    }
    let env = def.comp_env(comp);
    let extent = |slice: &crate::isa::Slice, what: &str| -> Result<Vec<i64>, CandidateError> {
        slice
            .size
            .iter()
            .map(|e| match e.eval(&env) {
                Ok(v) if v >= 0 => Ok(v),
                Ok(v) => Err(here(format!("{what} has size {v} (from `{e}`)"))),
                Err(err) => Err(here(format!("{what} size `{e}`: {err}"))),
            })
            .collect()
    };
    for (slot, (slice, &op)) in def.inputs.iter().zip(operands).enumerate() {
        let what = format!("input {slot}");
        let read = extent(slice, &what)?;
        let have = &values[op];
        let have_buffer = &isa.buffers[have.buffer].name;
        if *have_buffer != slice.buffer {
            return Err(here(format!(
                "{what} reads {}, but node {op} lives in {have_buffer}",
                slice.buffer
            )));
        }
        let fits =
            read.len() == have.size.len() && read.iter().zip(&have.size).all(|(r, h)| r <= h);
        if !fits {
            return Err(here(format!(
                "{what} reads extent {read:?}, but node {op} holds only {:?}",
                have.size
            )));
        }
    }
    let out = &def.outputs[0];
    let buffer = isa
        .buffer_index(&out.buffer)
        .ok_or_else(|| here(format!("unknown output buffer {}", out.buffer)))?;
    let size = extent(out, "the output")?;
    if size.len() != isa.buffers[buffer].access_dims.len() {
        return Err(here(format!(
            "the output has {} extents, buffer {} has {} access dimensions",
            size.len(),
            out.buffer,
            isa.buffers[buffer].access_dims.len()
        )));
    }
    Ok(Value { buffer, size, users: Vec::new(), overwritten_by: None })
}
