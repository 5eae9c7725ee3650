//! The extension's commands: Generate Backend, Compile Kernel, Simulate Kernel (each a thin UI
//! around the server command of the same name), Select Backend, and the Restricted Mode
//! explanation. Each build command checks trust first, saves its file, reports through the
//! status item and the ACT output channel, and ends in one message saying what happened.

import * as path from "node:path";
import * as vscode from "vscode";

import { type Backend, backendsAmong, decideBackend, oracleDirFor } from "./backends";
import { entryParameters, type KernelParameter, matchDataFiles } from "./kernelParameters";
import type { WorkspaceMemory } from "./memory";
import type { ProgressRouter } from "./progress";
import type { ServerController } from "./server";
import {
  COMPILE,
  type CancelSignal,
  type CommandRunnerDeps,
  compileArguments,
  GENERATE,
  generateArguments,
  type Outcome,
  type ResultTypes,
  runServerCommand,
  type ServerCommand,
  SIMULATE,
  simulateArguments,
} from "./serverCommands";
import { revealOutput, SECTION } from "./settings";
import type { StatusItem } from "./statusItem";

export interface CommandDeps {
  server: ServerController;
  router: ProgressRouter;
  memory: WorkspaceMemory;
  status: StatusItem;
  output: vscode.LogOutputChannel;
}

export const RESTRICTED_EXPLANATION =
  "ACT: this workspace is in Restricted Mode. Generate Backend, Compile Kernel and Simulate Kernel " +
  "run code from the workspace (the spec, the generated backend and oracle), and specs are only " +
  "checked by running them, so all of these wait until you trust the workspace. Kernels (.hlo) " +
  "are still checked.";

const SHOW_LOG = "Show Build Log";

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

function isKernel(uri: vscode.Uri): boolean {
  return uri.fsPath.toLowerCase().endsWith(".hlo");
}

function isPython(uri: vscode.Uri): boolean {
  return uri.fsPath.toLowerCase().endsWith(".py");
}

/** The file a command acts on: the one it was invoked on, else the active editor's. */
function targetUri(arg: vscode.Uri | undefined, accept: (uri: vscode.Uri) => boolean, what: string): vscode.Uri {
  const uri = arg ?? vscode.window.activeTextEditor?.document.uri;
  if (uri === undefined || uri.scheme !== "file" || !accept(uri)) {
    throw new Error(`ACT: open ${what} in the editor first (the command acts on the active file).`);
  }
  return uri;
}

/** Commands read files from disk, so unsaved edits are saved first. */
async function saveIfDirty(uri: vscode.Uri): Promise<void> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open?.isDirty && !(await open.save())) {
    throw new Error(`ACT: could not save ${uri.fsPath}; the command works on the saved file.`);
  }
}

function now(): string {
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

async function run<C extends ServerCommand>(
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

async function failureMessage(deps: CommandDeps, message: string): Promise<void> {
  const picked = await vscode.window.showErrorMessage(message, SHOW_LOG);
  if (picked === SHOW_LOG) {
    deps.output.show(true);
  }
}

// ---------------------------------------------------------------------------------------------
// Generate Backend

async function generateBackend(
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

// ---------------------------------------------------------------------------------------------
// Compile Kernel

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

async function selectBackend(deps: CommandDeps): Promise<void> {
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

async function compileKernel(
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
  const { output, cost } = outcome.result;
  await deps.memory.updateKernel(kernel.fsPath, { backend: backend.path, output });
  const open = "Open Assembly";
  const simulate = "Simulate";
  const picked = await vscode.window.showInformationMessage(
    `ACT: compiled ${kernelName} with ${backend.name}${cost === undefined ? "" : ` (cost ${cost})`} into ${vscode.workspace.asRelativePath(output)}.`,
    open,
    simulate,
  );
  if (picked === open) {
    await vscode.window.showTextDocument(vscode.Uri.file(output));
  } else if (picked === simulate) {
    await vscode.commands.executeCommand(SIMULATE, kernel);
  }
}

// ---------------------------------------------------------------------------------------------
// Simulate Kernel

async function exists(fsPath: string): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(vscode.Uri.file(fsPath));
    return true;
  } catch {
    return false;
  }
}

async function pickKernel(): Promise<string | undefined> {
  const kernels = (await vscode.workspace.findFiles("**/*.hlo", "**/node_modules/**"))
    .map((uri) => uri.fsPath)
    .sort();
  if (kernels.length === 0) {
    throw new Error("ACT: there is no .hlo kernel in this workspace to simulate against.");
  }
  const picked = await vscode.window.showQuickPick(
    kernels.map((k) => ({ label: path.basename(k), description: vscode.workspace.asRelativePath(k), path: k })),
    { placeHolder: "The HLO kernel this assembly was compiled from", ignoreFocusOut: true },
  );
  return picked?.path;
}

async function oracleFor(backendPath: string | undefined): Promise<string | undefined> {
  if (backendPath !== undefined) {
    const backend = backendsAmong([backendPath])[0];
    if (backend !== undefined && (await exists(oracleDirFor(backend)))) {
      return oracleDirFor(backend);
    }
  }
  const tables = (await vscode.workspace.findFiles("**/targets/*/oracle/isa.json", "**/node_modules/**"))
    .map((uri) => path.dirname(uri.fsPath))
    .sort();
  if (tables.length === 0) {
    throw new Error(
      "ACT: there is no generated oracle (targets/<name>/oracle) in this workspace. Run 'ACT: Generate Backend' on the spec first.",
    );
  }
  if (tables.length === 1) {
    return tables[0];
  }
  const picked = await vscode.window.showQuickPick(
    tables.map((dir) => ({ label: path.basename(path.dirname(dir)), description: vscode.workspace.asRelativePath(dir), dir })),
    { placeHolder: "Oracle to simulate with", ignoreFocusOut: true },
  );
  return picked?.dir;
}

/** Data files beside the kernel: `<kernel dir>/data/*` and `<kernel dir>/../data/*`. */
async function nearbyDataFiles(kernelPath: string): Promise<string[]> {
  const dirs = [path.join(path.dirname(kernelPath), "data"), path.join(path.dirname(path.dirname(kernelPath)), "data")];
  const files: string[] = [];
  for (const dir of dirs) {
    try {
      for (const [name, type] of await vscode.workspace.fs.readDirectory(vscode.Uri.file(dir))) {
        if (type === vscode.FileType.File) {
          files.push(path.join(dir, name));
        }
      }
    } catch {
      // No such directory: nothing to offer from there.
    }
  }
  return files;
}

async function askForData(parameters: KernelParameter[], defaultDir: string): Promise<string[] | undefined> {
  const paths: string[] = [];
  for (const parameter of parameters) {
    const picked = await vscode.window.showOpenDialog({
      title: `Input data for parameter ${parameter.index} '${parameter.name}' (${parameter.type})`,
      openLabel: `Use for ${parameter.name}`,
      canSelectMany: false,
      defaultUri: vscode.Uri.file(defaultDir),
    });
    if (picked === undefined || picked.length === 0) {
      return undefined;
    }
    paths.push(picked[0].fsPath);
  }
  return paths;
}

async function dataFor(deps: CommandDeps, kernelPath: string): Promise<string[] | undefined> {
  const remembered = deps.memory.kernel(kernelPath).data;
  if (remembered !== undefined && (await Promise.all(remembered.map(exists))).every(Boolean)) {
    return remembered;
  }
  const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(kernelPath)));
  const parameters = entryParameters(text);
  if (parameters.length === 0) {
    throw new Error(`ACT: found no parameter(...) in the ENTRY computation of ${kernelPath}.`);
  }
  const matched = matchDataFiles(parameters, await nearbyDataFiles(kernelPath));
  if (matched.ok) {
    return matched.paths;
  }
  deps.output.info(
    `no data file named after parameter(s) ${matched.unmatched.join(", ")} of ${kernelPath}; asking`,
  );
  return askForData(parameters, path.join(path.dirname(path.dirname(kernelPath)), "data"));
}

async function simulateKernel(deps: CommandDeps, arg: vscode.Uri | undefined): Promise<void> {
  const target = targetUri(arg, (uri) => isKernel(uri) || isPython(uri), "a kernel (.hlo) or its compiled assembly (.py)");
  let kernelPath: string | undefined;
  let assemblyPath: string | undefined;
  if (isKernel(target)) {
    kernelPath = target.fsPath;
    assemblyPath = deps.memory.kernel(kernelPath).output;
    if (assemblyPath === undefined || !(await exists(assemblyPath))) {
      throw new Error(`ACT: ${path.basename(kernelPath)} has not been compiled in this workspace yet. Run 'ACT: Compile Kernel' first.`);
    }
  } else {
    assemblyPath = target.fsPath;
    await saveIfDirty(target);
    kernelPath = deps.memory.kernelForAssembly(assemblyPath) ?? (await pickKernel());
  }
  if (kernelPath === undefined) {
    return;
  }
  const oracle = await oracleFor(deps.memory.kernel(kernelPath).backend ?? deps.memory.chosenBackend());
  if (oracle === undefined) {
    return;
  }
  const data = await dataFor(deps, kernelPath);
  if (data === undefined) {
    return;
  }
  const assemblyName = path.basename(assemblyPath);
  const outcome = await run(
    deps,
    SIMULATE,
    simulateArguments(assemblyPath, oracle, data, kernelPath),
    `ACT: Simulating ${assemblyName}`,
  );
  if (outcome.kind === "cancelled") {
    void vscode.window.showInformationMessage(`ACT: simulating ${assemblyName} was cancelled.`);
    return;
  }
  if (outcome.kind === "error" || !outcome.result.ok) {
    const message = outcome.kind === "error" ? outcome.message : outcome.result.message;
    await failureMessage(deps, `ACT: simulating ${assemblyName} failed: ${message}`);
    return;
  }
  await deps.memory.updateKernel(kernelPath, { data });
  // The server's message (reference magnitude, shape, run time) is in the build log.
  void vscode.window.showInformationMessage(
    `ACT: simulated ${assemblyName}: largest difference from the reference ${outcome.result.max_abs_diff}.`,
  );
}
