//! Generated backends in the workspace: recognising `backends/<name>` executables among found
//! files, deciding which one "Compile Kernel" uses (the remembered choice, the only one, or ask),
//! and where the oracle generated beside a backend lives.

import * as path from "node:path";

export interface Backend {
  /** The accelerator's name, which is the executable's file name. */
  name: string;
  /** Absolute path of the executable. */
  path: string;
  /** The directory holding `backends/` and `targets/`: the spec's base directory. */
  root: string;
}

/** Memento key under which the chosen backend's path is kept, per workspace. */
export const CHOSEN_BACKEND_KEY = "act.chosenBackend";

/**
 * A `backends/<name>` file is a backend when its name is an accelerator name: no extension,
 * or `.exe` on Windows. Build leftovers (`.d`, `.pdb`, `.tmp` ...) are not.
 */
export function backendFromPath(filePath: string): Backend | undefined {
  const dir = path.dirname(filePath);
  if (path.basename(dir) !== "backends") {
    return undefined;
  }
  let name = path.basename(filePath);
  if (name.toLowerCase().endsWith(".exe")) {
    name = name.slice(0, -4);
  }
  if (name === "" || name.includes(".") || name.startsWith(".")) {
    return undefined;
  }
  return { name, path: filePath, root: path.dirname(dir) };
}

/** Backends among `files`, sorted by name then path so the pick list is stable. */
export function backendsAmong(files: string[]): Backend[] {
  const found = files.map(backendFromPath).filter((b): b is Backend => b !== undefined);
  return found.sort((a, b) => a.name.localeCompare(b.name) || a.path.localeCompare(b.path));
}

/** `targets/<name>/oracle` beside the backend's `backends/` directory. */
export function oracleDirFor(backend: Backend): string {
  return path.join(backend.root, "targets", backend.name, "oracle");
}

export type BackendDecision =
  | { kind: "use"; backend: Backend; remember: boolean }
  | { kind: "ask"; candidates: Backend[] }
  | { kind: "none" };

/**
 * The remembered backend wins while it still exists; a single backend is used (and
 * remembered); several are offered to the user; none is an error the caller explains.
 */
export function decideBackend(candidates: Backend[], remembered: string | undefined): BackendDecision {
  if (remembered !== undefined) {
    const kept = candidates.find((b) => b.path === remembered);
    if (kept !== undefined) {
      return { kind: "use", backend: kept, remember: false };
    }
  }
  if (candidates.length === 1) {
    return { kind: "use", backend: candidates[0], remember: true };
  }
  if (candidates.length === 0) {
    return { kind: "none" };
  }
  return { kind: "ask", candidates };
}
