//! What the extension remembers per workspace (in VS Code's workspace state): the backend the
//! user chose for compiling, and for each kernel the backend, assembly and input data of its
//! last compile/simulate, so "Simulate Kernel" right after "Compile Kernel" asks nothing.

import { CHOSEN_BACKEND_KEY } from "./backends";

/** The part of `vscode.Memento` used here. */
export interface StateStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

export interface KernelRecord {
  /** Path of the backend that last compiled the kernel. */
  backend?: string;
  /** Path of the assembly that compile wrote. */
  output?: string;
  /** Path of the backend's report.json of that compile. */
  report?: string;
  /** Input data files, in parameter order, of the last simulation. */
  data?: string[];
}

const KERNELS_KEY = "act.kernels";

export class WorkspaceMemory {
  constructor(private readonly store: StateStore) {}

  chosenBackend(): string | undefined {
    return this.store.get<string>(CHOSEN_BACKEND_KEY);
  }

  async chooseBackend(backendPath: string | undefined): Promise<void> {
    await this.store.update(CHOSEN_BACKEND_KEY, backendPath);
  }

  kernel(kernelPath: string): KernelRecord {
    return { ...(this.kernels()[kernelPath] ?? {}) };
  }

  async updateKernel(kernelPath: string, change: KernelRecord): Promise<void> {
    const all = this.kernels();
    all[kernelPath] = { ...(all[kernelPath] ?? {}), ...change };
    await this.store.update(KERNELS_KEY, all);
  }

  /** The kernel whose last compile wrote `assemblyPath`, if any. */
  kernelForAssembly(assemblyPath: string): string | undefined {
    const entries = Object.entries(this.kernels()).sort(([a], [b]) => a.localeCompare(b));
    return entries.find(([, record]) => record.output === assemblyPath)?.[0];
  }

  private kernels(): Record<string, KernelRecord> {
    const stored = this.store.get<Record<string, KernelRecord>>(KERNELS_KEY);
    return typeof stored === "object" && stored !== null ? { ...stored } : {};
  }
}
