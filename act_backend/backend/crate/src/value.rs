//! What scheduling and allocation need to know about each value of a candidate: the buffer it
//! lives in, its extent along each access dimension, who reads it, and which instructions
//! overwrite an operand in place, and which storage a view or a part of a concatenation lies
//! in. Also where a candidate breaks the selection contract.

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
    /// For a view, the node it views; for a part of a concatenation, the concatenation:
    /// with the offset of this value inside that node's value, per access dimension.
    pub within: Option<(usize, Vec<i64>)>,
    /// A view or concatenation, which occupies no storage of its own.
    pub identity: bool,
}

impl Value {
    /// Positions the value covers in its buffer when flattened row-major: the product of its
    /// extents. Zero for HBM, which is not the scarce resource scheduling minimises.
    /// Identity nodes count zero: their positions are counted by the values they stand for.
    pub fn on_chip_rows(&self, isa: &Isa) -> i64 {
        if self.identity || isa.buffers[self.buffer].is_hbm() {
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
        _ => None,
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
                within: None,
                identity: false,
            },
            PiiNode::Constant { dtype, shape, bits } => {
                let elements: i64 = shape.iter().product();
                if bits.len() != 1 && bits.len() as i64 != elements {
                    return Err(CandidateError(format!(
                        "node {n} is a constant of shape {shape:?} with {} values",
                        bits.len()
                    )));
                }
                Value {
                    buffer: hbm,
                    size: vec![PiiGraph::constant_bytes(*dtype, shape)],
                    users: Vec::new(),
                    overwritten_by: None,
                    within: None,
                    identity: false,
                }
            }
            PiiNode::Uninit { bytes } => Value {
                buffer: hbm,
                size: vec![to_i64(*bytes, n)?],
                users: Vec::new(),
                overwritten_by: None,
                within: None,
                identity: false,
            },
            PiiNode::View { of, offset, size } => view_value(n, *of, offset, size, isa, &values)?,
            PiiNode::Concat { parts, dim } => concat_value(n, parts, *dim, graph, isa, &mut values)?,
            PiiNode::Overlay { parts, starts } => overlay_value(n, parts, starts, graph, isa, &mut values)?,
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
        for (slot, &op) in node.operands().iter().enumerate() {
            values[op].users.push((n, slot));
        }
    }
    let readers = graph.readers();
    for (n, node) in graph.nodes.iter().enumerate() {
        if let PiiNode::Instr { instr, operands, .. } = node {
            for slot in in_place_slots(&isa.instructions[*instr]) {
                let op = operands[slot];
                // Writing over shared storage would change what the other names of it see.
                if !graph.may_overwrite(&readers, op, n) {
                    return Err(CandidateError(format!(
                        "node {n} overwrites node {op} in place, but node {op} shares its \
                         storage with a view or concatenation"
                    )));
                }
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
    if let PiiNode::View { of, .. } = graph.nodes[graph.root] {
        return Err(CandidateError(format!(
            "the root (node {}) is a view of node {of}; the output must be written in place",
            graph.root
        )));
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
    Ok(Value { buffer, size, users: Vec::new(), overwritten_by: None, within: None, identity: false })
}

fn view_value(
    n: usize,
    of: usize,
    offset: &[i64],
    size: &[i64],
    isa: &Isa,
    values: &[Value],
) -> Result<Value, CandidateError> {
    let whole = &values[of];
    let dims = whole.size.len();
    if offset.len() != dims || size.len() != dims {
        return Err(CandidateError(format!(
            "node {n} views node {of} with offset {offset:?} and size {size:?}, but {} has {dims} \
             access dimensions",
            isa.buffers[whole.buffer].name
        )));
    }
    let inside = (0..dims).all(|k| offset[k] >= 0 && size[k] >= 0 && offset[k] + size[k] <= whole.size[k]);
    if !inside {
        return Err(CandidateError(format!(
            "node {n} views {size:?} at offset {offset:?} of node {of}, which holds only {:?}",
            whole.size
        )));
    }
    Ok(Value {
        buffer: whole.buffer,
        size: size.to_vec(),
        users: Vec::new(),
        overwritten_by: None,
        within: Some((of, offset.to_vec())),
        identity: true,
    })
}

/// The value of concatenation node `n`: its parts side by side along `dim`.
fn concat_value(
    n: usize,
    parts: &[usize],
    dim: usize,
    graph: &PiiGraph,
    isa: &Isa,
    values: &mut [Value],
) -> Result<Value, CandidateError> {
    let mut starts = Vec::with_capacity(parts.len());
    let mut at = 0;
    for &p in parts {
        starts.push(at);
        at += values[p].size.get(dim).copied().unwrap_or(0);
    }
    parts_in_place(n, "concatenation", parts, dim, &starts, graph, isa, values)
}

/// The value of overlay node `n`: its parts (byte strings in HBM) at `starts`, which must
/// cover it from its first byte with no gap.
fn overlay_value(
    n: usize,
    parts: &[usize],
    starts: &[i64],
    graph: &PiiGraph,
    isa: &Isa,
    values: &mut [Value],
) -> Result<Value, CandidateError> {
    let here = |msg: String| CandidateError(format!("node {n} (overlay): {msg}"));
    if starts.len() != parts.len() {
        return Err(here(format!("{} parts at {} starts", parts.len(), starts.len())));
    }
    let mut spans: Vec<(i64, i64)> = parts.iter().zip(starts).map(|(&p, &s)| (s, s + values[p].size.first().copied().unwrap_or(0))).collect();
    spans.sort_unstable();
    let mut covered = 0;
    for (lo, hi) in spans {
        if lo > covered {
            return Err(here(format!("no part holds bytes {covered}..{lo}")));
        }
        covered = covered.max(hi);
    }
    parts_in_place(n, "overlay", parts, 0, starts, graph, isa, values)
}

/// The value of identity node `n` (a `what`) whose parts lie in one buffer at `starts` along
/// access dimension `dim`, each written in place by its producer: as large as they reach.
#[allow(clippy::too_many_arguments)]
fn parts_in_place(
    n: usize,
    what: &str,
    parts: &[usize],
    dim: usize,
    starts: &[i64],
    graph: &PiiGraph,
    isa: &Isa,
    values: &mut [Value],
) -> Result<Value, CandidateError> {
    let here = |msg: String| CandidateError(format!("node {n} ({what}): {msg}"));
    let Some(&first) = parts.first() else { return Err(here("it has no parts".into())) };
    let buffer = values[first].buffer;
    let mut size = values[first].size.clone();
    if dim >= size.len() {
        return Err(here(format!(
            "dimension {dim}, but {} has {} access dimensions",
            isa.buffers[buffer].name,
            size.len()
        )));
    }
    size[dim] = 0;
    for (i, (&p, &start)) in parts.iter().zip(starts).enumerate() {
        let part = &values[p];
        if part.buffer != buffer {
            return Err(here(format!(
                "part {i} (node {p}) lives in {}, part 0 in {}",
                isa.buffers[part.buffer].name, isa.buffers[buffer].name
            )));
        }
        let agrees = part.size.len() == size.len()
            && part.size.iter().zip(&size).enumerate().all(|(k, (a, b))| k == dim || a == b);
        if !agrees {
            return Err(here(format!(
                "part {i} (node {p}) has extent {:?}, part 0 {:?}, off dimension {dim}",
                part.size, values[first].size
            )));
        }
        if graph.nodes[p].is_given() {
            return Err(here(format!(
                "part {i} (node {p}) is a kernel parameter or constant, which cannot move into place"
            )));
        }
        if part.within.is_some() {
            return Err(here(format!(
                "part {i} (node {p}) is a view, or a part of another concatenation already"
            )));
        }
        let mut offset = vec![0; size.len()];
        offset[dim] = start;
        size[dim] = size[dim].max(start + part.size[dim]);
        values[p].within = Some((n, offset));
    }
    Ok(Value { buffer, size, users: Vec::new(), overwritten_by: None, within: None, identity: true })
}
