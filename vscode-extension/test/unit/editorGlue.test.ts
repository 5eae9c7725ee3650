// The thin VS Code glue: the status bar item, the protocol trace channel, and asking the
// Python extension for its interpreter.
import { beforeEach, describe, expect, it } from "vitest";
import * as vscode from "vscode";

import { pythonExtensionInterpreter } from "../../src/pythonExtension";
import { StatusItem } from "../../src/statusItem";
import { createTraceChannel, traceLevel } from "../../src/traceChannel";
import { fake } from "./fakes/vscode";

beforeEach(() => fake.reset());

function memento(initial: Record<string, unknown> = {}) {
  const values = new Map(Object.entries(initial));
  return { values, get: <T>(k: string) => values.get(k) as T | undefined, update: async (k: string, v: unknown) => void values.set(k, v) };
}

describe("the status bar item", () => {
  it("appears with a spec or kernel in front, or once something was generated", () => {
    const item = new StatusItem(memento());
    const drawn = fake.statusItems[0];
    expect(drawn).toMatchObject({ id: "act.status", visible: false });
    item.setActFileActive(true);
    expect(drawn.visible).toBe(true);
    item.setActFileActive(false);
    expect(drawn.visible).toBe(false);
    item.setGeneration({ kind: "cancelled", spec: "/ws/QKV.py", finishedAt: "t" });
    expect(drawn.visible).toBe(true);
  });

  it("redraws on every change", () => {
    const item = new StatusItem(memento());
    const drawn = fake.statusItems[0];
    item.setActFileActive(true);
    expect(drawn.text).toBe("$(loading~spin) ACT");
    item.setServer("running");
    expect(drawn.text).toBe("$(circuit-board) ACT");
    item.setGeneration({ kind: "failed", spec: "/ws/QKV.py", message: "refused", finishedAt: "t" });
    expect(drawn.text).toBe("$(error) ACT: QKV.py failed");
    expect((drawn.backgroundColor as { id: string }).id).toBe("statusBarItem.errorBackground");
    item.setTrusted(false);
    expect(drawn.text).toBe("$(shield) ACT: Restricted");
  });

  it("keeps the last generation across reloads, but not one that was still running", async () => {
    const store = memento();
    new StatusItem(store).setGeneration({ kind: "cancelled", spec: "/ws/QKV.py", finishedAt: "t" });
    fake.statusItems = [];
    const reloaded = new StatusItem(store);
    reloaded.setServer("running");
    expect(fake.statusItems[0].text).toBe("$(circle-slash) ACT: QKV.py cancelled");

    expect(fake.statusItems[0].visible).toBe(true);

    fake.statusItems = [];
    const interrupted = new StatusItem(memento({ "act.lastGeneration": { kind: "running", spec: "/ws/QKV.py" } }));
    interrupted.setServer("running");
    expect(fake.statusItems[0].text).toBe("$(circuit-board) ACT");
    expect(fake.statusItems[0].visible).toBe(false);
  });
});

describe("the protocol trace channel", () => {
  it("maps act.trace.server to the log level the language client reads", () => {
    expect(traceLevel("off")).toBe(vscode.LogLevel.Off);
    expect(traceLevel(undefined)).toBe(vscode.LogLevel.Off);
    expect(traceLevel("messages")).toBe(vscode.LogLevel.Trace);
    expect(traceLevel("verbose")).toBe(vscode.LogLevel.Trace);
  });

  it("announces a level change when the setting changes, and writes what is traced", () => {
    let setting = "off";
    const channel = createTraceChannel("ACT Language Server Trace", () => setting);
    const levels: vscode.LogLevel[] = [];
    channel.onDidChangeLogLevel((level) => levels.push(level));
    expect(channel.logLevel).toBe(vscode.LogLevel.Off);

    setting = "verbose";
    fake.changeConfiguration("act.trace.server");
    fake.changeConfiguration("act.pythonPath");
    expect(levels).toEqual([vscode.LogLevel.Trace]);
    expect(channel.logLevel).toBe(vscode.LogLevel.Trace);

    channel.trace("[Trace] Sending request 'initialize - (0)'.");
    expect(fake.outputChannels[0].lines).toEqual(["[Trace] Sending request 'initialize - (0)'."]);
    channel.dispose();
    expect(fake.outputChannels[0].disposed).toBe(true);
    expect(fake.configListeners).toEqual([]);
  });
});

describe("the Python extension's interpreter", () => {
  const folder = vscode.Uri.file("/ws");

  it("is undefined when the Python extension is not installed", async () => {
    expect(await pythonExtensionInterpreter(folder)).toBeUndefined();
  });

  it("comes from the environments API when the extension has it", async () => {
    const asked: unknown[] = [];
    fake.extensions.set("ms-python.python", {
      isActive: true,
      exports: {
        environments: {
          getActiveEnvironmentPath: (resource: unknown) => {
            asked.push(resource);
            return { path: "/ws/.venv" };
          },
          resolveEnvironment: async () => ({ executable: { uri: vscode.Uri.file("/ws/.venv/bin/python") } }),
        },
      },
    });
    expect(await pythonExtensionInterpreter(folder)).toBe("/ws/.venv/bin/python");
    expect(asked).toEqual([folder]);
  });

  it("activates the extension and falls back to the older execution details", async () => {
    let activated = false;
    fake.extensions.set("ms-python.python", {
      isActive: false,
      activate: async () => {
        activated = true;
        return { settings: { getExecutionDetails: () => ({ execCommand: ["/usr/bin/python3.12"] }) } };
      },
    });
    expect(await pythonExtensionInterpreter(folder)).toBe("/usr/bin/python3.12");
    expect(activated).toBe(true);
  });

  it("ignores a command that is not a single executable", async () => {
    fake.extensions.set("ms-python.python", {
      isActive: true,
      exports: { settings: { getExecutionDetails: () => ({ execCommand: ["conda", "run", "-n", "act", "python"] }) } },
    });
    expect(await pythonExtensionInterpreter(folder)).toBeUndefined();
  });
});
