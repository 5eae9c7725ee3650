// Unit tests run under Node with the `vscode` module replaced by a recording fake, since the
// real one exists only inside an extension host.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: {
      vscode: fileURLToPath(new URL("./test/unit/fakes/vscode.ts", import.meta.url)),
    },
  },
  test: {
    include: ["test/unit/**/*.test.ts"],
    environment: "node",
    testTimeout: 20_000,
  },
});
