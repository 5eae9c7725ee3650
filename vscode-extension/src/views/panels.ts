//! The webview panels of the compile report (one per kernel) and of the simulation results (one
//! per assembly): made on first use, refreshed and revealed when shown again. The report's
//! links open the kernel or the assembly at a line.

import * as vscode from "vscode";

import { COMPILE_REPORT_SCRIPT, type CompileReportContent, compileReportBody, isReportMessage, reportTitle } from "./compileReportView";
import { makeNonce, page } from "./page";
import { SIMULATION_SCRIPT, type SimulationContent, simulationBody, simulationTitle } from "./simulationView";

export const REPORT_VIEW = "act.compileReport";
export const SIMULATION_VIEW = "act.simulation";

/** Where a report's links lead. */
interface Targets {
  kernelPath: string;
  assemblyPath: string;
}

export class ViewPanels implements vscode.Disposable {
  private readonly panels = new Map<string, { panel: vscode.WebviewPanel; targets?: Targets }>();

  /** Shows `content`, the report of `kernelPath` whose assembly is `assemblyPath`. */
  showCompileReport(content: CompileReportContent, targets: Targets): void {
    const entry = this.panel(`report:${targets.kernelPath}`, REPORT_VIEW, reportTitle(content.kernelName), false);
    entry.targets = targets;
    const webview = entry.panel.webview;
    const nonce = makeNonce();
    webview.html = page({
      title: reportTitle(content.kernelName),
      body: compileReportBody(content),
      script: COMPILE_REPORT_SCRIPT,
      cspSource: webview.cspSource,
      nonce,
    });
  }

  /** Shows the results of simulating `assemblyPath`, beside the editor, keeping its focus. */
  showSimulation(content: SimulationContent, assemblyPath: string): void {
    const entry = this.panel(`simulation:${assemblyPath}`, SIMULATION_VIEW, simulationTitle(content.assemblyName), true);
    const webview = entry.panel.webview;
    webview.html = page({
      title: simulationTitle(content.assemblyName),
      body: simulationBody(content),
      script: SIMULATION_SCRIPT,
      cspSource: webview.cspSource,
      nonce: makeNonce(),
    });
  }

  dispose(): void {
    for (const { panel } of [...this.panels.values()]) {
      panel.dispose();
    }
    this.panels.clear();
  }

  private panel(key: string, viewType: string, title: string, preserveFocus: boolean) {
    const existing = this.panels.get(key);
    if (existing !== undefined) {
      existing.panel.title = title;
      existing.panel.reveal(undefined, preserveFocus);
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(
      viewType,
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
      // Everything the pages show is inline: no local files are readable from them.
      { enableScripts: true, localResourceRoots: [] },
    );
    const entry: { panel: vscode.WebviewPanel; targets?: Targets } = { panel };
    this.panels.set(key, entry);
    panel.onDidDispose(() => this.panels.delete(key));
    panel.webview.onDidReceiveMessage((message: unknown) => {
      if (entry.targets !== undefined && isReportMessage(message)) {
        const path = message.type === "revealKernel" ? entry.targets.kernelPath : entry.targets.assemblyPath;
        void revealLine(path, message.line);
      }
    });
    return entry;
  }
}

/** Opens `path` in the first editor column with the cursor at the start of `line` (1-based). */
async function revealLine(path: string, line: number): Promise<void> {
  const at = new vscode.Range(line - 1, 0, line - 1, 0);
  await vscode.window.showTextDocument(vscode.Uri.file(path), { viewColumn: vscode.ViewColumn.One, selection: at });
}
