//! Entry point: wires the output channels, status item, language server and commands together,
//! and reacts to settings, workspace trust and the active editor.

import * as vscode from "vscode";

import { registerCommands } from "./commands";
import { activeFileRoles, type DocumentDescription, servedByServer } from "./documentDescription";
import { WorkspaceMemory } from "./memory";
import { ProgressRouter, type ProgressSink } from "./progress";
import { ServerController } from "./server";
import { SECTION } from "./settings";
import { StatusItem } from "./statusItem";
import { createTraceChannel } from "./traceChannel";
import { ViewPanels } from "./views/panels";

let controller: ServerController | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("ACT", { log: true });
  const trace = createTraceChannel("ACT Language Server Trace", () =>
    vscode.workspace.getConfiguration(SECTION).get<string>("trace.server"),
  );
  const status = new StatusItem(context.workspaceState);
  const router = new ProgressRouter(orphanProgress);
  const server = new ServerController(context.extensionPath, output, trace, router);
  const views = new ViewPanels();
  controller = server;
  context.subscriptions.push(output, trace, status, server, views);

  context.subscriptions.push(
    server.onDidChangeState((state) => {
      status.setServer(state, server.currentProblem);
      // Once the server runs it can say what the file in front is.
      void followActiveEditor(vscode.window.activeTextEditor);
    }),
  );
  registerCommands(context, {
    server,
    router,
    memory: new WorkspaceMemory(context.workspaceState),
    status,
    output,
    views,
  });

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.pythonPath`)) {
        void server.restart();
      } else if (event.affectsConfiguration(SECTION)) {
        void server.pushSettings();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      status.setTrusted(true);
      // Trust can turn executeSpecs on; the server re-checks open specs when told.
      void server.pushSettings();
    }),
    vscode.window.onDidChangeActiveTextEditor((editor) => void followActiveEditor(editor)),
    vscode.workspace.onDidSaveTextDocument((document) => {
      if (document === vscode.window.activeTextEditor?.document) {
        void followActiveEditor(vscode.window.activeTextEditor);
      }
    }),
  );

  /**
   * What depends on the file in front: the spec context key, the status item, failure notices.
   * The server says what the file is; an answer that arrives after the editor changed again
   * is dropped.
   */
  let followed = 0;
  async function followActiveEditor(editor: vscode.TextEditor | undefined): Promise<void> {
    const ticket = ++followed;
    const document = editor?.document;
    let description: DocumentDescription | undefined;
    if (document !== undefined) {
      description = servedByServer(document.languageId, document.uri.scheme)
        ? await server.describe(document.uri.toString())
        : { kind: null, parameters: [] };
    }
    if (ticket !== followed) {
      return;
    }
    const roles = activeFileRoles(document?.languageId, description);
    // Shows "Generate Backend" in the spec's context menu.
    void vscode.commands.executeCommand("setContext", "act.activeEditorIsSpec", roles.isSpec);
    status.setActFileActive(roles.isActFile);
    server.setActFileActive(roles.isActFile);
  }
  void followActiveEditor(vscode.window.activeTextEditor);

  // Not awaited: checking the interpreter and starting the server must not hold up the
  // window; commands wait for the start themselves.
  void server.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}

/** Progress the server reports outside any ACT command gets a notification of its own. */
function orphanProgress(title: string, cancellable: boolean): ProgressSink {
  let cancelServer: (() => void) | undefined;
  let update: (message: string | undefined) => void = () => undefined;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  void vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `ACT: ${title}`, cancellable },
    (progress, token) => {
      update = (message) => progress.report({ message });
      token.onCancellationRequested(() => cancelServer?.());
      return done;
    },
  );
  return {
    update: (message) => update(message),
    finish: () => finish(),
    attachCancel: (cancel) => {
      cancelServer = cancel;
    },
  };
}
