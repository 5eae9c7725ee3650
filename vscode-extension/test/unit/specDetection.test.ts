// Telling TAIDL specs from other Python files.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

import { looksLikeSpec } from "../../src/specDetection";

const repo = path.resolve(__dirname, "../../..");

describe("spec detection", () => {
  it("recognises both example specs", () => {
    for (const spec of ["examples/QKV/QKV.py", "examples/QKV_new/QKV_new.py"]) {
      expect(looksLikeSpec(fs.readFileSync(path.join(repo, spec), "utf8")), spec).toBe(true);
    }
  });

  it("recognises a spec that only extends an accelerator made elsewhere", () => {
    expect(looksLikeSpec("from base import acc\nacc.add_instruction('mov', ['n'], ['a'])\n")).toBe(true);
  });

  it("leaves other Python alone, including the generated assembly", () => {
    expect(looksLikeSpec("import numpy as np\nprint(np.zeros(3))\n")).toBe(false);
    expect(looksLikeSpec("def qkv(kernel, api):\n    api.load_rm(n=64, addr_in=0, addr_out=0)\n")).toBe(false);
  });
});
