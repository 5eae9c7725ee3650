// Reading a kernel's parameters and pairing them with data files.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

import { entryParameters, matchDataFiles, stem } from "../../src/kernelParameters";

const repo = path.resolve(__dirname, "../../..");
const attention = fs.readFileSync(path.join(repo, "examples/QKV/kernels/attention.hlo"), "utf8");

describe("entry parameters", () => {
  it("reads the hand-written attention kernel's Q, K, V in order, not the reducer's x, y", () => {
    expect(entryParameters(attention)).toEqual([
      { index: 0, name: "Q", type: "bf16[64,64]" },
      { index: 1, name: "K", type: "bf16[64,64]" },
      { index: 2, name: "V", type: "bf16[64,64]" },
    ]);
  });

  it("reads what JAX prints: no signature, layouts, metadata, parameters out of order", () => {
    const jax = [
      "HloModule jit_f, entry_computation_layout={(f32[8,4]{1,0}, f32[4]{0})->f32[8,4]{1,0}}",
      "",
      "region_0.3 {",
      "  Arg_0.4 = f32[] parameter(0)",
      "}",
      "",
      "ENTRY main.9 {",
      '  Arg_1.2 = f32[4]{0} parameter(1), metadata={op_name="b"}',
      '  Arg_0.1 = f32[8,4]{1,0} parameter(0), metadata={op_name="a"}',
      "  broadcast.5 = f32[8,4]{1,0} broadcast(Arg_1.2), dimensions={1}",
      "  ROOT add.6 = f32[8,4]{1,0} add(Arg_0.1, broadcast.5)",
      "}",
    ].join("\n");
    expect(entryParameters(jax)).toEqual([
      { index: 0, name: "Arg_0.1", type: "f32[8,4]" },
      { index: 1, name: "Arg_1.2", type: "f32[4]" },
    ]);
  });

  it("finds nothing in text without an ENTRY computation", () => {
    expect(entryParameters("HloModule m\n%x = f32[] parameter(0)\n")).toEqual([]);
  });
});

describe("pairing data files with parameters", () => {
  const data = fs.readdirSync(path.join(repo, "examples/QKV/data")).map((f) => path.join("/d", f));

  it("orders the example's data by parameter, not alphabetically", () => {
    expect(matchDataFiles(entryParameters(attention), data)).toEqual({ ok: true, paths: ["/d/Q.dat", "/d/K.dat", "/d/V.dat"] });
  });

  it("matches case-insensitively when no exact name exists", () => {
    const params = [{ index: 0, name: "Q", type: "f32[]" }];
    expect(matchDataFiles(params, ["/d/q.npy"])).toEqual({ ok: true, paths: ["/d/q.npy"] });
  });

  it("names the parameters it could not match", () => {
    expect(matchDataFiles(entryParameters(attention), ["/d/Q.dat"])).toEqual({ ok: false, unmatched: ["K", "V"] });
  });

  it("takes the stem of a path", () => {
    expect(stem("/a/b/Q.dat")).toBe("Q");
    expect(stem("C:\\d\\K.tar.gz")).toBe("K.tar");
    expect(stem(".hidden")).toBe(".hidden");
  });
});
