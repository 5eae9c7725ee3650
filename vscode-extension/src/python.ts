//! Which Python runs the language server, and whether it can: resolving `act.pythonPath`
//! (falling back to the Python extension's interpreter, then `python3`) and checking that the
//! interpreter imports `lsp` and `act_backend` before the client tries to start it.
//! Nothing here touches the `vscode` module, so every rule is unit-tested.

import { execFile } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";

/** Where the interpreter came from; named in every message so the user knows what to fix. */
export type PythonOrigin = "setting" | "python-extension" | "default";

export interface PythonChoice {
  command: string;
  origin: PythonOrigin;
}

export const DEFAULT_PYTHON = "python3";

/** Expands `${workspaceFolder}`, `${userHome}` and a leading `~` in a configured path. */
export function expandPythonPath(
  raw: string,
  workspaceFolder: string | undefined,
  home: string = os.homedir(),
): string {
  let value = raw.trim();
  if (value === "~") {
    value = home;
  } else if (value.startsWith("~/") || value.startsWith("~\\")) {
    value = path.join(home, value.slice(2));
  }
  value = value.replace(/\$\{userHome\}/g, home);
  if (workspaceFolder !== undefined) {
    value = value.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  }
  return value;
}

/**
 * Picks the interpreter: the `act.pythonPath` setting when set, else the interpreter the Python
 * extension has selected for the workspace, else `python3` from PATH.
 */
export async function choosePython(
  setting: string | undefined,
  workspaceFolder: string | undefined,
  pythonExtensionInterpreter: () => Promise<string | undefined>,
): Promise<PythonChoice> {
  if (setting !== undefined && setting.trim() !== "") {
    return { command: expandPythonPath(setting, workspaceFolder), origin: "setting" };
  }
  let fromExtension: string | undefined;
  try {
    fromExtension = await pythonExtensionInterpreter();
  } catch {
    // A Python extension that fails to answer is no reason to refuse to start: fall back.
    fromExtension = undefined;
  }
  if (fromExtension !== undefined && fromExtension.trim() !== "") {
    return { command: fromExtension, origin: "python-extension" };
  }
  return { command: DEFAULT_PYTHON, origin: "default" };
}

/** Outcome of running a process to completion. `spawnError` is set when it never started. */
export interface ProcessResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  spawnError?: string;
  timedOut?: boolean;
}

export type ProcessRunner = (
  command: string,
  args: string[],
  options: { cwd: string; timeoutMs: number },
) => Promise<ProcessResult>;

/** Runs a process with node's execFile and never rejects: failures come back as data. */
export const runProcess: ProcessRunner = (command, args, options) =>
  new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, timeout: options.timeoutMs, windowsHide: true, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve({ exitCode: 0, stdout, stderr });
          return;
        }
        const err = error as NodeJS.ErrnoException & { killed?: boolean; code?: unknown };
        if (typeof err.code === "string") {
          resolve({ exitCode: null, stdout, stderr, spawnError: err.code });
        } else if (err.killed) {
          resolve({ exitCode: null, stdout, stderr, timedOut: true });
        } else {
          resolve({ exitCode: typeof err.code === "number" ? err.code : 1, stdout, stderr });
        }
      },
    );
  });

export const MIN_PYTHON: readonly [number, number] = [3, 11];

/**
 * The probe: imports what the server needs and prints the interpreter's version. The import
 * comes first because the brief to users is "make `import lsp, act_backend` work".
 */
export const PROBE_SCRIPT =
  "import lsp, act_backend, sys; print('%d.%d.%d' % sys.version_info[:3])";

export type PythonCheck =
  | { ok: true; version: string }
  | {
      ok: false;
      problem: "not-found" | "not-runnable" | "missing-package" | "too-old" | "timeout" | "failed";
      detail: string;
    };

/**
 * Checks that `command` is an interpreter that can run the server. `cwd` should be a directory
 * that holds no `lsp` package of its own, so that only installed code answers the probe.
 */
export async function checkPython(
  command: string,
  run: ProcessRunner,
  cwd: string,
  timeoutMs = 30_000,
): Promise<PythonCheck> {
  const result = await run(command, ["-c", PROBE_SCRIPT], { cwd, timeoutMs });
  if (result.spawnError !== undefined) {
    const notFound = result.spawnError === "ENOENT";
    return {
      ok: false,
      problem: notFound ? "not-found" : "not-runnable",
      detail: notFound ? "no such file or command" : `it could not be started (${result.spawnError})`,
    };
  }
  if (result.timedOut) {
    return { ok: false, problem: "timeout", detail: `no answer within ${timeoutMs / 1000} s` };
  }
  if (result.exitCode !== 0) {
    const missing = /ModuleNotFoundError: No module named '([^']+)'/.exec(result.stderr);
    if (missing !== null) {
      return { ok: false, problem: "missing-package", detail: `No module named '${missing[1]}'` };
    }
    return { ok: false, problem: "failed", detail: lastLine(result.stderr) || `exit code ${result.exitCode}` };
  }
  const version = result.stdout.trim();
  const parts = version.split(".").map((p) => Number.parseInt(p, 10));
  if (parts.length < 2 || parts.some(Number.isNaN)) {
    return { ok: false, problem: "failed", detail: `unexpected probe output '${version}'` };
  }
  if (parts[0] < MIN_PYTHON[0] || (parts[0] === MIN_PYTHON[0] && parts[1] < MIN_PYTHON[1])) {
    return {
      ok: false,
      problem: "too-old",
      detail: `Python ${version}; act-backend needs ${MIN_PYTHON.join(".")} or later`,
    };
  }
  return { ok: true, version };
}

function lastLine(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  return lines[lines.length - 1]?.trim() ?? "";
}

const ORIGIN_WORDS: Record<PythonOrigin, string> = {
  setting: "set in act.pythonPath",
  "python-extension": "selected in the Python extension",
  default: "the default, since act.pythonPath is empty",
};

/** The shell-quoted install command for `python`, shown to the user and copied on request. */
export function installCommand(python: string): string {
  const quoted = /[\s'"$`\\]/.test(python) ? `"${python.replace(/(["$`\\])/g, "\\$1")}"` : python;
  return `${quoted} -m pip install 'act-backend[lsp]'`;
}

/** The message shown when the check fails: what is wrong, with which interpreter, and the fix. */
export function describeFailure(choice: PythonChoice, check: Exclude<PythonCheck, { ok: true }>): string {
  const who = `The Python interpreter '${choice.command}' (${ORIGIN_WORDS[choice.origin]})`;
  const pointElsewhere = "or set act.pythonPath to an interpreter that has act-backend installed.";
  switch (check.problem) {
    case "not-found":
      return `ACT: ${who} was not found. Install Python ${MIN_PYTHON.join(".")}+ or set act.pythonPath to its full path.`;
    case "not-runnable":
      return `ACT: ${who} cannot be run: ${check.detail}. Set act.pythonPath to a working interpreter.`;
    case "timeout":
      return `ACT: ${who} did not answer (${check.detail}). Check the interpreter, ${pointElsewhere}`;
    case "too-old":
      return `ACT: ${who} is ${check.detail}. Set act.pythonPath to a newer interpreter.`;
    case "missing-package":
      return `ACT: ${who} cannot import the ACT language server (${check.detail}). Install it with \`${installCommand(choice.command)}\`, ${pointElsewhere}`;
    case "failed":
      return `ACT: ${who} failed to import the ACT language server: ${check.detail}. Reinstall with \`${installCommand(choice.command)}\`, ${pointElsewhere}`;
  }
}
