//! The backend's `report.json` (format `act-backend-report/1`) as the compile report view reads
//! it: one typed decode at the boundary, which names the field that is wrong, and where a
//! kernel's report lives (`<assembly stem>.report/report.json`, beside the assembly).

export const REPORT_FORMAT = "act-backend-report/1";

/** One kernel (HLO) instruction, as the report lists them. */
export interface HloInstruction {
  name: string;
  op: string;
  /** 1-based line in the kernel. */
  line: number;
  text: string;
}

/** One step of the chosen program. */
export interface ReportStep {
  step: number;
  /** 1-based line of the call in the assembly file, when known. */
  line: number | null;
  call: string;
  instruction: string;
  /** Names of the HLO instructions the step implements. */
  implements: string[];
  /** Ids of the values it reads, and of the value it writes. */
  reads: number[];
  writes: number;
}

/** One value of the chosen program and where it lives. */
export interface ReportValue {
  id: number;
  label: string;
  hlo: string | null;
  made: string;
  made_by: number | null;
  buffer: string;
  on_chip: boolean;
  /** Half-open range of positions, flattened row-major (bytes in HBM). */
  address: [number, number];
  live_steps: [number, number];
}

export interface ReportCandidate {
  index: number;
  instructions: number;
  status: string;
  cost: number | null;
  order: string | null;
  message: string;
}

export interface CompileReport {
  status: string;
  error: string | null;
  module: string | null;
  isa: string;
  chosen: number | null;
  chosenCost: number | null;
  candidatesFound: number | null;
  stopReason: string | null;
  candidates: ReportCandidate[];
  hlo: HloInstruction[];
  /** The chosen program; null when no candidate was placed. */
  program: { steps: ReportStep[]; values: ReportValue[] } | null;
}

export class MalformedReport extends Error {}

type Json = Record<string, unknown>;

function object(value: unknown, where: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new MalformedReport(`${where} is not an object`);
  }
  return value as Json;
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) {
    throw new MalformedReport(`${where} is not a list`);
  }
  return value;
}

function text(obj: Json, key: string, where: string): string {
  const value = obj[key];
  if (typeof value !== "string") {
    throw new MalformedReport(`${where}.${key} is not a string`);
  }
  return value;
}

function optionalText(obj: Json, key: string, where: string): string | null {
  const value = obj[key];
  if (value === undefined || value === null) {
    return null;
  }
  if (typeof value !== "string") {
    throw new MalformedReport(`${where}.${key} is neither a string nor null`);
  }
  return value;
}

function num(obj: Json, key: string, where: string): number {
  const value = obj[key];
  if (typeof value !== "number") {
    throw new MalformedReport(`${where}.${key} is not a number`);
  }
  return value;
}

function optionalNum(obj: Json, key: string, where: string): number | null {
  const value = obj[key];
  if (value === undefined || value === null) {
    return null;
  }
  if (typeof value !== "number") {
    throw new MalformedReport(`${where}.${key} is neither a number nor null`);
  }
  return value;
}

function pair(obj: Json, key: string, where: string): [number, number] {
  const value = list(obj[key], `${where}.${key}`);
  if (value.length !== 2 || !value.every((v) => typeof v === "number")) {
    throw new MalformedReport(`${where}.${key} is not a pair of numbers`);
  }
  return [value[0] as number, value[1] as number];
}

function strings(obj: Json, key: string, where: string): string[] {
  return list(obj[key], `${where}.${key}`).map((v, i) => {
    if (typeof v !== "string") {
      throw new MalformedReport(`${where}.${key}[${i}] is not a string`);
    }
    return v;
  });
}

function numbers(obj: Json, key: string, where: string): number[] {
  return list(obj[key], `${where}.${key}`).map((v, i) => {
    if (typeof v !== "number") {
      throw new MalformedReport(`${where}.${key}[${i}] is not a number`);
    }
    return v;
  });
}

/** Decodes `report.json`; `MalformedReport` names the first field that is not as expected. */
export function parseCompileReport(source: string): CompileReport {
  let raw: unknown;
  try {
    raw = JSON.parse(source);
  } catch (error) {
    throw new MalformedReport(`report.json is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const report = object(raw, "report.json");
  const format = report.format;
  if (format !== REPORT_FORMAT) {
    throw new MalformedReport(`report.json has format ${JSON.stringify(format)}, not ${REPORT_FORMAT}`);
  }
  const candidates = list(report.candidates, "candidates").map((c, i) => {
    const where = `candidates[${i}]`;
    const obj = object(c, where);
    return {
      index: num(obj, "index", where),
      instructions: num(obj, "instructions", where),
      status: text(obj, "status", where),
      cost: optionalNum(obj, "cost", where),
      order: optionalText(obj, "order", where),
      message: optionalText(obj, "message", where) ?? "",
    };
  });
  const hlo = list(report.hlo ?? [], "hlo").map((h, i) => {
    const where = `hlo[${i}]`;
    const obj = object(h, where);
    return { name: text(obj, "name", where), op: text(obj, "op", where), line: num(obj, "line", where), text: text(obj, "text", where) };
  });
  let program: CompileReport["program"] = null;
  if (report.program !== undefined && report.program !== null) {
    const p = object(report.program, "program");
    const steps = list(p.assembly, "program.assembly").map((s, i) => {
      const where = `program.assembly[${i}]`;
      const obj = object(s, where);
      return {
        step: num(obj, "step", where),
        line: optionalNum(obj, "line", where),
        call: text(obj, "call", where),
        instruction: text(obj, "instruction", where),
        implements: strings(obj, "implements", where),
        reads: numbers(obj, "reads", where),
        writes: num(obj, "writes", where),
      };
    });
    const values = list(p.values, "program.values").map((v, i) => {
      const where = `program.values[${i}]`;
      const obj = object(v, where);
      return {
        id: num(obj, "id", where),
        label: text(obj, "label", where),
        hlo: optionalText(obj, "hlo", where),
        made: text(obj, "made", where),
        made_by: optionalNum(obj, "made_by", where),
        buffer: text(obj, "buffer", where),
        on_chip: obj.on_chip === true,
        address: pair(obj, "address", where),
        live_steps: pair(obj, "live_steps", where),
      };
    });
    program = { steps, values };
  }
  return {
    status: text(report, "status", "report.json"),
    error: optionalText(report, "error", "report.json"),
    module: optionalText(report, "module", "report.json"),
    isa: text(report, "isa", "report.json"),
    chosen: optionalNum(report, "chosen", "report.json"),
    chosenCost: optionalNum(report, "chosen_cost", "report.json"),
    candidatesFound: optionalNum(report, "candidates_found", "report.json"),
    stopReason: optionalText(report, "stop_reason", "report.json"),
    candidates,
    hlo,
    program,
  };
}

/** Where the compile command keeps the report of the assembly `assemblyPath`. */
export function reportPathFor(assemblyPath: string): string {
  return `${assemblyPath.replace(/\.py$/, "")}.report/report.json`;
}

/** The memory picture beside a report. */
export function memorySvgPathFor(reportPath: string): string {
  return reportPath.replace(/report\.json$/, "memory.svg");
}
