//! ACT: Simulate Kernel: finds the assembly, kernel, oracle and input data (from what compile
//! remembered, the files beside the kernel, or the user) and runs the simulation.

import * as path from "node:path";
import * as vscode from "vscode";

import { backendsAmong, oracleDirFor } from "../backends";
import { describeDocument } from "../documentDescription";
import { type KernelParameter, matchDataFiles } from "../kernelParameters";
import { SIMULATE, simulateArguments } from "../serverCommands";
import { largestDifference, ulpsOfLargest } from "../views/simulationView";
import { type CommandDeps, exists, failureMessage, isKernel, isPython, run, saveIfDirty, targetUri } from "./common";

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
      // Generate Backend builds only the backend; the oracle comes from the spec's own
      // generate_oracle call when the spec runs as a program.
      "ACT: there is no generated oracle (targets/<name>/oracle) in this workspace. Run the spec (e.g. `python QKV.py`), whose generate_oracle(...) call writes it.",
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
  // The server reads the kernel's parameters with its parser (the editor's text when open).
  const client = await deps.server.runningClient();
  const { parameters } = await describeDocument(
    (command, args) => client.sendRequest("workspace/executeCommand", { command, arguments: args }),
    vscode.Uri.file(kernelPath).toString(),
  );
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

export async function simulateKernel(deps: CommandDeps, arg: vscode.Uri | undefined): Promise<void> {
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
  const result = outcome.result;
  deps.views.showSimulation({ assemblyName, kernelName: path.basename(kernelPath), result }, assemblyPath);
  // The view has the rest; the server's message is in the build log too.
  const extra = [ulpsOfLargest(result), result.run_ms === undefined ? undefined : `${result.run_ms.toFixed(1)} ms`];
  const said = [largestDifference(result), ...extra.filter((e) => e !== undefined)].join(", ");
  void vscode.window.showInformationMessage(`ACT: simulated ${assemblyName}: largest difference from the reference ${said}.`);
}
