//! ACT: Generate Backend: runs the spec's generation in the server, and keeps the status bar
//! item and the workspace's backend choice up to date.

import * as path from "node:path";
import * as vscode from "vscode";

import { GENERATE, generateArguments, type Outcome, type ResultTypes } from "../serverCommands";
import { type CommandDeps, failureMessage, isPython, now, run, saveIfDirty, targetUri } from "./common";

export async function generateBackend(
  deps: CommandDeps,
  arg: vscode.Uri | undefined,
  accelerator: string | undefined,
): Promise<void> {
  const spec = targetUri(arg, isPython, "a TAIDL spec (a Python file that builds an Accelerator)");
  await saveIfDirty(spec);
  const specName = path.basename(spec.fsPath);
  deps.status.setGeneration({ kind: "running", spec: spec.fsPath });
  let outcome: Outcome<ResultTypes[typeof GENERATE]>;
  try {
    outcome = await run(
      deps,
      GENERATE,
      generateArguments(spec.toString(), accelerator),
      `ACT: Generating backend${accelerator === undefined ? "" : ` ${accelerator}`} from ${specName}`,
    );
  } catch (error) {
    // No server to ask: the generation did not happen, and the status bar must not spin on.
    const message = error instanceof Error ? error.message : String(error);
    deps.status.setGeneration({ kind: "failed", spec: spec.fsPath, message, finishedAt: now() });
    throw error;
  }
  if (outcome.kind === "cancelled") {
    deps.status.setGeneration({ kind: "cancelled", spec: spec.fsPath, finishedAt: now() });
    void vscode.window.showInformationMessage(`ACT: generating the backend from ${specName} was cancelled.`);
    return;
  }
  if (outcome.kind === "error" || !outcome.result.ok) {
    const message = outcome.kind === "error" ? outcome.message : outcome.result.message;
    deps.status.setGeneration({ kind: "failed", spec: spec.fsPath, message, finishedAt: now() });
    await failureMessage(deps, `ACT: generating the backend from ${specName} failed: ${message}`);
    return;
  }
  const built = outcome.result.backends;
  const paths = built.flatMap((b) => (b.backend === undefined ? [] : [b.backend]));
  deps.status.setGeneration({
    kind: "succeeded",
    spec: spec.fsPath,
    accelerators: built.map((b) => b.accelerator),
    backends: paths,
    finishedAt: now(),
  });
  // A single backend just generated is the one the user will compile with next.
  if (built.length === 1 && paths.length === 1) {
    await deps.memory.chooseBackend(paths[0]);
  }
  const where = built.map((b) =>
    b.backend === undefined ? b.accelerator : `${b.accelerator} into ${vscode.workspace.asRelativePath(b.backend)}`,
  );
  void vscode.window.showInformationMessage(`ACT: generated ${where.join(", ")}.`);
}
