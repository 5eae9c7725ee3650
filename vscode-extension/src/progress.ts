//! Routes the language server's work-done progress ($/progress after
//! window/workDoneProgress/create) to the notification of the command that caused it.
//!
//! The server reports progress on tokens it creates itself (its command handlers never see a
//! client token). vscode-languageclient would draw those in the status bar, where they cannot be
//! cancelled; routing them here puts the server's messages into the cancellable notification
//! that each ACT command opens, and turns a click on Cancel into window/workDoneProgress/cancel.

export type ProgressToken = number | string;

/** The LSP work-done progress payloads (begin/report/end), as they arrive. */
export type WorkDoneValue =
  | { kind: "begin"; title: string; cancellable?: boolean; message?: string; percentage?: number }
  | { kind: "report"; cancellable?: boolean; message?: string; percentage?: number }
  | { kind: "end"; message?: string };

/** Where one stream of progress is shown. */
export interface ProgressSink {
  /** A server message for the user; `percentage` is 0..100 when the server knows it. */
  update(message: string | undefined, percentage: number | undefined): void;
  /** The server finished this stream of progress. */
  finish(message: string | undefined): void;
  /** Lets the sink cancel the server's work (sends window/workDoneProgress/cancel). */
  attachCancel(cancel: () => void): void;
}

export class ProgressRouter {
  private readonly waiting: ProgressSink[] = [];
  private readonly bound = new Map<ProgressToken, ProgressSink>();
  /** Cancel functions of tokens created while no command was waiting, until their begin. */
  private readonly pendingCancels = new Map<ProgressToken, () => void>();
  private claims = 0;

  /**
   * @param orphanSink shows progress that no running command claimed (created on demand).
   */
  constructor(private readonly orphanSink: (title: string, cancellable: boolean) => ProgressSink) {}

  /**
   * A command about to send its request claims the next progress stream the server creates.
   * Returns a release function to call when the request settles.
   */
  claim(sink: ProgressSink): () => void {
    this.waiting.push(sink);
    this.claims++;
    let released = false;
    return () => {
      if (released) {
        return;
      }
      released = true;
      this.claims--;
      const at = this.waiting.indexOf(sink);
      if (at >= 0) {
        this.waiting.splice(at, 1);
      }
      for (const [token, s] of this.bound) {
        if (s === sink) {
          this.bound.delete(token);
        }
      }
    };
  }

  /** Whether an ACT command is waiting for the server's answer. */
  get commandInFlight(): boolean {
    return this.claims > 0;
  }

  /** The server asked to create `token`; `cancel` sends window/workDoneProgress/cancel for it. */
  created(token: ProgressToken, cancel: () => void): void {
    const sink = this.waiting.shift();
    if (sink !== undefined) {
      sink.attachCancel(cancel);
      this.bound.set(token, sink);
    } else {
      this.pendingCancels.set(token, cancel);
    }
  }

  progress(token: ProgressToken, value: WorkDoneValue): void {
    let sink = this.bound.get(token);
    if (sink === undefined && value.kind === "begin") {
      // Progress no command claimed (the server created it on its own): show it by itself.
      sink = this.orphanSink(value.title, value.cancellable === true);
      const cancel = this.pendingCancels.get(token);
      this.pendingCancels.delete(token);
      if (cancel !== undefined) {
        sink.attachCancel(cancel);
      }
      this.bound.set(token, sink);
    }
    if (sink === undefined) {
      return;
    }
    switch (value.kind) {
      case "begin":
        sink.update(value.message ?? value.title, value.percentage);
        break;
      case "report":
        sink.update(value.message, value.percentage);
        break;
      case "end":
        sink.finish(value.message);
        this.bound.delete(token);
        break;
    }
  }
}
