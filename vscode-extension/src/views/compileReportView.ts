//! The compile report view's content: the chosen program's assembly, each line linked to the
//! HLO instructions it implements, the memory picture the backend drew (`memory.svg`), and the
//! candidates tried with their cost. Plain functions of the report; `panels.ts` shows them.
//!
//! The page's script asks the extension to open the kernel or the assembly at a line
//! (`{type: "revealKernel" | "revealAssembly", line}`), and links the picture with the
//! listing: hovering a value highlights the step that made it, hovering a step the value it
//! writes, with the value's story in a tooltip.

import type { CompileReport, HloInstruction } from "../compileReport";
import { escapeHtml } from "./page";

export interface CompileReportContent {
  kernelName: string;
  assemblyName: string;
  report: CompileReport;
  /** The memory picture's SVG, when the backend drew one. */
  svg?: string;
}

/** A message the page sends to the extension. */
export type ReportMessage = { type: "revealKernel"; line: number } | { type: "revealAssembly"; line: number };

export function isReportMessage(value: unknown): value is ReportMessage {
  const m = value as { type?: unknown; line?: unknown } | null;
  return (
    typeof m === "object" &&
    m !== null &&
    (m.type === "revealKernel" || m.type === "revealAssembly") &&
    typeof m.line === "number" &&
    Number.isInteger(m.line) &&
    m.line >= 1
  );
}

/** The title of a kernel's report view. */
export function reportTitle(kernelName: string): string {
  return `Compile Report: ${kernelName}`;
}

function summary(r: CompileReport): string {
  const parts = [`status ${r.status}`, `for ${r.isa}`];
  if (r.chosen !== null) {
    parts.push(`candidate ${r.chosen} chosen of ${r.candidates.length} tried` + (r.candidatesFound === null ? "" : ` (${r.candidatesFound} found)`));
  } else {
    parts.push(`${r.candidates.length} candidates tried`);
  }
  if (r.chosenCost !== null) {
    parts.push(`cost ${r.chosenCost}`);
  }
  if (r.program !== null) {
    parts.push(`${r.program.steps.length} instructions`);
  }
  if (r.stopReason !== null) {
    parts.push(`stopped: ${r.stopReason}`);
  }
  return parts.join(" · ");
}

function hloLink(name: string, byName: Map<string, HloInstruction>): string {
  const hlo = byName.get(name);
  if (hlo === undefined) {
    return `<span class="hlo">${escapeHtml(name)}</span>`;
  }
  return `<a class="hlo" href="#" data-hlo-line="${hlo.line}" title="line ${hlo.line}: ${escapeHtml(hlo.text)}">${escapeHtml(name)}</a>`;
}

function assemblyTable(r: CompileReport, byName: Map<string, HloInstruction>): string {
  if (r.program === null) {
    return `<p class="summary">No candidate was placed, so there is no program to show.</p>`;
  }
  const rows = r.program.steps.map((s) => {
    const call =
      s.line === null
        ? `<span class="call">${escapeHtml(s.call)}</span>`
        : `<a class="call" href="#" data-asm-line="${s.line}" title="line ${s.line} of the assembly">${escapeHtml(s.call)}</a>`;
    const implemented = s.implements.length === 0 ? `<span class="summary">(none)</span>` : s.implements.map((n) => hloLink(n, byName)).join(", ");
    return `<tr data-step="${s.step}" data-writes="${s.writes}"><td class="num">${s.step}</td><td>${call}</td><td>${implemented}</td></tr>`;
  });
  return `<table class="assembly"><thead><tr><th>step</th><th>instruction</th><th>implements (HLO)</th></tr></thead><tbody>
${rows.join("\n")}
</tbody></table>`;
}

function candidatesTable(r: CompileReport): string {
  const rows = r.candidates.map((c) => {
    const chosen = c.index === r.chosen ? ' class="chosen"' : "";
    return `<tr${chosen}><td class="num">${c.index}</td><td class="num">${c.instructions}</td><td>${escapeHtml(c.status)}</td><td class="num">${c.cost ?? "–"}</td><td>${escapeHtml(c.order ?? "")}</td><td class="note">${escapeHtml(c.message)}</td></tr>`;
  });
  return `<table class="candidates"><thead><tr><th>#</th><th>instructions</th><th>status</th><th>cost</th><th>order</th><th>note</th></tr></thead><tbody>
${rows.join("\n")}
</tbody></table>`;
}

/** The memory picture as the page embeds it: only an `<svg>` document is taken. */
export function embeddableSvg(svg: string | undefined): string | undefined {
  if (svg === undefined) {
    return undefined;
  }
  const start = svg.indexOf("<svg");
  const end = svg.lastIndexOf("</svg>");
  return start < 0 || end < start ? undefined : svg.slice(start, end + "</svg>".length);
}

/** The page's body. */
export function compileReportBody(c: CompileReportContent): string {
  const r = c.report;
  const byName = new Map<string, HloInstruction>();
  for (const h of r.hlo) {
    if (!byName.has(h.name)) {
      byName.set(h.name, h);
    }
  }
  const error = r.error === null ? "" : `<p class="error">${escapeHtml(r.error)}</p>`;
  const svg = embeddableSvg(c.svg);
  const memory =
    svg === undefined
      ? `<p class="summary">No memory picture: the backend draws one when a candidate is placed.</p>`
      : `<div class="picture">${svg}</div>`;
  return `<header><h1>${escapeHtml(reportTitle(c.kernelName))}</h1><p class="summary">${escapeHtml(summary(r))}</p></header>
${error}
<section id="assembly"><h2>Assembly<span class="hint">${escapeHtml(c.assemblyName)}: click an instruction to open it there, an HLO name to go to it in ${escapeHtml(c.kernelName)}</span></h2>
${assemblyTable(r, byName)}
</section>
<section id="memory"><h2>Memory over time<span class="hint">one lane per on-chip buffer; hover a value for where it lives and what made it</span></h2>
${memory}
</section>
<section id="candidates"><h2>Candidates tried</h2>
${candidatesTable(r)}
</section>
<div id="tip" class="tip" hidden></div>`;
}

/** The page's script (runs in the webview). */
export const COMPILE_REPORT_SCRIPT = `
const vscode = acquireVsCodeApi();
const tip = document.getElementById("tip");
// The picture's own <title>s become this page's tooltip, so that only one shows.
for (const g of document.querySelectorAll("svg g.value")) {
  const title = g.querySelector(":scope > title");
  if (title) { g.dataset.tip = title.textContent; title.remove(); }
}
document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-hlo-line], [data-asm-line]");
  if (!link) { return; }
  event.preventDefault();
  if (link.dataset.hloLine) {
    vscode.postMessage({ type: "revealKernel", line: Number(link.dataset.hloLine) });
  } else {
    vscode.postMessage({ type: "revealAssembly", line: Number(link.dataset.asmLine) });
  }
});
function highlight(value) {
  for (const el of document.querySelectorAll(".hl")) { el.classList.remove("hl"); }
  if (value === undefined) { return; }
  for (const el of document.querySelectorAll('tr[data-writes="' + value + '"], svg g.value[data-value="' + value + '"]')) {
    el.classList.add("hl");
  }
}
document.addEventListener("mouseover", (event) => {
  const value = event.target.closest("svg g.value");
  const row = event.target.closest("tr[data-writes]");
  if (value) {
    highlight(value.dataset.value);
    tip.textContent = value.dataset.tip || "";
    tip.hidden = !value.dataset.tip;
  } else {
    highlight(row ? row.dataset.writes : undefined);
    tip.hidden = true;
  }
});
document.addEventListener("mousemove", (event) => {
  // Beside the pointer, inside the window: below it, or above it near the bottom.
  const left = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
  const below = event.clientY + 16;
  const top = below + tip.offsetHeight > window.innerHeight ? event.clientY - tip.offsetHeight - 8 : below;
  tip.style.left = Math.max(8, left) + "px";
  tip.style.top = Math.max(8, top) + "px";
});
`;
