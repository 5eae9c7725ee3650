// Routing the server's work-done progress to the command that caused it.
import { describe, expect, it } from "vitest";

import { ProgressRouter, type ProgressSink } from "../../src/progress";

class RecordingSink implements ProgressSink {
  updates: Array<[string | undefined, number | undefined]> = [];
  finished: Array<string | undefined> = [];
  cancels: Array<() => void> = [];
  update(message: string | undefined, percentage: number | undefined) {
    this.updates.push([message, percentage]);
  }
  finish(message: string | undefined) {
    this.finished.push(message);
  }
  attachCancel(cancel: () => void) {
    this.cancels.push(cancel);
  }
}

describe("the progress router", () => {
  it("hands the next server progress stream to the command that claimed it", () => {
    const orphans: string[] = [];
    const router = new ProgressRouter((title) => {
      orphans.push(title);
      return new RecordingSink();
    });
    const sink = new RecordingSink();
    router.claim(sink);
    let cancelled = 0;
    router.created("tok-1", () => cancelled++);
    router.progress("tok-1", { kind: "begin", title: "Generating QKV", cancellable: true });
    router.progress("tok-1", { kind: "report", message: "cargo build", percentage: 40 });
    router.progress("tok-1", { kind: "end", message: "done" });

    expect(sink.updates).toEqual([
      ["Generating QKV", undefined],
      ["cargo build", 40],
    ]);
    expect(sink.finished).toEqual(["done"]);
    sink.cancels.forEach((c) => c());
    expect(cancelled).toBe(1);
    expect(orphans).toEqual([]);
  });

  it("gives unclaimed progress its own sink, with its cancel", () => {
    const orphan = new RecordingSink();
    const titles: Array<[string, boolean]> = [];
    const router = new ProgressRouter((title, cancellable) => {
      titles.push([title, cancellable]);
      return orphan;
    });
    let cancelled = false;
    router.created(7, () => {
      cancelled = true;
    });
    router.progress(7, { kind: "begin", title: "Indexing", cancellable: true, message: "spec 1/3" });
    expect(titles).toEqual([["Indexing", true]]);
    expect(orphan.updates).toEqual([["spec 1/3", undefined]]);
    orphan.cancels[0]();
    expect(cancelled).toBe(true);
  });

  it("stops routing to a command once it released its claim", () => {
    const router = new ProgressRouter(() => new RecordingSink());
    const sink = new RecordingSink();
    const release = router.claim(sink);
    router.created("t", () => undefined);
    router.progress("t", { kind: "begin", title: "A" });
    release();
    router.progress("t", { kind: "report", message: "late" });
    expect(sink.updates).toEqual([["A", undefined]]);
  });

  it("serves two commands in the order they claimed", () => {
    const router = new ProgressRouter(() => new RecordingSink());
    const first = new RecordingSink();
    const second = new RecordingSink();
    router.claim(first);
    router.claim(second);
    router.created("a", () => undefined);
    router.created("b", () => undefined);
    router.progress("b", { kind: "begin", title: "B" });
    router.progress("a", { kind: "begin", title: "A" });
    expect(first.updates).toEqual([["A", undefined]]);
    expect(second.updates).toEqual([["B", undefined]]);
  });

  it("knows whether a command is waiting for the server", () => {
    const router = new ProgressRouter(() => new RecordingSink());
    expect(router.commandInFlight).toBe(false);
    const releaseA = router.claim(new RecordingSink());
    const releaseB = router.claim(new RecordingSink());
    releaseA();
    releaseA();
    expect(router.commandInFlight).toBe(true);
    releaseB();
    expect(router.commandInFlight).toBe(false);
  });

  it("ignores reports for tokens it never saw begin", () => {
    const router = new ProgressRouter(() => {
      throw new Error("no sink should be made for a report without begin");
    });
    expect(() => router.progress("x", { kind: "report", message: "?" })).not.toThrow();
  });
});
