//! Builds the language client for `<python> -m lsp` over stdio. Two of vscode-languageclient's
//! built-in features are replaced: command registration (the extension's own `act.*` commands
//! carry the UI around the server's commands of the same names) and progress (routed to those
//! commands' cancellable notifications). The server's window/showMessage is shown except while
//! an ACT command runs, whose own message (with its buttons) reports the same result.
//! Configuration answers go through the trust filter.

import * as vscode from "vscode";
import {
  type ClientCapabilities,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  MessageType,
  type ServerOptions,
  ShowMessageNotification,
  type StaticFeature,
  TransportKind,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
} from "vscode-languageclient/node";

import type { ProgressRouter, WorkDoneValue } from "./progress";
import { answerConfigurationItem, type ServerSettings, settingsPayload } from "./settings";

export const CLIENT_ID = "act";
export const CLIENT_NAME = "ACT Language Server";

/** Built-in features whose job this extension does itself, by the method they serve. */
const REPLACED_FEATURES = new Set<string>([
  "workspace/executeCommand",
  WorkDoneProgressCreateRequest.method,
]);

class ActLanguageClient extends LanguageClient {
  // Called from the base constructor for every built-in feature.
  override registerFeature(feature: StaticFeature): void {
    let id: string | undefined;
    try {
      const state = feature.getState() as FeatureState & { id?: string };
      id = state.id;
    } catch {
      id = undefined;
    }
    if (id !== undefined && REPLACED_FEATURES.has(id)) {
      return;
    }
    super.registerFeature(feature);
  }
}

/** Accepts window/workDoneProgress/create and feeds the server's $/progress to the router. */
class RoutedProgressFeature implements StaticFeature {
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly client: LanguageClient,
    private readonly router: ProgressRouter,
  ) {}

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.window = { ...(capabilities.window ?? {}), workDoneProgress: true };
  }

  getState(): FeatureState {
    return { kind: "static" };
  }

  initialize(): void {
    this.client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      const cancel = () => {
        void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
      };
      this.router.created(token, cancel);
      const subscription = this.client.onProgress(WorkDoneProgress.type, token, (value) => {
        this.router.progress(token, value as WorkDoneValue);
        if (value.kind === "end") {
          subscription.dispose();
        }
      });
      this.subscriptions.push(subscription);
    });
  }

  clear(): void {
    this.subscriptions.splice(0).forEach((s) => s.dispose());
  }
}

/**
 * Shows window/showMessage like the default client does, except the result messages the server
 * sends for a command an ACT command is running: that command reports the result itself.
 */
class CommandAwareShowMessageFeature implements StaticFeature {
  constructor(
    private readonly client: LanguageClient,
    private readonly router: ProgressRouter,
  ) {}

  fillClientCapabilities(): void {}

  getState(): FeatureState {
    return { kind: "static" };
  }

  initialize(): void {
    this.client.onNotification(ShowMessageNotification.type, ({ type, message }) => {
      if (this.router.commandInFlight) {
        return;
      }
      if (type === MessageType.Error) {
        void vscode.window.showErrorMessage(message);
      } else if (type === MessageType.Warning) {
        void vscode.window.showWarningMessage(message);
      } else {
        void vscode.window.showInformationMessage(message);
      }
    });
  }

  clear(): void {}
}

export interface ClientSetup {
  python: string;
  /** Working directory of the server: one without an `lsp` package, so the installed one runs. */
  cwd: string;
  outputChannel: vscode.LogOutputChannel;
  traceOutputChannel: vscode.LogOutputChannel;
  settings: () => ServerSettings;
  router: ProgressRouter;
}

export function createClient(setup: ClientSetup): LanguageClient {
  const serverOptions: ServerOptions = {
    command: setup.python,
    args: ["-m", "lsp"],
    transport: TransportKind.stdio,
    options: { cwd: setup.cwd, env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "file", language: "hlo" },
    ],
    outputChannel: setup.outputChannel,
    traceOutputChannel: setup.traceOutputChannel,
    initializationOptions: settingsPayload(setup.settings()),
    middleware: {
      workspace: {
        configuration: async (params, token, next) => {
          const fromVscode = await next(params, token);
          if (!Array.isArray(fromVscode)) {
            return fromVscode;
          }
          const settings = setup.settings();
          return params.items.map((item, i) => {
            const answer = answerConfigurationItem(item.section, settings);
            return answer.handled ? answer.value : fromVscode[i];
          });
        },
      },
    },
  };
  const client = new ActLanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  client.registerFeature(new RoutedProgressFeature(client, setup.router));
  client.registerFeature(new CommandAwareShowMessageFeature(client, setup.router));
  return client;
}
