// Which generated backend "Compile Kernel" uses.
import { describe, expect, it } from "vitest";

import { backendFromPath, backendsAmong, decideBackend, oracleDirFor } from "../../src/backends";

describe("recognising backends", () => {
  it("takes backends/<name> executables and names them after the accelerator", () => {
    expect(backendFromPath("/ws/examples/QKV/backends/QKV")).toEqual({
      name: "QKV",
      path: "/ws/examples/QKV/backends/QKV",
      root: "/ws/examples/QKV",
    });
    expect(backendFromPath("/ws/backends/QKV.exe")?.name).toBe("QKV");
  });

  it("ignores build leftovers and files outside a backends directory", () => {
    expect(backendFromPath("/ws/backends/QKV.d")).toBeUndefined();
    expect(backendFromPath("/ws/backends/.QKV.tmp")).toBeUndefined();
    expect(backendFromPath("/ws/targets/QKV")).toBeUndefined();
  });

  it("lists them sorted by name, then path", () => {
    const found = backendsAmong(["/b/backends/Zed", "/a/backends/QKV_new", "/c/backends/QKV", "/a/backends/QKV"]);
    expect(found.map((b) => b.path)).toEqual(["/a/backends/QKV", "/c/backends/QKV", "/a/backends/QKV_new", "/b/backends/Zed"]);
  });

  it("finds the oracle generated beside a backend", () => {
    const backend = backendFromPath("/ws/QKV/backends/QKV");
    expect(backend && oracleDirFor(backend)).toBe("/ws/QKV/targets/QKV/oracle");
  });
});

describe("deciding which backend to use", () => {
  const [qkv, qkvNew] = backendsAmong(["/ws/QKV/backends/QKV", "/ws/QKV_new/backends/QKV_new"]);

  it("uses the remembered backend while it exists", () => {
    expect(decideBackend([qkv, qkvNew], qkvNew.path)).toEqual({ kind: "use", backend: qkvNew, remember: false });
  });

  it("asks again when the remembered backend is gone and several remain", () => {
    expect(decideBackend([qkv, qkvNew], "/ws/old/backends/OLD")).toEqual({ kind: "ask", candidates: [qkv, qkvNew] });
  });

  it("uses and remembers the only backend without asking", () => {
    expect(decideBackend([qkv], undefined)).toEqual({ kind: "use", backend: qkv, remember: true });
  });

  it("says so when there is none", () => {
    expect(decideBackend([], "/ws/QKV/backends/QKV")).toEqual({ kind: "none" });
  });
});
