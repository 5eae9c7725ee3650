//! Where and when every value of a placed candidate lives: its buffer, the positions it
//! occupies there as the allocator placed it, its live interval in the schedule's time, and
//! what made it. The report's `program` section and the memory picture are read from it.
//!
//! Positions are read from the answer, not from the request: a value made by a step starts
//! where that step's output slice starts at the step's attribute values; an input where the
//! packed HBM layout puts it; a constant where allocation placed it; a view or a part of a
//! concatenation at its offset in the storage it lies in.

use crate::alloc::{self, Placement};
use crate::isa::Isa;
use crate::layout::HbmLayout;
use crate::pii::{PiiGraph, PiiNode};
use crate::schedule::Schedule;
use crate::value::Value;

/// What made a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// Kernel parameter `i`, in HBM before the program runs.
    Input(usize),
    /// A literal, written into HBM before the program runs.
    Constant,
    /// Step `i` of the program.
    Step(usize),
    /// A view of another value: no instruction runs.
    View,
    /// Parts written side by side in place: no instruction runs.
    Concat,
    /// HBM whose contents do not matter, which strided stores then write over in place.
    Uninit,
}

/// One value of the program and its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedValue {
    /// The candidate's node whose value it is.
    pub node: usize,
    pub made: Made,
    /// Index into `Isa::buffers`.
    pub buffer: usize,
    /// First position along each access dimension of the buffer (bytes for HBM).
    pub start: Vec<i64>,
    /// Extent along each access dimension.
    pub size: Vec<i64>,
    /// First position and one past the last, flattened row-major over the access dimensions:
    /// the range the allocator keeps apart from every other value live at the same time.
    pub flat: (i64, i64),
    /// Half-open live interval in the schedule's time (step `p` reads at `2p`, writes at
    /// `2p + 1`; the program ends at `MemoryMap::end`).
    pub live: (i64, i64),
    /// The node whose storage holds the value: itself, or the storage a view or a part of a
    /// concatenation lies in.
    pub storage: usize,
    /// For a view, the node it views; for a part of a concatenation, the concatenation.
    pub within: Option<usize>,
}

/// One step of the program: the instruction node it runs and its attribute values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedStep {
    pub node: usize,
    /// Index into `Isa::instructions`.
    pub instr: usize,
    /// Values of its computational attributes, in `comp_attrs` order.
    pub comp: Vec<i64>,
    /// Values of its addressing attributes, in `addr_attrs` order.
    pub addr: Vec<i64>,
    /// The nodes whose values it reads, one per input slice.
    pub reads: Vec<usize>,
}

/// The program of a placed candidate, step by step, and the place of each of its values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryMap {
    pub steps: Vec<PlacedStep>,
    /// Every value the program keeps, in node order.
    pub values: Vec<PlacedValue>,
    /// The end of the schedule's time, `2 * steps.len() + 1`.
    pub end: i64,
}

impl MemoryMap {
    /// The same map with node `n` named `original[n]` (a program whose loads run again names
    /// each copy after the load it repeats); unchanged for `None`.
    pub fn renumbered(mut self, original: Option<&[usize]>) -> MemoryMap {
        let Some(original) = original else { return self };
        for step in &mut self.steps {
            step.node = original[step.node];
            step.reads.iter_mut().for_each(|r| *r = original[*r]);
        }
        for value in &mut self.values {
            value.node = original[value.node];
            value.storage = original[value.storage];
            value.within = value.within.map(|w| original[w]);
        }
        self
    }

    /// The place of node `node`'s value, if the program keeps it (its first instance, where
    /// the program loads it more than once: see [`MemoryMap::value_at`]).
    pub fn value(&self, node: usize) -> Option<&PlacedValue> {
        self.values.iter().find(|v| v.node == node)
    }

    /// The place of node `node`'s value at instant `t` of the schedule's time (step `p` reads
    /// at `2p` and writes at `2p + 1`): where a program loads a value again, each load is an
    /// instance of its own, placed where the allocator put it.
    pub fn value_at(&self, node: usize, t: i64) -> Option<&PlacedValue> {
        self.values.iter().find(|v| v.node == node && v.live.0 <= t && t < v.live.1)
    }
}

/// The memory map of `graph` run in `schedule`'s order with `placement`'s addresses. An `Err`
/// names what does not add up: a bug in scheduling or allocation, not in the kernel.
pub fn map(
    graph: &PiiGraph,
    isa: &Isa,
    values: &[Value],
    schedule: &Schedule,
    placement: &Placement,
    layout: &HbmLayout,
) -> Result<MemoryMap, String> {
    if placement.addrs.len() != schedule.steps.len() {
        return Err(format!(
            "{} steps but addresses for {}",
            schedule.steps.len(),
            placement.addrs.len()
        ));
    }
    let mut step_of = vec![None; graph.nodes.len()];
    let mut steps = Vec::with_capacity(schedule.steps.len());
    for (s, (&n, addr)) in schedule.steps.iter().zip(&placement.addrs).enumerate() {
        let PiiNode::Instr { instr, comp, operands } = &graph.nodes[n] else {
            return Err(format!("step {s} runs node {n}, which is no instruction"));
        };
        step_of[n] = Some(s);
        steps.push(PlacedStep {
            node: n,
            instr: *instr,
            comp: comp.clone(),
            addr: addr.clone(),
            reads: operands.clone(),
        });
    }
    let anchors = alloc::anchors(values, schedule);
    let mut starts: Vec<Option<Vec<i64>>> = vec![None; graph.nodes.len()];
    let mut placed = Vec::new();
    for (n, node) in graph.nodes.iter().enumerate() {
        let Some(live) = schedule.live[n] else { continue };
        let (made, start) = match node {
            PiiNode::Input { param, .. } => {
                let at =
                    layout.inputs.get(*param).ok_or(format!("node {n}: no parameter {param}"))?;
                (Made::Input(*param), vec![at.addr])
            }
            PiiNode::Constant { .. } => {
                let at = placement.constants.iter().find(|(c, _)| *c == n);
                let (_, addr) =
                    at.ok_or(format!("node {n}: a constant allocation did not place"))?;
                (Made::Constant, vec![*addr])
            }
            PiiNode::Instr { .. } => {
                let s = step_of[n].ok_or(format!("node {n} is live but runs at no step"))?;
                (Made::Step(s), output_start(isa, &steps[s])?)
            }
            // It lies where the store that first writes over it writes.
            PiiNode::Uninit { .. } => {
                let writer = values[n].overwritten_by.ok_or(format!("node {n}: nothing writes over it"))?;
                let s = step_of[writer].ok_or(format!("node {writer} is live but runs at no step"))?;
                (Made::Uninit, output_start(isa, &steps[s])?)
            }
            PiiNode::View { of, offset, .. } => {
                let base = starts[*of]
                    .as_ref()
                    .ok_or(format!("node {n} views node {of}, which has no place"))?;
                (Made::View, base.iter().zip(offset).map(|(b, o)| b + o).collect())
            }
            PiiNode::Concat { parts, .. } | PiiNode::Overlay { parts, .. } => {
                let part = parts.first().ok_or(format!("node {n} concatenates nothing"))?;
                let base =
                    starts[*part].as_ref().ok_or(format!("node {n}: part {part} has no place"))?;
                let offset = match &values[*part].within {
                    Some((c, offset)) if *c == n => offset,
                    _ => return Err(format!("node {part} is no part of node {n}")),
                };
                (Made::Concat, base.iter().zip(offset).map(|(b, o)| b - o).collect())
            }
        };
        let value = &values[n];
        let flat = flat_range(isa, value.buffer, &start, &value.size);
        starts[n] = Some(start.clone());
        placed.push(PlacedValue {
            node: n,
            made,
            buffer: value.buffer,
            start,
            size: value.size.clone(),
            flat,
            live,
            storage: anchors[n].0,
            within: value.within.as_ref().map(|(w, _)| *w),
        });
    }
    Ok(MemoryMap { steps, values: placed, end: schedule.end })
}

/// Where step `step`'s output slice starts, at its attribute values.
fn output_start(isa: &Isa, step: &PlacedStep) -> Result<Vec<i64>, String> {
    let def = &isa.instructions[step.instr];
    let mut env = def.comp_env(&step.comp);
    env.extend(def.addr_attrs.iter().zip(&step.addr).map(|(a, v)| (format!("a.{a}"), *v)));
    let out = def.outputs.first().ok_or(format!("{} has no output slice", def.name))?;
    out.start
        .iter()
        .map(|e| e.eval(&env).map_err(|err| format!("{}: output start: {err}", def.name)))
        .collect()
}

/// `[first, one past last)` position of a value in its buffer, flattened row-major over the
/// access dimensions, as the allocator's blocks span them (bytes in HBM).
pub fn flat_range(isa: &Isa, buffer: usize, start: &[i64], size: &[i64]) -> (i64, i64) {
    let buffer = &isa.buffers[buffer];
    if buffer.is_hbm() || start.len() == 1 {
        let (s, n) = (start.first().copied().unwrap_or(0), size.first().copied().unwrap_or(0));
        return (s, s + n);
    }
    let dims: Vec<i64> = buffer.access_dims.iter().map(|d| d.unwrap_or(1)).collect();
    let strides: Vec<i64> = (0..dims.len()).map(|k| dims[k + 1..].iter().product()).collect();
    let first: i64 = start.iter().zip(&strides).map(|(s, st)| s * st).sum();
    if size.contains(&0) {
        return (first, first);
    }
    let span: i64 = 1 + size.iter().zip(&strides).map(|(s, st)| (s - 1) * st).sum::<i64>();
    (first, first + span)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Buffer;
    use crate::lang::DType;

    fn isa() -> Isa {
        let buffer = |name: &str, access_dims: Vec<Option<i64>>| Buffer {
            name: name.into(),
            access_dims,
            unit_dims: vec![],
            dtype: DType::U8,
        };
        Isa {
            format: "act-isa-table/1".into(),
            name: "T".into(),
            buffers: vec![
                buffer("d0", vec![None]),
                buffer("rows", vec![Some(128)]),
                buffer("grid", vec![Some(8), Some(16)]),
            ],
            instructions: vec![],
        }
    }

    #[test]
    fn flat_ranges_span_first_to_last_position_as_the_allocator_blocks_them() {
        let isa = isa();
        for (buffer, start, size, flat) in [
            (0, vec![100], vec![64], (100, 164)),
            (1, vec![3], vec![5], (3, 8)),
            // Rows 2..4, columns 4..8 of an 8 x 16 grid: positions 36 to 55.
            (2, vec![2, 4], vec![2, 4], (36, 56)),
            (2, vec![0, 0], vec![8, 16], (0, 128)),
            (2, vec![1, 0], vec![0, 16], (16, 16)),
        ] {
            assert_eq!(
                flat_range(&isa, buffer, &start, &size),
                flat,
                "{buffer} {start:?} {size:?}"
            );
        }
    }
}
