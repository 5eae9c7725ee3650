//! The language server's lifecycle: choose and check the interpreter, start the client, push
//! settings when they (or workspace trust) change, restart on request or when `act.pythonPath`
//! changes, and explain in one message what to fix when it cannot start.

import * as vscode from "vscode";
import { DidChangeConfigurationNotification, type LanguageClient, State } from "vscode-languageclient/node";

import { createClient } from "./client";
import { type DocumentDescription, describeDocument } from "./documentDescription";
import { FailureNotice } from "./failureNotice";
import type { ProgressRouter } from "./progress";
import {
  checkPython,
  choosePython,
  describeFailure,
  installCommand,
  type PythonChoice,
  runProcess,
} from "./python";
import { pythonExtensionInterpreter } from "./pythonExtension";
import { SECTION, type ServerSettings, serverSettings, settingsPayload } from "./settings";
import type { ServerState } from "./status";

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private problem: string | undefined;
  private starting: Promise<void> | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  /** Fires with the new state whenever the server starts, stops or fails. */
  readonly onDidChangeState = this.stateEmitter.event;
  private state: ServerState = "stopped";
  private readonly failureNotice = new FailureNotice();

  constructor(
    private readonly extensionPath: string,
    private readonly output: vscode.LogOutputChannel,
    private readonly trace: vscode.LogOutputChannel,
    private readonly router: ProgressRouter,
  ) {}

  get currentState(): ServerState {
    return this.state;
  }

  /** Why the server is not running, once a start failed. */
  get currentProblem(): string | undefined {
    return this.problem;
  }

  /**
   * The running client, once a start in progress has finished; else an Error that says why
   * there is none (shown to the user as is).
   */
  async runningClient(): Promise<LanguageClient> {
    await this.starting;
    if (this.client !== undefined && this.client.state === State.Running) {
      return this.client;
    }
    throw new Error(
      this.problem ?? "ACT: the language server is not running. Run 'ACT: Restart Language Server'.",
    );
  }

  /**
   * What the server makes of a document (see documentDescription), or `undefined` when it
   * cannot be asked now (not running) or did not answer (the reason goes to the log).
   */
  async describe(documentUri: string): Promise<DocumentDescription | undefined> {
    const client = this.client;
    if (client === undefined || client.state !== State.Running) {
      return undefined;
    }
    try {
      return await describeDocument(
        (command, args) => client.sendRequest("workspace/executeCommand", { command, arguments: args }),
        documentUri,
      );
    } catch (error) {
      this.output.warn(`describing ${documentUri}: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }

  settings(): ServerSettings {
    return serverSettings(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted);
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.dispose(5000);
      } catch (error) {
        this.output.warn(`stopping the language server: ${String(error)}`);
      }
    }
    this.setState("stopped");
  }

  /** Sends the current (trust-filtered) `act` settings; a no-op while the server is down. */
  async pushSettings(): Promise<void> {
    const client = this.client;
    if (client === undefined || client.state !== State.Running) {
      return;
    }
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: settingsPayload(this.settings()),
    });
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.stateEmitter.dispose();
  }

  private setState(state: ServerState, problem?: string): void {
    this.state = state;
    this.problem = problem;
    this.stateEmitter.fire(state);
  }

  private async doStart(): Promise<void> {
    this.failureNotice.clear();
    this.setState("starting");
    const folder = vscode.workspace.workspaceFolders?.[0];
    const configured = vscode.workspace.getConfiguration(SECTION).get<string>("pythonPath");
    const choice = await choosePython(configured, folder?.uri.fsPath, () =>
      pythonExtensionInterpreter(folder?.uri),
    );
    this.output.info(`Python interpreter: ${choice.command} (${choice.origin})`);
    const check = await checkPython(choice.command, runProcess, this.extensionPath);
    if (!check.ok) {
      const message = describeFailure(choice, check);
      this.output.error(message);
      this.setState("failed", message);
      this.reportFailure(message, choice, check.problem === "missing-package" || check.problem === "failed");
      return;
    }
    this.output.info(`Python ${check.version} imports lsp and act_backend; starting the server`);
    const client = createClient({
      python: choice.command,
      cwd: this.extensionPath,
      outputChannel: this.output,
      traceOutputChannel: this.trace,
      settings: () => this.settings(),
      router: this.router,
    });
    client.onDidChangeState((event) => {
      if (this.client !== client) {
        return;
      }
      if (event.newState === State.Running) {
        this.setState("running");
      } else if (event.newState === State.Stopped && this.state === "running") {
        this.setState("failed", "ACT: the language server stopped. See the ACT output for its last words.");
      }
    });
    this.client = client;
    try {
      await client.start();
      this.setState("running");
    } catch (error) {
      const message = `ACT: the language server (${choice.command} -m lsp) failed to start: ${
        error instanceof Error ? error.message : String(error)
      }`;
      this.output.error(message);
      this.client = undefined;
      this.setState("failed", message);
      this.reportFailure(message, choice, false);
    }
  }

  /** Whether the active editor holds (or may hold) a spec or a kernel (see FailureNotice). */
  setActFileActive(active: boolean): void {
    this.failureNotice.setActFileActive(active);
  }

  private reportFailure(message: string, choice: PythonChoice, offerInstall: boolean): void {
    this.failureNotice.report(() => void this.offerFix(message, choice, offerInstall));
  }

  private async offerFix(message: string, choice: PythonChoice, offerInstall: boolean): Promise<void> {
    const openSettings = "Open Settings";
    const copyInstall = "Copy Install Command";
    const showLog = "Show Log";
    const actions = offerInstall ? [copyInstall, openSettings, showLog] : [openSettings, showLog];
    const picked = await vscode.window.showErrorMessage(message, ...actions);
    if (picked === openSettings) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "act.pythonPath");
    } else if (picked === copyInstall) {
      await vscode.env.clipboard.writeText(installCommand(choice.command));
    } else if (picked === showLog) {
      this.output.show(true);
    }
  }
}
