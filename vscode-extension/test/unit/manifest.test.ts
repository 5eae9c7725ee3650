// The package.json contract: commands, menus, settings, trust and pinned dependencies.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type * as vscode from "vscode";

import { registerCommands } from "../../src/commands";
import { fake } from "./fakes/vscode";

const extension = path.resolve(__dirname, "../..");
const manifest = JSON.parse(fs.readFileSync(path.join(extension, "package.json"), "utf8"));
const lock = JSON.parse(fs.readFileSync(path.join(extension, "package-lock.json"), "utf8"));
const BUILD_COMMANDS = ["act.generateBackend", "act.compileKernel", "act.simulateKernel", "act.selectBackend"];

interface MenuItem {
  command: string;
  when?: string;
  group?: string;
}

beforeEach(() => fake.reset());

describe("commands", () => {
  it("registers exactly the commands the manifest contributes", () => {
    registerCommands({ subscriptions: [] } as unknown as vscode.ExtensionContext, {} as never);
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    expect([...fake.handlers.keys()].sort()).toEqual(contributed);
  });

  it("titles every command under the ACT category", () => {
    for (const command of manifest.contributes.commands) {
      expect(command.category).toBe("ACT");
    }
    const titles = Object.fromEntries(manifest.contributes.commands.map((c: { command: string; title: string }) => [c.command, c.title]));
    expect(titles["act.generateBackend"]).toBe("Generate Backend");
    expect(titles["act.compileKernel"]).toBe("Compile Kernel");
    expect(titles["act.simulateKernel"]).toBe("Simulate Kernel");
  });

  it("shows build commands in the palette and menus only in trusted workspaces", () => {
    const menus = manifest.contributes.menus as Record<string, MenuItem[]>;
    for (const [menu, items] of Object.entries(menus)) {
      for (const item of items.filter((i) => BUILD_COMMANDS.includes(i.command))) {
        expect(item.when, `${menu} ${item.command}`).toMatch(/^isWorkspaceTrusted( && |$)/);
      }
    }
    const palette = menus.commandPalette.map((i) => i.command);
    expect(palette).toEqual(expect.arrayContaining(["act.generateBackend", "act.compileKernel", "act.simulateKernel"]));
    const explain = menus.commandPalette.find((i) => i.command === "act.explainRestrictedMode");
    expect(explain?.when).toBe("!isWorkspaceTrusted");
  });

  it("puts Generate on specs and Compile/Simulate on kernels in editor context menus", () => {
    const context = manifest.contributes.menus["editor/context"] as MenuItem[];
    const when = (command: string) => context.find((i) => i.command === command)?.when ?? "";
    expect(when("act.generateBackend")).toContain("act.activeEditorIsSpec");
    expect(when("act.compileKernel")).toContain("resourceLangId == hlo");
    expect(when("act.simulateKernel")).toContain("resourceLangId == hlo");
  });
});

describe("settings", () => {
  const properties = manifest.contributes.configuration.properties as Record<string, Record<string, unknown>>;

  it("are all namespaced act.* and carry a scope and a description", () => {
    for (const [key, schema] of Object.entries(properties)) {
      expect(key).toMatch(/^act\./);
      expect(schema.scope, key).toBeTypeOf("string");
      expect(schema.description ?? schema.markdownDescription, key).toBeTypeOf("string");
    }
  });

  it("include the interpreter, spec execution and the protocol trace", () => {
    expect(properties["act.pythonPath"]).toMatchObject({ type: "string", default: "" });
    expect(properties["act.executeSpecs"]).toMatchObject({ type: "boolean" });
    expect(properties["act.trace.server"]).toMatchObject({ enum: ["off", "messages", "verbose"], default: "off" });
  });

  it("default the server's knobs to the server's own defaults", () => {
    // lsp/settings.py: spec_timeout_s=10.0, spec_memory_mb=2048, diagnostics_delay_ms=100.
    const server = fs.readFileSync(path.join(extension, "..", "lsp", "settings.py"), "utf8");
    const serverDefault = (field: string) => Number(new RegExp(`${field}: \\w+ = ([\\d.]+)`).exec(server)?.[1]);
    expect(properties["act.specTimeout"].default).toBe(serverDefault("spec_timeout_s"));
    expect(properties["act.specMemoryLimitMb"].default).toBe(serverDefault("spec_memory_mb"));
    expect(properties["act.diagnosticsDelayMs"].default).toBe(serverDefault("diagnostics_delay_ms"));
  });
});

describe("workspace trust", () => {
  it("declares limited support and keeps workspace values of risky settings out", () => {
    const untrusted = manifest.capabilities.untrustedWorkspaces;
    expect(untrusted.supported).toBe("limited");
    expect(untrusted.description).toMatch(/never runs TAIDL specs/);
    expect(untrusted.restrictedConfigurations).toEqual(expect.arrayContaining(["act.pythonPath", "act.executeSpecs"]));
  });
});

describe("dependencies", () => {
  it("are pinned to exact versions and locked", () => {
    const all = { ...manifest.dependencies, ...manifest.devDependencies } as Record<string, string>;
    for (const [name, version] of Object.entries(all)) {
      expect(version, name).toMatch(/^\d+\.\d+\.\d+$/);
      expect(lock.packages[`node_modules/${name}`]?.version, name).toBe(version);
    }
  });

  it("target the VS Code versions vscode-languageclient 11 needs, with matching typings", () => {
    expect(manifest.engines.vscode).toBe("^1.91.0");
    expect(manifest.devDependencies["@types/vscode"]).toBe("1.91.0");
    expect(manifest.dependencies["vscode-languageclient"]).toBe("11.0.0");
  });
});
