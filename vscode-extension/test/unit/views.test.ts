// The compile report and simulation views' pages, from a real report and a simulation result:
// what they show, what they link to, and that nothing from the data becomes markup.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

import { parseCompileReport } from "../../src/compileReport";
import type { Heatmap, SimulateSuccess } from "../../src/serverCommands";
import { compileReportBody, embeddableSvg, isReportMessage } from "../../src/views/compileReportView";
import { escapeHtml, page } from "../../src/views/page";
import { colourOf, heatmapSvg, largestDifference, NO_VALUE, simulationBody } from "../../src/views/simulationView";

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, "fixtures", name), "utf8");
const REPORT = parseCompileReport(fixture("attention.report.json"));
const SVG = fixture("attention.memory.svg");

/** The elements of `html` matching a simple `tag.class` or `tag[attr]` selector, as text. */
function all(html: string, pattern: RegExp): string[] {
  return [...html.matchAll(pattern)].map((m) => m[0]);
}

describe("the compile report page", () => {
  const body = compileReportBody({ kernelName: "attention.hlo", assemblyName: "attention.py", report: REPORT, svg: SVG });

  it("lists every step with its call linked to its line in the assembly", () => {
    const rows = all(body, /<tr data-step="\d+" data-writes="\d+">.*?<\/tr>/g);
    expect(rows).toHaveLength(9);
    expect(rows[2]).toContain('data-asm-line="12"');
    expect(rows[2]).toContain("api.gemm(addr_1=0, addr_2=64, addr_out=0)");
  });

  it("links each step to the HLO instructions it implements, at their lines", () => {
    const softmax = all(body, /<tr data-step="3".*?<\/tr>/g)[0];
    const links = all(softmax, /<a class="hlo" href="#" data-hlo-line="(\d+)"[^>]*>(\w+)<\/a>/g);
    expect(links.map((l) => />(\w+)<\/a>$/.exec(l)?.[1])).toEqual(["E", "rowsum", "denom", "P"]);
    expect(softmax).toContain('data-hlo-line="15"');
    // The link's tooltip is the HLO text, escaped.
    expect(softmax).toMatch(/title="line 15: %E = bf16\[64,64\]\{1,0\} exponential\(/);
  });

  it("embeds the memory picture and lists the candidates with the chosen one marked", () => {
    // Eight values made on chip; the store's output in HBM is not drawn.
    expect(all(body, /<g class="value"/g)).toHaveLength(8);
    expect(all(body, /<tr class="chosen">/g)).toHaveLength(1);
    expect(all(body, /<table class="candidates">[\s\S]*?<\/table>/g)[0].match(/<tr/g)).toHaveLength(REPORT.candidates.length + 1);
    expect(body).toContain("status ok · for QKV · candidate 0 chosen of 7 tried");
  });

  it("says so when there is no program or no picture", () => {
    const failed = compileReportBody({
      kernelName: "k.hlo",
      assemblyName: "k.py",
      report: { ...REPORT, status: "error", error: "kernel.hlo:3: no instruction of QKV computes `tanh`", program: null, chosen: null },
    });
    expect(failed).toContain('<p class="error">kernel.hlo:3: no instruction of QKV computes `tanh`</p>');
    expect(failed).toContain("No candidate was placed");
    expect(failed).toContain("No memory picture");
  });

  it("takes only the svg element of the picture and escapes what the report says", () => {
    expect(embeddableSvg('<?xml version="1.0"?><svg a="1"><g/></svg>\n<script>x</script>')).toBe('<svg a="1"><g/></svg>');
    expect(embeddableSvg("<html></html>")).toBeUndefined();
    const hostile = compileReportBody({
      kernelName: "<k>.hlo",
      assemblyName: "a.py",
      report: { ...REPORT, error: '<img src=x onerror="alert(1)">' },
    });
    expect(hostile).not.toContain("<img");
    expect(hostile).toContain("&lt;k&gt;.hlo");
    expect(escapeHtml(`a<b>&"c'`)).toBe("a&lt;b&gt;&amp;&quot;c&#39;");
  });

  it("accepts only the messages it sends", () => {
    expect(isReportMessage({ type: "revealKernel", line: 13 })).toBe(true);
    expect(isReportMessage({ type: "revealAssembly", line: 1 })).toBe(true);
    for (const bad of [{ type: "revealKernel", line: 0 }, { type: "revealKernel", line: 1.5 }, { type: "open", line: 3 }, null, "x"]) {
      expect(isReportMessage(bad)).toBe(false);
    }
  });

  it("runs only its own script", () => {
    const html = page({ title: "t", body: "<p>b</p>", script: "run()", cspSource: "vscode-webview:", nonce: "abc" });
    expect(html).toContain("script-src 'nonce-abc'");
    expect(html).toContain("default-src 'none'");
    expect(html).toContain('<script nonce="abc">run()</script>');
  });
});

function map(values: Array<Array<number | null>>, reduce = "mean"): Heatmap {
  const finite = values.flat().filter((v): v is number => v !== null);
  return {
    rows: values.length,
    cols: values[0].length,
    shape: [values.length, values[0].length],
    block: [1, 1],
    reduce,
    min: Math.min(...finite),
    max: Math.max(...finite),
    non_finite: values.flat().length - finite.length,
    values,
  };
}

const SIMULATED: SimulateSuccess = {
  ok: true,
  message: "m",
  max_abs_diff: 0.0078125,
  max_abs_reference: 0.98,
  shape: [2, 3],
  run_ms: 12.5,
  dtype: "bfloat16",
  difference_unit: "ulps",
  max_ulps: 2,
  max_abs_ulps_of_largest: 1,
  where: [1, 2],
  oracle_at: 0.5,
  reference_at: 0.4921875,
  heatmaps: {
    output: map([
      [0.1, 0.2, 0.3],
      [0.4, null, 0.5],
    ]),
    difference: map(
      [
        [0, 0, 1],
        [0, 0, 2],
      ],
      "max",
    ),
  },
};

describe("the simulation page", () => {
  const body = simulationBody({ assemblyName: "attention.py", kernelName: "attention.hlo", result: SIMULATED });

  it("leads with the largest difference in ulps, where it is, and the run time", () => {
    expect(body).toContain('<td class="big">2 ulps (bfloat16) at [1, 2] (oracle 0.5, reference 0.492188)</td>');
    expect(body).toContain("<td>12.5 ms</td>");
    expect(body).toContain("<td>0.0078125 (1 ulp of the largest magnitude)</td>");
    expect(body).toContain("<td>bfloat16[2, 3]</td>");
  });

  it("draws the output and the difference, one cell per value", () => {
    const maps = all(body, /<svg class="heatmap" data-map="(\w+)"/g);
    expect(maps).toEqual(['<svg class="heatmap" data-map="output"', '<svg class="heatmap" data-map="difference"']);
    expect(all(body, /<rect x="\d+" y="\d+" width="\d+" height="\d+" fill="#[0-9a-f]{6}" data-r=/g)).toHaveLength(12);
    // The non-finite cell is grey and counted in the caption.
    expect(body).toContain(`fill="${NO_VALUE}" data-r="1" data-c="1" data-v=""`);
    expect(body).toContain("1 not finite (grey)");
    expect(body).toContain("Difference from the reference (ulps, log scale); 2 x 3, one cell per element");
  });

  it("colours differences from white at zero to dark red at the largest, on a log scale", () => {
    expect(colourOf(0, 0, 2, "difference")).toBe("#ffffff");
    expect(colourOf(2, 0, 2, "difference")).toBe("#800026");
    // log(1 + 3) / log(1 + 15) = 1/2: the middle stop.
    expect(colourOf(3, 0, 15, "difference")).toBe("#fd8d3c");
    // One ulp beside thousands is still not white.
    expect(colourOf(1, 0, 30000, "difference")).not.toBe("#ffffff");
    expect(colourOf(0, 0, 0, "difference")).toBe("#ffffff");
    expect(colourOf(-1, -1, 1, "output")).toBe("#440154");
    expect(colourOf(null, 0, 1, "output")).toBe(NO_VALUE);
  });

  it("says how big a block is when the output is shown in blocks", () => {
    const blocks = { ...map([[1, 2]]), shape: [1, 512], block: [1, 256], reduce: "max" };
    const svg = heatmapSvg(blocks, "difference", "difference");
    expect(all(svg, /<rect x=\S+ y=\S+ width=\S+ height=\S+ fill=\S+ data-r=/g)).toHaveLength(2);
    const page = simulationBody({ assemblyName: "a.py", kernelName: "a.hlo", result: { ...SIMULATED, heatmaps: { output: blocks, difference: blocks } } });
    expect(page).toContain("1 x 512, one cell per 1 x 256 block (its max)");
  });

  it("words the largest difference for NaNs, integers and older servers", () => {
    expect(largestDifference({ ...SIMULATED, max_ulps: 1 })).toBe("1 ulp (bfloat16)");
    expect(largestDifference({ ...SIMULATED, max_ulps: null })).toBe("infinitely many ulps (a NaN against a number)");
    expect(largestDifference({ ...SIMULATED, max_ulps: 3, difference_unit: "integer difference", dtype: "int8" })).toBe("3 integer difference (int8)");
    expect(largestDifference({ ok: true, message: "m", max_abs_diff: 0.25 })).toBe("0.25 (absolute)");
  });
});
