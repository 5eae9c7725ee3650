//! The chosen program as the report shows it: `report.json`'s `hlo` and `program` sections
//! and the memory picture. It joins what the compile knows about the program (its steps and
//! where each value lives, [`MemoryMap`]) with where each node came from in the kernel
//! ([`Origin`]), naming every value and every step in the kernel's own words.

use crate::driver::Best;
use crate::isa::Isa;
use crate::kernel::Kernel;
use crate::memory_map::{Made, PlacedValue};
use crate::memory_svg::{Drawing, Lane, Rect};
use crate::provenance::Origin;
use serde_json::{json, Value};

/// One instruction of the kernel, as `report.json` lists it (`hlo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HloInstruction {
    /// Its name, without the `%`.
    pub name: String,
    /// The operator, as HLO spells it.
    pub op: String,
    /// Where it is written (1-based), in the kernel file or the computation a `call` applies.
    pub line: usize,
    /// Its HLO text, cut at [`HLO_TEXT_CHARS`] characters (a literal can be long).
    pub text: String,
}

/// The most characters of an instruction's text the report keeps.
pub const HLO_TEXT_CHARS: usize = 240;

/// `text` trimmed, and cut to `HLO_TEXT_CHARS` characters with an ellipsis.
fn shortened(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(HLO_TEXT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

impl HloInstruction {
    /// The kernel's instructions in program order (what `Origin` indices refer to).
    pub fn list(kernel: &Kernel) -> Vec<HloInstruction> {
        kernel
            .nodes
            .iter()
            .map(|n| HloInstruction {
                name: n.name.clone(),
                op: n.op.hlo_name().to_string(),
                line: n.line,
                text: shortened(&n.text),
            })
            .collect()
    }
}

/// One step of the program, named.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StepView {
    /// Its line in the assembly file (1-based).
    line: Option<usize>,
    /// Its call, as the assembly writes it.
    call: String,
    instruction: String,
    instr: usize,
    implements: Vec<String>,
    reads: Vec<usize>,
    writes: usize,
}

/// One value of the program, named.
#[derive(Debug, Clone, PartialEq)]
struct ValueView<'p> {
    place: &'p PlacedValue,
    label: String,
    hlo: Option<String>,
    aliases: Vec<String>,
    part_of: Vec<String>,
    buffer: String,
    on_chip: bool,
    /// First and last step during which it is live.
    steps: (i64, i64),
}

/// The chosen program, named in the kernel's words.
pub struct Program<'a> {
    best: &'a Best,
    isa: &'a Isa,
    steps: Vec<StepView>,
    values: Vec<ValueView<'a>>,
}

impl<'a> Program<'a> {
    /// `origins` are the best candidate's (one per node; missing ones read as unknown), `hlo`
    /// the kernel's instructions they index.
    pub fn new(
        best: &'a Best,
        origins: &[Origin],
        hlo: &[HloInstruction],
        isa: &'a Isa,
    ) -> Program<'a> {
        let memory = &best.memory;
        let origin = |n: usize| origins.get(n).cloned().unwrap_or_default();
        let name = |k: &usize| hlo.get(*k).map_or_else(|| format!("#{k}"), |h| h.name.clone());
        // The assembly writes one call per step, in order, each on a line of its own.
        let calls: Vec<(usize, &str)> = best
            .assembly
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with("api."))
            .map(|(i, l)| (i + 1, l.trim()))
            .collect();
        let steps: Vec<StepView> = memory
            .steps
            .iter()
            .enumerate()
            .map(|(s, step)| {
                let instruction = isa.instructions[step.instr].name.clone();
                let (line, call) = match calls.get(s) {
                    Some(&(line, call)) if calls.len() == memory.steps.len() => {
                        (Some(line), call.to_string())
                    }
                    _ => (None, format!("api.{instruction}(...)")),
                };
                StepView {
                    line,
                    call,
                    instruction,
                    instr: step.instr,
                    implements: origin(step.node).implements.iter().map(name).collect(),
                    reads: step.reads.clone(),
                    writes: step.node,
                }
            })
            .collect();
        let last_step = memory.steps.len().saturating_sub(1) as i64;
        let values = memory
            .values
            .iter()
            .map(|place| {
                let origin = origin(place.node);
                // The last name is the one the program's later instructions know it by.
                let (hlo_name, aliases) = match origin.holds.split_last() {
                    Some((primary, rest)) => (Some(name(primary)), rest.iter().map(name).collect()),
                    None => (None, Vec::new()),
                };
                let part_of: Vec<String> = origin.part_of.iter().map(name).collect();
                let label = match (&hlo_name, part_of.first()) {
                    (Some(n), _) => n.clone(),
                    (None, Some(whole)) => format!("part of {whole}"),
                    (None, None) => made_label(place.made, &steps),
                };
                let buffer = &isa.buffers[place.buffer];
                let steps_live = (place.live.0 / 2, ((place.live.1 - 1) / 2).min(last_step));
                ValueView {
                    place,
                    label,
                    hlo: hlo_name,
                    aliases,
                    part_of,
                    buffer: buffer.name.clone(),
                    on_chip: !buffer.is_hbm(),
                    steps: steps_live,
                }
            })
            .collect();
        Program { best, isa, steps, values }
    }

    /// `report.json`'s `program` section.
    pub fn to_json(&self) -> Value {
        let memory = &self.best.memory;
        json!({
            "candidate": self.best.index,
            "steps": memory.steps.len(),
            "time_end": memory.end,
            "buffers": self.isa.buffers.iter().map(|b| json!({
                "name": b.name,
                "positions": b.capacity(),
                "unit": unit(b),
                "on_chip": !b.is_hbm(),
            })).collect::<Vec<Value>>(),
            "assembly": self.steps.iter().enumerate().map(|(s, step)| json!({
                "step": s,
                "line": step.line,
                "call": step.call,
                "instruction": step.instruction,
                "implements": step.implements,
                "reads": step.reads,
                "writes": step.writes,
            })).collect::<Vec<Value>>(),
            "values": self.values.iter().map(|v| {
                let p = v.place;
                let (made, made_by, param) = match p.made {
                    Made::Input(i) => ("input", None, Some(i)),
                    Made::Constant => ("constant", None, None),
                    Made::Step(s) => ("step", Some(s), None),
                    Made::View => ("view", None, None),
                    Made::Concat => ("concatenation", None, None),
                    Made::Uninit => ("uninitialised", None, None),
                };
                json!({
                    "id": p.node,
                    "label": v.label,
                    "hlo": v.hlo,
                    "aliases": v.aliases,
                    "part_of": v.part_of,
                    "made": made,
                    "made_by": made_by,
                    "param": param,
                    "buffer": v.buffer,
                    "on_chip": v.on_chip,
                    "start": p.start,
                    "size": p.size,
                    "address": [p.flat.0, p.flat.1],
                    "live": [p.live.0, p.live.1],
                    "live_steps": [v.steps.0, v.steps.1],
                    "storage": p.storage,
                    "within": p.within,
                })
            }).collect::<Vec<Value>>(),
        })
    }

    /// The memory picture: one lane per on-chip buffer, a rectangle per value an instruction
    /// made there (views and concatenations lie inside those and are not drawn again).
    pub fn drawing(&self, module: &str, hlo: &[HloInstruction]) -> Drawing {
        let mut lane_of = vec![None; self.isa.buffers.len()];
        let mut lanes = Vec::new();
        for (b, buffer) in self.isa.buffers.iter().enumerate() {
            if let (false, Some(capacity)) = (buffer.is_hbm(), buffer.capacity()) {
                lane_of[b] = Some(lanes.len());
                let dims: Vec<String> =
                    buffer.access_dims.iter().flatten().map(i64::to_string).collect();
                let caption = format!("{} x {}", dims.join(" x "), unit(buffer));
                lanes.push(Lane { name: buffer.name.clone(), capacity, caption });
            }
        }
        let drawn: Vec<(&ValueView<'_>, usize, &StepView)> = self
            .values
            .iter()
            .filter_map(|v| match (v.place.made, lane_of[v.place.buffer]) {
                (Made::Step(s), Some(lane)) => Some((v, lane, &self.steps[s])),
                _ => None,
            })
            .collect();
        // One colour per instruction the picture shows, in the ISA's order.
        let mut used: Vec<usize> = drawn.iter().map(|(_, _, step)| step.instr).collect();
        used.sort_unstable();
        used.dedup();
        let rects = drawn
            .iter()
            .map(|&(v, lane, step)| Rect {
                lane,
                time: v.place.live,
                positions: v.place.flat,
                label: v.label.clone(),
                hover: self.hover(v, step, hlo),
                colour_key: used.binary_search(&step.instr).unwrap_or(0),
                value: v.place.node,
            })
            .collect();
        Drawing {
            title: format!(
                "{module} on {}: candidate {}, {} steps, cost {}",
                self.isa.name,
                self.best.index,
                self.steps.len(),
                self.best.cost
            ),
            steps: self.steps.iter().map(|s| s.call.clone()).collect(),
            lanes,
            rects,
            legend: used
                .iter()
                .enumerate()
                .map(|(key, &i)| (key, self.isa.instructions[i].name.clone()))
                .collect(),
        }
    }

    /// What hovering over a value says: its name and HLO, where it lives, when, and what made it.
    fn hover(&self, v: &ValueView<'_>, step: &StepView, hlo: &[HloInstruction]) -> String {
        let p = v.place;
        let mut lines = vec![v.label.clone()];
        if let Some(name) = &v.hlo {
            if let Some(h) = hlo.iter().find(|h| &h.name == name) {
                lines.push(format!("HLO line {}: {}", h.line, h.text));
            }
        }
        if !v.aliases.is_empty() {
            lines.push(format!("also {}", v.aliases.join(", ")));
        }
        if v.hlo.is_none() && !step.implements.is_empty() {
            lines.push(format!("its step implements {}", step.implements.join(", ")));
        }
        lines.push(format!(
            "{} positions {}..{} (start {:?}, size {:?})",
            v.buffer, p.flat.0, p.flat.1, p.start, p.size
        ));
        lines.push(format!("live from step {} to step {}", v.steps.0, v.steps.1));
        if let Made::Step(s) = p.made {
            lines.push(format!("made by step {s}: {}", step.call));
        }
        lines.join("\n")
    }
}

/// A label for a value that is no kernel value nor a part of one: what made it.
fn made_label(made: Made, steps: &[StepView]) -> String {
    match made {
        Made::Step(s) => format!("{}@{s}", steps[s].instruction),
        Made::Input(i) => format!("parameter {i}"),
        Made::Constant => "constant".into(),
        Made::View => "view".into(),
        Made::Concat => "concatenation".into(),
        Made::Uninit => "uninitialised".into(),
    }
}

/// What one position of a buffer holds, e.g. `bf16[64]` (`u8` for HBM's bytes).
fn unit(buffer: &crate::isa::Buffer) -> String {
    if buffer.unit_dims.is_empty() {
        buffer.dtype.to_string()
    } else {
        let dims: Vec<String> = buffer.unit_dims.iter().map(i64::to_string).collect();
        format!("{}[{}]", buffer.dtype, dims.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_instruction_texts_are_cut_with_an_ellipsis() {
        assert_eq!(shortened("  %a = f32[2] add(%x, %y)\n"), "%a = f32[2] add(%x, %y)");
        let literal = format!("%c = f32[100] constant({{{}}})", vec!["1.5"; 100].join(", "));
        let cut = shortened(&literal);
        assert_eq!(cut.chars().count(), HLO_TEXT_CHARS + 1);
        assert!(cut.starts_with("%c = f32[100] constant({1.5, 1.5") && cut.ends_with('…'));
    }
}
