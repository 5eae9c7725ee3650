// Pairing a kernel's parameters with data files.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

import { type KernelParameter, matchDataFiles, stem } from "../../src/kernelParameters";

const repo = path.resolve(__dirname, "../../..");
// The attention kernel's parameters, as the server describes them.
const attention: KernelParameter[] = [
  { index: 0, name: "Q", type: "bf16[64,64]" },
  { index: 1, name: "K", type: "bf16[64,64]" },
  { index: 2, name: "V", type: "bf16[64,64]" },
];

describe("pairing data files with parameters", () => {
  const data = fs.readdirSync(path.join(repo, "examples/QKV/data")).map((f) => path.join("/d", f));

  it("orders the example's data by parameter, not alphabetically", () => {
    expect(matchDataFiles(attention, data)).toEqual({ ok: true, paths: ["/d/Q.dat", "/d/K.dat", "/d/V.dat"] });
  });

  it("matches case-insensitively when no exact name exists", () => {
    const params = [{ index: 0, name: "Q", type: "f32[]" }];
    expect(matchDataFiles(params, ["/d/q.npy"])).toEqual({ ok: true, paths: ["/d/q.npy"] });
  });

  it("names the parameters it could not match", () => {
    expect(matchDataFiles(attention, ["/d/Q.dat"])).toEqual({ ok: false, unmatched: ["K", "V"] });
  });

  it("takes the stem of a path", () => {
    expect(stem("/a/b/Q.dat")).toBe("Q");
    expect(stem("C:\\d\\K.tar.gz")).toBe("K.tar");
    expect(stem(".hidden")).toBe(".hidden");
  });
});
