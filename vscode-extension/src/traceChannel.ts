//! The protocol trace channel, driven by the `act.trace.server` setting.
//!
//! vscode-languageclient 11 traces only while its trace channel's log level is Trace, and then
//! reads `<id>.trace.server` for the detail. A user who sets `act.trace.server` expects that
//! alone to work, so this channel reports the log level the setting implies (Trace unless
//! "off") and announces a change whenever the setting changes.

import * as vscode from "vscode";

export type TraceSetting = "off" | "messages" | "verbose";

export function traceLevel(setting: string | undefined): vscode.LogLevel {
  return setting === "messages" || setting === "verbose" ? vscode.LogLevel.Trace : vscode.LogLevel.Off;
}

export function createTraceChannel(name: string, readSetting: () => string | undefined): vscode.LogOutputChannel & vscode.Disposable {
  const channel = vscode.window.createOutputChannel(name);
  const levelChanged = new vscode.EventEmitter<vscode.LogLevel>();
  let level = traceLevel(readSetting());
  const watcher = vscode.workspace.onDidChangeConfiguration((event) => {
    if (event.affectsConfiguration("act.trace.server")) {
      const next = traceLevel(readSetting());
      if (next !== level) {
        level = next;
        levelChanged.fire(level);
      }
    }
  });
  // The client writes every traced message at trace level; the other levels are unused but
  // part of the interface, so they go to the channel as plain lines too.
  const write = (message: string) => channel.appendLine(message);
  return {
    name: channel.name,
    get logLevel() {
      return level;
    },
    onDidChangeLogLevel: levelChanged.event,
    trace: write,
    debug: write,
    info: write,
    warn: write,
    error: (error: string | Error) => write(error instanceof Error ? error.message : error),
    append: (value: string) => channel.append(value),
    appendLine: write,
    replace: (value: string) => channel.replace(value),
    clear: () => channel.clear(),
    show: (arg?: vscode.ViewColumn | boolean, preserveFocus?: boolean) => {
      if (typeof arg === "boolean" || arg === undefined) {
        channel.show(arg);
      } else {
        channel.show(arg, preserveFocus);
      }
    },
    hide: () => channel.hide(),
    dispose: () => {
      watcher.dispose();
      levelChanged.dispose();
      channel.dispose();
    },
  };
}
