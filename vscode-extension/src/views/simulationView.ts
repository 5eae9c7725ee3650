//! The simulation view's content: how far the oracle's output is from the reference (largest
//! difference in ulps of the output's element type, where, the largest absolute difference),
//! the run time, and heatmaps of the output and of the difference. Plain functions of the
//! simulate command's result; `panels.ts` shows them.

import type { Heatmap, SimulateSuccess } from "../serverCommands";
import { escapeHtml } from "./page";

export interface SimulationContent {
  assemblyName: string;
  kernelName: string;
  result: SimulateSuccess;
}

/** The title of an assembly's simulation view. */
export function simulationTitle(assemblyName: string): string {
  return `Simulation: ${assemblyName}`;
}

type Rgb = [number, number, number];

/** Perceptually ordered stops (dark blue to yellow), for values from their least to largest. */
const OUTPUT_STOPS: Rgb[] = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];
/** White for no difference to dark red for the largest. */
const DIFFERENCE_STOPS: Rgb[] = [
  [255, 255, 255],
  [254, 217, 118],
  [253, 141, 60],
  [227, 26, 28],
  [128, 0, 38],
];
/** Cells without a finite value. */
export const NO_VALUE = "#808080";

export type Scale = "output" | "difference";

function hex([r, g, b]: Rgb): string {
  return `#${[r, g, b].map((c) => Math.round(c).toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The colour of `value` on `scale` from `min` to `max`. A difference scale starts at 0 and is
 * logarithmic (`log(1 + d)`), so that one ulp still shows beside a difference of thousands
 * (two values of opposite sign near zero are that many ulps apart).
 */
export function colourOf(value: number | null, min: number, max: number, scale: Scale): string {
  if (value === null || !Number.isFinite(value)) {
    return NO_VALUE;
  }
  const stops = scale === "output" ? OUTPUT_STOPS : DIFFERENCE_STOPS;
  const low = scale === "output" ? min : 0;
  if (max <= low) {
    // One value everywhere: the scale's start (white for "no difference").
    return hex(stops[scale === "output" ? stops.length - 1 : 0]);
  }
  const fraction = scale === "output" ? (value - low) / (max - low) : Math.log1p(Math.max(0, value)) / Math.log1p(max);
  const t = Math.min(1, Math.max(0, fraction)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(t));
  const f = t - i;
  const a = stops[i];
  const b = stops[i + 1];
  return hex([a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f]);
}

/** A number as short as it reads exactly enough. */
export function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined) {
    return "–";
  }
  if (Number.isInteger(value)) {
    return String(value);
  }
  return Number(value.toPrecision(6)).toString();
}

const SIDE_PX = 320;

/** A heatmap as an SVG of one cell per value (or block of values), with its colour bar. */
export function heatmapSvg(map: Heatmap, scale: Scale, name: string): string {
  const longest = Math.max(map.rows, map.cols, 1);
  const cell = Math.max(2, Math.min(24, Math.floor(SIDE_PX / longest)));
  const cellHeight = map.rows < 4 ? Math.max(cell, 16) : cell;
  const width = map.cols * cell;
  const height = map.rows * cellHeight;
  const min = map.min ?? 0;
  const max = map.max ?? 0;
  const cells: string[] = [];
  map.values.forEach((row, r) =>
    row.forEach((v, c) => {
      const value = v === null ? "" : String(v);
      cells.push(
        `<rect x="${c * cell}" y="${r * cellHeight}" width="${cell}" height="${cellHeight}" fill="${colourOf(v, min, max, scale)}" data-r="${r}" data-c="${c}" data-v="${value}"/>`,
      );
    }),
  );
  const barStops = (scale === "output" ? OUTPUT_STOPS : DIFFERENCE_STOPS)
    .map((s, i, all) => `<stop offset="${(i / (all.length - 1)).toFixed(2)}" stop-color="${hex(s)}"/>`)
    .join("");
  const barY = height + 10;
  const low = scale === "output" ? min : 0;
  return `<svg class="heatmap" data-map="${escapeHtml(name)}" xmlns="http://www.w3.org/2000/svg" width="${Math.max(width, 200)}" height="${barY + 34}" viewBox="0 0 ${Math.max(width, 200)} ${barY + 34}" font-family="sans-serif" font-size="11">
<defs><linearGradient id="bar-${escapeHtml(name)}">${barStops}</linearGradient></defs>
<g class="cells" data-rows="${map.rows}" data-cols="${map.cols}">${cells.join("")}</g>
<rect x="0" y="${barY}" width="200" height="10" fill="url(#bar-${escapeHtml(name)})" stroke="#888" stroke-width="0.5"/>
<text x="0" y="${barY + 24}" fill="currentColor">${escapeHtml(formatNumber(low))}</text>
<text x="200" y="${barY + 24}" text-anchor="end" fill="currentColor">${escapeHtml(formatNumber(max))}</text>
</svg>`;
}

function blockNote(map: Heatmap): string {
  const [br, bc] = map.block;
  const shape = `${map.shape[0]} x ${map.shape[1]}`;
  if (br === 1 && bc === 1) {
    return `${shape}, one cell per element`;
  }
  return `${shape}, one cell per ${br} x ${bc} block (its ${map.reduce})`;
}

function where(result: SimulateSuccess): string {
  if (result.where === null || result.where === undefined) {
    return "";
  }
  return ` at [${result.where.join(", ")}] (oracle ${formatNumber(result.oracle_at)}, reference ${formatNumber(result.reference_at)})`;
}

/** The largest difference in words: "2 ulps (bfloat16)", "infinitely many ulps" for a NaN. */
export function largestDifference(result: SimulateSuccess): string {
  if (result.max_ulps === undefined) {
    return `${formatNumber(result.max_abs_diff)} (absolute)`;
  }
  const unit = result.difference_unit ?? "ulps";
  if (result.max_ulps === null) {
    return `infinitely many ${unit} (a NaN against a number)`;
  }
  const said = result.max_ulps === 1 && unit === "ulps" ? "ulp" : unit;
  return `${formatNumber(result.max_ulps)} ${said}${result.dtype === undefined ? "" : ` (${result.dtype})`}`;
}

/**
 * The largest absolute difference in ulps of the largest reference magnitude ("2 ulps of the
 * largest magnitude"), for a float output whose server measured it.
 */
export function ulpsOfLargest(result: SimulateSuccess): string | undefined {
  const ulps = result.max_abs_ulps_of_largest;
  if (ulps === undefined || ulps === null || (result.difference_unit ?? "ulps") !== "ulps") {
    return undefined;
  }
  return `${formatNumber(ulps)} ${ulps === 1 ? "ulp" : "ulps"} of the largest magnitude`;
}

/** The page's body. */
export function simulationBody(c: SimulationContent): string {
  const r = c.result;
  const metric = (name: string, value: string, big = false) =>
    `<tr><td>${escapeHtml(name)}</td><td${big ? ' class="big"' : ""}>${escapeHtml(value)}</td></tr>`;
  const rows = [
    metric("largest difference", largestDifference(r) + where(r), true),
    metric("largest |oracle − reference|", formatNumber(r.max_abs_diff) + (ulpsOfLargest(r) === undefined ? "" : ` (${ulpsOfLargest(r)})`)),
  ];
  if (r.max_abs_reference !== undefined) {
    rows.push(metric("largest |reference|", formatNumber(r.max_abs_reference)));
  }
  if (r.run_ms !== undefined) {
    rows.push(metric("run time", `${r.run_ms.toFixed(1)} ms`));
  }
  if (r.shape !== undefined) {
    rows.push(metric("output", `${r.dtype ?? ""}[${r.shape.join(", ")}]`));
  }
  let maps = `<p class="summary">The server sent no heatmaps.</p>`;
  if (r.heatmaps !== undefined) {
    const unit = r.difference_unit ?? "ulps";
    const figure = (map: Heatmap, scale: Scale, name: string, caption: string) =>
      `<figure>${heatmapSvg(map, scale, name)}<figcaption>${escapeHtml(caption)}; ${escapeHtml(blockNote(map))}${
        map.non_finite > 0 ? `; ${map.non_finite} not finite (grey)` : ""
      }</figcaption></figure>`;
    maps = `<div class="maps">
${figure(r.heatmaps.output, "output", "output", "Output (oracle)")}
${figure(r.heatmaps.difference, "difference", "difference", `Difference from the reference (${unit}, log scale)`)}
</div>
<p class="readout" id="readout">Hover a cell for its value.</p>`;
  }
  return `<header><h1>${escapeHtml(simulationTitle(c.assemblyName))}</h1><p class="summary">${escapeHtml(
    `${c.assemblyName} on the oracle, against the NumPy reference of ${c.kernelName}`,
  )}</p></header>
<table class="metrics">${rows.join("")}</table>
<h2>Heatmaps<span class="hint">rows: all dimensions but the last; columns: the last</span></h2>
${maps}`;
}

/** The page's script (runs in the webview): the value under the mouse. */
export const SIMULATION_SCRIPT = `
const readout = document.getElementById("readout");
document.addEventListener("mouseover", (event) => {
  const cell = event.target.closest("svg.heatmap rect[data-r]");
  if (!cell || !readout) { return; }
  const map = cell.closest("svg.heatmap").dataset.map;
  const value = cell.dataset.v === "" ? "not finite" : cell.dataset.v;
  readout.textContent = map + " at row " + cell.dataset.r + ", column " + cell.dataset.c + ": " + value;
});
`;
