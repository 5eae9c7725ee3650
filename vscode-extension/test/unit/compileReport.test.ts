// Reading the backend's report.json: a real report (the QKV attention kernel's) decodes whole;
// anything else is refused naming the field.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

import { MalformedReport, memorySvgPathFor, parseCompileReport, reportPathFor } from "../../src/compileReport";

const FIXTURE = fs.readFileSync(path.join(__dirname, "fixtures", "attention.report.json"), "utf8");

describe("report.json", () => {
  it("decodes the chosen program: steps with the HLO they implement, values with their place", () => {
    const report = parseCompileReport(FIXTURE);
    expect(report).toMatchObject({ status: "ok", isa: "QKV", module: "qkv", chosen: 0, chosenCost: 9 });
    const steps = report.program?.steps ?? [];
    expect(steps.map((s) => s.instruction)).toEqual(["load_rm", "load_cm", "gemm", "softmax", "mov", "load_rm", "gemm", "mov", "store_rm"]);
    expect(steps[3].implements).toEqual(["E", "rowsum", "denom", "P"]);
    expect(steps[0]).toMatchObject({ line: 10, call: "api.load_rm(n=64, addr_in=0, addr_out=0)" });
    const kt = report.program?.values.find((v) => v.label === "Kt");
    expect(kt).toMatchObject({ buffer: "d1", on_chip: true, address: [64, 128], made_by: 1, live_steps: [1, 2] });
    expect(report.hlo.find((h) => h.name === "Kt")).toMatchObject({ op: "transpose", line: 13 });
    expect(report.candidates.length).toBeGreaterThan(1);
  });

  it("has no program when no candidate was placed", () => {
    const failed = { ...JSON.parse(FIXTURE), status: "error", error: "no candidate", chosen: null, chosen_cost: null, program: null };
    const report = parseCompileReport(JSON.stringify(failed));
    expect([report.program, report.error, report.chosen]).toEqual([null, "no candidate", null]);
  });

  it("names what is wrong", () => {
    const edited = (change: (r: Record<string, any>) => void) => {
      const r = JSON.parse(FIXTURE);
      change(r);
      return JSON.stringify(r);
    };
    const cases: Array<[string, string]> = [
      ["{", "report.json is not JSON"],
      [edited((r) => (r.format = "act-backend-report/0")), 'format "act-backend-report/0"'],
      [edited((r) => (r.program.assembly[2].implements = "S")), "program.assembly[2].implements is not a list"],
      [edited((r) => (r.program.values[1].address = [0])), "program.values[1].address is not a pair of numbers"],
      [edited((r) => delete r.candidates), "candidates is not a list"],
    ];
    for (const [text, message] of cases) {
      expect(() => parseCompileReport(text)).toThrow(MalformedReport);
      expect(() => parseCompileReport(text)).toThrow(message);
    }
  });

  it("lives beside the assembly, with the memory picture", () => {
    expect(reportPathFor("/ws/kernels/attention.py")).toBe("/ws/kernels/attention.report/report.json");
    expect(memorySvgPathFor("/ws/kernels/attention.report/report.json")).toBe("/ws/kernels/attention.report/memory.svg");
  });
});
