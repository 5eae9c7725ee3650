//! Reads a kernel's entry parameters from HLO text and pairs them with input data files, so
//! "Simulate Kernel" can feed `data/Q.dat`, `data/K.dat`, ... in parameter order without asking.
//! Handles both the hand-written style (`ENTRY %qkv (Q: bf16[64,64], ...) -> ... {`) and what
//! JAX prints (`ENTRY main.5 {` with `Arg_0.1 = f32[8]{0} parameter(0)` inside).

export interface KernelParameter {
  index: number;
  /** The instruction name without its `%` sigil, e.g. `Q` or `Arg_0.1`. */
  name: string;
  /** The type as written, e.g. `bf16[64,64]`. */
  type: string;
}

const ENTRY_HEADER = /^\s*ENTRY\b/;
const PARAMETER = /^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*([a-z][a-z0-9]*\[[^\]]*\])(?:\{[^}]*\})?\s+parameter\(\s*(\d+)\s*\)/;

/** The `parameter(i)` instructions of the ENTRY computation, sorted by index. */
export function entryParameters(hloText: string): KernelParameter[] {
  const lines = hloText.split(/\r?\n/);
  const start = lines.findIndex((line) => ENTRY_HEADER.test(line));
  if (start < 0) {
    return [];
  }
  const found: KernelParameter[] = [];
  let depth = 0;
  let opened = false;
  for (let i = start; i < lines.length; i++) {
    const line = stripComment(lines[i]);
    const match = PARAMETER.exec(line);
    if (match !== null) {
      found.push({ index: Number(match[3]), name: match[1], type: match[2] });
    }
    for (const ch of line) {
      if (ch === "{") {
        depth++;
        opened = true;
      } else if (ch === "}") {
        depth--;
      }
    }
    // Layouts like `{1,0}` open and close on the same line, so only a return to depth 0 after
    // the body opened ends the computation.
    if (opened && depth <= 0) {
      break;
    }
  }
  return found.sort((a, b) => a.index - b.index);
}

function stripComment(line: string): string {
  const at = line.indexOf("//");
  return at >= 0 ? line.slice(0, at) : line;
}

/** The file name of a path without its directory and its last extension. */
export function stem(filePath: string): string {
  const base = filePath.split(/[\\/]/).pop() ?? filePath;
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(0, dot) : base;
}

/**
 * Assigns one data file to each parameter by name: an exact stem match first, then a
 * case-insensitive one. Returns the paths in parameter order, or the names left unmatched.
 */
export function matchDataFiles(
  parameters: KernelParameter[],
  files: string[],
): { ok: true; paths: string[] } | { ok: false; unmatched: string[] } {
  const sorted = [...files].sort();
  const paths: string[] = [];
  const unmatched: string[] = [];
  for (const parameter of parameters) {
    const exact = sorted.find((f) => stem(f) === parameter.name);
    const loose = sorted.find((f) => stem(f).toLowerCase() === parameter.name.toLowerCase());
    const chosen = exact ?? loose;
    if (chosen === undefined) {
      unmatched.push(parameter.name);
    } else {
      paths.push(chosen);
    }
  }
  return unmatched.length === 0 ? { ok: true, paths } : { ok: false, unmatched };
}
