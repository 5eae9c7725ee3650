// What the extension remembers per workspace.
import { describe, expect, it } from "vitest";

import { WorkspaceMemory } from "../../src/memory";

function store() {
  const values = new Map<string, unknown>();
  return {
    values,
    get: <T>(key: string) => values.get(key) as T | undefined,
    update: async (key: string, value: unknown) => {
      // Mementos store JSON: keep a copy, as VS Code does.
      values.set(key, value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
    },
  };
}

describe("workspace memory", () => {
  it("remembers the chosen backend", async () => {
    const memory = new WorkspaceMemory(store());
    expect(memory.chosenBackend()).toBeUndefined();
    await memory.chooseBackend("/ws/backends/QKV");
    expect(memory.chosenBackend()).toBe("/ws/backends/QKV");
  });

  it("merges what is learnt about a kernel across commands", async () => {
    const memory = new WorkspaceMemory(store());
    await memory.updateKernel("/ws/k.hlo", { backend: "/ws/backends/QKV", output: "/ws/k.py" });
    await memory.updateKernel("/ws/k.hlo", { data: ["/ws/data/Q.dat"] });
    expect(memory.kernel("/ws/k.hlo")).toEqual({
      backend: "/ws/backends/QKV",
      output: "/ws/k.py",
      data: ["/ws/data/Q.dat"],
    });
    expect(memory.kernel("/ws/other.hlo")).toEqual({});
  });

  it("finds the kernel an assembly was compiled from", async () => {
    const memory = new WorkspaceMemory(store());
    await memory.updateKernel("/ws/a.hlo", { output: "/ws/a.py" });
    await memory.updateKernel("/ws/b.hlo", { output: "/ws/b.py" });
    expect(memory.kernelForAssembly("/ws/b.py")).toBe("/ws/b.hlo");
    expect(memory.kernelForAssembly("/ws/c.py")).toBeUndefined();
  });

  it("does not let a caller change the stored record through a returned copy", async () => {
    const s = store();
    const memory = new WorkspaceMemory(s);
    await memory.updateKernel("/k.hlo", { output: "/k.py" });
    memory.kernel("/k.hlo").output = "/elsewhere.py";
    expect(memory.kernel("/k.hlo").output).toBe("/k.py");
  });
});
