//! The language server's build commands as typed calls: their positional arguments, checking
//! the JSON the server answers with, and running one request under a cancellable progress
//! notification. The server's contract: workspace/executeCommand answers
//! `{"ok": bool, "message": str, ...}` with, on success, the backends built (generate:
//! `backends: [{accelerator, backend}]`, or a single `backend` path), `output` and optionally
//! `cost`, `report` and `memory_svg` (compile), or `max_abs_diff` and what the simulation
//! view draws (simulate).

import type { ProgressSink } from "./progress";

export const GENERATE = "act.generateBackend";
export const COMPILE = "act.compileKernel";
export const SIMULATE = "act.simulateKernel";
/** The extension's own command that opens a kernel's compile report (no server command). */
export const SHOW_REPORT = "act.showCompileReport";

export type ServerCommand = typeof GENERATE | typeof COMPILE | typeof SIMULATE;

/** `[specUri, accelerator?]`: without a name, every accelerator the spec generates. */
export function generateArguments(specUri: string, accelerator?: string): unknown[] {
  return accelerator === undefined ? [specUri] : [specUri, accelerator];
}

/** `[kernelUri, backendPath, outputPath?]`: the output defaults to the kernel's name in `.py`. */
export function compileArguments(kernelUri: string, backendPath: string, outputPath?: string): unknown[] {
  return outputPath === undefined ? [kernelUri, backendPath] : [kernelUri, backendPath, outputPath];
}

/** `[compiledPath, oracleDir, dataFiles, hloPath]`: data files in parameter order. */
export function simulateArguments(compiled: string, oracleDir: string, dataFiles: string[], hlo: string): unknown[] {
  return [compiled, oracleDir, dataFiles, hlo];
}

export interface Failure {
  ok: false;
  message: string;
}
/** One accelerator's generated backend; `backend` is its path when the server says it. */
export interface GeneratedBackend {
  accelerator: string;
  backend?: string;
}
export type GenerateResult = { ok: true; message: string; backends: GeneratedBackend[] } | Failure;
/**
 * `cost` is the emitted candidate's cost, when the server reports it; `report` and
 * `memory_svg` are the backend's report and memory picture, kept beside the assembly.
 */
export type CompileResult =
  | { ok: true; message: string; output: string; cost?: number; report?: string; memory_svg?: string }
  | (Failure & { report?: string });

/** A heatmap as the simulation child sends it: `null` for cells without a finite value. */
export interface Heatmap {
  rows: number;
  cols: number;
  /** The output laid out as rows and columns, before blocks. */
  shape: number[];
  /** Elements per cell, rows and columns. */
  block: number[];
  reduce: string;
  min: number | null;
  max: number | null;
  non_finite: number;
  values: Array<Array<number | null>>;
}

/** A simulation's measurements; all but `max_abs_diff` are optional for older servers. */
export interface SimulateSuccess {
  ok: true;
  message: string;
  max_abs_diff: number;
  max_abs_reference?: number;
  shape?: number[];
  run_ms?: number;
  dtype?: string;
  /** "ulps", or "integer difference" for integer outputs. */
  difference_unit?: string;
  /** `null`: a NaN against a number, infinitely many ulps. */
  max_ulps?: number | null;
  where?: number[] | null;
  oracle_at?: number | null;
  reference_at?: number | null;
  /** The largest absolute difference in ulps of the largest reference magnitude. */
  max_abs_ulps_of_largest?: number | null;
  heatmaps?: { output: Heatmap; difference: Heatmap };
}
export type SimulateResult = SimulateSuccess | Failure;

export interface ResultTypes {
  [GENERATE]: GenerateResult;
  [COMPILE]: CompileResult;
  [SIMULATE]: SimulateResult;
}

/** The keys a successful answer must carry, with their JSON types (generate: see below). */
const SUCCESS_FIELDS: Record<ServerCommand, Record<string, "string" | "number">> = {
  [GENERATE]: {},
  [COMPILE]: { output: "string" },
  [SIMULATE]: { max_abs_diff: "number" },
};

function baseName(p: string): string {
  return p.split(/[\\/]/).pop() ?? p;
}

/** Generate's success lists its backends, or names a single one as `backend`. */
function generatedBackends(obj: Record<string, unknown>, where: string): GeneratedBackend[] {
  if (typeof obj.backend === "string") {
    return [{ accelerator: baseName(obj.backend), backend: obj.backend }];
  }
  if (!Array.isArray(obj.backends)) {
    throw new MalformedResult(`${where} reports success but has neither "backends" (a list) nor "backend" (a path)`);
  }
  return obj.backends.map((item, i) => {
    const entry = item as Record<string, unknown> | null;
    if (typeof entry !== "object" || entry === null || typeof entry.accelerator !== "string") {
      throw new MalformedResult(`${where}: backends[${i}] has no string "accelerator"`);
    }
    if (entry.backend !== undefined && entry.backend !== null && typeof entry.backend !== "string") {
      throw new MalformedResult(`${where}: backends[${i}].backend is neither a path nor null`);
    }
    return typeof entry.backend === "string"
      ? { accelerator: entry.accelerator, backend: entry.backend }
      : { accelerator: entry.accelerator };
  });
}

export class MalformedResult extends Error {}

function heatmapOk(value: unknown): boolean {
  const m = value as Heatmap | null;
  return (
    typeof m === "object" &&
    m !== null &&
    Number.isInteger(m.rows) &&
    Number.isInteger(m.cols) &&
    Array.isArray(m.values) &&
    m.values.length === m.rows &&
    m.values.every((row) => Array.isArray(row) && row.length === m.cols && row.every((v) => v === null || typeof v === "number")) &&
    Array.isArray(m.block) &&
    Array.isArray(m.shape)
  );
}

function heatmapsOk(value: unknown): boolean {
  const maps = value as { output?: unknown; difference?: unknown } | null;
  return typeof maps === "object" && maps !== null && heatmapOk(maps.output) && heatmapOk(maps.difference);
}

/** Checks the server's answer against the contract; throws `MalformedResult` naming the gap. */
export function parseResult<C extends ServerCommand>(command: C, raw: unknown): ResultTypes[C] {
  const where = `The language server's answer to ${command}`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new MalformedResult(`${where} is ${JSON.stringify(raw) ?? "undefined"}, not an object`);
  }
  const obj = raw as Record<string, unknown>;
  if (typeof obj.ok !== "boolean") {
    throw new MalformedResult(`${where} has no boolean "ok"`);
  }
  if (typeof obj.message !== "string") {
    throw new MalformedResult(`${where} has no string "message"`);
  }
  if (obj.ok) {
    for (const [key, type] of Object.entries(SUCCESS_FIELDS[command])) {
      if (typeof obj[key] !== type) {
        throw new MalformedResult(`${where} reports success but its "${key}" is not a ${type}`);
      }
    }
    if (command === COMPILE && obj.cost !== undefined && typeof obj.cost !== "number") {
      throw new MalformedResult(`${where} reports a "cost" that is not a number`);
    }
    if (command === COMPILE) {
      for (const key of ["report", "memory_svg"]) {
        if (obj[key] !== undefined && typeof obj[key] !== "string") {
          throw new MalformedResult(`${where} reports a "${key}" that is not a path`);
        }
      }
    }
    if (command === SIMULATE && obj.heatmaps !== undefined && !heatmapsOk(obj.heatmaps)) {
      throw new MalformedResult(`${where} reports "heatmaps" that are not an output and a difference map`);
    }
    if (command === GENERATE) {
      return { ok: true, message: obj.message, backends: generatedBackends(obj, where) } as ResultTypes[C];
    }
  }
  return obj as unknown as ResultTypes[C];
}

export type Outcome<R> =
  | { kind: "answered"; result: R }
  | { kind: "cancelled" }
  | { kind: "error"; message: string };

/** A cancellation signal as VS Code hands it out (structurally a vscode.CancellationToken). */
export interface CancelSignal {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

/** What running a command needs from the outside world; the extension passes VS Code's. */
export interface CommandRunnerDeps {
  /** Sends workspace/executeCommand; cancelling `signal` sends $/cancelRequest. */
  execute(command: string, args: unknown[], signal: CancelSignal): Promise<unknown>;
  /** Shows a cancellable notification while `task` runs. */
  withNotification<T>(
    title: string,
    task: (report: (message: string | undefined, percentage: number | undefined) => void, signal: CancelSignal) => Promise<T>,
  ): Promise<T>;
  /** Routes the server's own progress stream to the running command (see ProgressRouter). */
  claimProgress(sink: ProgressSink): () => void;
}

/**
 * Runs one server command under a cancellable notification that shows the server's progress
 * messages. Cancel asks the server to stop twice over: window/workDoneProgress/cancel for its
 * progress token and $/cancelRequest for the request. A request that fails after a cancel is a
 * cancellation, not an error; one that succeeds anyway is reported as the success it was.
 */
export async function runServerCommand<C extends ServerCommand>(
  deps: CommandRunnerDeps,
  command: C,
  args: unknown[],
  title: string,
): Promise<Outcome<ResultTypes[C]>> {
  return deps.withNotification(title, async (report, signal) => {
    let lastPercentage = 0;
    const cancels: Array<() => void> = [];
    const sink: ProgressSink = {
      update(message, percentage) {
        // VS Code's progress takes increments, the server sends absolute percentages.
        let increment: number | undefined;
        if (percentage !== undefined && percentage > lastPercentage) {
          increment = percentage - lastPercentage;
          lastPercentage = percentage;
        }
        report(message, increment);
      },
      finish(message) {
        if (message !== undefined) {
          report(message, undefined);
        }
      },
      attachCancel(cancel) {
        cancels.push(cancel);
      },
    };
    const release = deps.claimProgress(sink);
    const subscription = signal.onCancellationRequested(() => cancels.forEach((cancel) => cancel()));
    try {
      const raw = await deps.execute(command, args, signal);
      const result = parseResult(command, raw);
      // Work that completed despite a late cancel still produced its files: report it.
      if (!result.ok && signal.isCancellationRequested) {
        return { kind: "cancelled" };
      }
      return { kind: "answered", result };
    } catch (error) {
      if (signal.isCancellationRequested) {
        return { kind: "cancelled" };
      }
      const message = error instanceof Error ? error.message : String(error);
      return { kind: "error", message };
    } finally {
      subscription.dispose();
      release();
    }
  });
}
