//! What the command modules share: their dependencies, finding and saving the file a command
//! acts on, and running one server command with its log lines, notification and failure
//! handling.

import * as vscode from "vscode";

import type { WorkspaceMemory } from "../memory";
import type { ProgressRouter } from "../progress";
import type { ServerController } from "../server";
import {
  type CancelSignal,
  type CommandRunnerDeps,
  type Outcome,
  type ResultTypes,
  runServerCommand,
  type ServerCommand,
} from "../serverCommands";
import { revealOutput, SECTION } from "../settings";
import type { StatusItem } from "../statusItem";
import type { ViewPanels } from "../views/panels";

export interface CommandDeps {
  server: ServerController;
  router: ProgressRouter;
  memory: WorkspaceMemory;
  status: StatusItem;
  output: vscode.LogOutputChannel;
  views: ViewPanels;
}

export const SHOW_LOG = "Show Build Log";

export function isKernel(uri: vscode.Uri): boolean {
  return uri.fsPath.toLowerCase().endsWith(".hlo");
}

export function isPython(uri: vscode.Uri): boolean {
  return uri.fsPath.toLowerCase().endsWith(".py");
}

/** The file a command acts on: the one it was invoked on, else the active editor's. */
export function targetUri(arg: vscode.Uri | undefined, accept: (uri: vscode.Uri) => boolean, what: string): vscode.Uri {
  const uri = arg ?? vscode.window.activeTextEditor?.document.uri;
  if (uri === undefined || uri.scheme !== "file" || !accept(uri)) {
    throw new Error(`ACT: open ${what} in the editor first (the command acts on the active file).`);
  }
  return uri;
}

/** Commands read files from disk, so unsaved edits are saved first. */
export async function saveIfDirty(uri: vscode.Uri): Promise<void> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open?.isDirty && !(await open.save())) {
    throw new Error(`ACT: could not save ${uri.fsPath}; the command works on the saved file.`);
  }
}

export function now(): string {
  return new Date().toLocaleTimeString();
}

function runnerDeps(deps: CommandDeps): CommandRunnerDeps {
  return {
    execute: async (command, args, signal) => {
      const client = await deps.server.runningClient();
      return client.sendRequest("workspace/executeCommand", { command, arguments: args }, signal as vscode.CancellationToken);
    },
    withNotification: (title, task) =>
      Promise.resolve(
        vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title, cancellable: true },
          (progress, token) =>
            task((message, increment) => progress.report({ message, increment }), token as CancelSignal),
        ),
      ),
    claimProgress: (sink) => deps.router.claim(sink),
  };
}

export async function run<C extends ServerCommand>(
  deps: CommandDeps,
  command: C,
  args: unknown[],
  title: string,
): Promise<Outcome<ResultTypes[C]>> {
  // Fail before opening a notification when there is no server to ask.
  await deps.server.runningClient();
  deps.output.info(title);
  if (revealOutput(vscode.workspace.getConfiguration(SECTION)) === "always") {
    deps.output.show(true);
  }
  const outcome = await runServerCommand(runnerDeps(deps), command, args, title);
  switch (outcome.kind) {
    case "answered":
      if (outcome.result.ok) {
        deps.output.info(`done: ${outcome.result.message}`);
      } else {
        deps.output.error(`failed: ${outcome.result.message}`);
      }
      if (!outcome.result.ok) {
        revealOnFailure(deps);
      }
      break;
    case "cancelled":
      deps.output.warn("cancelled");
      break;
    case "error":
      deps.output.error(outcome.message);
      revealOnFailure(deps);
      break;
  }
  return outcome;
}

function revealOnFailure(deps: CommandDeps): void {
  if (revealOutput(vscode.workspace.getConfiguration(SECTION)) !== "never") {
    deps.output.show(true);
  }
}

export async function failureMessage(deps: CommandDeps, message: string): Promise<void> {
  const picked = await vscode.window.showErrorMessage(message, SHOW_LOG);
  if (picked === SHOW_LOG) {
    deps.output.show(true);
  }
}

export async function exists(fsPath: string): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(vscode.Uri.file(fsPath));
    return true;
  } catch {
    return false;
  }
}
