// Asking the server what a file is, instead of detecting specs and kernels in the extension.
import { describe, expect, it } from "vitest";

import {
  activeFileRoles,
  DESCRIBE,
  describeArguments,
  describeDocument,
  parseDescription,
  servedByServer,
} from "../../src/documentDescription";
import { MalformedResult } from "../../src/serverCommands";

const kernel = {
  ok: true,
  message: "/w/k.hlo is an HLO kernel",
  kind: "kernel",
  parameters: [
    { index: 0, name: "Q", type: "bf16[64,64]" },
    { index: 1, name: "K", type: "bf16[64,64]" },
  ],
};

describe("the request", () => {
  it("sends act.describeDocument with the document's URI and reads the answer", async () => {
    const sent: Array<[string, unknown[]]> = [];
    const found = await describeDocument(async (command, args) => {
      sent.push([command, args]);
      return kernel;
    }, "file:///w/k.hlo");
    expect(sent).toEqual([[DESCRIBE, ["file:///w/k.hlo"]]]);
    expect(found).toEqual({ kind: "kernel", parameters: kernel.parameters });
    expect(describeArguments("file:///w/QKV.py")).toEqual(["file:///w/QKV.py"]);
  });

  it("passes a failed request on", async () => {
    await expect(describeDocument(async () => Promise.reject(new Error("gone")), "file:///w/k.hlo")).rejects.toThrow("gone");
  });
});

describe("checking the answer", () => {
  it.each([
    ["a spec", { kind: "spec", parameters: [] }, { kind: "spec", parameters: [] }],
    ["neither", { ok: true, message: "m", kind: null, parameters: [] }, { kind: null, parameters: [] }],
  ])("accepts %s", (_what, raw, expected) => {
    expect(parseDescription(raw)).toEqual(expected);
  });

  it.each([
    ["no object", [], /not an object/],
    ["null", null, /not an object/],
    ["an unknown kind", { kind: "python", parameters: [] }, /"kind"/],
    ["no kind", { parameters: [] }, /"kind"/],
    ["no parameters", { kind: "kernel" }, /"parameters"/],
    ["a parameter without an index", { kind: "kernel", parameters: [{ name: "Q", type: "f32[]" }] }, /parameters\[0\]/],
  ])("refuses %s, naming the gap", (_what, raw, message) => {
    expect(() => parseDescription(raw)).toThrow(MalformedResult);
    expect(() => parseDescription(raw)).toThrow(message);
  });
});

describe("the file in front", () => {
  it.each([
    ["python", "file", true],
    ["hlo", "file", true],
    ["python", "untitled", false],
    ["markdown", "file", false],
  ])("%s (%s) is asked about: %s", (languageId, scheme, asked) => {
    expect(servedByServer(languageId, scheme)).toBe(asked);
  });

  it.each([
    ["a spec", "python", { kind: "spec", parameters: [] }, { isSpec: true, isActFile: true }],
    ["a kernel", "hlo", { kind: "kernel", parameters: [] }, { isSpec: false, isActFile: true }],
    ["other Python", "python", { kind: null, parameters: [] }, { isSpec: false, isActFile: false }],
    ["Python, server not running", "python", undefined, { isSpec: false, isActFile: true }],
    ["HLO, server not running", "hlo", undefined, { isSpec: false, isActFile: true }],
    ["Markdown, server not running", "markdown", undefined, { isSpec: false, isActFile: false }],
    ["no editor", undefined, undefined, { isSpec: false, isActFile: false }],
  ] as const)("%s", (_what, languageId, description, roles) => {
    expect(activeFileRoles(languageId, description === undefined ? undefined : { ...description, parameters: [] })).toEqual(roles);
  });
});
