//! Pairs a kernel's entry parameters (as the language server reads them: act.describeDocument)
//! with input data files, so "Simulate Kernel" can feed `data/Q.dat`, `data/K.dat`, ... in
//! parameter order without asking.

export interface KernelParameter {
  index: number;
  /** The instruction name without its `%` sigil, e.g. `Q` or `Arg_0.1`. */
  name: string;
  /** The type without its layout, e.g. `bf16[64,64]`. */
  type: string;
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
