// What the status bar item shows.
import { describe, expect, it } from "vitest";

import { isGenerationState, render } from "../../src/status";

const running = { trusted: true, server: "running" as const };

describe("the status bar item", () => {
  it("shows Restricted Mode above everything else, and explains it on click", () => {
    const view = render({ trusted: false, server: "failed", generation: { kind: "running", spec: "/ws/QKV.py" } });
    expect(view.text).toContain("Restricted");
    expect(view.command).toBe("act.explainRestrictedMode");
    expect(view.tooltip).toMatch(/not trusted/);
  });

  it("shows a server that could not start, with the reason", () => {
    const view = render({ trusted: true, server: "failed", serverProblem: "ACT: no module named lsp", generation: { kind: "none" } });
    expect(view.text).toContain("server not running");
    expect(view.tooltip).toContain("no module named lsp");
    expect(view.background).toBe("statusBarItem.errorBackground");
  });

  it("spins while a generation runs", () => {
    const view = render({ ...running, generation: { kind: "running", spec: "/ws/QKV.py" } });
    expect(view.text).toBe("$(sync~spin) ACT: generating QKV.py");
  });

  it("names the accelerators of the last successful generation", () => {
    const view = render({
      ...running,
      generation: {
        kind: "succeeded",
        spec: "/ws/QKV.py",
        accelerators: ["QKV"],
        backends: ["/ws/backends/QKV"],
        finishedAt: "10:00:00",
      },
    });
    expect(view.text).toBe("$(check) ACT: QKV");
    expect(view.tooltip).toContain("/ws/backends/QKV");
    expect(view.background).toBeUndefined();
  });

  it("draws only saved states it understands", () => {
    expect(isGenerationState({ kind: "failed", spec: "/s.py", message: "m", finishedAt: "t" })).toBe(true);
    // Written by an earlier version: a single backend instead of the lists.
    expect(isGenerationState({ kind: "succeeded", spec: "/s.py", backend: "/b", finishedAt: "t" })).toBe(false);
    expect(isGenerationState("succeeded")).toBe(false);
    expect(isGenerationState(undefined)).toBe(false);
  });

  it("marks a failed generation and shows the first line of the error", () => {
    const view = render({
      ...running,
      generation: { kind: "failed", spec: "/ws/QKV.py", message: "QKV: instruction 'zero' reads unknown buffer 'd9'\ntrace", finishedAt: "t" },
    });
    expect(view.text).toBe("$(error) ACT: QKV.py failed");
    expect(view.tooltip).toContain("unknown buffer 'd9'");
    expect(view.tooltip).not.toContain("trace");
    expect(view.background).toBe("statusBarItem.errorBackground");
  });

  it("marks a cancelled generation as a warning", () => {
    const view = render({ ...running, generation: { kind: "cancelled", spec: "/ws/QKV.py", finishedAt: "t" } });
    expect(view.background).toBe("statusBarItem.warningBackground");
  });

  it("distinguishes a starting server from a running one before any generation", () => {
    expect(render({ trusted: true, server: "starting", generation: { kind: "none" } }).text).toContain("loading~spin");
    expect(render({ ...running, generation: { kind: "none" } }).text).toBe("$(circuit-board) ACT");
  });
});
