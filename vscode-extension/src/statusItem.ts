//! Owns the status bar item: keeps the inputs of `status.render` and redraws on every change.
//! The last generation is kept in workspace state so the item survives a window reload.

import * as vscode from "vscode";

import type { StateStore } from "./memory";
import { type GenerationState, isGenerationState, render, type ServerState, type StatusInputs } from "./status";

const LAST_GENERATION_KEY = "act.lastGeneration";

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private inputs: StatusInputs;
  private actFileActive = false;

  constructor(private readonly store: StateStore) {
    this.item = vscode.window.createStatusBarItem("act.status", vscode.StatusBarAlignment.Left, 50);
    this.item.name = "ACT";
    const saved = store.get<unknown>(LAST_GENERATION_KEY);
    // A generation still "running" when the window closed did not finish; a state written by
    // another version of the extension is not drawn.
    const generation: GenerationState =
      isGenerationState(saved) && saved.kind !== "running" ? saved : { kind: "none" };
    this.inputs = { trusted: vscode.workspace.isTrusted, server: "stopped", generation };
    this.redraw();
  }

  /**
   * Shown while a spec or kernel is in front, or once a generation has happened: a Python
   * project unrelated to ACT gets no ACT item in its status bar.
   */
  setActFileActive(active: boolean): void {
    this.actFileActive = active;
    this.redraw();
  }

  setTrusted(trusted: boolean): void {
    this.inputs = { ...this.inputs, trusted };
    this.redraw();
  }

  setServer(server: ServerState, problem?: string): void {
    this.inputs = { ...this.inputs, server, serverProblem: problem };
    this.redraw();
  }

  setGeneration(generation: GenerationState): void {
    this.inputs = { ...this.inputs, generation };
    void this.store.update(LAST_GENERATION_KEY, generation);
    this.redraw();
  }

  dispose(): void {
    this.item.dispose();
  }

  private redraw(): void {
    const view = render(this.inputs);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.command;
    this.item.backgroundColor =
      view.background === undefined ? undefined : new vscode.ThemeColor(view.background);
    if (this.actFileActive || this.inputs.generation.kind !== "none") {
      this.item.show();
    } else {
      this.item.hide();
    }
  }
}
