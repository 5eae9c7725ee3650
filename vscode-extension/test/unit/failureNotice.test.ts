// When a failed server start is told to the user.
import { describe, expect, it } from "vitest";

import { FailureNotice } from "../../src/failureNotice";

describe("the failure notice", () => {
  it("tells at once when a spec or kernel is in front", () => {
    const notice = new FailureNotice();
    const told: string[] = [];
    notice.setActFileActive(true);
    notice.report(() => told.push("no python"));
    expect(told).toEqual(["no python"]);
  });

  it("waits while an unrelated Python file is in front, then tells once", () => {
    const notice = new FailureNotice();
    const told: string[] = [];
    notice.report(() => told.push("no python"));
    expect(told).toEqual([]);
    notice.setActFileActive(true);
    notice.setActFileActive(false);
    notice.setActFileActive(true);
    expect(told).toEqual(["no python"]);
  });

  it("forgets a failure once a new start begins", () => {
    const notice = new FailureNotice();
    const told: string[] = [];
    notice.report(() => told.push("old"));
    notice.clear();
    notice.setActFileActive(true);
    expect(told).toEqual([]);
  });
});
