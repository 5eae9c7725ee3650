// Calling the server's build commands: answers checked against the contract, progress shown,
// cancellation sent both ways.
import { describe, expect, it } from "vitest";

import type { ProgressSink } from "../../src/progress";
import {
  COMPILE,
  type CancelSignal,
  compileArguments,
  type CommandRunnerDeps,
  GENERATE,
  generateArguments,
  MalformedResult,
  parseResult,
  runServerCommand,
  SIMULATE,
  simulateArguments,
} from "../../src/serverCommands";

describe("checking the server's answers", () => {
  it("accepts successes that carry their command's fields", () => {
    expect(
      parseResult(GENERATE, { ok: true, message: "built", backends: [{ accelerator: "QKV", backend: "/b/QKV" }] }),
    ).toEqual({ ok: true, message: "built", backends: [{ accelerator: "QKV", backend: "/b/QKV" }] });
    expect(parseResult(COMPILE, { ok: true, message: "m", output: "/k.py", cost: 12 }).ok).toBe(true);
    // The cost is optional: a server that does not know it leaves it out.
    expect(parseResult(COMPILE, { ok: true, message: "m", output: "/k.py" }).ok).toBe(true);
    expect(parseResult(SIMULATE, { ok: true, message: "m", max_abs_diff: 0 }).ok).toBe(true);
  });

  it("reads generate's backends, a single backend path, or backends whose path is unknown", () => {
    expect(parseResult(GENERATE, { ok: true, message: "m", backend: "/b/QKV" })).toEqual({
      ok: true,
      message: "m",
      backends: [{ accelerator: "QKV", backend: "/b/QKV" }],
    });
    const two = parseResult(GENERATE, {
      ok: true,
      message: "m",
      backends: [
        { accelerator: "QKV", backend: null },
        { accelerator: "QKV_new", backend: "/b/QKV_new" },
      ],
    });
    expect(two).toEqual({
      ok: true,
      message: "m",
      backends: [{ accelerator: "QKV" }, { accelerator: "QKV_new", backend: "/b/QKV_new" }],
    });
    expect(() => parseResult(GENERATE, { ok: true, message: "m" })).toThrow(/neither "backends" .* nor "backend"/);
    expect(() => parseResult(GENERATE, { ok: true, message: "m", backends: [{ backend: "/b" }] })).toThrow(
      /backends\[0\] has no string "accelerator"/,
    );
  });

  it("accepts failures with just ok and message", () => {
    expect(parseResult(COMPILE, { ok: false, message: "no instruction for 'exp'" })).toEqual({
      ok: false,
      message: "no instruction for 'exp'",
    });
  });

  it("names what is missing from a malformed answer", () => {
    expect(() => parseResult(COMPILE, { ok: true, message: "m", cost: 3 })).toThrow(
      /act.compileKernel reports success but its "output" is not a string/,
    );
    expect(() => parseResult(COMPILE, { ok: true, message: "m", output: "/k.py", cost: "3" })).toThrow(
      /"cost" that is not a number/,
    );
    expect(() => parseResult(GENERATE, null)).toThrow(MalformedResult);
    expect(() => parseResult(GENERATE, { ok: "yes", message: "" })).toThrow(/no boolean "ok"/);
    expect(() => parseResult(SIMULATE, { ok: false })).toThrow(/no string "message"/);
  });
});

/** A scripted notification and server: `serve` decides what the request does. */
function harness(serve: (signal: CancelSignal, progress: (sink: ProgressSink) => void) => Promise<unknown>) {
  const reports: Array<[string | undefined, number | undefined]> = [];
  const sent: Array<{ command: string; args: unknown[] }> = [];
  let claimed: ProgressSink | undefined;
  let released = false;
  let cancelNotification: (() => void) | undefined;
  const listeners: Array<() => void> = [];
  const signal = {
    isCancellationRequested: false,
    onCancellationRequested(listener: () => void) {
      listeners.push(listener);
      return { dispose() {} };
    },
  };
  const deps: CommandRunnerDeps = {
    execute: (command, args, s) => {
      sent.push({ command, args });
      return serve(s, (sink) => sink);
    },
    withNotification: (_title, task) => {
      cancelNotification = () => {
        signal.isCancellationRequested = true;
        listeners.forEach((l) => l());
      };
      return task((message, increment) => reports.push([message, increment]), signal);
    },
    claimProgress: (sink) => {
      claimed = sink;
      return () => {
        released = true;
      };
    },
  };
  return {
    deps,
    reports,
    sent,
    sink: () => claimed as ProgressSink,
    cancel: () => cancelNotification?.(),
    released: () => released,
  };
}

describe("argument lists (positional, as the server reads them)", () => {
  it("leaves optional trailing arguments out instead of sending null", () => {
    expect(generateArguments("file:///s.py")).toEqual(["file:///s.py"]);
    expect(generateArguments("file:///s.py", "QKV")).toEqual(["file:///s.py", "QKV"]);
    expect(compileArguments("file:///k.hlo", "/b/QKV")).toEqual(["file:///k.hlo", "/b/QKV"]);
    expect(compileArguments("file:///k.hlo", "/b/QKV", "/o.py")).toEqual(["file:///k.hlo", "/b/QKV", "/o.py"]);
  });

  it("passes simulate's data files as one list", () => {
    expect(simulateArguments("/k.py", "/t/QKV/oracle", ["/d/Q.dat", "/d/K.dat"], "/k.hlo")).toEqual([
      "/k.py",
      "/t/QKV/oracle",
      ["/d/Q.dat", "/d/K.dat"],
      "/k.hlo",
    ]);
  });
});

describe("running a command", () => {
  it("sends the positional arguments and returns the checked answer", async () => {
    const h = harness(async () => ({ ok: true, message: "built", backends: [{ accelerator: "QKV", backend: "/ws/backends/QKV" }] }));
    const outcome = await runServerCommand(h.deps, GENERATE, generateArguments("file:///ws/QKV.py"), "Generating");
    expect(h.sent).toEqual([{ command: GENERATE, args: ["file:///ws/QKV.py"] }]);
    expect(outcome).toEqual({
      kind: "answered",
      result: { ok: true, message: "built", backends: [{ accelerator: "QKV", backend: "/ws/backends/QKV" }] },
    });
    expect(h.released()).toBe(true);
  });

  it("shows the server's progress messages, turning percentages into increments", async () => {
    let h!: ReturnType<typeof harness>;
    h = harness(async () => {
      const sink = h.sink();
      sink.update("writing crate", 10);
      sink.update("cargo build", 60);
      sink.update("still building", 60);
      sink.finish("installed backends/QKV");
      return { ok: true, message: "m", backends: [] };
    });
    await runServerCommand(h.deps, GENERATE, [], "Generating");
    expect(h.reports).toEqual([
      ["writing crate", 10],
      ["cargo build", 50],
      ["still building", undefined],
      ["installed backends/QKV", undefined],
    ]);
  });

  it("on Cancel, asks the server to stop its progress and reports a cancellation", async () => {
    let h!: ReturnType<typeof harness>;
    let serverCancelled = false;
    h = harness(async () => {
      h.sink().attachCancel(() => {
        serverCancelled = true;
      });
      h.cancel();
      throw new Error("Request cancelled");
    });
    const outcome = await runServerCommand(h.deps, COMPILE, [], "Compiling");
    expect(serverCancelled).toBe(true);
    expect(outcome).toEqual({ kind: "cancelled" });
  });

  it("reports work that finished despite a late cancel as done", async () => {
    let h!: ReturnType<typeof harness>;
    h = harness(async () => {
      h.cancel();
      return { ok: true, message: "m", output: "/k.py", cost: 3 };
    });
    const outcome = await runServerCommand(h.deps, COMPILE, [], "Compiling");
    expect(outcome.kind).toBe("answered");
  });

  it("turns a failed request or a malformed answer into an error outcome", async () => {
    const failing = harness(async () => {
      throw new Error("Internal error: boom");
    });
    expect(await runServerCommand(failing.deps, SIMULATE, [], "Simulating")).toEqual({
      kind: "error",
      message: "Internal error: boom",
    });
    const malformed = harness(async () => ({ ok: true, message: "m" }));
    const outcome = await runServerCommand(malformed.deps, SIMULATE, [], "Simulating");
    expect(outcome).toMatchObject({ kind: "error", message: expect.stringContaining("max_abs_diff") });
  });
});
