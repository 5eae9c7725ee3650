//! ACT: Compile Kernel and ACT: Select Backend for Compile: which `backends/*` to use (asked
//! once per workspace when there are several), and compiling the active kernel with it.

import * as path from "node:path";
import * as vscode from "vscode";

import { type Backend, backendsAmong, decideBackend } from "../backends";
import { COMPILE, compileArguments, SHOW_REPORT, SIMULATE } from "../serverCommands";
import { type CommandDeps, failureMessage, isKernel, run, saveIfDirty, targetUri } from "./common";

async function workspaceBackends(): Promise<Backend[]> {
  const files = await vscode.workspace.findFiles("**/backends/*", "**/node_modules/**");
  return backendsAmong(files.map((uri) => uri.fsPath));
}

async function pickBackend(candidates: Backend[], placeHolder: string): Promise<Backend | undefined> {
  const picked = await vscode.window.showQuickPick(
    candidates.map((backend) => ({
      label: backend.name,
      description: vscode.workspace.asRelativePath(backend.path),
      backend,
    })),
    { placeHolder, ignoreFocusOut: true },
  );
  return picked?.backend;
}

const NO_BACKEND =
  "ACT: there is no generated backend (backends/<name>) in this workspace. Run 'ACT: Generate Backend' on a spec first.";

async function backendForCompile(deps: CommandDeps): Promise<Backend | undefined> {
  const decision = decideBackend(await workspaceBackends(), deps.memory.chosenBackend());
  switch (decision.kind) {
    case "none":
      throw new Error(NO_BACKEND);
    case "use":
      if (decision.remember) {
        await deps.memory.chooseBackend(decision.backend.path);
      }
      return decision.backend;
    case "ask": {
      const backend = await pickBackend(decision.candidates, "Backend to compile with (remembered for this workspace)");
      if (backend !== undefined) {
        await deps.memory.chooseBackend(backend.path);
      }
      return backend;
    }
  }
}

/** A backend named by the caller (a code lens); it becomes the workspace's choice. */
function givenBackend(backendPath: string): Backend {
  return (
    backendsAmong([backendPath])[0] ?? {
      name: path.basename(backendPath),
      path: backendPath,
      root: path.dirname(path.dirname(backendPath)),
    }
  );
}

export async function selectBackend(deps: CommandDeps): Promise<void> {
  const candidates = await workspaceBackends();
  if (candidates.length === 0) {
    throw new Error(NO_BACKEND);
  }
  const backend = await pickBackend(candidates, "Backend for 'ACT: Compile Kernel' in this workspace");
  if (backend !== undefined) {
    await deps.memory.chooseBackend(backend.path);
    void vscode.window.showInformationMessage(`ACT: kernels in this workspace now compile with ${backend.name}.`);
  }
}

export async function compileKernel(
  deps: CommandDeps,
  arg: vscode.Uri | undefined,
  backendPath: string | undefined,
): Promise<void> {
  const kernel = targetUri(arg, isKernel, "an XLA-HLO kernel (.hlo file)");
  await saveIfDirty(kernel);
  let backend: Backend | undefined;
  if (backendPath !== undefined) {
    backend = givenBackend(backendPath);
    await deps.memory.chooseBackend(backend.path);
  } else {
    backend = await backendForCompile(deps);
  }
  if (backend === undefined) {
    return;
  }
  const kernelName = path.basename(kernel.fsPath);
  const outcome = await run(
    deps,
    COMPILE,
    compileArguments(kernel.toString(), backend.path),
    `ACT: Compiling ${kernelName} with ${backend.name}`,
  );
  if (outcome.kind === "cancelled") {
    void vscode.window.showInformationMessage(`ACT: compiling ${kernelName} was cancelled.`);
    return;
  }
  if (outcome.kind === "error" || !outcome.result.ok) {
    const message = outcome.kind === "error" ? outcome.message : outcome.result.message;
    await failureMessage(deps, `ACT: compiling ${kernelName} with ${backend.name} failed: ${message}`);
    return;
  }
  const { output, cost, report } = outcome.result;
  await deps.memory.updateKernel(kernel.fsPath, { backend: backend.path, output, report });
  const show = "Show Report";
  const open = "Open Assembly";
  const simulate = "Simulate";
  const picked = await vscode.window.showInformationMessage(
    `ACT: compiled ${kernelName} with ${backend.name}${cost === undefined ? "" : ` (cost ${cost})`} into ${vscode.workspace.asRelativePath(output)}.`,
    ...(report === undefined ? [] : [show]),
    open,
    simulate,
  );
  if (picked === show) {
    await vscode.commands.executeCommand(SHOW_REPORT, kernel);
  } else if (picked === open) {
    await vscode.window.showTextDocument(vscode.Uri.file(output));
  } else if (picked === simulate) {
    await vscode.commands.executeCommand(SIMULATE, kernel);
  }
}
