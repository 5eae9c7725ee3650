// The ACT commands end to end against a scripted editor and language server: what they send,
// what they remember, and what the user sees.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import * as vscode from "vscode";

import { type CommandDeps, registerCommands, RESTRICTED_EXPLANATION } from "../../src/commands";
import { WorkspaceMemory } from "../../src/memory";
import { ProgressRouter } from "../../src/progress";
import type { GenerationState } from "../../src/status";
import { ViewPanels } from "../../src/views/panels";
import { fake } from "./fakes/vscode";

const ATTENTION = [
  "HloModule qkv",
  "ENTRY %qkv (Q: bf16[64,64], K: bf16[64,64], V: bf16[64,64]) -> bf16[64,64] {",
  "  %Q = bf16[64,64]{1,0} parameter(0)",
  "  %K = bf16[64,64]{1,0} parameter(1)",
  "  %V = bf16[64,64]{1,0} parameter(2)",
  "  ROOT %O = bf16[64,64]{1,0} add(%Q, %K)",
  "}",
].join("\n");

interface Sent {
  command: string;
  args: unknown[];
}

/** The scripted server: answers each executeCommand from `answers`, recording what it got. */
function world() {
  const sent: Sent[] = [];
  const answers: Array<(signal: vscode.CancellationToken) => Promise<unknown>> = [];
  const generations: GenerationState[] = [];
  const logged: string[] = [];
  const store = new Map<string, unknown>();
  const deps = {
    server: {
      runningClient: async () => ({
        sendRequest: async (_method: string, params: { command: string; arguments: unknown[] }, signal: vscode.CancellationToken) => {
          sent.push({ command: params.command, args: params.arguments });
          const answer = answers.shift();
          if (answer === undefined) {
            throw new Error(`no scripted answer for ${params.command}`);
          }
          return answer(signal);
        },
      }),
    },
    router: new ProgressRouter(() => ({ update() {}, finish() {}, attachCancel() {} })),
    memory: new WorkspaceMemory({
      get: <T>(key: string) => store.get(key) as T | undefined,
      update: async (key: string, value: unknown) => {
        store.set(key, JSON.parse(JSON.stringify(value ?? null)) ?? undefined);
      },
    }),
    status: { setGeneration: (g: GenerationState) => generations.push(g) },
    output: {
      info: (m: string) => logged.push(`info ${m}`),
      warn: (m: string) => logged.push(`warn ${m}`),
      error: (m: string) => logged.push(`error ${m}`),
      show: () => logged.push("show"),
    },
    views: new ViewPanels(),
  } as unknown as CommandDeps;
  const context = { subscriptions: [] as unknown[] } as unknown as vscode.ExtensionContext;
  registerCommands(context, deps);
  return { sent, answers, generations, logged, deps, run: (id: string, ...args: unknown[]) => vscode.commands.executeCommand(id, ...args) };
}

beforeEach(() => {
  fake.reset();
  fake.files.set("/ws/QKV/QKV.py", 'qkv = Accelerator("QKV")\n');
  fake.files.set("/ws/QKV/kernels/attention.hlo", ATTENTION);
  for (const name of ["K", "Q", "V"]) {
    fake.files.set(`/ws/QKV/data/${name}.dat`, "");
  }
});

describe("in an untrusted workspace", () => {
  it("explains Restricted Mode instead of running any build command", async () => {
    fake.trusted = false;
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/QKV.py");
    for (const id of ["act.generateBackend", "act.compileKernel", "act.simulateKernel", "act.selectBackend", "act.showCompileReport"]) {
      await w.run(id);
    }
    expect(w.sent).toEqual([]);
    expect(fake.panels).toEqual([]);
    expect(fake.shown.map((s) => s.message)).toEqual(Array(5).fill(RESTRICTED_EXPLANATION));
    expect(fake.shown[0].items).toEqual(["Manage Workspace Trust"]);
  });

  it("opens the trust editor when the user asks for it", async () => {
    fake.trusted = false;
    const w = world();
    fake.messageAnswers.push("Manage Workspace Trust");
    await w.run("act.explainRestrictedMode");
    expect(fake.executed.map((e) => e.command)).toContain("workbench.trust.manage");
  });
});

describe("Generate Backend", () => {
  it("generates from the active spec and remembers the new backend for compiling", async () => {
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/QKV.py");
    w.answers.push(async () => ({
      ok: true,
      message: "Generated QKV -> /ws/QKV/backends/QKV",
      backends: [{ accelerator: "QKV", backend: "/ws/QKV/backends/QKV" }],
    }));
    await w.run("act.generateBackend");

    expect(w.sent).toEqual([{ command: "act.generateBackend", args: ["file:///ws/QKV/QKV.py"] }]);
    expect(fake.progress.map((p) => [p.title, p.cancellable])).toEqual([["ACT: Generating backend from QKV.py", true]]);
    expect(w.generations.map((g) => g.kind)).toEqual(["running", "succeeded"]);
    expect(w.generations[1]).toMatchObject({ accelerators: ["QKV"], backends: ["/ws/QKV/backends/QKV"] });
    expect(w.deps.memory.chosenBackend()).toBe("/ws/QKV/backends/QKV");
    expect(fake.shown).toEqual([{ kind: "info", message: "ACT: generated QKV into /ws/QKV/backends/QKV.", items: [] }]);
  });

  it("passes the accelerator a code lens names", async () => {
    const w = world();
    w.answers.push(async () => ({ ok: true, message: "m", backends: [{ accelerator: "QKV", backend: "/ws/QKV/backends/QKV" }] }));
    await w.run("act.generateBackend", "file:///ws/QKV/QKV.py", "QKV");
    expect(w.sent[0].args).toEqual(["file:///ws/QKV/QKV.py", "QKV"]);
  });

  it("reports a refused spec in the status bar and in an error with the build log at hand", async () => {
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/QKV.py");
    const refusal = "Accelerator 'QKV', instruction 'zero', set_inputs: unknown buffer 'd9'";
    w.answers.push(async () => ({ ok: false, message: refusal }));
    fake.messageAnswers.push("Show Build Log");
    await w.run("act.generateBackend");

    expect(w.generations[1]).toMatchObject({ kind: "failed", message: refusal });
    expect(fake.shown[0]).toEqual({
      kind: "error",
      message: `ACT: generating the backend from QKV.py failed: ${refusal}`,
      items: ["Show Build Log"],
    });
    expect(w.logged).toContain(`error failed: ${refusal}`);
    expect(w.logged.filter((l) => l === "show").length).toBeGreaterThan(0);
  });

  it("keeps the compile choice when a spec generates several backends", async () => {
    const w = world();
    await w.deps.memory.chooseBackend("/ws/QKV/backends/QKV");
    fake.activeUri = vscode.Uri.file("/ws/QKV/QKV.py");
    w.answers.push(async () => ({
      ok: true,
      message: "m",
      backends: [
        { accelerator: "A", backend: "/ws/QKV/backends/A" },
        { accelerator: "B", backend: "/ws/QKV/backends/B" },
      ],
    }));
    await w.run("act.generateBackend");
    expect(w.deps.memory.chosenBackend()).toBe("/ws/QKV/backends/QKV");
    expect(w.generations[1]).toMatchObject({ accelerators: ["A", "B"] });
    expect(fake.shown[0].message).toBe("ACT: generated A into /ws/QKV/backends/A, B into /ws/QKV/backends/B.");
  });

  it("marks a cancelled generation as cancelled, not failed", async () => {
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/QKV.py");
    fake.onProgress = (run) => run.cancel();
    w.answers.push(async () => {
      throw new Error("act.generateBackend was cancelled");
    });
    await w.run("act.generateBackend");
    expect(w.generations.map((g) => g.kind)).toEqual(["running", "cancelled"]);
    expect(fake.shown[0].kind).toBe("info");
  });

  it("says why when the server is not running, and leaves no spinner behind", async () => {
    const w = world();
    const problem = "ACT: The Python interpreter 'python3' (the default) was not found.";
    (w.deps.server as unknown as { runningClient: () => Promise<never> }).runningClient = async () => {
      throw new Error(problem);
    };
    fake.activeUri = vscode.Uri.file("/ws/QKV/QKV.py");
    await w.run("act.generateBackend");
    expect(w.sent).toEqual([]);
    expect(fake.progress).toEqual([]);
    expect(fake.shown).toEqual([{ kind: "error", message: problem, items: [] }]);
    expect(w.generations.map((g) => g.kind)).toEqual(["running", "failed"]);
  });

  it("asks for a spec when no Python file is active", async () => {
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    await w.run("act.generateBackend");
    expect(w.sent).toEqual([]);
    expect(fake.shown[0]).toMatchObject({ kind: "error", message: expect.stringContaining("open a TAIDL spec") });
  });
});

describe("Compile Kernel", () => {
  it("uses the workspace's only backend without asking, and remembers the output", async () => {
    const w = world();
    fake.files.set("/ws/QKV/backends/QKV", "");
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    w.answers.push(async () => ({ ok: true, message: "m", output: "/ws/QKV/kernels/attention.py", cost: 14 }));
    await w.run("act.compileKernel");

    expect(w.sent).toEqual([
      { command: "act.compileKernel", args: ["file:///ws/QKV/kernels/attention.hlo", "/ws/QKV/backends/QKV"] },
    ]);
    expect(fake.quickPicks).toEqual([]);
    expect(w.deps.memory.chosenBackend()).toBe("/ws/QKV/backends/QKV");
    expect(w.deps.memory.kernel("/ws/QKV/kernels/attention.hlo")).toEqual({
      backend: "/ws/QKV/backends/QKV",
      output: "/ws/QKV/kernels/attention.py",
    });
    expect(fake.shown[0].message).toBe(
      "ACT: compiled attention.hlo with QKV (cost 14) into /ws/QKV/kernels/attention.py.",
    );
  });

  it("asks which backend when there are several, once per workspace", async () => {
    const w = world();
    fake.files.set("/ws/QKV/backends/QKV", "");
    fake.files.set("/ws/QKV_new/backends/QKV_new", "");
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    fake.quickPickAnswers.push("QKV_new");
    const compiled = async () => ({ ok: true, message: "m", output: "/ws/QKV/kernels/attention.py", cost: 1 });
    w.answers.push(compiled, compiled);
    await w.run("act.compileKernel");
    await w.run("act.compileKernel");

    expect(fake.quickPicks.map((q) => q.labels)).toEqual([["QKV", "QKV_new"]]);
    expect(w.sent.map((s) => s.args[1])).toEqual(["/ws/QKV_new/backends/QKV_new", "/ws/QKV_new/backends/QKV_new"]);
  });

  it("leaves the cost out of the message when the server does not report it", async () => {
    const w = world();
    fake.files.set("/ws/QKV/backends/QKV", "");
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    w.answers.push(async () => ({ ok: true, message: "m", output: "/ws/QKV/kernels/attention.py" }));
    await w.run("act.compileKernel");
    expect(fake.shown[0].message).toBe("ACT: compiled attention.hlo with QKV into /ws/QKV/kernels/attention.py.");
  });

  it("compiles with the backend a code lens names", async () => {
    const w = world();
    w.answers.push(async () => ({ ok: true, message: "m", output: "/o.py", cost: 1 }));
    await w.run("act.compileKernel", "file:///ws/QKV/kernels/attention.hlo", "/ws/QKV/backends/QKV");
    expect(w.sent[0].args).toEqual(["file:///ws/QKV/kernels/attention.hlo", "/ws/QKV/backends/QKV"]);
  });

  it("says to generate a backend first when there is none", async () => {
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    await w.run("act.compileKernel");
    expect(w.sent).toEqual([]);
    expect(fake.shown[0].message).toMatch(/no generated backend .* Run 'ACT: Generate Backend'/);
  });

  it("shows the backend's error with the build log at hand", async () => {
    const w = world();
    fake.files.set("/ws/QKV/backends/QKV", "");
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    w.answers.push(async () => ({ ok: false, message: "attention.hlo:9:3: no instruction computes 'exponential'" }));
    await w.run("act.compileKernel");
    expect(fake.shown[0]).toMatchObject({
      kind: "error",
      message: "ACT: compiling attention.hlo with QKV failed: attention.hlo:9:3: no instruction computes 'exponential'",
    });
  });
});

describe("Simulate Kernel", () => {
  /** The server's description of attention.hlo: it reads the parameters, not the extension. */
  const described = async () => ({
    ok: true,
    message: "m",
    kind: "kernel",
    parameters: [
      { index: 0, name: "Q", type: "bf16[64,64]" },
      { index: 1, name: "K", type: "bf16[64,64]" },
      { index: 2, name: "V", type: "bf16[64,64]" },
    ],
  });

  async function compiledWorld() {
    const w = world();
    fake.files.set("/ws/QKV/backends/QKV", "");
    fake.files.set("/ws/QKV/targets/QKV/oracle/isa.json", "{}");
    fake.files.set("/ws/QKV/kernels/attention.py", "");
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    w.answers.push(async () => ({ ok: true, message: "m", output: "/ws/QKV/kernels/attention.py", cost: 14 }));
    await w.run("act.compileKernel");
    fake.shown = [];
    return w;
  }

  it("simulates the last compile of the active kernel with data in parameter order", async () => {
    const w = await compiledWorld();
    w.answers.push(described, async () => ({ ok: true, message: "Simulated", max_abs_diff: 0.0078125 }));
    await w.run("act.simulateKernel");

    expect(w.sent[1]).toEqual({ command: "act.describeDocument", args: ["file:///ws/QKV/kernels/attention.hlo"] });
    expect(w.sent[2]).toEqual({
      command: "act.simulateKernel",
      args: [
        "/ws/QKV/kernels/attention.py",
        "/ws/QKV/targets/QKV/oracle",
        ["/ws/QKV/data/Q.dat", "/ws/QKV/data/K.dat", "/ws/QKV/data/V.dat"],
        "/ws/QKV/kernels/attention.hlo",
      ],
    });
    expect(fake.shown[0].message).toBe("ACT: simulated attention.py: largest difference from the reference 0.0078125 (absolute).");
  });

  it("opens the results beside the editor: the difference in ulps, the run time and heatmaps", async () => {
    const w = await compiledWorld();
    const heatmap = { rows: 1, cols: 2, shape: [1, 2], block: [1, 1], reduce: "mean", min: 0, max: 1, non_finite: 0, values: [[0, 1]] };
    w.answers.push(described, async () => ({
      ok: true,
      message: "m",
      max_abs_diff: 0.0078125,
      run_ms: 12.5,
      dtype: "bfloat16",
      difference_unit: "ulps",
      max_ulps: 1,
      max_abs_ulps_of_largest: 0.5,
      heatmaps: { output: heatmap, difference: heatmap },
    }));
    await w.run("act.simulateKernel");
    expect(fake.shown[0].message).toBe(
      "ACT: simulated attention.py: largest difference from the reference 1 ulp (bfloat16), 0.5 ulps of the largest magnitude, 12.5 ms.",
    );
    expect(fake.panels.map((p) => [p.viewType, p.title])).toEqual([["act.simulation", "Simulation: attention.py"]]);
    expect(fake.panels[0].showOptions).toMatchObject({ preserveFocus: true });
    expect(fake.panels[0].html).toContain('<td class="big">1 ulp (bfloat16)</td>');
    expect(fake.panels[0].html.match(/<svg class="heatmap"/g)).toHaveLength(2);
    // Simulating again refreshes the same view.
    w.answers.push(async () => ({ ok: true, message: "m", max_abs_diff: 0, max_ulps: 0, dtype: "bfloat16" }));
    await w.run("act.simulateKernel");
    expect(fake.panels).toHaveLength(1);
    expect(fake.panels[0].reveals).toBe(1);
    expect(fake.panels[0].html).toContain('<td class="big">0 ulps (bfloat16)</td>');
  });

  it("finds the kernel from its compiled assembly", async () => {
    const w = await compiledWorld();
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.py");
    w.answers.push(described, async () => ({ ok: true, message: "m", max_abs_diff: 0 }));
    await w.run("act.simulateKernel");
    expect(w.sent[2].args[3]).toBe("/ws/QKV/kernels/attention.hlo");
  });

  it("asks for each parameter's data when the files are not named after them", async () => {
    const w = await compiledWorld();
    for (const name of ["K", "Q", "V"]) {
      fake.files.delete(`/ws/QKV/data/${name}.dat`);
    }
    fake.files.set("/ws/QKV/data/in0.bin", "");
    fake.files.set("/ws/in1.bin", "");
    fake.files.set("/ws/in2.bin", "");
    fake.openDialogAnswers.push("/ws/QKV/data/in0.bin", "/ws/in1.bin", "/ws/in2.bin");
    w.answers.push(described, async () => ({ ok: true, message: "m", max_abs_diff: 0 }));
    await w.run("act.simulateKernel");
    expect(w.sent[2].args[2]).toEqual(["/ws/QKV/data/in0.bin", "/ws/in1.bin", "/ws/in2.bin"]);
    // Remembered: the next run asks nothing, the server included.
    w.answers.push(async () => ({ ok: true, message: "m", max_abs_diff: 0 }));
    await w.run("act.simulateKernel");
    expect(w.sent[3]).toMatchObject({ command: "act.simulateKernel" });
    expect(w.sent[3].args[2]).toEqual(["/ws/QKV/data/in0.bin", "/ws/in1.bin", "/ws/in2.bin"]);
    expect(fake.openDialogAnswers).toEqual([]);
  });

  it("asks to compile first when the kernel has no assembly yet", async () => {
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    await w.run("act.simulateKernel");
    expect(w.sent).toEqual([]);
    expect(fake.shown[0].message).toMatch(/has not been compiled .* Run 'ACT: Compile Kernel' first/);
  });
});

describe("Show Compile Report", () => {
  const fixture = (name: string) => fs.readFileSync(path.join(__dirname, "fixtures", name), "utf8");
  const REPORT = "/ws/QKV/kernels/attention.report/report.json";

  async function compiled(withReport = true) {
    const w = world();
    fake.files.set("/ws/QKV/backends/QKV", "");
    fake.files.set(REPORT, fixture("attention.report.json"));
    fake.files.set("/ws/QKV/kernels/attention.report/memory.svg", fixture("attention.memory.svg"));
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    fake.messageAnswers.push(undefined);
    w.answers.push(async () => ({
      ok: true,
      message: "m",
      output: "/ws/QKV/kernels/attention.py",
      cost: 9,
      ...(withReport ? { report: REPORT, memory_svg: "/ws/QKV/kernels/attention.report/memory.svg" } : {}),
    }));
    await w.run("act.compileKernel");
    return w;
  }

  it("is offered after a compile, and remembered with the kernel", async () => {
    const w = await compiled();
    expect(fake.shown[0].items).toEqual(["Show Report", "Open Assembly", "Simulate"]);
    expect(w.deps.memory.kernel("/ws/QKV/kernels/attention.hlo").report).toBe(REPORT);
  });

  it("shows the assembly linked to the HLO, the memory picture and the candidates", async () => {
    const w = await compiled();
    await w.run("act.showCompileReport");
    expect(fake.panels.map((p) => [p.viewType, p.title])).toEqual([["act.compileReport", "Compile Report: attention.hlo"]]);
    const html = fake.panels[0].html;
    expect(html).toContain("api.gemm(addr_1=0, addr_2=64, addr_out=0)");
    expect(html).toMatch(/data-hlo-line="13"[^>]*>Kt<\/a>/);
    expect(html.match(/<g class="value"/g)).toHaveLength(8);
    expect(html).toContain('<table class="candidates">');
    expect(fake.panels[0].options).toMatchObject({ enableScripts: true, localResourceRoots: [] });
  });

  it("opens the kernel or the assembly at the line a link names", async () => {
    const w = await compiled();
    await w.run("act.showCompileReport");
    fake.panels[0].post({ type: "revealKernel", line: 13 });
    fake.panels[0].post({ type: "revealAssembly", line: 12 });
    fake.panels[0].post({ type: "revealKernel", line: "13" });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(fake.openedAt).toEqual([
      { path: "/ws/QKV/kernels/attention.hlo", line: 12 },
      { path: "/ws/QKV/kernels/attention.py", line: 11 },
    ]);
  });

  it("opens from the notification's button, and from the assembly", async () => {
    const w = world();
    fake.files.set("/ws/QKV/backends/QKV", "");
    fake.files.set(REPORT, fixture("attention.report.json"));
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    fake.messageAnswers.push("Show Report");
    w.answers.push(async () => ({ ok: true, message: "m", output: "/ws/QKV/kernels/attention.py", report: REPORT }));
    await w.run("act.compileKernel");
    expect(fake.panels).toHaveLength(1);
    // Without the picture, the page says why there is none.
    expect(fake.panels[0].html).toContain("No memory picture");
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.py");
    await w.run("act.showCompileReport");
    expect(fake.panels).toHaveLength(1);
    expect(fake.panels[0].reveals).toBe(1);
  });

  it("finds the report beside the assembly when the compile did not say where", async () => {
    const w = await compiled(false);
    await w.run("act.showCompileReport");
    expect(fake.panels).toHaveLength(1);
  });

  it("asks to compile first when there is no report, and names a broken one", async () => {
    const w = world();
    fake.activeUri = vscode.Uri.file("/ws/QKV/kernels/attention.hlo");
    await w.run("act.showCompileReport");
    expect(fake.shown[0].message).toMatch(/attention.hlo has no compile report yet .* Run 'ACT: Compile Kernel' first/);
    fake.files.set(REPORT, '{"format": "act-backend-report/1", "candidates": 3}');
    await w.run("act.showCompileReport");
    expect(fake.shown[1].message).toMatch(/cannot read the compile report .*: candidates is not a list/);
    expect(fake.panels).toEqual([]);
  });
});
