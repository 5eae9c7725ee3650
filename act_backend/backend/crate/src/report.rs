//! What a compile did, as it goes: the phase it is in, selection's statistics, one record per
//! candidate and the best so far, and what names the best one's steps and values in the
//! kernel's words. Read by the command line for the answer when the safety net fires and for
//! `report.json` and `memory.svg`; a finished compile returns it with its assembly.

use crate::driver::{Best, CandidateRecord, Phases, StopReason};
use crate::isa::Isa;
use crate::isa_match::FreeAttribute;
use crate::memory_svg;
use crate::provenance::Origin;
use crate::report_program::{HloInstruction, Program};
use crate::select::SelectStats;
use serde_json::{json, Value};
use std::time::Duration;

pub const FORMAT: &str = "act-backend-report/1";

/// The compile so far.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// What the compile is doing, e.g. "instruction selection".
    pub phase: &'static str,
    pub module: Option<String>,
    /// The kernel's instructions, once it is parsed.
    pub hlo: Vec<HloInstruction>,
    /// Attributes of the table that no semantics use, set to a value of the backend's choice.
    pub free_attributes: Vec<FreeAttribute>,
    pub parse: Option<Duration>,
    pub select: Option<Duration>,
    pub stats: Option<SelectStats>,
    pub candidates_found: Option<usize>,
    /// Per candidate, the kernel instructions each of its nodes stands for.
    pub origins: Vec<Vec<Origin>>,
    pub records: Vec<CandidateRecord>,
    pub best: Option<Best>,
    pub stop: Option<StopReason>,
    pub phases: Phases,
    /// Where the kernel is compiled in blocks of its output: how many blocks, and the shape of
    /// each block's part of the output (of its first result, where it has several). The
    /// candidates are then those of one block.
    pub blocks: Option<(i64, Vec<i64>)>,
    /// Where the kernel is compiled in stages ([`crate::stages`]): how many. The candidates
    /// are then those of the last stage's last search.
    pub stages: Option<usize>,
    /// The emitted program's cost where it is made of several programs (blocks, bands,
    /// stages); the chosen candidate's is then one part's.
    pub program_cost: Option<f64>,
}

fn ms(d: Duration) -> f64 {
    // Rounded to microseconds: enough for a report, and short to read.
    (d.as_secs_f64() * 1e6).round() / 1e3
}

impl Progress {
    /// The best candidate so far, named in the kernel's words.
    pub fn program<'a>(&'a self, isa: &'a Isa) -> Option<Program<'a>> {
        let best = self.best.as_ref()?;
        let origins = self.origins.get(best.index).map_or(&[][..], Vec::as_slice);
        Some(Program::new(best, origins, &self.hlo, isa))
    }

    /// `memory.svg`: the best candidate's memory over time; `None` before one is placed.
    pub fn memory_svg(&self, isa: &Isa) -> Option<String> {
        let program = self.program(isa)?;
        let module = self.module.as_deref().unwrap_or("kernel");
        Some(memory_svg::render(&program.drawing(module, &self.hlo)))
    }

    /// `report.json`: `status` is "ok", "time_limit" (best so far emitted) or "error".
    pub fn to_json(
        &self,
        kernel: &str,
        isa: &Isa,
        status: &str,
        error: Option<&str>,
        total: Duration,
    ) -> Value {
        let candidates: Vec<Value> = self
            .records
            .iter()
            .map(|r| {
                json!({
                    "index": r.index,
                    "instructions": r.instructions,
                    "status": r.status.name(),
                    "order": r.order,
                    "orders_tried": r.orders_tried,
                    "orders_skipped": r.orders_skipped,
                    "cost": r.cost,
                    "file": r.file.as_ref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy()),
                    "message": r.message,
                    "timings_ms": phases_json(&r.phases),
                })
            })
            .collect();
        let mut timings = phases_json(&self.phases);
        let extra = [("parse", self.parse), ("select", self.select), ("total", Some(total))];
        for (name, d) in extra {
            timings[name] = json!(d.map(ms));
        }
        if let Some(s) = &self.stats {
            for (name, v) in
                [("rewrite", s.rewrite_ms), ("match", s.match_ms), ("extract", s.extract_ms)]
            {
                timings[name] = json!(ms(Duration::from_secs_f64(v.max(0.0) / 1e3)));
            }
        }
        json!({
            "format": FORMAT,
            "kernel": kernel,
            "module": self.module,
            "isa": isa.name,
            "status": status,
            "error": error,
            "phase": self.phase,
            "egraph": self.stats.as_ref().map(|s| json!({
                "nodes": s.egraph_nodes,
                "classes": s.egraph_classes,
                "iterations": s.iterations,
                "stop_reason": s.stop_reason.name(),
            })),
            "free_attributes": self.free_attributes.iter().map(|a| json!({
                "instruction": a.instruction,
                "attribute": a.attribute,
                "value": a.value,
            })).collect::<Vec<Value>>(),
            "candidates_found": self.candidates_found,
            "candidates_tried": self.records.len(),
            "stop_reason": self.stop.map(StopReason::name),
            "blocks": self.blocks.as_ref().map(|(count, shape)| json!({"count": count, "shape": shape})),
            "stages": self.stages,
            "chosen": self.best.as_ref().map(|b| b.index),
            "chosen_cost": self.best.as_ref().map(|b| b.cost),
            "program_cost": self.program_cost.or(self.best.as_ref().map(|b| b.cost)),
            "timings_ms": timings,
            "candidates": candidates,
            "hlo": self.hlo.iter().map(|h| json!({
                "name": h.name,
                "op": h.op,
                "line": h.line,
                "text": h.text,
            })).collect::<Vec<Value>>(),
            "program": self.program(isa).map(|p| p.to_json()),
        })
    }
}

fn phases_json(p: &Phases) -> Value {
    json!({
        "schedule": ms(p.schedule),
        "allocate": ms(p.allocate),
        "emit": ms(p.emit),
        "cost": ms(p.cost),
    })
}
