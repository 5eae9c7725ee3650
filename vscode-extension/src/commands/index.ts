//! The extension's commands: Generate Backend, Compile Kernel, Simulate Kernel (each a thin UI
//! around the server command of the same name), Show Compile Report, Select Backend, and the
//! Restricted Mode explanation. Each build command checks trust first, saves its file, reports
//! through the status item and the ACT output channel, and ends in one message saying what
//! happened (and, for Simulate, a view of the results).

import * as vscode from "vscode";

import { COMPILE, GENERATE, SHOW_REPORT, SIMULATE } from "../serverCommands";
import type { CommandDeps } from "./common";
import { compileKernel, selectBackend } from "./compile";
import { generateBackend } from "./generate";
import { showCompileReport } from "./report";
import { simulateKernel } from "./simulate";

export type { CommandDeps } from "./common";

export const RESTRICTED_EXPLANATION =
  "ACT: this workspace is in Restricted Mode. Generate Backend, Compile Kernel and Simulate Kernel " +
  "run code from the workspace (the spec, the generated backend and oracle), and specs are only " +
  "checked by running them, so all of these wait until you trust the workspace. Kernels (.hlo) " +
  "are still checked.";

export function registerCommands(context: vscode.ExtensionContext, deps: CommandDeps): void {
  const register = (id: string, handler: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, handler));

  // Menus pass the file's Uri; the server's code lenses pass its own positional arguments
  // (`[specUri, accelerator]`, `[kernelUri, backendPath]`), which are honoured here.
  register(GENERATE, (arg, name) =>
    guarded(deps, () => generateBackend(deps, asUri(arg), asText(name))),
  );
  register(COMPILE, (arg, backend) =>
    guarded(deps, () => compileKernel(deps, asUri(arg), asText(backend))),
  );
  register(SIMULATE, (arg) => guarded(deps, () => simulateKernel(deps, asUri(arg))));
  // Reports come from compiles, which need trust; the report view shows the backend's files.
  register(SHOW_REPORT, (arg) => guarded(deps, () => showCompileReport(deps, asUri(arg))));
  register("act.selectBackend", () => guarded(deps, () => selectBackend(deps)));
  register("act.showOutput", () => deps.output.show(true));
  register("act.restartServer", () => deps.server.restart());
  register("act.explainRestrictedMode", () => explainRestrictedMode());
}

/** Runs a build command only in a trusted workspace; otherwise says why not and how to fix. */
async function guarded(deps: CommandDeps, body: () => Promise<void>): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    await explainRestrictedMode();
    return;
  }
  try {
    await body();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    deps.output.error(message);
    await vscode.window.showErrorMessage(message.startsWith("ACT:") ? message : `ACT: ${message}`);
  }
}

async function explainRestrictedMode(): Promise<void> {
  const manage = "Manage Workspace Trust";
  const picked = await vscode.window.showWarningMessage(RESTRICTED_EXPLANATION, manage);
  if (picked === manage) {
    await vscode.commands.executeCommand("workbench.trust.manage");
  }
}

function asUri(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) {
    return arg;
  }
  if (typeof arg === "string" && arg !== "") {
    return /^[a-zA-Z][\w+.-]*:\/\//.test(arg) ? vscode.Uri.parse(arg) : vscode.Uri.file(arg);
  }
  return undefined;
}

function asText(arg: unknown): string | undefined {
  return typeof arg === "string" && arg !== "" ? arg : undefined;
}
