//! ACT: Show Compile Report: the backend's report of the active kernel's last compile (or of
//! the active assembly's), in a webview: the assembly linked to the HLO, the memory picture
//! and the candidates tried.

import * as path from "node:path";
import * as vscode from "vscode";

import { MalformedReport, memorySvgPathFor, parseCompileReport, reportPathFor } from "../compileReport";
import { type CommandDeps, exists, isKernel, isPython, targetUri } from "./common";

async function readText(fsPath: string): Promise<string> {
  return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(fsPath)));
}

/** The kernel and assembly the command acts on: the active one and its counterpart. */
async function kernelAndAssembly(deps: CommandDeps, target: vscode.Uri): Promise<{ kernel: string; assembly: string }> {
  if (isKernel(target)) {
    const kernel = target.fsPath;
    return { kernel, assembly: deps.memory.kernel(kernel).output ?? kernel.replace(/\.hlo$/i, ".py") };
  }
  const assembly = target.fsPath;
  const beside = assembly.replace(/\.py$/, ".hlo");
  const kernel = deps.memory.kernelForAssembly(assembly) ?? ((await exists(beside)) ? beside : undefined);
  if (kernel === undefined) {
    throw new Error(`ACT: which kernel was ${path.basename(assembly)} compiled from? Open the kernel (.hlo) and run 'ACT: Show Compile Report' there.`);
  }
  return { kernel, assembly };
}

export async function showCompileReport(deps: CommandDeps, arg: vscode.Uri | undefined): Promise<void> {
  const target = targetUri(arg, (uri) => isKernel(uri) || isPython(uri), "a kernel (.hlo) or its compiled assembly (.py)");
  const { kernel, assembly } = await kernelAndAssembly(deps, target);
  const kernelName = path.basename(kernel);
  const reportPath = deps.memory.kernel(kernel).report ?? reportPathFor(assembly);
  if (!(await exists(reportPath))) {
    throw new Error(
      `ACT: ${kernelName} has no compile report yet (${vscode.workspace.asRelativePath(reportPath)}). Run 'ACT: Compile Kernel' first.`,
    );
  }
  let report;
  try {
    report = parseCompileReport(await readText(reportPath));
  } catch (error) {
    if (error instanceof MalformedReport) {
      throw new Error(`ACT: cannot read the compile report ${vscode.workspace.asRelativePath(reportPath)}: ${error.message}`);
    }
    throw error;
  }
  const svgPath = memorySvgPathFor(reportPath);
  const svg = (await exists(svgPath)) ? await readText(svgPath) : undefined;
  deps.views.showCompileReport(
    { kernelName, assemblyName: path.basename(assembly), report, svg },
    { kernelPath: kernel, assemblyPath: assembly },
  );
}
